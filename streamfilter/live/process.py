"""A command that ``run``, ``send`` or the MCP server starts: its output pipes, its stop, one reaper.

Why not asyncio's subprocess: on Python 3.11 and 3.12 its child watcher and the ``subprocess``
module both wait for the child, and a signal passed on while the child exits lets the module reap
it first; the watcher then reports status 255 ("Unknown child process pid"). Here the
``subprocess`` module alone reaps the child, once a pidfd says it has exited (or, where there is
no pidfd, in a thread that waits for it), and the signals go to a child not yet reaped.

The output pipes are read as asyncio's subprocess streams read them (asyncio's event loop, anyio's
default backend: a pipe transport into a ``StreamReader``), so a live stream sees the same pauses.
Once the command has exited, a pipe is read to the end of what the command wrote (the bytes in it
and in the reader's buffer at that moment), then for at most ``EXIT_GRACE_SECONDS`` more: a
process the command left running (a test server started with ``&``) may hold it open for long,
and a wrapper returns when its command does. Such a pipe is then handed to a drainer (``_drain``):
that process goes on, its writes read and discarded, as it would without us (where our end closed,
its next write would kill it: SIGPIPE).

A stop signal sent to the whole process group (a terminal's ^C, ``kill -- -PGID``, ``timeout``, an
agent's group kill) reaches the command directly, as it shares ours: passed on, it would come twice,
and a command whose handler was still cleaning up would die of the second. A ``GroupWitness`` tells
such a signal from one sent to us alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import signal
import stat
import struct
import subprocess
import termios
from collections.abc import Sequence

import anyio

from .stops import STOP_SIGNALS, not_ignored

__all__ = (
    "EXIT_GRACE_SECONDS",
    "GROUP_SIGNAL_SECONDS",
    "KILL_GRACE_SECONDS",
    "PASSED_SIGNALS",
    "Command",
    "GroupWitness",
    "OutputPipe",
    "passed_signals",
    "reader_gone",
)

KILL_GRACE_SECONDS = 2.0  # from SIGTERM (a cancelled capture, an MCP call) to SIGKILL, for a command still running
GROUP_POLL_SECONDS = 0.02  # while a stopped group's processes are waited for, how often it is looked at
EXIT_GRACE_SECONDS = 0.5  # after the command's exit, how long its pipes are read for what others still write
# a stop signal sent to us, how long it waits for the same sent to our whole group (``timeout`` sends
# us one, then the group one: 12 to 18 ms later on a loaded machine), which the command gets itself
GROUP_SIGNAL_SECONDS = 0.1
# what a wrapper passes on to its command: the stop signals, and those a program may use to be told
# something (a dump, a log reopened), whose default action would kill the wrapper alone
PASSED_SIGNALS = (*STOP_SIGNALS, signal.SIGUSR1, signal.SIGUSR2)
READ_BYTES = 1 << 16


def passed_signals() -> tuple[signal.Signals, ...]:
    """``PASSED_SIGNALS`` but those ignored now (``stops.not_ignored``)."""
    return not_ignored(PASSED_SIGNALS)


def _pending(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` (0 where that cannot be asked)."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except (OSError, ValueError):  # (closed here already)
        return 0


class OutputPipe:
    """Our end of a command's output pipe, read as asyncio's subprocess streams read one: the event
    loop reads the pipe as data comes into a buffer (at most ``2 * READ_BYTES``, then it pauses), and
    ``receive`` takes from it (so the pauses a live stream settles at are the ones they were).

    ``receive`` gives the next bytes, and raises ``anyio.EndOfStream`` at the end: when every
    writer closed it, or, once the command has exited (``exited``), when what it wrote is read and
    ``EXIT_GRACE_SECONDS`` have passed since (``left_open`` then says another process still held it).

    Attributes:
        left_open: reading stopped while a process the command left running still held the pipe.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.left_open = False
        self._until: float | None = None  # the command exited: read no longer than this (anyio time)
        self._hold = 0.0  # whenever it exits, read at least until this (``hold``)
        self._owed = 0  # bytes in the pipe and the buffer at the command's exit still to read
        self._waiting: anyio.CancelScope | None = None
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.ReadTransport | None = None

    async def connect(self) -> None:
        """Start reading the pipe on the running event loop."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=READ_BYTES, loop=loop)
        pipe = os.fdopen(self.fd, "rb", buffering=0)  # (the transport closes it)
        self._transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
        self._reader = reader

    async def receive(self, max_bytes: int = READ_BYTES) -> bytes:
        """The next bytes (at most ``max_bytes``).

        Raises:
            anyio.EndOfStream: the end (see the class).
            anyio.ClosedResourceError: the pipe was closed here (``close``).
        """
        while True:
            if self._reader is None or self.fd < 0:
                raise anyio.ClosedResourceError
            now = anyio.current_time()
            if self._until is not None and self._owed <= 0 and now >= self._until:
                self.left_open = not self._reader.at_eof()
                raise anyio.EndOfStream
            with anyio.CancelScope() if self._until is None else anyio.move_on_after(self._until - now) as scope:
                self._waiting = scope
                data = await self._reader.read(max_bytes)  # (cancelled while it waits, it takes nothing)
                if not data:
                    raise anyio.EndOfStream
                self._owed -= len(data)
                return data
            # ``exited`` came, or the grace after it ran out: look again

    def exited(self, grace: float = EXIT_GRACE_SECONDS) -> None:
        """The command exited now: read what it wrote, then wait at most ``grace`` seconds for more."""
        if self._reader is not None and self._until is None:
            # in the pipe, and read from it already (asyncio keeps no count of its buffer but this)
            self._owed = _pending(self.fd) + len(getattr(self._reader, "_buffer", b""))
            self._until = max(anyio.current_time() + grace, self._hold)
            if self._waiting is not None:
                self._waiting.cancel()

    def hold(self, seconds: float) -> None:
        """Read for ``seconds`` more at least, whenever the command exits: what it started is being
        stopped, and may write as it stops."""
        self._hold = max(self._hold, anyio.current_time() + seconds)
        if self._until is not None:
            self._until = max(self._until, self._hold)

    def hand_off(self) -> None:
        """Close our end, held open by a process the command left running (``left_open``), handing it
        to a drainer first (``_drain``): that process's writes go on succeeding, read and discarded."""
        if self.fd < 0 or not self.left_open or self._transport is None or self._transport.is_closing():
            return  # (closing: the pipe's end came since, and the transport closes ``fd``)
        held = os.dup(self.fd)
        try:
            self.close()
            os.set_blocking(held, True)  # (the event loop made it non-blocking: cat's read would fail)
            _drain(held)
        finally:
            os.close(held)

    def close(self) -> None:
        """Close our end: a writer's next write fails (EPIPE, or SIGPIPE kills it), as when a reader exits."""
        if self._transport is not None:
            self._transport.close()
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1


def _drain(fd: int) -> None:
    """Read the pipe ``fd`` to its end and discard it, in a process that nobody waits for: ``cat`` in
    a session of its own (no group or terminal signal reaches it), without our stdout or stderr,
    started by a shell that exits at once (it is not our child: a server never has to reap it); it
    ends once every writer has closed the pipe. Where it cannot be started, the pipe is just closed."""
    # (an asynchronous command's stdin is /dev/null before its own redirections: the pipe goes by fd 3)
    script = "exec 3<&0 </dev/null; cat <&3 >/dev/null 2>&1 3<&- &"
    with contextlib.suppress(OSError):
        subprocess.run(
            ["/bin/sh", "-c", script],
            stdin=fd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            check=False,
        )


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


class GroupWitness:
    """A process in our process group with every signal blocked (``cat`` of a pipe that we hold, so it
    ends when we do): a signal sent to the whole group stays pending in it, where ``/proc`` shows it.

    Attributes:
        pid: its process id; 0 where it could not be started (no ``cat``).
    """

    def __init__(self) -> None:
        """Start it (where it cannot be, ``pid`` is 0 and ``saw`` says None)."""
        self.pid = 0
        read, self._hold = os.pipe2(os.O_CLOEXEC)
        blocked = signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}
        try:
            self.pid = os.posix_spawnp(
                "cat",
                ["cat"],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, 1, 2),
                ],
                setsigmask=blocked,
            )
        except OSError:
            os.close(self._hold)
            self._hold = -1
        finally:
            os.close(read)

    def saw(self, signum: int) -> bool | None:
        """Whether ``signum`` was sent to the whole group since it started (a signal pending already
        is not counted twice); None where that cannot be known (no witness, or no ``/proc``)."""
        if not self.pid:
            return None
        try:
            with open(f"/proc/{self.pid}/status", encoding="ascii") as status:
                lines = status.read().splitlines()
        except OSError:
            return None
        pending = 0
        for line in lines:
            if line.startswith(("SigPnd:", "ShdPnd:")):
                pending |= int(line.split()[1], 16)
        return bool(pending >> (signum - 1) & 1)

    def close(self) -> None:
        """Stop it and reap it."""
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0
        if self._hold >= 0:
            os.close(self._hold)
            self._hold = -1


class Command:
    """A started command, reaped by one owner (see the module docstring).

    Attributes:
        pid: its process id (with ``detached``, also its process group's id).
        stdout: our end of its output pipe (stdout and, merged, stderr).
        stderr: our end of its stderr pipe when it is apart (``separate``), else None.
        detached: it has a session and process group of its own.
    """

    def __init__(
        self,
        argv: Sequence[str],
        separate: bool = False,
        cwd: str | None = None,
        detached: bool = False,
    ) -> None:
        """Start ``argv`` in ``cwd``, stdout and stderr to one pipe (or two, ``separate``).
        ``detached``: stdin from /dev/null, a session and process group of its own (a server
        running commands for its clients).

        Raises:
            OSError: it cannot be started (FileNotFoundError, PermissionError: see ``run.start_command``).
        """
        ends: list[int] = []
        try:
            read_out, out = os.pipe2(os.O_CLOEXEC)
            ends += [read_out, out]
            err = out
            if separate:
                read_err, err = os.pipe2(os.O_CLOEXEC)
                ends += [read_err, err]
            # restore_signals (the default) gives the command SIGPIPE's default action back: it dies of
            # a write to a pipe whose reader went away, as it would without us; the descriptors we were
            # given past stderr stay the command's too (make's jobserver pipe, a harness's "5>log"), ours
            # are all close-on-exec (PEP 446); a server's clients' commands get none of its own
            self._popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL if detached else None,
                stdout=out,
                stderr=err,
                cwd=cwd,
                start_new_session=detached,
                close_fds=detached,
            )
        except BaseException:
            for fd in ends:
                os.close(fd)
            raise
        for fd in ends[1::2]:  # the write ends are the command's now
            os.close(fd)
        self.pid = self._popen.pid
        self.detached = detached
        # started once the command is: a group signal from before then did not reach it either
        self._witness = None if detached else GroupWitness()
        self.stdout = OutputPipe(ends[0])
        self.stderr = OutputPipe(ends[2]) if separate else None
        self._pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):  # (a kernel or sandbox without pidfds: a thread waits)
            self._pidfd = os.pidfd_open(self.pid)
        self._waiting = anyio.Lock()

    async def connect(self) -> None:
        """Start reading its pipes (``OutputPipe.connect``)."""
        for pipe in self.pipes:
            await pipe.connect()

    @property
    def returncode(self) -> int | None:
        """Its return code once reaped (-N when a signal N killed it), else None."""
        return self._popen.returncode

    @property
    def pipes(self) -> list[OutputPipe]:
        """Our ends of its pipes."""
        return [self.stdout] if self.stderr is None else [self.stdout, self.stderr]

    async def wait(self) -> int:
        """Wait for it to exit, reap it (once, whoever waits), and return its return code."""
        async with self._waiting:
            if self._popen.returncode is None:
                if self._pidfd is not None:
                    await anyio.wait_readable(self._pidfd)
                    self._popen.wait()  # it has exited: at once
                else:
                    await anyio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            for pipe in self.pipes:
                pipe.exited()
        assert self._popen.returncode is not None
        return self._popen.returncode

    def send_signal(self, signum: int, group: bool = False) -> None:
        """Send ``signum`` to it while it runs (``group``: to its process group, members that outlive
        it too; the group's id is the pid of a ``detached`` command)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):  # (gone already)
            if group:
                os.killpg(self.pid, signum)
            elif self._popen.returncode is None:  # not reaped: the pid is still its own
                if self._pidfd is not None:
                    signal.pidfd_send_signal(self._pidfd, signum)
                else:
                    os.kill(self.pid, signum)

    def got_directly(self, signum: int) -> bool:
        """Whether the stop signal ``signum`` that we received reached it directly: it was sent to our
        whole process group, which it shares (a ``detached`` command does not, nor one that made a
        group of its own: ``timeout``, ``setsid``). Where the group's signals cannot be seen
        (``GroupWitness.saw``), a SIGINT while we are in a terminal's foreground group is taken for
        the terminal's."""
        if self._witness is None or not self._in_our_group():
            return False
        saw = self._witness.saw(signum)
        if saw is None:
            return signum == signal.SIGINT and _terminal_sent_it()
        return saw

    def _in_our_group(self) -> bool:
        """Whether it is (still) in our process group; True once it has exited (nothing to pass on)."""
        if self._popen.returncode is not None:
            return True
        try:
            return os.getpgid(self.pid) == os.getpgrp()
        except OSError:  # (gone)
            return True

    async def stop(
        self, signum: int = signal.SIGTERM, group: bool = False, grace: float = KILL_GRACE_SECONDS, sent: bool = False
    ) -> bool:
        """Stop it: ``signum`` (unless ``sent``: it has it already), SIGKILL after ``grace`` seconds if it
        still runs (``group``: its whole process group, SIGKILL to what is left of it after ``grace``
        or once it is all gone, its pipes read meanwhile); reap it.

        Returns:
            Whether it had to be killed.
        """
        if not sent:
            self.send_signal(signum, group)
        if group:  # (a shell's child printing as it stops had been killed as soon as the shell died, helper-97)
            for pipe in self.pipes:
                pipe.hold(grace + EXIT_GRACE_SECONDS)
        with anyio.move_on_after(grace):
            await self.wait()
            while group and self._group_left():  # noqa: ASYNC110 - no event says a group is empty
                await anyio.sleep(GROUP_POLL_SECONDS)
        killed = self.returncode is None
        if killed or group:
            self.send_signal(signal.SIGKILL, group)
        with anyio.CancelScope(shield=True):
            await self.wait()
        return killed

    def _group_left(self) -> bool:
        """Whether a process of its group (the group of a ``detached`` command) is still there."""
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # (one of another user's: there)
            return True
        return True

    def has_exited(self) -> bool:
        """Whether it has exited, reaped or not (it is not reaped here)."""
        if self._popen.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def close_pipes(self) -> None:
        """Close our ends of its pipes (its next writes fail, as when its reader exits)."""
        for pipe in self.pipes:
            pipe.close()

    async def aclose(self) -> None:
        """Close our ends of its pipes (one a process it left running holds, ``OutputPipe.hand_off``),
        its pidfd and its ``GroupWitness`` (it has been waited for, or is let go)."""
        for pipe in self.pipes:
            pipe.hand_off()
        self.close_pipes()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._witness is not None:
            self._witness.close()


async def reader_gone(fd: int) -> bool:
    """Wait until the reader of ``fd`` (our stdout) goes away; False at once where that cannot be
    seen: ``fd`` is not the write end of a pipe (a terminal, a file, a socket).

    A pipe's write end polls as an error once no reader is left; a thread waits for that (the event
    loop's own wait missed it while a busy command's pipe was read), until it comes or the wait is
    cancelled.
    """
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode) or fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY:
            return False
    except OSError:
        return False
    wake_read, wake = os.pipe2(os.O_CLOEXEC)

    def wait() -> bool:
        poller = select.poll()
        poller.register(fd, 0)  # (errors and hang-ups are always reported)
        poller.register(wake_read, select.POLLIN)
        return any(ready == fd for ready, _ in poller.poll())

    try:
        return await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
    finally:
        os.write(wake, b"x")  # the thread returns (its poll sees it, or the pipe's end closed)
        os.close(wake)
        os.close(wake_read)
