"""The command line: ``streamfilter filter``. ``main(argv) -> exit status``.

Exit status: 0 done, 1 runtime error, 2 usage error (bad option, bad regex,
missing file: one line on stderr, nothing written to stdout).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import signal
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar, NoReturn

from . import __version__
from ._logging import configure_logging, get_logger
from .errors import InputError, StreamfilterError, UsageError
from .expand import Archive, Ref, expand, state_dir
from .filter import DEFAULT_QUERY, FilterConfig, StreamFilter
from .output import FORMATS, end_event, render
from .records import Run
from .worker import FactsWorker, worth_a_worker

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

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
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


# filter options that are whole numbers: flag, FilterConfig field, minimum, metavar, help
_COUNTS = (
    ("--window-lines", "window_lines", 1, "N", "most lines in a window"),
    ("--window-chars", "window_chars", 1, "M", "most characters in a window"),
    ("--head", "head_lines", 0, "H", "first lines always kept"),
    ("--tail", "tail_lines", 0, "T", "last lines always kept"),
    ("--context", "context_lines", 0, "C", "lines kept before a protected line, within its record"),
    ("--max-line-bytes", "max_line_bytes", 64, "B", "bytes of a line that are scored; longer lines are printed whole"),
)


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
    for flag, field, minimum, metavar, what in _COUNTS:
        default = getattr(d, field)
        f.add_argument(
            flag, dest=field, type=_count(minimum), default=default, metavar=metavar, help=f"{what} (default {default})"
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
    e = sub.add_parser(
        "expand",
        help="print the dropped lines a summary's ref names",
        description="Print exactly the bytes of a DROP run, from the file or the stdin archive, checked by CRC-32.",
    )
    e.add_argument("ref", metavar="REF", help="the ref from a summary line or a JSONL drop event")
    e.add_argument(
        "--context", type=_count(0), default=0, metavar="N", help="also print N lines before and after (default 0)"
    )
    return parser


def _expand(args: argparse.Namespace) -> int:
    data = expand(Ref.parse(args.ref), args.context)
    if sys.stdout is None:
        raise StreamfilterError("cannot write output: standard output is closed")
    _write(sys.stdout.buffer, data)
    _flush(sys.stdout.buffer)
    return 0


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


class _Stop(Exception):
    """A stop signal arrived while waiting for input."""


class _Signals:
    """SIGINT, SIGTERM and SIGHUP stop the input between chunks, never in the middle of one.

    The filter's state stays whole, so what was read is still decided and written; a signal
    that comes while waiting for input interrupts the wait (no bytes of that read are taken).
    """

    STATUS: ClassVar[Mapping[int, int]] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}

    def __init__(self) -> None:
        self.received: int | None = None
        self.waiting = False
        for signum in self.STATUS:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.received = signum
        if self.waiting:
            raise _Stop

    def read(self, handle: io.BufferedReader) -> bytes:
        """The next chunk, or b"" once a stop signal came."""
        if self.received is not None:
            return b""
        self.waiting = True
        try:
            return handle.read1(READ_BYTES)
        except _Stop:
            return b""
        finally:
            self.waiting = False


def _filter(args: argparse.Namespace) -> int:
    config = FilterConfig(
        query=args.query,
        protect=tuple(args.protect),
        min_score=args.min_score,
        explain=args.explain,
        **{field: getattr(args, field) for _, field, *_ in _COUNTS},
    )
    if args.explain and args.format != "jsonl":
        raise UsageError("--explain needs --format jsonl")
    if not args.query.split():
        raise UsageError("--query is empty: give at least one word")
    StreamFilter(config)  # validates the regexes before anything is read
    paths = _check_inputs(args.files)
    if sys.stdout is None:
        raise StreamfilterError("cannot write output: standard output is closed")
    out = sys.stdout.buffer
    log = get_logger()
    signals = _Signals()
    for index, name in enumerate(paths):
        if len(paths) > 1 and args.format == "text":
            _write(out, f"{'' if index == 0 else chr(10)}==> {name} <==\n".encode())
        sf = StreamFilter(config, source=name)
        refs = _Refs(name, log)
        # a large regular file: a second process computes the stateless stages ahead
        worker = FactsWorker(name, sf.preparer, READ_BYTES) if name != "-" and worth_a_worker(name) else None
        try:
            if worker is not None:
                sf.preparer = worker
            _filter_one(sf, name, args.format, out, log, refs, signals)
            # also after a stop signal: what was read is decided and written, then the signal's status
            _finish(sf, name, args.format, out, log, refs)
        finally:
            if worker is not None:
                worker.close()
        if signals.received is not None:
            return _Signals.STATUS[signals.received]
    return 0


class _Refs:
    """Gives each DROP run of one input a ref: the file itself, or stdin's archive copy."""

    def __init__(self, name: str, log: FilteringBoundLogger) -> None:
        self.archive: Archive | None = None
        if name != "-":
            self.source = str(Path(name).resolve())
            return
        try:
            self.archive = Archive(state_dir())
            self.source = self.archive.source
        except OSError as exc:
            log.warning("archive.unavailable", directory=str(state_dir()), error=exc.strerror or str(exc))
            self.source = ""

    def of(self, run: Run) -> str:
        if run.decision != "drop" or not self.source:
            return ""
        if self.archive is not None and not self.archive.covers(run.end_byte):
            return ""
        return str(Ref(self.source, run.start_byte, run.end_byte, run.checksum))

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


def _filter_one(
    sf: StreamFilter, name: str, fmt: str, out: BinaryIO, log: FilteringBoundLogger, refs: _Refs, signals: _Signals
) -> None:
    """Feed one input through ``sf``, writing runs as they are decided."""
    handle: io.BufferedReader = sys.stdin.buffer if name == "-" else open(name, "rb")  # type: ignore[assignment]
    try:
        # a pipe or terminal is written through as it comes; a regular file at the end
        live = not stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        while chunk := signals.read(handle):
            if refs.archive is not None:
                refs.archive.write(chunk)
            runs = sf.feed(chunk)
            for run in runs:
                _write(out, render(run, fmt, name, refs.of(run)))
            _log_notices(sf, name, log)
            if live and runs:
                _flush(out)
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def _finish(sf: StreamFilter, name: str, fmt: str, out: BinaryIO, log: FilteringBoundLogger, refs: _Refs) -> None:
    refs.close()
    for run in sf.flush():
        _write(out, render(run, fmt, name, refs.of(run)))
    _log_notices(sf, name, log)
    if fmt == "jsonl":
        _write(out, end_event(sf.stats, name))
    _flush(out)


def _log_notices(sf: StreamFilter, name: str, log: FilteringBoundLogger) -> None:
    for notice in sf.notices:
        log.warning(notice.event, source=name, line=notice.line, bytes=notice.n_bytes, count=notice.count)
    sf.notices.clear()


def _write(out: BinaryIO, data: bytes) -> None:
    """Write all of ``data``. A stop signal that interrupts a blocking write to a pipe makes
    ``BufferedWriter.write`` return early with a short count (the rest is not buffered):
    the rest is written again, so no line of output is cut."""
    try:
        view = memoryview(data)
        while view:
            written = out.write(view)
            view = view[written if written is not None else len(view) :]
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StreamfilterError(f"cannot write output: {exc.strerror or exc}") from None


def _flush(out: BinaryIO) -> None:
    try:
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StreamfilterError(f"cannot write output: {exc.strerror or exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    configure_logging()
    args = _parser().parse_args(argv)
    try:
        if args.command == "filter":
            return _filter(args)
        if args.command == "expand":
            return _expand(args)
        raise UsageError(f"unknown command {args.command!r}")
    except StreamfilterError as exc:
        sys.stderr.write(f"streamfilter: error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error of ours; keep Python from
        # complaining again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
