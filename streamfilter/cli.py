"""The command line: ``streamfilter filter``. ``main(argv) -> exit status``.

Exit status: 0 done, 1 runtime error, 2 usage error (bad option, bad regex,
missing file: one line on stderr, nothing written to stdout).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import BinaryIO, NoReturn

from . import __version__
from ._logging import configure_logging, get_logger
from .errors import InputError, StreamfilterError, UsageError
from .filter import DEFAULT_QUERY, FilterConfig, StreamFilter
from .output import FORMATS, end_event, render

__all__ = ("main",)

READ_BYTES = 1 << 20  # bytes read per call from a file or stdin


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one clear line, not the usage block
        self.exit(2, f"streamfilter: error: {message} (see --help)\n")


def _count(minimum: int) -> type[int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {minimum}")
        return value

    parse.__name__ = "number"
    return parse  # type: ignore[return-value]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="streamfilter", description="Cut build and test logs down to what matters.")
    parser.add_argument("--version", action="version", version=f"streamfilter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    f = sub.add_parser(
        "filter",
        help="filter files or stdin once, to stdout",
        description="Print the windows that matter verbatim and summarize the rest.",
    )
    d = FilterConfig()
    f.add_argument("files", nargs="*", metavar="FILE", help="files to read, in order; '-' or none: stdin")
    f.add_argument("-q", "--query", default=DEFAULT_QUERY, help=f"what matters, as words (default: {DEFAULT_QUERY!r})")
    f.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    f.add_argument(
        "--window-lines",
        type=_count(1),
        default=d.window_lines,
        metavar="N",
        help=f"most lines in a window (default {d.window_lines})",
    )
    f.add_argument(
        "--window-chars",
        type=_count(1),
        default=d.window_chars,
        metavar="M",
        help=f"most characters in a window (default {d.window_chars})",
    )
    f.add_argument(
        "--head",
        type=_count(0),
        default=d.head_lines,
        metavar="H",
        help=f"first lines always kept (default {d.head_lines})",
    )
    f.add_argument(
        "--tail",
        type=_count(0),
        default=d.tail_lines,
        metavar="T",
        help=f"last lines always kept (default {d.tail_lines})",
    )
    f.add_argument(
        "--context",
        type=_count(0),
        default=d.context_lines,
        metavar="C",
        help=f"lines kept before a protected line (default {d.context_lines})",
    )
    f.add_argument(
        "--protect",
        action="append",
        default=[],
        metavar="REGEX",
        help="also always keep lines matching REGEX (Python syntax; repeatable)",
    )
    f.add_argument(
        "--explain",
        action="store_true",
        help="with --format jsonl: add each window's BM25 score, the cut and the reason to its run",
    )
    f.add_argument(
        "--min-score",
        type=_number,
        default=d.min_score,
        metavar="S",
        help=f"floor of the BM25 cut (default {d.min_score})",
    )
    f.add_argument(
        "--max-line-bytes",
        type=_count(64),
        default=d.max_line_bytes,
        metavar="B",
        help=f"bytes of a line that are scored (default {d.max_line_bytes}); longer lines are still printed whole",
    )
    return parser


def _open_all(paths: Sequence[str]) -> list[tuple[str, BinaryIO]]:
    opened: list[tuple[str, BinaryIO]] = []
    for path in paths or ["-"]:
        if path == "-":
            opened.append(("-", sys.stdin.buffer))
            continue
        try:
            opened.append((path, open(path, "rb")))
        except OSError as exc:
            for _, handle in opened:
                if handle is not sys.stdin.buffer:
                    handle.close()
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return opened


def _filter(args: argparse.Namespace) -> int:
    config = FilterConfig(
        query=args.query,
        window_lines=args.window_lines,
        window_chars=args.window_chars,
        head_lines=args.head,
        tail_lines=args.tail,
        context_lines=args.context,
        protect=tuple(args.protect),
        min_score=args.min_score,
        max_line_bytes=args.max_line_bytes,
        explain=args.explain,
    )
    if args.explain and args.format != "jsonl":
        raise UsageError("--explain needs --format jsonl")
    StreamFilter(config)  # validate the settings (regexes) before opening anything
    inputs = _open_all(args.files)
    out = sys.stdout.buffer
    log = get_logger()
    try:
        for index, (name, handle) in enumerate(inputs):
            if len(inputs) > 1 and args.format == "text":
                out.write(f"{'' if index == 0 else chr(10)}==> {name} <==\n".encode())
            sf = StreamFilter(config, source=name)
            while chunk := handle.read(READ_BYTES):
                for run in sf.feed(chunk):
                    out.write(render(run, args.format, name))
                for notice in sf.notices:
                    log.warning(notice.event, source=name, line=notice.line, bytes=notice.n_bytes)
                sf.notices.clear()
            for run in sf.flush():
                out.write(render(run, args.format, name))
            if args.format == "jsonl":
                out.write(end_event(sf.stats, name))
            out.flush()
    finally:
        for _, handle in inputs:
            if handle is not sys.stdin.buffer:
                handle.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    configure_logging()
    args = _parser().parse_args(argv)
    try:
        if args.command == "filter":
            return _filter(args)
        raise UsageError(f"unknown command {args.command!r}")
    except StreamfilterError as exc:
        sys.stderr.write(f"streamfilter: error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error of ours
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
