"""``streamfilter expand``: the bytes of a DROP run back from its ref."""

from __future__ import annotations

import argparse
import sys
from typing import Any, BinaryIO, cast

from ..core.errors import StreamfilterError, UsageError
from ..live.expand import RefError, expand, is_archive, is_short_ref, parse_ref
from ..live.writes import Escaped, flush_out
from .options import count

__all__ = ("add_parser",)


def add_parser(sub: Any) -> None:
    """The ``expand`` subcommand's options."""
    e = sub.add_parser(
        "expand",
        help="print the dropped lines a summary's ref names",
        description="Print exactly the bytes of a DROP run, from the file or the stdin archive, checked by CRC-32.",
    )
    e.add_argument(
        "ref", metavar="REF", help="the ref from a summary line (a short @START-END:CRC too) or a JSONL drop event"
    )
    e.add_argument(
        "--context", type=count(0), default=0, metavar="N", help="also print N lines before and after (default 0)"
    )
    e.add_argument(
        "--raw", action="store_true", help="on a terminal, write control bytes as they are (default: escaped)"
    )
    e.set_defaults(handler=_expand)


def _expand(args: argparse.Namespace) -> int:
    if sys.stdout is None:
        raise StreamfilterError("cannot write output: standard output is closed")
    out: BinaryIO = sys.stdout.buffer
    if not args.raw and out.isatty():  # (as filter and run: a log's escapes do not reach the terminal, helper-62)
        out = cast(BinaryIO, Escaped(out))
    try:
        ref = parse_ref(args.ref, unique=args.context > 0)
    except RefError as exc:
        if is_short_ref(args.ref):  # a short ref that no source named lately holds: as an expired one
            raise
        raise UsageError(str(exc)) from None  # not a ref at all: a bad argument, as a bad option value is
    try:
        rotated = expand(ref, out, args.context)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise StreamfilterError(f"cannot write output: {exc.strerror or exc}") from None
    flush_out(out)
    if is_short_ref(args.ref):  # (the source is the latest one that holds such bytes: say which, helper-62)
        sys.stderr.write(f"streamfilter: note: {args.ref} read from {ref.source}\n")
    if rotated is not None:
        why = "it moved there off a full disk" if is_archive(rotated) else "was rotated, it holds other bytes now"
        sys.stderr.write(f"streamfilter: note: read from {rotated}: {ref.source} {why}\n")
    return 0
