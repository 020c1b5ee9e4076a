"""``streamfilter filter``: files or stdin once, to stdout, optionally within a token budget."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO, cast

from ..core.errors import InputError, StreamfilterError, UsageError
from ..live.baselines import baseline_of_files
from ..live.batch import StopSignals, filter_input
from ..live.expand import escaped_source
from ..live.writes import Escaped
from .options import count, filter_config, filter_options

__all__ = ("add_parser",)


def add_parser(sub: Any) -> None:
    """The ``filter`` subcommand's options."""
    f = sub.add_parser(
        "filter",
        help="filter files or stdin once, to stdout",
        description="Print the windows that matter verbatim and summarize the rest.",
    )
    f.add_argument("files", nargs="*", metavar="FILE", help="files to read, in order; '-' or none: stdin")
    filter_options(f)
    f.add_argument(
        "--explain",
        action="store_true",
        help="with --format jsonl: add each window's BM25 score, the cut and the reason to its run",
    )
    f.add_argument(
        "--raw", action="store_true", help="on a terminal, write control bytes as they are (default: escaped)"
    )
    f.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="GOOD.log",
        help="the output of a passing run (repeatable): lines it printed weigh less, the others more",
    )
    f.add_argument("--no-baseline", action="store_true", help="ignore --baseline (no baseline)")
    f.add_argument(
        "--budget-tokens",
        type=count(1),
        metavar="N",
        help="keep the text output within about N tokens (o200k, estimated from its characters): reads each "
        "input twice, writes at the end",
    )
    f.add_argument(
        "--failed",
        action="store_true",
        help="with --budget-tokens: the input is a failed command's output (a failed CI job's log): look for "
        "what may be the failure in the tool's own words wherever it is, as run does",
    )
    f.set_defaults(handler=_filter)


def _check_inputs(paths: Sequence[str]) -> list[str]:
    """Every named file must be readable before anything is written; they are opened one at a time later.

    ``stat`` and ``access`` rather than ``open``: opening a FIFO would wait for its writer.
    """
    for path in paths:
        if path == "-":
            if sys.stdin is None:
                raise InputError("cannot read standard input: it is closed")
            continue
        try:
            info = os.stat(path)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"cannot read {path}: Is a directory")
        if not os.access(path, os.R_OK):
            raise InputError(f"cannot read {path}: Permission denied")
    return list(paths) or ["-"]


def _filter(args: argparse.Namespace) -> int:
    if args.explain and args.format != "jsonl":
        raise UsageError("--explain needs --format jsonl")
    if args.failed and args.budget_tokens is None:
        raise UsageError("--failed needs --budget-tokens (a stream cannot take back the lines it dropped)")
    config = filter_config(args, args.explain)
    paths = _check_inputs(args.files)
    baseline = None
    if args.baseline and not args.no_baseline:
        if "-" in args.baseline:
            raise UsageError("--baseline -: a baseline is read from a file (stdin is the input)")
        baseline = baseline_of_files(_check_inputs(args.baseline), config.max_line_bytes)
    if sys.stdout is None:
        raise StreamfilterError("cannot write output: standard output is closed")
    out: BinaryIO = sys.stdout.buffer
    if not args.raw and out.isatty():
        out = cast(BinaryIO, Escaped(out))  # only write and flush are used
    signals = StopSignals()
    status = 0
    last = b""  # the last byte written so far
    for name in paths:
        header = b""
        if len(paths) > 1 and args.format == "text":
            # a blank line between files, as head and tail print them (after an unended last line too)
            gap = {b"": b"", b"\n": b"\n"}.get(last, b"\n\n")
            header = gap + f"==> {escaped_source(name)} <==\n".encode()  # (a name's newline or ESC: one line)
        done = filter_input(
            name, config, args.format, out, signals, args.budget_tokens, header, baseline, failed=args.failed
        )
        last = done.last or last
        if done.changed is not None:  # that file only: the others are still filtered
            sys.stderr.write(f"streamfilter: error: {done.changed}\n")
            status = done.changed.exit_code
        if signals.received is not None:
            return StopSignals.STATUS[signals.received]
    return status
