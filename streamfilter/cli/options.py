"""Options and parsing shared by the subcommands: the parser class, whole-number and number
checks, the filter options, and the ``FilterConfig`` they make."""

from __future__ import annotations

import argparse
import math
from typing import Any, NoReturn

from ..core.errors import UsageError
from ..core.output import FORMATS
from ..core.settings import DEFAULT_QUERY, MAX_COUNT, MIN_LINE_BYTES, FilterConfig, check_pattern

__all__ = ("COUNTS", "Parser", "command_argv", "count", "filter_config", "filter_options", "number")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), no abbreviated options, and a filter-only option named as such."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # "--budget-token 100" is a typo to report, not "--budget-tokens" to guess
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        # one clear line, not the usage block
        self.exit(2, f"streamfilter: error: {message} (see --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, rest = super().parse_known_args(args, namespace)
        for flag, (where, why) in _NOT_HERE.items():
            if flag in rest or any(arg.startswith(flag + "=") for arg in rest):
                self.error(f"{flag} is an option of {where} only ({why})")
        return parsed, rest


# options a user of filter may reach for with another subcommand: where they are, and why only there
_NOT_HERE = {
    "--budget-tokens": (
        "filter and run",
        "a budget is decided over a whole input; follow writes lines as they come",
    ),
    "--explain": ("filter", "decision traces are for filter's JSONL"),
    "--baseline": ("filter", "run weighs its command's output against the last green run it stored itself"),
    "--no-baseline": ("filter and run", "follow has no green run to weigh against"),
}


def count(minimum: int) -> type[int]:
    """An argparse type: a whole number from ``minimum`` to ``MAX_COUNT``; else ``ArgumentTypeError``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {minimum}")
        if value > MAX_COUNT:
            raise argparse.ArgumentTypeError(f"{value} is above the maximum {MAX_COUNT}")
        return value

    parse.__name__ = "number"
    return parse  # type: ignore[return-value]


def number(text: str) -> float:
    """An argparse type: a finite float; else ``ArgumentTypeError``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


# filter options that are whole numbers: flag, FilterConfig field, minimum, metavar, help
COUNTS = (
    ("--window-lines", "window_lines", 1, "N", "most lines in a window"),
    ("--window-chars", "window_chars", 1, "M", "most characters in a window"),
    ("--head", "head_lines", 0, "H", "first lines always kept"),
    ("--tail", "tail_lines", 0, "T", "last lines always kept"),
    (
        "--found-tail",
        "found_tail_lines",
        0,
        "T",
        "last lines always kept once a failure signature kept a line or the prior is sure of one",
    ),
    ("--context", "context_lines", 0, "C", "lines kept before a protected line, within its record"),
    (
        "--max-line-bytes",
        "max_line_bytes",
        MIN_LINE_BYTES,
        "B",
        "bytes of a line that are scored; a longer line is summarized unless it is itself protected",
    ),
)


def filter_options(f: argparse.ArgumentParser) -> None:
    """Add the options every filtering subcommand shares (query, format, window sizes, head, tail, ...)."""
    d = FilterConfig()
    f.add_argument("-q", "--query", default=DEFAULT_QUERY, help=f"what matters, as words (default: {DEFAULT_QUERY!r})")
    f.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    for flag, field, minimum, metavar, what in COUNTS:
        default = getattr(d, field)
        f.add_argument(
            flag, dest=field, type=count(minimum), default=default, metavar=metavar, help=f"{what} (default {default})"
        )
    f.add_argument(
        "--protect",
        action="append",
        default=[],
        metavar="REGEX",
        help="also always keep lines matching REGEX (Python syntax; repeatable)",
    )
    f.add_argument(
        "--min-score",
        type=number,
        default=d.min_score,
        metavar="S",
        help=f"floor of the BM25 cut (default {d.min_score})",
    )
    f.add_argument(
        "--no-prior",
        dest="prior",
        action="store_false",
        help="do not keep the lines the learned line prior rates as part of a failure (signatures and BM25 only)",
    )
    f.add_argument(
        "--no-signatures",
        dest="signatures",
        action="store_false",
        help="do not keep the lines the built-in failure signatures match (the query, the prior, --protect and"
        " the tail only): how the filter does on a tool the signatures do not know",
    )


def filter_config(args: argparse.Namespace, explain: bool = False) -> FilterConfig:
    """The ``FilterConfig`` the parsed options ask for.

    Raises:
        UsageError: an empty query, or a ``--protect`` pattern that is not a valid regex.
    """
    if not args.query.split():
        raise UsageError("--query is empty: give at least one word")
    config = FilterConfig(
        query=args.query,
        protect=tuple(args.protect),
        min_score=args.min_score,
        explain=explain,
        prior=args.prior,
        signatures=args.signatures,
        **{field: getattr(args, field) for _, field, *_ in COUNTS},
    )
    # the regexes are checked before anything is read (as the filter would: building one just for
    # that compiled the whole signature table once more, about 70 ms of every command's start)
    for pattern in config.protect:
        check_pattern(pattern)
    return config


def command_argv(args: argparse.Namespace) -> list[str]:
    """The command after ``--`` (``run``, ``send``).

    Raises:
        UsageError: no command given.
    """
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no command given: put it after --, e.g. streamfilter run -- make test")
    return argv
