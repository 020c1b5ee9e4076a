"""The command line: ``filter``, ``expand``, ``follow``, ``daemon``, ``check-config``.

``main(argv) -> exit status``. Exit status: 0 done, 1 runtime error, 2 usage error (bad
option, bad regex, missing file: one line on stderr, nothing written to stdout), 78 config
error (``daemon``, ``check-config``).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import math
import os
import signal
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, BinaryIO, ClassVar, NoReturn, cast

from . import __version__
from ._logging import configure_logging, get_logger, log_notices
from .budget import BUDGET_SUMMARY_CHARS, REF_BYTES_PER_TOKEN, SUMMARY_CHARS_PER_TOKEN, UnitPool, estimate_tokens
from .checkpoint import ReadPosition
from .config import (
    DaemonConfig,
    SinkConfig,
    SourceConfig,
    Timing,
    check_access,
    check_places,
    check_use,
    load_config,
    resolved,
)
from .envelope import SUCCESS_TAIL_LINES
from .errors import InputError, StreamfilterError, UsageError, first_cause
from .expand import Archive, Ref, RefError, TextRefs, archive_refs, expand, ref_of
from .filter import DEFAULT_QUERY, MAX_COUNT, MIN_LINE_BYTES, FilterConfig, StreamFilter, asked_patterns
from .output import FORMATS, end_event, render
from .records import Run
from .worker import FactsWorker, worth_a_worker

__all__ = ("main",)

READ_BYTES = 1 << 20  # bytes read per call from a file or stdin


class _Parser(argparse.ArgumentParser):
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
        for flag, why in _FILTER_ONLY.items():
            if flag in rest or any(arg.startswith(flag + "=") for arg in rest):
                self.error(f"{flag} is an option of filter only ({why})")
        return parsed, rest


# options a user of filter may reach for with follow or run, each with why they are filter's only
_FILTER_ONLY = {
    "--budget-tokens": (
        "a budget is decided over the whole input; these write as it comes. For a command's output: "
        "streamfilter run --tee FILE -- CMD >/dev/null, then streamfilter filter --budget-tokens N FILE"
    ),
    "--explain": "decision traces are for filter's JSONL",
}


def _count(minimum: int) -> type[int]:
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
    ("--found-tail", "found_tail_lines", 0, "T", "last lines always kept once a failure signature kept a line"),
    ("--context", "context_lines", 0, "C", "lines kept before a protected line, within its record"),
    (
        "--max-line-bytes",
        "max_line_bytes",
        MIN_LINE_BYTES,
        "B",
        "bytes of a line that are scored; a longer line is summarized unless it is itself protected",
    ),
)


def _filter_options(f: argparse.ArgumentParser) -> None:
    d = FilterConfig()
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
        "--min-score",
        type=_number,
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="streamfilter", description="Cut build and test logs down to what matters.")
    parser.add_argument("--version", action="version", version=f"streamfilter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    f = sub.add_parser(
        "filter",
        help="filter files or stdin once, to stdout",
        description="Print the windows that matter verbatim and summarize the rest.",
    )
    f.add_argument("files", nargs="*", metavar="FILE", help="files to read, in order; '-' or none: stdin")
    _filter_options(f)
    f.add_argument(
        "--explain",
        action="store_true",
        help="with --format jsonl: add each window's BM25 score, the cut and the reason to its run",
    )
    f.add_argument(
        "--raw", action="store_true", help="on a terminal, write control bytes as they are (default: escaped)"
    )
    f.add_argument(
        "--budget-tokens",
        type=_count(1),
        metavar="N",
        help="keep the text output within about N tokens (o200k, estimated from its characters): reads each "
        "input twice, writes at the end",
    )
    w = sub.add_parser(
        "follow",
        help="follow one file as it is written (like tail -F), filtered, to stdout",
        description="Follow FILE through rotation, truncation and rewrites; print what matters as it comes.",
    )
    w.add_argument("file", metavar="FILE", help="the file to follow (it may not exist yet)")
    _filter_options(w)
    w.add_argument(
        "--start-at",
        choices=("beginning", "end"),
        default="beginning",
        help="where to start in a file that exists already (default: beginning)",
    )
    w.add_argument(
        "--idle-ms",
        type=_count(1),
        default=int(Timing().idle_seconds * 1000),
        metavar="MS",
        help="decide pending lines after this many quiet milliseconds (default %(default)s)",
    )
    w.add_argument(
        "--raw", action="store_true", help="on a terminal, write control bytes as they are (default: escaped)"
    )
    rn = sub.add_parser(
        "run",
        help="run a command and filter its output as it prints",
        description="Run CMD (stdout and stderr merged), print what matters as it comes, exit with CMD's status.",
    )
    _filter_options(rn)
    rn.add_argument("--separate", action="store_true", help="filter stdout and stderr as two streams")
    rn.add_argument("--tee", metavar="FILE", help="also write the whole raw output to FILE; refs point into it")
    rn.add_argument(
        "--success-tail",
        type=_count(0),
        default=SUCCESS_TAIL_LINES,
        metavar="N",
        help="last lines kept when CMD exits 0 (on failure: --tail) (default %(default)s)",
    )
    rn.add_argument("--raw", action="store_true", help="on a terminal, write control bytes as they are")
    rn.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the command to run")
    sd = sub.add_parser(
        "send",
        help="run a command and stream its output to a daemon's socket source as one run",
        description="Run CMD and send its output, in a run envelope, to a running daemon; exit with CMD's status.",
    )
    sd.add_argument("--socket", required=True, metavar="PATH|HOST:PORT", help="the daemon's unix or tcp source")
    sd.add_argument("-q", "--query", help="the run's query (default: the source's)")
    sd.add_argument("--run-id", metavar="ID", help="the run's id (default: random)")
    sd.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the command to run")
    dm = sub.add_parser(
        "daemon",
        help="run the sources and sinks of a config file",
        description="Run the sources and sinks a TOML config names, until SIGTERM; SIGHUP reloads the config.",
    )
    dm.add_argument("--config", required=True, metavar="FILE", help="the TOML config")
    cc = sub.add_parser(
        "check-config",
        help="check a daemon config and print it resolved",
        description="Check a daemon config; print it with every default filled in, as JSON (exit 78 if invalid).",
    )
    cc.add_argument("config", metavar="FILE", help="the TOML config")
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
    if sys.stdout is None:
        raise StreamfilterError("cannot write output: standard output is closed")
    out = sys.stdout.buffer
    try:
        ref = Ref.parse(args.ref)
    except RefError as exc:  # not a ref at all: a bad argument, as a bad option value is
        raise UsageError(str(exc)) from None
    try:
        rotated = expand(ref, out, args.context)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise StreamfilterError(f"cannot write output: {exc.strerror or exc}") from None
    _flush(out)
    if rotated is not None:
        sys.stderr.write(
            f"streamfilter: note: read from {rotated}: {ref.source} was rotated, it holds other bytes now\n"
        )
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

    def read(self, handle: BinaryIO, size: int) -> bytes:
        """The next chunk of at most ``size`` bytes, or b"" once a stop signal came."""
        if self.received is not None:
            return b""
        self.waiting = True
        try:
            chunk: bytes = handle.read1(size)  # type: ignore[attr-defined]  # what there is, up to size
            return chunk
        except _Stop:
            return b""
        finally:
            self.waiting = False


def _filter_config(args: argparse.Namespace, explain: bool = False) -> FilterConfig:
    if not args.query.split():
        raise UsageError("--query is empty: give at least one word")
    config = FilterConfig(
        query=args.query,
        protect=tuple(args.protect),
        min_score=args.min_score,
        explain=explain,
        prior=args.prior,
        **{field: getattr(args, field) for _, field, *_ in _COUNTS},
    )
    StreamFilter(config)  # validates the regexes before anything is read
    return config


# the live commands import anyio, watchfiles and the daemon only when used: `filter` starts faster
def _follow(args: argparse.Namespace) -> int:
    import anyio

    from .daemon import run_daemon
    from .files import PSEUDO_FILES

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
        filter=_filter_config(args),
        timing=Timing(idle_seconds=args.idle_ms / 1000),
    )
    sink = SinkConfig("stdout", "stdout", format=args.format, raw=args.raw)
    return anyio.run(run_daemon, DaemonConfig("", (source,), (sink,)))


def _command(args: argparse.Namespace) -> list[str]:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no command given: put it after --, e.g. streamfilter run -- make test")
    return argv


def _run(args: argparse.Namespace) -> int:
    import anyio

    from .run import run_command

    failure_tail = args.tail_lines
    args.tail_lines = max(args.tail_lines, args.success_tail)  # held back for the end either way
    config = _filter_config(args)
    argv = _command(args)
    return anyio.run(
        lambda: run_command(
            argv, config, args.format, args.separate, args.tee, args.success_tail, args.raw, failure_tail
        )
    )


def _send(args: argparse.Namespace) -> int:
    import anyio

    from .run import parse_socket, send_command

    if args.query is not None and not args.query.split():
        raise UsageError("--query is empty: give at least one word")
    argv = _command(args)
    kind, where, port = parse_socket(args.socket)

    async def go() -> int:
        try:
            stream = await (anyio.connect_tcp(where, port) if kind == "tcp" else anyio.connect_unix(where))
        except OSError as exc:
            raise StreamfilterError(f"cannot connect to {args.socket}: {exc.strerror or exc}") from None
        return await send_command(stream, argv, args.query, args.run_id)

    return anyio.run(go)


def _daemon(args: argparse.Namespace) -> int:
    import anyio

    from .daemon import run_daemon

    return anyio.run(run_daemon, load_config(args.config))


def _check_config(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    for problem in check_places(config):
        sys.stderr.write(f"streamfilter: warning: {problem}; the daemon would fail to open it now\n")
    for problem in check_use(config) + check_access(config):
        sys.stderr.write(f"streamfilter: warning: {problem}\n")
    resolved_config = resolved(config)
    sys.stdout.write(json.dumps(resolved_config, indent=2) + "\n")
    return 0


def _filter(args: argparse.Namespace) -> int:
    if args.explain and args.format != "jsonl":
        raise UsageError("--explain needs --format jsonl")
    config = _filter_config(args, args.explain)
    paths = _check_inputs(args.files)
    if sys.stdout is None:
        raise StreamfilterError("cannot write output: standard output is closed")
    out: BinaryIO = sys.stdout.buffer
    if not args.raw and out.isatty():
        out = cast(BinaryIO, _Escaped(out))  # only write and flush are used
    signals = _Signals()
    status = 0
    last = b""  # the last byte written so far
    for name in paths:
        header = b""
        if len(paths) > 1 and args.format == "text":
            # a blank line between files, as head and tail print them (after an unended last line too)
            gap = {b"": b"", b"\n": b"\n"}.get(last, b"\n\n")
            header = gap + f"==> {name} <==\n".encode("utf-8", "surrogateescape")
        refs = _Refs(name)
        if args.budget_tokens is None:
            _write(out, header)
            writer = _Writer(out, args.format, name, refs)
            sf = StreamFilter(config, source=name)
            changed = None
            with _open(name) as handle:
                try:
                    _feed(sf, handle, writer, signals, copies=refs.copies)
                except _Changed as exc:
                    changed = exc
            # also after a stop signal or a change: what was read is decided and written
            refs.close()
            writer(sf.flush())
            writer.end(sf)
            last = writer.last or header[-1:] or last
            if changed is not None:
                sys.stderr.write(f"streamfilter: error: {changed}\n")
                status = changed.exit_code
        else:
            try:
                last = _budgeted(config, name, args.format, args.budget_tokens, out, refs, signals, header) or last
            except _Changed as exc:  # that file only: the others are still filtered
                sys.stderr.write(f"streamfilter: error: {exc}\n")
                status = exc.exit_code
        if signals.received is not None:
            return _Signals.STATUS[signals.received]
    return status


class _Changed(StreamfilterError):
    """A file was truncated or rewritten while it was read, or between the two passes of a budget (exit 1)."""


BUFFER_BYTES = 8 << 20  # output held in memory while a budget is decided; a temporary file past this


def _budgeted(
    config: FilterConfig,
    name: str,
    fmt: str,
    tokens: int,
    out: BinaryIO,
    refs: _Refs,
    signals: _Signals,
    header: bytes = b"",
) -> bytes:
    """Filter one input within a token budget; return the last byte written.

    A first pass runs the filter as usual, collecting the units it keeps
    (``budget.UnitPool``) and its own output while that stays within the budget (or
    within one summary line, which no budget can beat). If it did, that output is
    written: the budget changes nothing. Else a second pass over the same bytes keeps
    the chosen units: from the same open file (a file renamed or replaced meanwhile is
    still the one read), or from a spool of what the first pass read (stdin, a pipe, a
    FIFO). Its output is held until the bytes are known to be the same (CRC-32), then
    written after ``header``.

    Raises:
        _Changed: the file changed under the first pass (truncated or rewritten):
            nothing is written for it, not even ``header``.
    """
    # a summary line: its text, then "; ref ", the ref (source, two offsets, a CRC) and a newline; the
    # ref by its length (its offsets and CRC, unknown yet, would move an estimate of its tokens)
    ref = f"; ref {refs.source}:{10**9}-{10**9}:{0xFFFFFFFF:08x}]\n"
    # the chosen output's summaries are short: each piece kept apart costs one
    terse = replace(config, summary_chars=min(config.summary_chars, BUDGET_SUMMARY_CHARS))
    drop_tokens = terse.summary_chars / SUMMARY_CHARS_PER_TOKEN + len(ref.encode()) / REF_BYTES_PER_TOKEN
    pool = UnitPool(tokens, drop_tokens, asked=asked_patterns(config))
    with contextlib.ExitStack() as stack:
        held = stack.enter_context(tempfile.SpooledTemporaryFile(BUFFER_BYTES))
        own = _Writer(held, fmt, name, refs, limit=max(tokens, drop_tokens))
        first = StreamFilter(replace(config, explain=True), source=name)
        handle = stack.enter_context(_open(name))
        regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        start = handle.tell() if regular else 0  # stdin redirected from a file may not start at 0
        spool = None if regular else stack.enter_context(tempfile.TemporaryFile())  # deleted when closed
        checksum = _Checksum()
        copies: list[Callable[[bytes], object]] = [*refs.copies, checksum]
        if spool is not None:
            copies.append(spool.write)

        def take(runs: list[Run]) -> None:
            pool.add(runs)
            if own.within_limit():  # past it, the filter's own output is not wanted
                # the traces are for the pool; the output has them only with --explain
                own(runs if config.explain else [replace(r, traces=(), traces_omitted=0) for r in runs])

        try:
            read = _feed(first, handle, take, signals, copies=copies)
        except _Changed as exc:
            raise _Changed(f"{exc}; nothing written for it") from None
        refs.close()
        take(first.flush())
        log_notices(first.notices, name)  # the flush's own (the count of long lines past the first)
        if own.within_limit():
            own.end(first)
            return _copy(held, out, header)
        second = StreamFilter(terse, source=name, selection=pool.select())
        again = spool if spool is not None else handle
        again.seek(start if spool is None else 0)
        held.seek(0)
        held.truncate()
        chosen = _Writer(held, fmt, name, refs)
        check = _Checksum()
        # the same bytes: a file that grew since the first pass is read as far as it read
        with contextlib.suppress(_Changed):  # a truncation: the checksums below differ, and say so
            _feed(second, again, chosen, None, copies=(check,), limit=read, notify=False)
        if check.total != checksum.total or check.crc != checksum.crc:
            raise _Changed(
                f"{name} changed while --budget-tokens read it a second time (truncated or rewritten); "
                "nothing written for it"
            )
        chosen(second.flush())
        second.notices.clear()  # the first pass logged them
        chosen.end(second)
        return _copy(held, out, header)


class _Checksum:
    """CRC-32 and length of the chunks it is called with."""

    def __init__(self) -> None:
        self.crc = 0
        self.total = 0

    def __call__(self, chunk: bytes) -> None:
        self.crc = zlib.crc32(chunk, self.crc)
        self.total += len(chunk)


def _copy(held: IO[bytes], out: BinaryIO, header: bytes) -> bytes:
    """Write ``header``, then everything in ``held``, to ``out``; return the last byte written."""
    _write(out, header)
    last = header[-1:]
    held.seek(0)
    while chunk := held.read(READ_BYTES):
        _write(out, chunk)
        last = chunk[-1:]
    _flush(out)
    return last


class _Refs:
    """Gives each DROP run of one input a ref: the file itself, or the archive's copy of stdin
    (or of a FIFO, a device: what cannot be read again).

    Attributes:
        source: what the refs name (the file's absolute path, or the archive's name).
        copies: where each chunk read must also go (the archive, for stdin).
    """

    def __init__(self, name: str) -> None:
        self.archive: Archive | None = None
        self.copies: tuple[Callable[[bytes], object], ...] = ()
        if name == "-" or not os.path.isfile(name):  # a FIFO or a device cannot be read again
            self.archive, self.of = archive_refs(name)
            self.source = self.archive.source if self.archive is not None else ""
            self.copies = (self.archive.write,) if self.archive is not None else ()
        else:
            self.source = path = str(Path(name).resolve())
            self.of = lambda run: ref_of(path, run)

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


@contextlib.contextmanager
def _open(name: str) -> Iterator[BinaryIO]:
    """The input named ``name``: a file, or stdin for ``-`` (left open after)."""
    if name == "-":
        yield sys.stdin.buffer
        return
    with open(name, "rb") as handle:
        yield handle


class _Writer:
    """Writes runs of one input to ``out`` in format ``fmt``, each DROP run with its ref.

    ``limit``: once the runs given would take more than this many estimated tokens
    (``budget.estimate_tokens``) in the ``text`` format (what a budget counts, whatever ``fmt``),
    nothing more is written (``within_limit`` then says so).
    """

    def __init__(self, out: IO[bytes], fmt: str, name: str, refs: _Refs, limit: float | None = None) -> None:
        self.out, self.fmt, self.name, self.refs = out, fmt, name, refs
        self.text_refs = TextRefs()  # (JSONL's refs are whole; a budget counts the text's)
        self.live = False  # flush after each batch (the input is a pipe or terminal)
        self.limit = limit
        self.written = 0.0
        self.last = b""  # the last byte written

    def __call__(self, runs: list[Run]) -> None:
        for run in runs:
            if not self.within_limit():
                return
            ref = self.refs.of(run)
            text_ref = self.text_refs(ref)
            data = render(run, self.fmt, self.name, text_ref if self.fmt == "text" else ref)
            if self.limit is not None:
                text = data if self.fmt == "text" else render(run, "text", "", text_ref)
                self.written += estimate_tokens(text)
                if not self.within_limit():
                    return
            _write(self.out, data)
            self.last = data[-1:] or self.last
        if self.live and runs:
            _flush(self.out)

    def within_limit(self) -> bool:
        """Whether everything given so far was written."""
        return self.limit is None or self.written <= self.limit

    def end(self, sf: StreamFilter) -> None:
        """Write the end of the input: notices to the log, the JSONL end event; flush."""
        log_notices(sf.notices, self.name)
        if self.fmt == "jsonl":
            _write(self.out, end_event(sf.stats, self.name))
        _flush(self.out)


def _feed(
    sf: StreamFilter,
    handle: BinaryIO,
    emit: Callable[[list[Run]], None],
    signals: _Signals | None,
    copies: Sequence[Callable[[bytes], object]] = (),
    limit: int = -1,
    notify: bool = True,
) -> int:
    """Feed ``handle`` through ``sf``, giving runs to ``emit`` as they are decided and each chunk
    to ``copies`` (an archive, a spool); return the bytes read.

    ``signals``: stop reading when a stop signal comes. ``limit``: most bytes to read (-1: all).
    ``notify``: log the filter's input warnings (a second pass over the same bytes does not).
    """
    name = sf.source
    # a large regular file: a second process computes the stateless stages ahead
    worker = FactsWorker(name, sf.preparer, READ_BYTES) if name != "-" and worth_a_worker(name) else None
    if worker is not None:
        sf.preparer = worker
    fd = handle.fileno()
    # a regular file is watched for truncation or a rewrite in place, as follow does; a pipe or
    # terminal is written through as it comes, a file at the end
    pos = ReadPosition.at(fd, handle.tell()) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    if isinstance(emit, _Writer):
        emit.live = pos is None
    read = 0
    try:
        while limit < 0 or read < limit:
            size = READ_BYTES if limit < 0 else min(READ_BYTES, limit - read)
            chunk = signals.read(handle, size) if signals is not None else handle.read(size)
            if pos is not None:  # checked after the read (and at the end): a new file's bytes are not fed
                pos.advance(chunk)
                change = pos.change(fd)
                if change is not None:
                    raise _Changed(f"{name} was {change[1]} while it was read: stopped reading it there")
            if not chunk:
                break
            read += len(chunk)
            for copy in copies:
                copy(chunk)
            emit(sf.feed(chunk))
            if notify:
                log_notices(sf.notices, name)
            else:
                sf.notices.clear()
    finally:
        if worker is not None:
            worker.close()
    return read


class _Escaped:
    """A terminal: what is written to it has its control bytes and invalid UTF-8 shown as
    ``\\xNN`` (``sinks.escape_controls``), so a log cannot set the title or clear the screen;
    a character split between two writes is kept until the next (or ``flush``)."""

    def __init__(self, out: BinaryIO) -> None:
        from .sinks import escape_control_text  # the daemon's modules, only for a terminal

        self._out = out
        self._escape = escape_control_text
        self._decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    def write(self, data: bytes | memoryview) -> int:
        _write(self._out, self._escape(self._decoder.decode(bytes(data))))
        return len(data)

    def flush(self) -> None:
        _write(self._out, self._escape(self._decoder.decode(b"", final=True)))
        _flush(self._out)


def _write(out: IO[bytes], data: bytes) -> None:
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


def _flush(out: IO[bytes]) -> None:
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
    commands = {
        "filter": _filter,
        "expand": _expand,
        "follow": _follow,
        "run": _run,
        "send": _send,
        "daemon": _daemon,
        "check-config": _check_config,
    }
    try:
        try:
            return commands[args.command](args)
        except BaseExceptionGroup as group:  # from the daemon's task groups: report the first cause
            raise first_cause(group) from None
    except StreamfilterError as exc:
        sys.stderr.writelines(f"streamfilter: error: {line}\n" for line in str(exc).splitlines() or [""])
        _failed(args.command, str(exc), exc.exit_code)
        return exc.exit_code
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error of ours; keep Python from
        # complaining again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a socket or file the daemon could not open
        where = f" {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"streamfilter: error:{where} {exc.strerror or exc}\n")
        _failed(args.command, f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc), 1)
        return 1


def _failed(command: str, error: str, exit_code: int) -> None:
    """A daemon that cannot start or go on says so in its own logs too (``daemon.failed``, a JSON
    line in the journal beside its other events), after the plain line."""
    if command == "daemon":
        get_logger().error("daemon.failed", error=error, exit_code=exit_code)


if __name__ == "__main__":
    sys.exit(main())
