"""``streamfilter follow``: one file as it is written, filtered, to stdout."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..core.errors import InputError
from ..live.config import (
    DaemonConfig,
    SinkConfig,
    SourceConfig,
    Timing,
)
from .options import count, filter_config, filter_options

__all__ = ("add_parser",)


def add_parser(sub: Any) -> None:
    """The ``follow`` subcommand's options."""
    w = sub.add_parser(
        "follow",
        help="follow one file as it is written (like tail -F), filtered, to stdout",
        description="Follow FILE through rotation, truncation and rewrites; print what matters as it comes.",
    )
    w.add_argument("file", metavar="FILE", help="the file to follow (it may not exist yet)")
    filter_options(w)
    w.add_argument(
        "--start-at",
        choices=("beginning", "end"),
        default="beginning",
        help="where to start in a file that exists already (default: beginning)",
    )
    w.add_argument(
        "--idle-ms",
        type=count(1),
        default=int(Timing().idle_seconds * 1000),
        metavar="MS",
        help="decide pending lines after this many quiet milliseconds (default %(default)s)",
    )
    w.add_argument(
        "--raw", action="store_true", help="on a terminal, write control bytes as they are (default: escaped)"
    )
    w.set_defaults(handler=_follow)


# the live commands import anyio, watchfiles and the daemon only when used: `filter` starts faster
def _follow(args: argparse.Namespace) -> int:
    import anyio

    from ..live.checkpoint import PSEUDO_FILES
    from ..live.daemon import run_daemon

    path = os.path.abspath(args.file)
    if os.path.isdir(path):
        raise InputError(f"cannot follow {args.file}: Is a directory")
    if os.path.exists(path) and not os.path.isfile(path):  # a FIFO, a device: it has no offsets to follow
        raise InputError(f"cannot follow {args.file}: not a regular file (read it with `streamfilter filter`)")
    if os.path.realpath(path).startswith(PSEUDO_FILES):  # refused when opened: it would be waited for forever
        raise InputError(
            f"cannot follow {args.file}: a /proc or /sys file, whose size is not known "
            "(read it with `streamfilter filter`)"
        )
    source = SourceConfig(
        name=args.file,
        type="file",
        path=path,
        start_at=args.start_at,
        roots=("/",),  # the file was named on the command line: wherever it points is fine
        checkpoint=False,
        tail_at_end=True,  # the last lines before a pause wait for Ctrl-C and the tail rule, as in `filter`
        filter=filter_config(args),
        timing=Timing(idle_seconds=args.idle_ms / 1000),
    )
    sink = SinkConfig("stdout", "stdout", format=args.format, raw=args.raw)
    return anyio.run(run_daemon, DaemonConfig("", (source,), (sink,)))
