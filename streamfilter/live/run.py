"""``streamfilter run -- CMD`` (filter a command's output as it prints) and ``send`` (to a daemon).

``run`` starts CMD with stdout and stderr merged into one pipe (or two with ``separate``),
filters it live to stdout, and returns CMD's exit status (128+N when a signal N killed it).
Faithful on failure, terse on success: when CMD fails, the tail rule keeps its last ``tail_lines``
lines; when it exits 0, only the last ``success_tail`` lines (failure signatures are kept either
way); after ``HOLD_SECONDS`` of quiet the held lines up to the last one kept are shown (an error
before a hang). An output of at most ``SHORT_OUTPUT_BYTES`` is written as it is (``ShortOutput``).
A last line states the exit status. With ``tee``, the whole raw output is written
to that file too and DROP refs point into it. With a ``BaselineStore``, the lines of the last green
run of the same command in the same directory weigh less (``core.baseline``), and a run that exits
0 stores its own (``live.baselines``).

The wrapper keeps CMD's world (``process``): its output is a pipe, as when a program reads it;
once the reader of ``run``'s own stdout goes away (``| head``), CMD's pipe is closed too, so its
next write fails as it would have (SIGPIPE), and ``run`` returns its status; ``run`` returns when
CMD exits (its pipes read for ``EXIT_GRACE_SECONDS`` more at most, whatever it left running,
which goes on: a drainer reads them on);
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to CMD, unless they were sent
to the whole process group (a terminal's ^C, ``timeout``), which CMD shares: they reached it
already; CMD is then waited for, however long it cleans up; a signal ignored when ``run`` started
(``nohup``) stays ignored, by ``run`` and by CMD.
A copy of the output that cannot be written (a full disk) stops there, never the run.

``send`` runs CMD the same way but streams its raw output to a daemon's socket source inside a
run envelope (``envelope``), so the daemon filters it as one run with its own query.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import os
import secrets
import shlex
import shutil
import signal
import stat
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import anyio
from anyio.abc import ByteReceiveStream, ByteStream

from ..core.errors import NotStartedError, StreamfilterError, UsageError
from ..core.output import marker_event
from ..core.settings import FilterConfig
from ..core.words import counted
from .baselines import BaselineStore, GreenRun
from .envelope import SUCCESS_TAIL_LINES, Ended, control_line, exit_text, status_of, stop_received
from .expand import Archive, evict, ref_of, state_dir, state_dirs, unreferenced_from
from .outcome import Filtered
from .process import (
    EXIT_GRACE_SECONDS,
    GROUP_SIGNAL_SECONDS,
    KILL_GRACE_SECONDS,
    Command,
    OutputPipe,
    passed_signals,
    reader_gone,
)
from .stops import STOP_SIGNALS, StopSignals
from .writes import flush_out, write_all

if TYPE_CHECKING:
    # (imported where a live run uses them: a run whose output is short builds no filter)
    from ..core.baseline import ShapeCollector
    from ..core.records import FilterStats, Run
    from .batch import LetGoFilter
    from .config import SourceConfig
    from .sinks import Sink, StdoutSink
    from .stream import LiveStream

__all__ = (
    "KILL_GRACE_SECONDS",
    "LEFT_OPEN",
    "MEMORY_BYTES",
    "RUNS_BYTES",
    "RUN_FILE_BYTES",
    "SHORT_OUTPUT_BYTES",
    "Captured",
    "CommandError",
    "OutputCopy",
    "ShortOutput",
    "Stopping",
    "Tee",
    "capture_command",
    "command_text",
    "filtered_here",
    "let_go_filter",
    "not_started_event",
    "output_file",
    "parse_socket",
    "pass_signals",
    "prints_another_runs_log",
    "pump",
    "report_run",
    "run_budgeted",
    "run_command",
    "send_command",
    "start_command",
)

READ_BYTES = 1 << 16
# a command that prints a line at a time (flushed) gives a read a line: each would be a block of
# the filter (about 2 ms each), so after a short read what follows it closely (each read within
# GATHER_GAP_SECONDS of the one before) is fed with it, for GATHER_SECONDS at most (helper-29:
# 20,000 lines in 6 s took 6.2 s of CPU; helper-86: at a gap of 5 ms, 900 lines 10 ms apart were
# fed one at a time, 3.4 s of CPU beyond the command's; 1.6 s at 12 ms). A read waits the gap
# before it is fed, so the gap and the quiet that settles a stream (``SourceTiming.idle_seconds``,
# 0.05 s) stay under a slow printer's spacing: at 20 ms one printing every 70 ms was never quiet
GATHER_SECONDS = 0.05
GATHER_GAP_SECONDS = 0.012
# ... and a fast command's reads (a pipe gives 64 KiB at most) up to this many bytes, one feed: each
# feed costs the filter's stages a fixed part (run -- cat of 20 MB made 307 feeds and took twice
# filter's CPU, helper-48)
FEED_BYTES = 1 << 20
_PIPE_ENDS = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
# a command's output is decided with the full look-ahead while it keeps printing (as `filter`
# would); only a pause lets the pending lines out early
RUN_MAX_DELAY_SECONDS = 3600.0
# send: CMD's output kept after it is sent, to filter here what a stopping daemon did not read
REPLAY_BYTES = 16 << 20
REPLY_SECONDS = 5.0  # send: after the run's end, how long the daemon gets to read it and close
MAX_REPLY_BYTES = 4096  # send: most bytes kept of a daemon's reply line not yet ended
RECENT_SECONDS = 600.0  # a kept output written this recently is never evicted (its run may be filtering it)
RUNS_BYTES = 256 << 20  # run --budget-tokens: the whole outputs kept in the state directory, in bytes
# and one run's whole output, in bytes: past it the file goes, and the end of the output is held in
# memory (``OutputCopy``), as after a full disk (a looping test printed 380 MB a second into it)
RUN_FILE_BYTES = RUNS_BYTES // 2
# report_run: a whole output this short is written as it is, the filter not even built: it is about
# two summary lines (a budget's summary with its ref is 150 to 250 bytes), so filtering could save
# the reader a few dozen tokens at most, and would hide lines
SHORT_OUTPUT_BYTES = 512
# run --budget-tokens where no file can hold the whole output: the most of its end held in memory, in bytes
MEMORY_BYTES = 64 << 20
# and what its first bytes, let go, are filtered to as they pass (``batch.LetGoFilter``): this share of
# the budget more, in bytes at about 4 bytes a token (a failure there had not been shown, helper-109)
LET_GO_SHARE, LET_GO_BYTES_PER_TOKEN = 0.5, 4


# words a shell runs itself, with no program of that name on PATH (POSIX's special built-ins, and
# bash's that change the shell or read from it)
_SHELL_BUILTINS = frozenset(
    ("cd", "exit", "export", "source", ".", "set", "unset", "alias", "unalias", "eval", "exec", "readonly",
     "return", "shift", "trap", "ulimit", "umask", "declare", "local", "typeset", "let", "shopt", "pushd", "popd",
     "dirs", "history", "bg", "fg", "jobs", "wait", "break", "continue", "times", "builtin", "enable", "type",
     "hash", "read", "getopts", "help", "disown", "mapfile", "readarray", "[[", "if", "for", "while", "until",
     "case", "select", "function", "!", "{", "(")
)  # fmt: skip


class CommandError(StreamfilterError):
    """CMD could not be started: not found (exit 127), or not executable or not to be run (exit 126: a
    directory, no permission, an argument list too long)."""

    def __init__(self, program: str, reason: str, exit_code: int) -> None:
        super().__init__(f"{program}: {reason}")
        self.reason = reason  # without the program's name (a status line names the whole command)
        self.exit_code = exit_code


async def start_command(argv: Sequence[str], separate: bool, cwd: str | None = None, detached: bool = False) -> Command:
    """Start ``argv`` in ``cwd``, its output to a pipe (stderr merged, or to a second pipe with
    ``separate``); ``detached``: see ``capture_command``. The caller has taken our stop signals
    already (``anyio.open_signal_receiver``): a ^C that came before, while the event loop started,
    cancelled the run (asyncio's handler), and that ends it here, before CMD starts; it had ended it
    at the first wait after, ``run`` exiting 130 with nothing said and CMD left running (helper-101).

    Raises:
        CommandError: CMD cannot be started.
    """
    await anyio.lowlevel.checkpoint()
    if not argv[0]:  # (exec looks for "" in each PATH folder, a directory: "permission denied")
        raise CommandError(argv[0], "command not found", 127)
    try:
        try:
            command = Command(argv, separate, cwd, detached)
        except OSError as exc:
            if exc.errno != errno.ENOEXEC:
                raise
            # an executable without a #! line is a shell script to execvp and to the shells (POSIX),
            # but not a binary for another machine: its lines would run as commands (helper-41)
            found = argv[0] if os.sep in argv[0] else shutil.which(argv[0]) or argv[0]
            if await _binary(found, cwd):
                raise CommandError(argv[0], "cannot execute binary file: Exec format error", 126) from None
            command = Command(["/bin/sh", found, *argv[1:]], separate, cwd, detached)
    except FileNotFoundError:
        # bash's words and status: a name not in PATH; a path to nothing; a file whose #!
        # interpreter is not there
        if argv[0] in _SHELL_BUILTINS:  # (helper-48: `run -- cd x` said only "command not found")
            reason = "command not found (a shell builtin: run it in a shell, sh -c '...')"
        elif os.sep not in argv[0]:
            reason = "command not found"
        elif await anyio.Path(cwd or ".", argv[0]).is_file():
            reason = "cannot execute: required file not found"
        else:
            reason = "No such file or directory"
        raise CommandError(argv[0], reason, 127) from None
    except PermissionError:
        # exec of a directory fails with EACCES too: say which it is, as bash does
        folder = os.sep in argv[0] and await anyio.Path(argv[0]).is_dir()
        reason = "is a directory" if folder else "permission denied"
        raise CommandError(argv[0], reason, 126) from None
    except OSError as exc:  # (E2BIG "Argument list too long", ETXTBSY, ELOOP...: bash's 126 and its words)
        raise CommandError(argv[0], exc.strerror or str(exc), 126) from None
    await command.connect()
    return command


async def _binary(path: str, cwd: str | None) -> bool:
    """Whether the file ``path`` (from ``cwd``) is binary as bash tells one: a NUL byte before the
    first line end in its first 80 bytes; False when it cannot be read."""
    try:
        async with await anyio.open_file(anyio.Path(cwd or ".", path), "rb") as file:
            head = await file.read(80)
    except OSError:
        return False
    return b"\0" in head.split(b"\n", 1)[0]


class Stopping:
    """The first stop signal (``STOP_SIGNALS``) a run received.

    Attributes:
        signum: that signal, or None while none came.
        received: set at the first.
    """

    def __init__(self, received: anyio.Event | None = None) -> None:
        self.signum: int | None = None
        self.received = received if received is not None else anyio.Event()


async def pass_signals(signals: AsyncIterator[int], process: Command, stopping: Stopping) -> None:
    """Pass the signals from ``signals`` (``passed_signals``) on to ``process`` until cancelled, each
    ``GROUP_SIGNAL_SECONDS`` later (not one sent to our whole process group too, which reached it
    already: ``Command.got_directly``), and note the first stop signal in ``stopping``. The command
    is then waited for, however long it takes to clean up, as without us: a command that ignores
    the signal goes on (a second one is passed on too)."""
    async for signum in signals:
        if stopping.signum is None and signum in STOP_SIGNALS:
            stopping.signum = signum
            stopping.received.set()
        await anyio.sleep(GROUP_SIGNAL_SECONDS)
        if not process.got_directly(signum):
            process.send_signal(signum)


async def pump(
    live: LiveStream, pipe: ByteReceiveStream | OutputPipe, tee: Tee | None, short: ShortOutput | None = None
) -> None:
    """Feed ``pipe`` into ``live`` until its end, settling when the command pauses (and into
    ``short``, while the output is short); the bytes that come within ``GATHER_SECONDS`` of a
    short read go in with it."""
    ended = False
    while not ended:
        due = live.due()
        data = b""
        with anyio.move_on_after(max(0.0, due - time.monotonic())) if due is not None else anyio.CancelScope():
            try:
                data = await pipe.receive(READ_BYTES)
            except _PIPE_ENDS:
                return
        if data:
            data, ended = await _gather(pipe, data)
        if data:
            if tee is not None:
                tee.write(data)
            if short is not None:
                await short.saw(data)
            await live.feed(data)
        else:
            await live.tick()


async def _gather(pipe: ByteReceiveStream | OutputPipe, data: bytes) -> tuple[bytes, bool]:
    """``data`` and what ``pipe`` gives right after it (``GATHER_GAP_SECONDS`` at most between two
    reads, ``GATHER_SECONDS`` in all), up to ``FEED_BYTES``; and whether the pipe ended meanwhile."""
    parts, size = [data], len(data)
    end = time.monotonic() + GATHER_SECONDS
    while size < FEED_BYTES:
        left = end - time.monotonic()
        if left <= 0:
            break
        with anyio.move_on_after(min(GATHER_GAP_SECONDS, left)) as waited:
            try:
                more = await pipe.receive(min(READ_BYTES, FEED_BYTES - size))
            except _PIPE_ENDS:
                return b"".join(parts), True
        if waited.cancelled_caught:
            break
        parts.append(more)
        size += len(more)
    return b"".join(parts), False


class ShortOutput:
    """What ``run`` prints of a command whose whole output is short: at most ``SHORT_OUTPUT_BYTES``
    (in text, from one pipe) is written as it is at its end, as with a budget (``report_run``): its
    DROP summaries, each with a ref, are longer than the lines they stand for (``seq 8``: 16 bytes
    in, 237 out). What the filter prints meanwhile is held (``HoldingSink``) and goes out once the
    output is longer, or once the command has been quiet ``hold_seconds``, as long as the stream
    holds its last lines (``LiveStream.release_after``): an error before a hang is shown then, and
    the output is filtered from there on as any other.

    Args:
        sink: where the run's output goes.
        hold_seconds: the longest a write is held, in seconds.

    Attributes:
        held: the sink the run's streams write to.
    """

    def __init__(self, sink: Sink, hold_seconds: float) -> None:
        from .sinks import HoldingSink

        self.held = HoldingSink(sink)
        self._sink = sink
        self._hold_seconds = hold_seconds
        self._output: bytearray | None = bytearray()  # the command's output while it is short; None after
        self._last = time.monotonic()  # when its last bytes came

    async def saw(self, data: bytes) -> None:
        """The command's next bytes."""
        if self._output is None:
            return
        self._output += data
        self._last = time.monotonic()
        if len(self._output) > SHORT_OUTPUT_BYTES:
            await self._filtered()

    async def watch(self) -> None:
        """Let the held writes go once the command has been quiet ``hold_seconds`` (a task of the run's)."""
        await self.held.holding.wait()
        while self._output is not None:
            wait = self._last + self._hold_seconds - time.monotonic()
            if wait <= 0:
                await self._filtered()
                return
            await anyio.sleep(wait)

    async def end(self) -> None:
        """The command's output ended (its streams too): write it whole while it is short (with a
        line end, so that the status line starts a line), in place of what was held."""
        if self._output is None:
            return
        data, self._output = bytes(self._output), None
        self.held.drop()
        if data:
            await self._sink.send(data if data.endswith(b"\n") else data + b"\n")

    async def _filtered(self) -> None:
        self._output = None
        await self.held.let_go()


class Tee:
    """The raw output, written to a file as it comes; refs of DROP runs point into it.

    A write that fails (a full disk) stops the copy there, not the run: ``failed`` says why, and
    the refs of the runs past the bytes written are not given.
    """

    def __init__(self, path: str) -> None:
        self.path = str(Path(path).resolve())
        _regular_or_none(path)
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise NotStartedError(f"cannot write --tee file {path}: {exc.strerror or exc}; CMD was not run") from None
        self.written = 0  # bytes in the file
        self.failed: str | None = None
        self.first_unreferenced: str | None = None  # as ``Archive.first_unreferenced``

    def write(self, data: bytes) -> None:
        if self.failed is None:
            self.written, self.failed = _write_fd(self._fd, data, self.written)

    def ref(self, run: Run) -> str:
        if run.end_byte <= self.written:
            return ref_of(self.path, run)
        if run.decision == "drop" and self.first_unreferenced is None:
            self.first_unreferenced = unreferenced_from(run)
        return ""

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _regular_or_none(path: str | Path) -> None:
    """Check that a ``--tee`` file is a regular file or none yet: refs point into it, and
    ``--budget-tokens`` filters what it reads back from it (``--tee /dev/null`` reported an empty
    output, the error in it lost; a FIFO would block the open).

    Raises:
        NotStartedError: ``path`` is something else (a device, a FIFO, a directory).
    """
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise NotStartedError(
                f"cannot write --tee file {path}: not a regular file (refs point into it, and the whole "
                "output is read back from it); CMD was not run"
            )


def _write_fd(fd: int, data: bytes, written: int) -> tuple[int, str | None]:
    """Write all of ``data`` to ``fd`` after ``written`` bytes; return the bytes written in all,
    and why the rest could not be (None when it was)."""
    view = memoryview(data)
    try:
        while view:
            n = os.write(fd, view)
            written += n
            view = view[n:]
    except OSError as exc:
        return written, exc.strerror or str(exc)
    return written, None


async def run_command(
    argv: Sequence[str],
    config: FilterConfig,
    fmt: str = "text",
    separate: bool = False,
    tee_path: str | None = None,
    success_tail: int = SUCCESS_TAIL_LINES,
    raw: bool = False,
    failure_tail: int | None = None,
    baselines: BaselineStore | None = None,
) -> Ended:
    """Run ``argv``, filter its output live to stdout; return how it ended: its exit status (see
    module docstring) and the signal that killed it (``Ended``).

    Args:
        config: the filter's settings; its ``tail_lines`` must be at least the larger of
            ``failure_tail`` and ``success_tail`` (the lines held back for the end).
        failure_tail: lines kept at the end when CMD fails (default ``config.tail_lines``).
        success_tail: lines kept at the end when CMD exits 0.
        baselines: where the baseline of CMD is read, and stored when CMD exits 0 (None: none).

    Raises:
        CommandError: CMD cannot be started (a status line says so first).
        NotStartedError: the ``tee`` file cannot be made (CMD is not started).
        StreamfilterError: stdout is closed; a write to it failed (a full disk): CMD runs to its
            end, and the message says its status.
    """
    from .config import SinkConfig
    from .sinks import StdoutSink
    from .stream import HOLD_SECONDS, LiveStream, archived_stream

    sink = StdoutSink(SinkConfig("stdout", "stdout", format=fmt, raw=raw), log_closed=False, hold_failure=True)
    sink.shared = separate  # text then labels each switch between stdout and stderr
    short = ShortOutput(sink, HOLD_SECONDS) if fmt == "text" and not separate else None
    out: Sink = short.held if short is not None else sink
    name = os.path.basename(argv[0])
    command = command_text(argv)
    source = _command_source(name, config)
    green = _green_run(baselines, argv)
    tee = Tee(tee_path) if tee_path else None
    # the stop signals are taken before CMD starts: one that comes at once is passed on too
    with anyio.open_signal_receiver(*passed_signals()) as signals:
        try:
            process = await start_command(argv, separate)
        except CommandError as exc:
            if tee is not None:
                tee.close()
            await sink.send(
                marker_event(
                    fmt, name, f"{command}: {exc.reason} (status {exc.exit_code})", "exit", status=exc.exit_code
                )
            )
            raise
        pipes: list[tuple[str, OutputPipe]] = [(name, process.stdout)]
        if separate:
            assert process.stderr is not None
            pipes = [("stdout", process.stdout), ("stderr", process.stderr)]
        streams: list[LiveStream] = []
        for stream_name, _ in pipes:
            if tee is not None and not separate:
                live = LiveStream(
                    stream_name, config, source.timing, [out], tee.ref, hold_tail=True, baseline=green.baseline
                )
            else:
                live = archived_stream(source, [out], stream_name, None, hold_tail=True, baseline=green.baseline)
            live.filter.collector = green.collector
            live.release_after = HOLD_SECONDS  # a pause shows the held lines up to the last kept (an error)
            live.pause_shows_tail = True  # and the last ones (a prompt the command waits at)
            streams.append(live)
        stopping = Stopping()
        gone = anyio.Event()  # the reader of our stdout went away
        async with anyio.create_task_group() as tg:
            tg.start_soon(pass_signals, signals, process, stopping)
            if short is not None:
                tg.start_soon(short.watch)
            with anyio.CancelScope() as reading:
                tg.start_soon(_watch_reader, sink, process, gone, reading)
                async with anyio.create_task_group() as pumps:
                    for live, (_, pipe) in zip(streams, pipes, strict=True):
                        pumps.start_soon(pump, live, pipe, tee, short)
                    pumps.start_soon(process.wait)  # (its pipes are then read for a grace at most)
            returncode = await process.wait()
            tg.cancel_scope.cancel()
    left_open = any(pipe.left_open for _, pipe in pipes)
    await process.aclose()
    passed = _passed(argv, returncode)
    for live in streams:
        await live.end(success_tail if passed else failure_tail, passed)
    if short is not None:
        await short.end()
    if tee is not None:
        tee.close()
    if left_open:
        await streams[-1].marker(LEFT_OPEN)
    for copied, note in _copy_notes(tee, streams):
        await (copied or streams[-1]).marker(note)
    if returncode == 0 and stopping.signum is None:  # (a run stopped early printed part of its output)
        _save(green)
    end = Ended.of(returncode)
    await sink.send(marker_event(fmt, name, exit_text(command, returncode), "exit", status=end.status))
    if sink.failed is not None:  # (CMD ran to its end: its status is said where it can be, helper-89)
        raise StreamfilterError(f"{sink.failed}; {exit_text(command, returncode)}")
    if gone.is_set():
        _stdout_to_devnull()
    return end


def _stdout_to_devnull() -> None:
    """Our stdout's reader went away: what is left in its buffer goes nowhere at exit, without a complaint."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


LEFT_OPEN = (
    "a process the command left running holds its output open: what it prints more than "
    f"{EXIT_GRACE_SECONDS:g} s after the command's exit is read and discarded (it goes on running)"
)


async def _watch_reader(sink: StdoutSink, process: Command, gone: anyio.Event, reading: anyio.CancelScope) -> None:
    """Once the reader of our stdout goes away (``| head``; seen at once where stdout is a pipe,
    else at the first write that fails): set ``gone``, close the command's pipes (``_reader_went``)
    and cancel ``reading``."""
    async with anyio.create_task_group() as tg:

        async def seen(waiting: Awaitable[object]) -> None:
            if await waiting is not False:
                _reader_went(process, gone, reading)
                tg.cancel_scope.cancel()

        tg.start_soon(seen, sink.gone.wait())
        with contextlib.suppress(OSError, ValueError, AttributeError):  # (no stdout, or not a real one)
            tg.start_soon(seen, reader_gone(sys.stdout.fileno()))


def _copy_notes(tee: Tee | None, streams: Sequence[LiveStream]) -> list[tuple[LiveStream | None, str]]:
    """Why the whole output could not be kept (a copy whose write failed), once per copy, each with
    the stream whose copy it is (None: ``--tee``'s, of the whole output): with ``--separate`` a
    note goes out with its own stream, under its header (helper-78: stdout's note stood under
    stderr's, beside stderr's own)."""
    notes: list[tuple[LiveStream | None, str]] = []
    if tee is not None and tee.failed is not None:
        notes.append((None, f"the whole output could not be kept in {tee.path}: {tee.failed}; {_refs_end(tee)}"))
    for live in streams:
        archive = getattr(live, "archive", False)  # (False: a stream with a file of its own, --tee)
        if archive is None and live.filter.stats.dropped_lines:
            # (said on stderr alone, archive.unavailable, in JSON: an agent reads stdout, helper-71)
            text = "the whole output could not be kept (no state or temporary directory can be written): no refs"
            notes.append((live, text))
        if not isinstance(archive, Archive):
            continue
        if archive.archived and archive.gone():
            folder = archive.folder
            text = f"the whole output's file in {folder} was removed while CMD ran: no ref can be read back"
        elif archive.failed is not None:
            text = f"the whole output could not be kept in {archive.folder}: {archive.failed}; {_refs_end(archive)}"
        elif archive.capped:  # (said on stderr alone, archive.full: an agent reads stdout, helper-48)
            text = (
                f"the whole output past its first {archive.limit >> 20} MiB is not kept (a stream's share of the "
                f"archive); {_refs_end(archive)}"
            )
        else:
            continue
        notes.append((live, text))
    return notes


def _refs_end(copy: Tee | Archive) -> str:
    """Where a copy that stopped leaves the refs: a DROP run that runs past its bytes has none, and
    the note names that run's first line, not the byte (a ref is a whole run's: "no refs past byte
    N" was read as refs up to it, where the run holding byte N began at line 1, helper-77)."""
    kept = f"the copy holds its first {copy.written if isinstance(copy, Tee) else copy.archived} bytes"
    if copy.first_unreferenced is None:
        return f"{kept}, and each of its summaries has its ref"
    return f"{kept}: the summaries from {copy.first_unreferenced} on have no ref"


def output_file(argv: Sequence[str], folder: Path | None = None, cap_bytes: int = RUNS_BYTES) -> Path:
    """A new file for the whole output of ``argv`` in ``folder`` (default ``runs/`` in the state
    directory, or, where that cannot be written (a sandboxed agent), ``streamfilter-UID/runs/`` in
    the temporary directory, never the working directory), named by time, process id and program
    (and a count from 2 when that name is taken), after evicting the oldest files there until the
    others take at most half of ``cap_bytes`` (not one a run still writes, ``_evict``).

    Raises:
        StreamfilterError: no folder can be created or no file can be made (each reason, ``; ``
            between them).
    """
    if folder is not None:
        try:
            return _output_file(argv, folder, cap_bytes)
        except OSError as exc:
            raise StreamfilterError(f"cannot keep the command's output in {folder}: {exc.strerror or exc}") from None
    reasons: dict[str, list[str]] = {}
    for where in state_dirs():
        try:
            return _output_file(argv, where / "runs", cap_bytes)
        except OSError as exc:
            reasons.setdefault(exc.strerror or str(exc), []).append(str(where))
    said = "; ".join(f"{', '.join(folders)}: {why}" for why, folders in reasons.items())
    raise StreamfilterError(f"cannot keep the command's output in {said}")


def _output_file(argv: Sequence[str], folder: Path, cap_bytes: int) -> Path:
    """``output_file`` in ``folder``. Raises OSError."""
    program = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in os.path.basename(argv[0]))[:40]
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    files = sorted(folder.glob("*.log"), key=lambda f: f.stat().st_mtime)
    total = sum(f.stat().st_size for f in files)
    for old in files:
        if total <= cap_bytes // 2:
            break
        size = old.stat().st_size
        if _evict(old):
            total -= size
    stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{program}"
    # a server (``streamfilter mcp``) may start the same program twice in a second, even at once
    n = 1
    while True:
        path = folder / f"{stem}{f'-{n}' if n > 1 else ''}.log"
        try:
            path.touch(mode=0o600, exist_ok=False)
            return path
        except FileExistsError:
            n += 1


def _evict(path: Path) -> bool:
    """Remove a kept output unless a run still writes it (``evict``) or wrote it in the last
    ``RECENT_SECONDS``; whether it was removed."""
    try:
        if time.time() - path.stat().st_mtime < RECENT_SECONDS:
            return False
    except FileNotFoundError:
        return False
    return evict(path)


def _moved_copy(argv: Sequence[str], folder: Path, old: Path, written: int, rest: bytes) -> tuple[Path, int]:
    """A new ``output_file`` in ``folder`` holding the first ``written`` bytes of ``old``, then
    ``rest``; its path and a descriptor open for reading and writing, with a shared lock held
    (``OutputCopy``).

    Raises:
        OSError: it cannot be made or written (it is removed).
    """
    path = _output_file(argv, folder, RUNS_BYTES)
    fd = -1
    try:
        fd = os.open(path, os.O_RDWR | os.O_TRUNC | os.O_CLOEXEC)  # (read back by ``_to_memory``)
        fcntl.flock(fd, fcntl.LOCK_SH)
        with open(old, "rb") as handle:
            done = 0
            while done < written and (chunk := handle.read(min(READ_BYTES, written - done))):
                done, why = _write_fd(fd, chunk, done)
                if why is not None:
                    raise OSError(why)
        why = _write_fd(fd, rest, 0)[1]
        if why is not None:
            raise OSError(why)
    except OSError:
        if fd >= 0:
            os.close(fd)
        path.unlink(missing_ok=True)
        raise
    return path, fd


class OutputCopy:
    """The whole output of a run (``run --budget-tokens``, the MCP server's ``run``), copied from its
    pipe as it comes: what the report at its end is filtered from, and what ``expand`` reads later.

    In a file (``create``) while it can be written; where none could be made, once a write fails
    (a full disk), or once the output passes ``file_bytes`` (a file in the state directory, not a
    ``--tee`` file the user named), in memory: the file's bytes so far and all after them, at most
    the last ``memory_bytes`` (from a line start). The report is then filtered from memory, without
    refs, and one line says that the whole output could not be kept, and why (``note``). The
    command never waits for the copy, nor fails with it.

    Attributes:
        path: the file, or None (in memory).
        size, lines: of the whole output so far (an unterminated last line counts).
    """

    def __init__(
        self,
        path: Path | None,
        problem: str | None = None,
        memory_bytes: int = MEMORY_BYTES,
        file_bytes: int | None = None,
        let_go: Callable[[], LetGoFilter] | None = None,
    ) -> None:
        """The copy in ``path`` (opened by ``open``; a finished run's file as it is; at most
        ``file_bytes``, None: no limit), or in memory (None) because of ``problem``; ``let_go``
        makes the filter of the first bytes let go from memory (``create``; None: a finished run's
        file, read whole)."""
        self.path = path
        self._file_bytes = file_bytes
        self.problem = problem  # why the whole output is not in a file
        self.moved: str | None = None  # where the file went instead of the state directory, and why
        self.size = 0
        self.lines = 0
        self._last = b"\n"
        self._fd = -1
        self._limit = memory_bytes
        self._held: collections.deque[bytes] = collections.deque()  # in memory: the output's last chunks
        self._held_bytes = 0
        self._lost_bytes = 0  # the output's first bytes, not held
        self._lost_lines = 0
        self._held_cut: str | None = None  # why fewer than memory_bytes could be filtered
        self._argv: list[str] | None = None  # a file of ``output_file``'s: where it may move (``_move``)
        self._named = False  # the ``--tee`` file the user named: kept whatever it holds
        # what makes the filter of the output's first bytes as they are let go, and that filter
        self._make_let_go = let_go
        self._let_go: LetGoFilter | None = None

    @classmethod
    def create(cls, argv: Sequence[str], let_go: Callable[[], LetGoFilter], tee_path: str | None = None) -> OutputCopy:
        """A new copy for ``argv``'s output: in ``tee_path``, else ``output_file``'s (the state
        directory, the temporary directory), else in memory, where its first bytes let go are
        filtered as they go by the filter ``let_go`` makes then (``let_go_filter``; ``let_go``
        has what it writes).

        Raises:
            NotStartedError: ``tee_path`` cannot be written (it was asked for).
        """
        if tee_path:
            copy = cls(Path(tee_path).resolve(), let_go=let_go)
            copy._named = True
            copy.open(asked=True)
            return copy
        try:
            path = output_file(argv)
        except StreamfilterError as exc:
            return cls(None, str(exc), let_go=let_go)
        copy = cls(path, file_bytes=RUN_FILE_BYTES, let_go=let_go)
        copy._argv = list(argv)
        if not path.is_relative_to(state_dir()):
            copy.moved = (
                f"the state directory {state_dir()} cannot be written; the whole output is kept in {path.parent}"
            )
        copy.open()
        return copy

    def open(self, asked: bool = False) -> None:
        """Open the file for writing (truncated), holding a shared lock on it while the run writes (no
        other run evicts it); in memory when it cannot be.

        Raises:
            NotStartedError: it cannot be, and it was ``asked`` for (``--tee``).
        """
        assert self.path is not None
        if asked:
            _regular_or_none(self.path)
        try:
            # (read and write: ``_to_memory`` reads it back through the descriptor, the file gone or not)
            # (a --tee file is the user's, made as tee makes one: 0o666 less the umask)
            mode = 0o666 if self._named else 0o600
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
            fcntl.flock(self._fd, fcntl.LOCK_SH)
        except OSError as exc:
            if asked:
                raise NotStartedError(
                    f"cannot write --tee file {self.path}: {exc.strerror or exc}; CMD was not run"
                ) from None
            self._to_memory(f"cannot write {self.path}: {exc.strerror or exc}")

    def write(self, data: bytes) -> None:
        """The next bytes of the output."""
        self.size += len(data)
        self.lines += data.count(b"\n")
        self._last = data[-1:]
        if self._fd >= 0 and self._file_bytes is not None and self.size > self._file_bytes:
            self._to_memory(f"it passed the {self._file_bytes >> 20} MiB a run's file may take", self.size - len(data))
        if self._fd >= 0:
            written, failed = _write_fd(self._fd, data, self.size - len(data))
            if failed is None:
                return
            rest = data[written - (self.size - len(data)) :]
            if self._move(failed, written, rest):
                return
            self._to_memory(f"{failed} in {self.path} after {counted(written, 'byte')}", written)
            data = rest
        self._hold(data)

    def _move(self, failed: str, written: int, rest: bytes) -> bool:
        """The file's write failed (a full disk): go on in a new file in a later folder of
        ``state_dirs()`` (the temporary directory), with the ``written`` bytes copied there, then
        ``rest``. Whether it could (not for a ``--tee`` file, which the user named)."""
        if self._argv is None or self.path is None:
            return False
        old, dirs = self.path, list(state_dirs())
        here = next((i for i, d in enumerate(dirs) if old.is_relative_to(d)), len(dirs))
        reasons = [f"{failed} in {old.parent}"]
        for where in dirs[here + 1 :]:
            try:
                path, fd = _moved_copy(self._argv, where / "runs", old, written, rest)
            except OSError as exc:
                reasons.append(f"{exc.strerror or exc} in {where / 'runs'}")
                continue
            os.close(self._fd)
            with contextlib.suppress(OSError):
                old.unlink()
            self._fd, self.path = fd, path
            self.moved = f"{'; '.join(reasons)}: the whole output is kept in {path.parent}"
            return True
        return False

    def counts(self, done: Filtered | None) -> tuple[int, int]:
        """Lines (an unterminated last one included) and bytes of the whole output: as the report
        read them from the file (``done``), else as they passed here."""
        if self.path is not None and done is not None:
            stats = done.stats
            return stats.kept_lines + stats.dropped_lines, stats.kept_bytes + stats.dropped_bytes
        return self.lines + (self._last != b"\n"), self.size

    def _hold(self, data: bytes) -> None:
        if not data:
            return
        self._held.append(data)
        self._held_bytes += len(data)
        while self._held_bytes - len(self._held[0]) >= self._limit:  # (the last memory_bytes at least)
            old = self._held.popleft()
            self._held_bytes -= len(old)
            self._let_out(old)

    def _let_out(self, data: bytes) -> None:
        """The output's next first bytes are let go: counted, and filtered (``create``'s ``let_go``)."""
        self._lost_bytes += len(data)
        self._lost_lines += data.count(b"\n")
        if self._let_go is None and self._make_let_go is not None:
            self._let_go = self._make_let_go()
        if self._let_go is not None:
            self._let_go.feed(data)

    def let_go(self) -> tuple[bytes, FilterStats | None]:
        """What the filter of the first bytes let go wrote, and the counts of those lines, which
        ``readable``'s lines follow; ``(b"", None)`` when none was let go."""
        if self._let_go is None:
            return b"", None
        return self._let_go.finish(), self._let_go.stats

    def _to_memory(self, why: str, written: int = 0) -> None:
        """Go on in memory from here: the file's ``written`` bytes are read back (the last
        ``memory_bytes`` of them), and the file, which holds part of the output, removed, but a
        ``--tee`` file the user named: it keeps its first ``written`` bytes, as ``cmd | tee``'s
        would (it was removed, helper-41)."""
        self.problem = why
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                done = 0
                while done < written and (chunk := os.pread(self._fd, min(READ_BYTES, written - done), done)):
                    self._hold(chunk)
                    done += len(chunk)
            os.close(self._fd)
            self._fd = -1
        if self.path is not None:
            if not self._named:
                with contextlib.suppress(OSError):
                    self.path.unlink()
            self.path = None

    def close(self) -> None:
        """The run ended: release the file (its lock too). A file no longer at its path (removed
        with the state directory while the command ran, helper-41) is read back into memory first:
        the report could not read it, nor a ref."""
        if self._fd >= 0 and self.path is not None:
            try:
                now, info = os.stat(self.path), os.fstat(self._fd)
                gone = (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino)
            except OSError:
                gone = True
            if gone:
                self._to_memory(f"{self.path} was removed while the command ran", self.size)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def discard(self) -> None:
        """No output came (the command did not start): remove the file."""
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def readable(self) -> Iterator[str | None]:
        """The name to read the whole output from: the file, or a copy of the memory's in an
        anonymous file (``/proc/self/fd/N``, gone when the block ends); None when there is none."""
        if self.path is not None:
            yield str(self.path)
            return
        data = b"".join(self._held)
        if self._lost_bytes:  # from a line start
            cut = data.find(b"\n") + 1
            self._let_out(data[:cut])
            data = data[cut:]
        try:
            fd = os.memfd_create("streamfilter-output", os.MFD_CLOEXEC)
        except (OSError, AttributeError):
            yield None
            return
        try:
            written, problem = _write_fd(fd, data, 0)
            if problem is not None:
                # a limit on a file's size (ulimit -f) holds an anonymous file too: the last lines that
                # fit are filtered, and the note says so (the first ones had gone silently, helper-89)
                at = len(data) - written
                cut = data.find(b"\n", at - 1) + 1 if at else 0
                cut = cut or len(data)
                self._let_out(data[:cut])
                self._held_cut = f"a copy to filter holds at most {counted(written, 'byte')}: {problem}"
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                _write_fd(fd, data[cut:], 0)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)

    def note(self) -> str | None:
        """The line that says where the whole output is, when not where it should be, or why it could not be kept."""
        if self.path is not None:
            return self.moved
        if self.problem is None:
            return None
        text = f"the whole output could not be kept ({self.problem}): filtered from memory, without refs"
        if self._lost_bytes:
            text += (
                f"; its first {counted(self._lost_lines, 'line')} ({counted(self._lost_bytes, 'byte')}) were filtered "
                "as they passed "
                f"({self._held_cut or f'the last {self._limit >> 20} MiB are held'})"
            )
        return text


@dataclass(frozen=True, slots=True)
class Captured:
    """How a captured command ended.

    Attributes:
        returncode: its return code (-N when a signal N killed it).
        stopping: the stop signal the run received.
        left_open: a process it left running held its output open past ``EXIT_GRACE_SECONDS``.
        reader_gone: the reader of our stdout went away (``watch_stdout``): the command's output was
            closed then, and nothing can be written.
    """

    returncode: int
    stopping: Stopping
    left_open: bool = False
    reader_gone: bool = False
    timed_out: bool = False


async def capture_command(
    argv: Sequence[str],
    copy: OutputCopy,
    cwd: str | None = None,
    detached: bool = False,
    watch_stdout: bool = False,
    stop_after: float | None = None,
) -> Captured:
    """Run ``argv`` in ``cwd`` with stdout and stderr merged into a pipe, copied into ``copy``,
    passing stop signals on as ``run_command`` does; return how it ended.

    The command's output is a pipe, as when a program reads it (``cmd 2>&1 | tee``), and the copy is
    byte-exact whatever it does with it (a ``> /dev/stderr`` does not truncate it). ``detached``,
    for a server that runs commands for its clients (``streamfilter mcp``): CMD reads no stdin (the
    server's is its protocol), starts a session and process group of its own, and the server's stop
    signals are its own to handle (not passed on). Whenever the capture is cancelled, CMD is sent
    SIGTERM (with ``detached``, its whole process group: what it started too), SIGKILL after
    ``KILL_GRACE_SECONDS``, and waited for: it never outlives the capture. ``watch_stdout``: when the
    reader of our stdout goes away (``| head``), the pipe is closed, as that reader's was. ``stop_after``
    (seconds): CMD is then stopped the same way (``Captured.timed_out``), and its output read to the
    end, as ``timeout(1)`` in a pipeline leaves it.

    Raises:
        CommandError: CMD cannot be started.
    """
    stopping = Stopping()
    gone, timed_out = anyio.Event(), anyio.Event()
    with contextlib.ExitStack() as stack:
        signals = None if detached else stack.enter_context(anyio.open_signal_receiver(*passed_signals()))
        process = await start_command(argv, separate=False, cwd=cwd, detached=detached)
        try:
            async with anyio.create_task_group() as tg:
                if signals is not None:
                    tg.start_soon(pass_signals, signals, process, stopping)
                if stop_after is not None:
                    tg.start_soon(_stop_after, process, stop_after, detached, timed_out)
                with anyio.CancelScope() as reading:
                    if watch_stdout:
                        tg.start_soon(_when_reader_gone, process, gone, reading)
                    async with anyio.create_task_group() as copying:
                        copying.start_soon(_copy_pipe, process.stdout, copy)
                        copying.start_soon(process.wait)
                returncode = await process.wait()
                tg.cancel_scope.cancel()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await process.stop(group=detached)
                await process.aclose()
            raise
    left_open = process.stdout.left_open
    await process.aclose()
    return Captured(returncode, stopping, left_open, gone.is_set(), timed_out.is_set())


async def _stop_after(process: Command, seconds: float, group: bool, timed_out: anyio.Event) -> None:
    await anyio.sleep(seconds)
    if process.has_exited():  # (on its own, just now: not timed out, helper-97)
        return
    timed_out.set()
    with anyio.CancelScope(shield=True):  # (its end cancels this task: what it started is killed still)
        await process.stop(group=group)


async def _copy_pipe(pipe: OutputPipe, copy: OutputCopy) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        while True:
            copy.write(await pipe.receive(READ_BYTES))


async def _when_reader_gone(process: Command, gone: anyio.Event, reading: anyio.CancelScope) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):  # (no stdout, or not a real one)
        if await reader_gone(sys.stdout.fileno()):
            _reader_went(process, gone, reading)


def _reader_went(process: Command, gone: anyio.Event, reading: anyio.CancelScope) -> None:
    """The reader of our stdout went away: as without us, the command's next write fails (SIGPIPE)
    and it is waited for, as a shell pipeline waits. Its pipes are closed at once (a read of a pipe
    that is never empty does not wait for a cancellation), and ``reading`` is cancelled."""
    gone.set()
    process.close_pipes()
    reading.cancel()


def run_budgeted(
    argv: Sequence[str],
    config: FilterConfig,
    fmt: str,
    budget_tokens: int,
    out: BinaryIO,
    tee_path: str | None = None,
    success_tail: int = SUCCESS_TAIL_LINES,
    baselines: BaselineStore | None = None,
) -> tuple[Ended, Path | None]:
    """Run ``argv`` to its end, its whole output kept in a file, then write that output filtered to
    about ``budget_tokens`` tokens to ``out``, and a last line naming the exit status and the file.

    What an agent reads: it sees a command's output only once the command has ended, so the
    output is decided over the whole run (``report_run``). DROP refs point into the file
    (``streamfilter expand REF``), which is ``tee_path`` or a new file in the state directory's
    ``runs/`` (``output_file``: capped, the oldest evicted), or in memory where none can be written
    (``OutputCopy``). With ``baselines``, CMD's last green run weighs its lines, and CMD exiting 0
    stores its own. When the reader of ``out`` goes away while CMD runs, CMD's output is closed too,
    and nothing is written. A stop signal N once CMD has ended stops the filtering: what was read
    is written, then a line saying so and the last line.

    Returns:
        How it ended (``Ended``: CMD's exit status, 128+N when a signal N killed it, and N; 128+N
        and N too when a stop signal N stopped the filtering) and the file's path (None: in
        memory).

    Raises:
        CommandError: CMD cannot be started (a status line says so first).
        NotStartedError: the ``tee_path`` file cannot be written (CMD is not started).
        StreamfilterError: ``out`` cannot be written (the message says CMD's status).
    """
    green = _green_run(baselines, argv)
    copy = OutputCopy.create(argv, let_go_filter(argv, config, fmt, budget_tokens), tee_path)
    try:
        captured = anyio.run(lambda: capture_command(argv, copy, watch_stdout=True))
    except CommandError as exc:
        if tee_path is None:
            copy.discard()
        write_all(out, not_started_event(argv, exc, fmt))
        raise
    finally:
        copy.close()
    end = Ended.of(captured.returncode)
    if captured.reader_gone:
        return end, copy.path
    notes = [LEFT_OPEN] if captured.left_open else []
    signals = StopSignals()  # (from here: a stop while the output is filtered ends it with what was read)
    try:
        report_run(
            argv,
            captured.returncode,
            copy,
            config,
            fmt,
            budget_tokens,
            out,
            success_tail,
            green,
            notes,
            captured.stopping,
            signals,
        )
    except BrokenPipeError:  # the reader went away at the end: the status is still CMD's
        _stdout_to_devnull()
    except StreamfilterError as exc:  # (a full disk: CMD's status is said where it can be, helper-89)
        raise StreamfilterError(f"{exc}; {exit_text(command_text(argv), captured.returncode)}") from None
    if signals.received is not None:
        return Ended(StopSignals.STATUS[signals.received], signals.received), copy.path
    return end, copy.path


def let_go_filter(argv: Sequence[str], config: FilterConfig, fmt: str, budget_tokens: int) -> Callable[[], LetGoFilter]:
    """What makes the filter of ``argv``'s first output bytes let go from memory (``OutputCopy.create``):
    it shows up to ``LET_GO_SHARE`` of the budget of ``budget_tokens`` tokens, in bytes."""

    def make() -> LetGoFilter:
        from .batch import LetGoFilter  # (the filtering stage: a run whose output fits needs it not)

        shown = int(budget_tokens * LET_GO_SHARE * LET_GO_BYTES_PER_TOKEN)
        # (no tail: the part let go is not the output's end)
        return LetGoFilter(replace(config, tail_lines=0), fmt, os.path.basename(argv[0]), shown)

    return make


def not_started_event(argv: Sequence[str], error: CommandError, fmt: str) -> bytes:
    """The status line (or JSONL ``exit`` event) of a command that could not be started."""
    text = f"{command_text(argv)}: {error.reason} (status {error.exit_code})"
    return marker_event(fmt, os.path.basename(argv[0]), text, "exit", status=error.exit_code)


def report_run(
    argv: Sequence[str],
    returncode: int,
    copy: OutputCopy | Path,
    config: FilterConfig,
    fmt: str,
    budget_tokens: int,
    out: BinaryIO,
    success_tail: int = SUCCESS_TAIL_LINES,
    green: GreenRun | None = None,
    notes: Sequence[str] = (),
    stopping: Stopping | None = None,
    signals: StopSignals | None = None,
) -> Filtered | None:
    """Write the whole output of a finished run of ``argv`` (its ``copy``, or the file at that path)
    filtered to about ``budget_tokens`` tokens to ``out``, then a last line naming the exit status
    and the file.

    Faithful on failure (the tail keeps ``config.tail_lines`` lines, and the output's most
    probable lines by the prior are kept wherever they are), terse on success
    (``success_tail``), within the budget (``batch.filter_input``); DROP refs point into the file
    (none when the copy is in memory). An output of at most ``SHORT_OUTPUT_BYTES`` in text is
    written as it is (its shapes still go to ``green``'s collector). Before the last line, one line
    each of ``notes`` and of the copy's ``note`` (where the whole output is, when not in the state
    directory, or why not kept).

    Args:
        returncode: the command's return code (-N when a signal N killed it).
        green: the command's baseline: its last green run weighs the output, and a run that
            exited 0 stores its own (None: no baseline).
        stopping: the stop signal the run received (a run stopped early stores no baseline).
        signals: a stop signal while the output is filtered stops the reading there (``StopSignals``):
            what was read is written, a line says where it stopped, and the last line comes as always.

    Returns:
        What ``filter_input`` did: the counts of the output written (lines and bytes of the whole
        output, kept and dropped), or ``changed`` when the file was truncated or rewritten while
        it was read (then only the status line was written); None when there was nothing to read.

    Raises:
        StreamfilterError: ``out`` cannot be written.
        OSError: the file cannot be read.
    """
    if isinstance(copy, Path):
        copy = OutputCopy(copy)
    name, command = os.path.basename(argv[0]), command_text(argv)
    passed = _passed(argv, returncode)
    tail = success_tail if passed else config.tail_lines
    baseline, collector = (green.baseline, green.collector) if green is not None else (None, None)
    done: Filtered | None = None
    with copy.readable() as readable:
        # the output's first lines, when let go from memory: filtered as they passed, written first
        first_part, before = copy.let_go()
        write_all(out, first_part)
        if readable is not None and fmt == "text" and os.stat(readable).st_size <= SHORT_OUTPUT_BYTES:
            done = _write_whole(Path(readable), out, collector, config.max_line_bytes)
        elif readable is not None:
            from .batch import filter_input  # (the filtering stage: neither a live run nor a short output needs it)

            done = filter_input(
                readable,
                replace(config, tail_lines=tail, results=passed),
                fmt,
                out,
                signals,
                budget_tokens,
                b"",
                baseline,
                collector,
                with_refs=copy.path is not None,
                failed=not passed,
                before=before,
                label=name if copy.path is None else None,  # (not the anonymous file's name)
            )
    stop = signals.received if signals is not None and done is not None else None
    whole = done is not None and done.changed is None and stop is None and (stopping is None or stopping.signum is None)
    if returncode == 0 and green is not None and whole:
        _save(green)  # (else part of it)
    lines, size = copy.counts(done if stop is None else None)
    if stop is not None and done is not None and done.stats.bytes < size:  # (else it had read it all)
        where_stopped = f"filtering stopped by {signal.Signals(stop).name} after line {done.stats.lines}"
        # (when the whole output was not kept, from memory: the rest is nowhere, helper-53)
        rest = "the rest is in the whole output only" if copy.path is not None else "the rest is not shown"
        notes = [*notes, f"{where_stopped}: {rest}"]
    status = exit_text(command, returncode)
    # the way to the whole output, without running CMD again, on the line an agent reads last
    where = f": {copy.path}" if copy.path is not None else " not kept"
    # (not whole when a process the command left running printed later: its lines are in no file, helper-106)
    what = f"output up to {EXIT_GRACE_SECONDS:g} s after the exit" if LEFT_OPEN in notes else "whole output"
    text = f"{status}; {what} ({counted(lines, 'line')}, {counted(size, 'byte')}){where}"
    exit_status = status_of(returncode)
    path = str(copy.path) if copy.path is not None else None
    said = [note for note in (*notes, copy.note()) if note]
    events = [marker_event(fmt, name, note) for note in said]
    events.append(marker_event(fmt, name, text, "exit", status=exit_status, output=path))
    last = done.last if done is not None else b""
    write_all(out, (b"\n" if last not in (b"", b"\n") else b"") + b"".join(events))
    flush_out(out)
    return done


def _write_whole(path: Path, out: BinaryIO, collector: ShapeCollector | None, max_line_bytes: int) -> Filtered:
    """Write the short file ``path`` to ``out`` as it is; its lines' shapes go to ``collector``
    (a baseline, shaped as the filter shapes them with this ``max_line_bytes``)."""
    from ..core.lines import LineSplitter
    from ..core.records import FilterStats

    data = path.read_bytes()
    write_all(out, data)
    splitter = LineSplitter()
    blocks = [splitter.feed(data), splitter.flush()]
    for block in blocks:
        if block is not None and collector is not None:
            collector.add_block(block, max_line_bytes)
    lines = sum(block.n_lines for block in blocks if block is not None)
    stats = FilterStats(lines=lines, bytes=len(data), kept_lines=lines, kept_bytes=len(data), keep_runs=int(lines > 0))
    return Filtered(data[-1:], stats)


async def send_command(
    connect: ByteStream, argv: Sequence[str], query: str | None = None, run_id: str | None = None
) -> Ended:
    """Run ``argv`` and stream its merged output to ``connect`` inside a run envelope; return how it
    ended (``Ended``).

    The envelope carries a random ``nonce`` that CMD cannot see, so a control line that CMD
    prints itself cannot end or start a run. If the daemon goes away mid-run, CMD still runs
    to its end (its output is then not sent) and its status is returned; a warning says so.
    A CMD that cannot be started is reported to the daemon as a run with status 127 or 126.

    Raises:
        CommandError: CMD cannot be started (after telling the daemon).
    """
    run = run_id or uuid.uuid4().hex[:12]
    nonce = secrets.token_hex(8)
    start: dict[str, object] = {"run": run, "nonce": nonce, "command": shlex.join(argv), "cwd": os.getcwd()}
    if query:
        start["query"] = query
    link = _Link(connect)
    here: LiveStream | None = None  # the rest of the output, once the daemon is gone
    async with connect, anyio.create_task_group() as replies, contextlib.AsyncExitStack() as stack:
        replies.start_soon(link.read_replies)
        await link.send(control_line("run-start", **start))
        signals = stack.enter_context(anyio.open_signal_receiver(*passed_signals()))  # (before CMD starts)
        try:
            process = await start_command(argv, separate=False)
        except CommandError as exc:
            await link.send(control_line("run-end", run=run, nonce=nonce, status=exc.exit_code))
            replies.cancel_scope.cancel()
            raise
        assert process.stdout is not None
        ended_with_newline = True
        stopped = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(pass_signals, signals, process, Stopping(stopped))
            tg.start_soon(_give_up_after_a_stop, link, stopped)
            while True:
                try:
                    data = await process.stdout.receive(READ_BYTES)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
                handed = await link.send(data, output=True)
                if link.lost is not None:
                    here = await _filter_the_rest(link, argv, query, b"" if handed else data)
                    await pump(here, process.stdout, None)
                    break
                ended_with_newline = data.endswith(b"\n")
            returncode = await process.wait()
            tg.cancel_scope.cancel()
        await process.aclose()  # as in run_command
        if here is None:
            # the control line must start a line of its own
            tail = b"" if ended_with_newline else b"\n"
            with anyio.move_on_after(REPLY_SECONDS) as waited:
                await link.send(tail + control_line("run-end", run=run, nonce=nonce, status=status_of(returncode)))
                await link.finish()  # the daemon has read it all, or said how much it read
            if waited.cancelled_caught:  # (a daemon that does not read: stopped, or stuck)
                link.give_up(f"the daemon did not read the run's end within {REPLY_SECONDS:g} s")
            if link.lost is not None:
                here = await _filter_the_rest(link, argv, query, b"")
        replies.cancel_scope.cancel()
    if here is not None:
        await here.end(here.filter.config.tail_lines if returncode != 0 else SUCCESS_TAIL_LINES, returncode == 0)
        await here.marker(exit_text(command_text(argv), returncode), "exit", status=status_of(returncode))
    if link.lost is not None:
        sys.stderr.write(
            f"streamfilter: warning: the daemon connection was lost ({link.lost}); "
            f"output from byte {link.rest()[0]} on was not sent{' (it is filtered here)' if here else ''}\n"
        )
    return Ended.of(returncode)


async def _give_up_after_a_stop(link: _Link, stopped: anyio.Event) -> None:
    """After a stop signal, a daemon that has not read what was sent for ``REPLY_SECONDS`` is given up
    (a send blocked on a daemon that does not read would hold ``send`` after CMD is gone)."""
    await stopped.wait()
    await anyio.sleep(REPLY_SECONDS)
    link.give_up(f"a stop signal came and the daemon did not read for {REPLY_SECONDS:g} s")


async def _filter_the_rest(link: _Link, argv: Sequence[str], query: str | None, unsent: bytes) -> LiveStream:
    """A stream filtered here, fed what the daemon did not read of CMD's output so far (``_Link.rest``)
    and ``unsent``, the bytes that were not handed to the connection."""
    here = filtered_here(argv, query)
    byte, line, replay = link.rest()
    await here.marker(
        f"the daemon connection was lost ({link.lost}); the output from byte {byte} on "
        f"(line {line + 1}; numbered from 1 here) is filtered here"
    )
    await here.feed(replay + unsent)
    return here


def prints_another_runs_log(argv: Sequence[str]) -> bool:
    """Whether ``argv`` prints the log of another run: ``gh run view`` with ``--log`` or
    ``--log-failed`` anywhere after it. It exits 0 however that run went, so its output is
    filtered as a failure's (the failure tail) and has no baseline (it is not a run of CMD)."""
    return (
        os.path.basename(argv[0]) == "gh"
        and list(argv[1:3]) == ["run", "view"]
        and any(word in ("--log", "--log-failed") for word in argv[3:])
    )


def _passed(argv: Sequence[str], returncode: int) -> bool:
    """Whether the output is a green run's (terse: the success tail): CMD exited 0 and printed
    its own run, not another's log."""
    return returncode == 0 and not prints_another_runs_log(argv)


def _green_run(baselines: BaselineStore | None, argv: Sequence[str]) -> GreenRun:
    """CMD's baseline in ``baselines``, by its command line and this working directory (none when
    it has been removed under us: no key to store it by, or when CMD prints another run's log)."""
    try:
        cwd = os.getcwd()
    except OSError:
        return GreenRun(None, "", "")
    if prints_another_runs_log(argv):
        return GreenRun(None, shlex.join(argv), cwd)
    return GreenRun(baselines, shlex.join(argv), cwd)


def _save(green: GreenRun) -> None:
    """CMD exited 0: store its baseline; a warning on stderr if it cannot be (the status is CMD's)."""
    try:
        green.save()
    except OSError as exc:
        assert green.store is not None
        where, why = green.store.folder, exc.strerror or exc
        sys.stderr.write(f"streamfilter: warning: cannot store this run's baseline in {where}: {why}\n")


def command_text(argv: Sequence[str]) -> str:
    """CMD as the exit status line names it, at most 80 characters: each argument as a shell reads
    it back (``shlex.quote``), one with a control character in bash's ``$'...'`` with escapes
    (``$'a\\tb'``; inside ``'...'``, ``\\t`` had stood for a tab and for a backslash and a t alike,
    helper-86), a byte that is not UTF-8 as ``\\xNN``."""
    command = " ".join(shlex.quote(arg) if arg.isprintable() else _ansi_c(arg) for arg in argv)
    return command if len(command) <= 80 else command[:77] + "..."


def _ansi_c(arg: str) -> str:
    """``arg`` in bash's ANSI-C quoting (``$'...'``); an undecodable byte (a surrogate escape) as ``\\xNN``."""
    out = []
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        else:
            out.append(ch.encode("unicode_escape").decode())
    return "$'" + "".join(out) + "'"


def _command_source(name: str, config: FilterConfig) -> SourceConfig:
    """The source a command's output is filtered as (``run``, and ``send`` once the daemon is gone)."""
    from .config import SourceConfig, Timing

    return SourceConfig(name=name, type="stdin", filter=config, timing=Timing(max_delay_seconds=RUN_MAX_DELAY_SECONDS))


def filtered_here(argv: Sequence[str], query: str | None) -> LiveStream:
    """A stream filtered to this process's stdout as ``run`` does, for the output ``send`` could not send."""
    from .config import SinkConfig
    from .sinks import StdoutSink
    from .stream import archived_stream

    name = os.path.basename(argv[0])
    source = _command_source(name, FilterConfig(query=query) if query else FilterConfig())
    return archived_stream(
        source, [StdoutSink(SinkConfig("stdout", "stdout"), log_closed=False)], name, None, hold_tail=True
    )


class _Link:
    """The connection to the daemon; once it breaks, sends are dropped (CMD goes on).

    ``sent`` counts bytes of CMD's output handed to the connection (not the control lines),
    ``lines`` the line ends among them. A daemon that stops while the run goes on replies how
    many bytes it read (``{"type": "stop", "received": N}``, of all the connection's bytes): the
    bytes after those, kept here (the last ``REPLAY_BYTES``), are filtered here (``rest``).
    """

    def __init__(self, stream: ByteStream) -> None:
        self.stream = stream
        self.sent = 0
        self.lines = 0
        self.lost: str | None = None
        self.received: int | None = None  # CMD's output bytes the daemon read, from its stop reply
        self._before = 0  # bytes of control lines sent before CMD's output
        self._replay = bytearray()  # the last bytes of CMD's output sent...
        self._replay_from = 0  # ...from this byte on...
        self._replay_lines = 0  # ...after this many line ends
        self._closed = anyio.Event()  # the daemon closed the connection (or it broke)
        self._sending = anyio.CancelScope()  # the send in progress

    async def send(self, data: bytes, output: bool = False) -> bool:
        """Hand ``data`` to the connection; False (and not sent) once the connection is lost."""
        if self.lost is not None:
            return False
        try:
            with anyio.CancelScope() as self._sending:
                await self.stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.lost = self.lost or str(exc) or "the daemon closed it"
            return False
        if self._sending.cancelled_caught:  # given up (``give_up``) while it waited
            return False
        if not output:
            if not self.sent:
                self._before += len(data)
            return True
        self.sent += len(data)
        self.lines += data.count(b"\n")
        self._replay += data
        over = len(self._replay) - REPLAY_BYTES
        if over > 0:
            self._replay_lines += self._replay.count(b"\n", 0, over)
            del self._replay[:over]
            self._replay_from += over
        return True

    async def read_replies(self) -> None:
        """Read what the daemon sends until it closes: a stop reply ends the link."""
        buffer = b""
        try:
            while True:
                buffer += await self.stream.receive(READ_BYTES)
                *replies, buffer = buffer.split(b"\n")
                for reply in replies:
                    received = stop_received(reply)
                    if received is not None and self.lost is None:
                        self.received = min(self.sent, max(0, received - self._before))
                        self.lost = "the daemon stopped reading it: it stopped, or reloaded its config"
                buffer = buffer[-MAX_REPLY_BYTES:]
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            self._closed.set()

    async def finish(self) -> None:
        """After the run's end: close the sending side and wait (``REPLY_SECONDS`` at most) for the
        daemon to close, having read it all, or to reply how much it read."""
        if self.lost is not None:
            return
        try:
            await self.stream.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        with anyio.move_on_after(REPLY_SECONDS):
            await self._closed.wait()

    def give_up(self, why: str) -> None:
        """Stop using the connection (a send waiting on it is cancelled, and its data not sent): ``why``."""
        if self.lost is None:
            self.lost = why
        self._sending.cancel()

    def rest(self) -> tuple[int, int, bytes]:
        """``(byte, line_ends, data)``: where in CMD's output the daemon stopped reading (the line
        ends before it), and the bytes sent from there; without a stop reply, or when those bytes are
        no longer kept, where sending stopped and no bytes."""
        received = self.received
        if received is None or received < self._replay_from:
            return self.sent, self.lines, b""
        k = received - self._replay_from
        return received, self._replay_lines + self._replay.count(b"\n", 0, k), bytes(self._replay[k:])


def parse_socket(text: str) -> tuple[str, str, int]:
    """``("unix", PATH, 0)`` or ``("tcp", HOST, PORT)`` from a ``--socket`` value (``HOST:PORT`` is TCP).

    Raises:
        UsageError: a TCP port outside 1..65535.
    """
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and "/" not in text:
        if not 0 < int(port) < 65536:
            raise UsageError(f"--socket {text}: the port must be 1-65535")
        return "tcp", host or "127.0.0.1", int(port)
    return "unix", text, 0
