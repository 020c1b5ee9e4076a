"""``streamfilter run -- CMD`` (filter a command's output as it prints) and ``send`` (to a daemon).

``run`` starts CMD with stdout and stderr merged into one stream (or two with ``separate``),
filters it live to stdout, and returns CMD's exit status (128+N when a signal N killed it).
SIGTERM is passed on to CMD; so is SIGINT unless this process is in a terminal's foreground
process group (the terminal has sent it to CMD already). Faithful on failure, terse on success:
when CMD fails, the tail rule keeps its last ``tail_lines`` lines; when it exits 0, only the
last ``success_tail`` lines (failure signatures are kept either way). A last line states the exit
status. With ``tee``, the whole raw output is written to that file too and DROP refs point into it.
With a ``BaselineStore``, the lines of the last green run of the same command in the same directory
weigh less (``core.baseline``), and a run that exits 0 stores its own (``live.baselines``).

``send`` runs CMD the same way but streams its raw output to a daemon's socket source inside a
run envelope (``envelope``), so the daemon filters it as one run with its own query.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import anyio
from anyio.abc import ByteReceiveStream, ByteStream, Process

from ..core.errors import StreamfilterError, UsageError
from ..core.filter import FilterConfig
from ..core.records import Run
from .baselines import BaselineStore, GreenRun
from .config import SinkConfig, SourceConfig, Timing
from .envelope import SUCCESS_TAIL_LINES, control_line, exit_text, printable, status_of, stop_received
from .expand import ref_of, state_dir
from .sinks import StdoutSink
from .stream import LiveStream, archived_stream, marker_event
from .writes import flush_out, write_all

if TYPE_CHECKING:
    from ..core.baseline import ShapeCollector
    from .batch import Filtered

__all__ = (
    "KILL_GRACE_SECONDS",
    "RUNS_BYTES",
    "SHORT_OUTPUT_BYTES",
    "CommandError",
    "Tee",
    "capture_command",
    "command_text",
    "filtered_here",
    "forward_signals",
    "not_started_event",
    "output_file",
    "parse_socket",
    "prints_another_runs_log",
    "pump",
    "report_run",
    "run_budgeted",
    "run_command",
    "send_command",
    "start_command",
)

READ_BYTES = 1 << 16
# a command's output is decided with the full look-ahead while it keeps printing (as `filter`
# would); only a pause lets the pending lines out early
RUN_TIMING = Timing(max_delay_seconds=3600.0)
GRACE_SECONDS = 0.5  # after a stop signal and CMD's exit, how long its pipes are still read
# send: CMD's output kept after it is sent, to filter here what a stopping daemon did not read
REPLAY_BYTES = 16 << 20
REPLY_SECONDS = 5.0  # send: after the run's end, how long the daemon gets to read it and close
MAX_REPLY_BYTES = 4096  # send: most bytes kept of a daemon's reply line not yet ended
RECENT_SECONDS = 600.0  # a kept output written this recently is never evicted (its run may be filtering it)
RUNS_BYTES = 256 << 20  # run --budget-tokens: the whole outputs kept in the state directory, in bytes
KILL_GRACE_SECONDS = 2.0  # a cancelled capture_command: from SIGTERM to SIGKILL, in seconds
# report_run: a whole output this short is written as it is, the filter not even built: it is about
# two summary lines (a budget's summary with its ref is 150 to 250 bytes), so filtering could save
# the reader a few dozen tokens at most, and would hide lines
SHORT_OUTPUT_BYTES = 512


class CommandError(StreamfilterError):
    """CMD could not be started: not found (exit 127) or not executable (exit 126)."""

    def __init__(self, program: str, reason: str, exit_code: int) -> None:
        super().__init__(f"{program}: {reason}")
        self.reason = reason  # without the program's name (a status line names the whole command)
        self.exit_code = exit_code


async def start_command(
    argv: Sequence[str], separate: bool, into: BinaryIO | None = None, cwd: str | None = None, detached: bool = False
) -> Process:
    """Start ``argv`` in ``cwd``, its output to pipes, or (``into``) straight to that file, stderr
    merged; ``detached``: see ``capture_command``."""
    try:
        return await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL if detached else None,
            stdout=into if into is not None else subprocess.PIPE,
            stderr=subprocess.PIPE if separate else subprocess.STDOUT,
            cwd=cwd,
            start_new_session=detached,
        )
    except FileNotFoundError:
        raise CommandError(argv[0], "command not found", 127) from None
    except PermissionError:
        # exec of a directory fails with EACCES too: say which it is, as bash does
        folder = os.sep in argv[0] and await anyio.Path(argv[0]).is_dir()
        reason = "is a directory" if folder else "permission denied"
        raise CommandError(argv[0], reason, 126) from None


def _terminal_sent_it() -> bool:
    """Whether a terminal's SIGINT reached the child directly (we are in its foreground group)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


async def forward_signals(process: Process, received: anyio.Event | None = None) -> None:
    """Pass SIGINT, SIGTERM and SIGHUP on to ``process`` until cancelled (a terminal's SIGINT, which
    reached it already, not twice); ``received`` is set at the first."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            if received is not None:
                received.set()
            if signum == signal.SIGINT and _terminal_sent_it():
                continue
            if process.returncode is None:
                process.send_signal(signum)


async def _stop_reading_after_a_stop(process: Process, received: anyio.Event, pumps: anyio.CancelScope) -> None:
    """After a stop signal, once CMD has exited, stop waiting for its pipes: a child CMD left behind
    may hold them open for a long time. Without a signal, the pipes are read to their end."""
    await process.wait()
    if received.is_set():
        await anyio.sleep(GRACE_SECONDS)
        pumps.cancel()


async def pump(live: LiveStream, pipe: ByteReceiveStream, tee: Tee | None) -> None:
    """Feed ``pipe`` into ``live`` until EOF, settling when the command pauses."""
    while True:
        due = live.due()
        data = b""
        with anyio.move_on_after(max(0.0, due - time.monotonic())) if due is not None else anyio.CancelScope():
            try:
                data = await pipe.receive(READ_BYTES)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
        if data:
            if tee is not None:
                tee.write(data)
            await live.feed(data)
        else:
            await live.tick()


class Tee:
    """The raw output, written to a file as it comes; refs of DROP runs point into it."""

    def __init__(self, path: str) -> None:
        self.path = str(Path(path).resolve())
        try:
            self._file = open(path, "wb")
        except OSError as exc:
            raise StreamfilterError(f"cannot write --tee file {path}: {exc.strerror or exc}") from None

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._file.flush()

    def ref(self, run: Run) -> str:
        return ref_of(self.path, run)

    def close(self) -> None:
        self._file.close()


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
) -> int:
    """Run ``argv``, filter its output live to stdout; return its exit status (see module docstring).

    Args:
        config: the filter's settings; its ``tail_lines`` must be at least the larger of
            ``failure_tail`` and ``success_tail`` (the lines held back for the end).
        failure_tail: lines kept at the end when CMD fails (default ``config.tail_lines``).
        success_tail: lines kept at the end when CMD exits 0.
        baselines: where the baseline of CMD is read, and stored when CMD exits 0 (None: none).

    Raises:
        CommandError: CMD cannot be started (a status line says so first).
        StreamfilterError: the ``tee`` file cannot be written, or stdout is closed.
    """
    sink = StdoutSink(SinkConfig("stdout", "stdout", format=fmt, raw=raw))
    sink.shared = separate  # text then labels each switch between stdout and stderr
    name = os.path.basename(argv[0])
    command = command_text(argv)
    source = _command_source(name, config)
    green = _green_run(baselines, argv)
    try:
        process = await start_command(argv, separate)
    except CommandError as exc:
        await sink.send(
            marker_event(fmt, name, f"{command}: {exc.reason} (status {exc.exit_code})", "exit", status=exc.exit_code)
        )
        raise
    tee = Tee(tee_path) if tee_path else None
    pipes: list[tuple[str, ByteReceiveStream]] = []
    assert process.stdout is not None
    if separate:
        assert process.stderr is not None
        pipes = [("stdout", process.stdout), ("stderr", process.stderr)]
    else:
        pipes = [(name, process.stdout)]
    streams: list[LiveStream] = []
    for stream_name, _ in pipes:
        if tee is not None and not separate:
            live = LiveStream(stream_name, config, RUN_TIMING, [sink], tee.ref, hold_tail=True, baseline=green.baseline)
        else:
            live = archived_stream(source, [sink], stream_name, None, hold_tail=True, baseline=green.baseline)
        live.filter.collector = green.collector
        streams.append(live)
    received = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(forward_signals, process, received)
        async with anyio.create_task_group() as pumps:
            for live, (_, pipe) in zip(streams, pipes, strict=True):
                pumps.start_soon(pump, live, pipe, tee)
            pumps.start_soon(_stop_reading_after_a_stop, process, received, pumps.cancel_scope)
        returncode = await process.wait()
        tg.cancel_scope.cancel()
    # our ends of its pipes, closed while the event loop runs (a child CMD left behind may still
    # hold the other ends; left to the garbage collector, asyncio's transport complains at exit)
    await process.aclose()
    tail = success_tail if _passed(argv, returncode) else failure_tail
    for live in streams:
        await live.end(tail)
    if tee is not None:
        tee.close()
    if returncode == 0 and not received.is_set():  # (a run stopped early printed part of its output)
        _save(green)
    await sink.send(marker_event(fmt, name, exit_text(command, returncode), "exit", status=status_of(returncode)))
    return status_of(returncode)


def output_file(argv: Sequence[str], folder: Path | None = None, cap_bytes: int = RUNS_BYTES) -> Path:
    """A new file for the whole output of ``argv`` in ``folder`` (default ``runs/`` in the state
    directory, or, where that cannot be written (a sandboxed agent), ``streamfilter-UID/runs/`` in
    the temporary directory), named by time, process id and program (and a count from 2 when that
    name is taken), after evicting the oldest files there until the others take at most half of
    ``cap_bytes`` (not one a run still writes, ``_evict``).

    Raises:
        StreamfilterError: the folder cannot be created or the file cannot be made.
    """
    if folder is None:
        try:
            return output_file(argv, state_dir() / "runs", cap_bytes)
        except StreamfilterError:
            folder = Path(tempfile.gettempdir()) / f"streamfilter-{os.getuid()}" / "runs"
    program = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in os.path.basename(argv[0]))[:40]
    try:
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
        for n in itertools.count(1):
            path = folder / f"{stem}{f'-{n}' if n > 1 else ''}.log"
            try:
                path.touch(mode=0o600, exist_ok=False)
                break
            except FileExistsError:
                continue
    except OSError as exc:
        raise StreamfilterError(f"cannot keep the command's output in {folder}: {exc.strerror or exc}") from None
    return path


def _evict(path: Path) -> bool:
    """Remove a kept output unless a run still writes it (its command holds a shared lock on it,
    ``capture_command``) or wrote it in the last ``RECENT_SECONDS``; whether it was removed."""
    try:
        if time.time() - path.stat().st_mtime < RECENT_SECONDS:
            return False
        with open(path, "rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            path.unlink(missing_ok=True)
    except FileNotFoundError:
        return False
    return True


async def capture_command(argv: Sequence[str], path: Path, cwd: str | None = None, detached: bool = False) -> int:
    """Run ``argv`` in ``cwd`` with stdout and stderr merged into the file ``path``, passing stop
    signals on as ``run_command`` does; return its return code (-N when a signal N killed it).

    The command writes to the file itself (no pipe): its output lands in the order it printed it.
    ``detached``, for a server that runs commands for its clients (``streamfilter mcp``): CMD reads
    no stdin (the server's is its protocol), starts a session and process group of its own, and
    the server's stop signals are its own to handle (not passed on). Whenever the capture is
    cancelled, CMD is sent SIGTERM (with ``detached``, its whole process group: what it started
    too), SIGKILL after ``KILL_GRACE_SECONDS``, and waited for: it never outlives the capture.

    Raises:
        CommandError: CMD cannot be started.
        StreamfilterError: ``path`` cannot be written.
    """
    try:
        into = open(path, "wb")  # noqa: ASYNC230  # opened once, before the command starts
        # shared lock, held by the command too (its stdout is this open file): no other run evicts it
        fcntl.flock(into.fileno(), fcntl.LOCK_SH)
    except OSError as exc:
        raise StreamfilterError(f"cannot write {path}: {exc.strerror or exc}") from None
    with into:
        process = await start_command(argv, separate=False, into=into, cwd=cwd, detached=detached)
    try:
        async with anyio.create_task_group() as tg:
            if not detached:
                tg.start_soon(forward_signals, process)
            returncode = await process.wait()
            tg.cancel_scope.cancel()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _stop(process, detached)
        raise
    await process.aclose()
    return returncode


async def _stop(process: Process, group: bool) -> None:
    """SIGTERM ``process`` (``group``: its process group), SIGKILL after ``KILL_GRACE_SECONDS``; reap it."""

    def send(signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # (gone already)
            if group:  # the leader's pid is the group's id (a session of its own); members may outlive it
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)

    send(signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_SECONDS):
        await process.wait()
    # what is left of the group (or a leader that ignored SIGTERM) goes now
    send(signal.SIGKILL)
    await process.aclose()


def run_budgeted(
    argv: Sequence[str],
    config: FilterConfig,
    fmt: str,
    budget_tokens: int,
    out: BinaryIO,
    tee_path: str | None = None,
    success_tail: int = SUCCESS_TAIL_LINES,
    baselines: BaselineStore | None = None,
) -> tuple[int, Path]:
    """Run ``argv`` to its end, its whole output kept in a file, then write that output filtered to
    about ``budget_tokens`` tokens to ``out``, and a last line naming the exit status and the file.

    What an agent reads: it sees a command's output only once the command has ended, so the
    output is decided over the whole run (``report_run``). DROP refs point into the file
    (``streamfilter expand REF``), which is ``tee_path`` or a new file in the state directory's
    ``runs/`` (``output_file``: capped, the oldest evicted). With ``baselines``, CMD's last green
    run weighs its lines, and CMD exiting 0 stores its own.

    Returns:
        The command's exit status (128+N when a signal N killed it) and the file's path.

    Raises:
        CommandError: CMD cannot be started (a status line says so first).
        StreamfilterError: the file or ``out`` cannot be written.
    """
    green = _green_run(baselines, argv)
    path = Path(tee_path).resolve() if tee_path else output_file(argv)
    try:
        returncode = anyio.run(capture_command, argv, path)
    except CommandError as exc:
        write_all(out, not_started_event(argv, exc, fmt))
        raise
    report_run(argv, returncode, path, config, fmt, budget_tokens, out, success_tail, green)
    return status_of(returncode), path


def not_started_event(argv: Sequence[str], error: CommandError, fmt: str) -> bytes:
    """The status line (or JSONL ``exit`` event) of a command that could not be started."""
    text = f"{command_text(argv)}: {error.reason} (status {error.exit_code})"
    return marker_event(fmt, os.path.basename(argv[0]), text, "exit", status=error.exit_code)


def report_run(
    argv: Sequence[str],
    returncode: int,
    path: Path,
    config: FilterConfig,
    fmt: str,
    budget_tokens: int,
    out: BinaryIO,
    success_tail: int = SUCCESS_TAIL_LINES,
    green: GreenRun | None = None,
) -> Filtered:
    """Write the whole output of a finished run of ``argv`` (in the file ``path``) filtered to about
    ``budget_tokens`` tokens to ``out``, then a last line naming the exit status and the file.

    Faithful on failure (the tail keeps ``config.tail_lines`` lines), terse on success
    (``success_tail``), within the budget (``batch.filter_input``); DROP refs point into ``path``.
    An output of at most ``SHORT_OUTPUT_BYTES`` in text is written as it is (its shapes still
    go to ``green``'s collector).

    Args:
        returncode: the command's return code (-N when a signal N killed it).
        green: the command's baseline: its last green run weighs the output, and a run that
            exited 0 stores its own (None: no baseline).

    Returns:
        What ``filter_input`` did: the counts of the output written (lines and bytes of the whole
        output, kept and dropped), or ``changed`` when ``path`` was truncated or rewritten while
        it was read (then only the status line was written).

    Raises:
        StreamfilterError: ``out`` cannot be written.
        OSError: ``path`` cannot be read.
    """
    from .batch import filter_input  # (the file-filtering stage: not needed by a live run)

    name, command = os.path.basename(argv[0]), command_text(argv)
    tail = success_tail if _passed(argv, returncode) else config.tail_lines
    baseline, collector = (green.baseline, green.collector) if green is not None else (None, None)
    if fmt == "text" and path.stat().st_size <= SHORT_OUTPUT_BYTES:
        done = _write_whole(path, out, collector, config.max_line_bytes)
    else:
        passed = _passed(argv, returncode)
        done = filter_input(
            str(path),
            replace(config, tail_lines=tail, results=passed),
            fmt,
            out,
            None,
            budget_tokens,
            b"",
            baseline,
            collector,
        )
    if returncode == 0 and green is not None and done.changed is None:  # (else it read part of the output)
        _save(green)
    lines = done.stats.kept_lines + done.stats.dropped_lines
    size = done.stats.kept_bytes + done.stats.dropped_bytes
    # the way to the whole output, without running CMD again, on the line an agent reads last
    text = f"{exit_text(command, returncode)}; whole output ({lines} lines, {size} bytes): {path}"
    marker = marker_event(fmt, name, text, "exit", status=status_of(returncode), output=str(path))
    write_all(out, (b"\n" if done.last not in (b"", b"\n") else b"") + marker)
    flush_out(out)
    return done


def _write_whole(path: Path, out: BinaryIO, collector: ShapeCollector | None, max_line_bytes: int) -> Filtered:
    """Write the short file ``path`` to ``out`` as it is; its lines' shapes go to ``collector``
    (a baseline, shaped as the filter shapes them with this ``max_line_bytes``)."""
    from ..core.lines import LineSplitter
    from ..core.records import FilterStats
    from .batch import Filtered

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
) -> int:
    """Run ``argv`` and stream its merged output to ``connect`` inside a run envelope; return its status.

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
    async with connect, anyio.create_task_group() as replies:
        replies.start_soon(link.read_replies)
        await link.send(control_line("run-start", **start))
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
            tg.start_soon(forward_signals, process, stopped)
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
        await here.end(here.filter.config.tail_lines if returncode != 0 else SUCCESS_TAIL_LINES)
        await here.marker(exit_text(command_text(argv), returncode), "exit", status=status_of(returncode))
    if link.lost is not None:
        sys.stderr.write(
            f"streamfilter: warning: the daemon connection was lost ({link.lost}); "
            f"output from byte {link.rest()[0]} on was not sent{' (it is filtered here)' if here else ''}\n"
        )
    return status_of(returncode)


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
    """CMD as the exit status line names it: printable, at most 80 characters."""
    command = printable(shlex.join(argv))
    return command if len(command) <= 80 else command[:77] + "..."


def _command_source(name: str, config: FilterConfig) -> SourceConfig:
    """The source a command's output is filtered as (``run``, and ``send`` once the daemon is gone)."""
    return SourceConfig(name=name, type="stdin", filter=config, timing=RUN_TIMING)


def filtered_here(argv: Sequence[str], query: str | None) -> LiveStream:
    """A stream filtered to this process's stdout as ``run`` does, for the output ``send`` could not send."""
    name = os.path.basename(argv[0])
    source = _command_source(name, FilterConfig(query=query) if query else FilterConfig())
    return archived_stream(source, [StdoutSink(SinkConfig("stdout", "stdout"))], name, None, hold_tail=True)


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
                        self.lost = "the daemon stopped"
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
