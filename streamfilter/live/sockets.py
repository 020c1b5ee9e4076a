"""Socket sources, unix and TCP (their unix paths are bound by ``unix.bind_unix``).

Each connection is its own stream (its own line numbers, windows and statistics), filtered
while the connection is open; a run envelope in it (``envelope``) is a stream of its own with
its own query, ended by its exit status; its end flushes what is pending, an unterminated last line
included. A line longer than the source's ``max_line_bytes`` keeps its first bytes and ends
with an ``[N bytes elided]`` marker: the connection stays open and memory stays bounded.
Reading waits while the sinks are full, so backpressure reaches the peer (its sends block).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
from anyio.abc import Listener, SocketAttribute, SocketStream, TaskGroup
from structlog.typing import FilteringBoundLogger

from ..core.words import counted
from ._logging import get_logger
from .envelope import SUCCESS_TAIL_LINES, Control, EnvelopeSplitter, printable, stop_reply

if TYPE_CHECKING:
    from .stream import LiveStream

__all__ = ("ConnectionNumbers", "LineCap", "serve_socket_source")

READ_BYTES = 1 << 16
FINISH_SECONDS = 10.0  # most time a closing connection's stream gets to write what it holds
DRAIN_SECONDS = 0.5  # at a stop, how long a connection is still read for what its peer sent
REPLY_SECONDS = 2.0  # at a stop, how long a send client gets to read the reply and close


class ConnectionNumbers:
    """The numbers of a daemon's socket connections, per source (its streams ``NAME#k``): 1, 2, ...
    over the daemon's reloads and restarts, the last one kept in ``connections/SOURCE.n`` under the
    state directory ``directory`` (a restart had numbered from 1 again, and two builds' outputs
    shared a stream name in the same sink, helper-73); counted from the last kept where it cannot
    be written."""

    def __init__(self, directory: Path) -> None:
        self.folder = directory / "connections"
        self._last: dict[str, int] = {}

    def next(self, source: str) -> int:
        """The number of ``source``'s next connection."""
        if source not in self._last:
            try:
                self._last[source] = int((self.folder / f"{source}.n").read_text() or 0)
            except (OSError, ValueError):  # (none kept yet, or unreadable: from 1)
                self._last[source] = 0
        self._last[source] += 1
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            temp = self.folder / f".{source}.n.tmp"
            temp.write_text(str(self._last[source]))
            os.replace(temp, self.folder / f"{source}.n")  # (whole: a reader never sees half a number)
        return self._last[source]


class LineCap:
    """Cuts lines longer than ``max_bytes``: the first ``max_bytes`` bytes, then ``[N bytes elided]``.

    ``feed(bytes) -> bytes`` (the bytes to pass on); bounded state. ``cut`` lists
    ``(line length in bytes)`` of each line cut since the last look, for a warning.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._run = 0  # bytes of the current line seen so far
        self.cut: list[int] = []

    def feed(self, chunk: bytes) -> bytes:
        """Pass ``chunk`` on, with the parts of over-long lines beyond the cap removed."""
        out = bytearray()
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            end = len(chunk) if nl < 0 else nl + 1
            piece = chunk[pos:end]
            body = len(piece) - (1 if nl >= 0 else 0)
            room = max(0, self.max_bytes - self._run)
            out += piece[: min(room, body)]
            self._run += body
            if nl >= 0:
                if self._run > self.max_bytes:
                    out += _elided(self._run - self.max_bytes)
                    self.cut.append(self._run)
                out += b"\n"
                self._run = 0
            pos = end
        return bytes(out)

    def flush(self) -> bytes:
        """End of the stream: the marker of a cut last line that had no newline."""
        if self._run > self.max_bytes:
            self.cut.append(self._run)
            marker = _elided(self._run - self.max_bytes)
            self._run = 0
            return marker
        return b""


def _elided(n: int) -> bytes:
    """The marker put in place of the ``n`` bytes cut from an over-long line."""
    return f" [{counted(n, 'byte')} elided]".encode()


class OpenStream(Protocol):
    """Makes the live stream of a connection or of a run in it."""

    def __call__(self, name: str, query: str | None = None, extra: dict[str, object] | None = None) -> LiveStream:
        """A new stream named ``name``; ``query`` replaces the source's; ``extra`` goes into its JSONL."""
        ...


class _Connection:
    """One connection's streams: its plain lines, and the run inside an envelope, if one is open."""

    def __init__(self, name: str, open_stream: OpenStream, log: FilteringBoundLogger) -> None:
        self.name = name
        self.open_stream = open_stream
        self.log = log
        self.plain: LiveStream | None = None
        self.run: LiveStream | None = None
        self.run_id = ""
        self.nonce: str | None = None
        self.command = ""
        self.runs = 0
        self.ended_lines = 0  # lines of the streams ended so far (runs, then the plain stream)

    def streams(self) -> list[LiveStream]:
        return [s for s in (self.plain, self.run) if s is not None]

    def due(self) -> float | None:
        dues = [d for d in (s.due() for s in self.streams()) if d is not None]
        return min(dues) if dues else None

    async def take(self, items: list[bytes | Control]) -> None:
        for item in items:
            if isinstance(item, bytes):
                if self.run is None and self.plain is None:
                    self.plain = self.open_stream(self.name)
                target = self.run or self.plain
                assert target is not None
                await target.feed(item)
                continue
            why = self._refuse(item)
            if why is not None:  # logged, and its bytes are data
                self.log.warning("envelope.invalid", stream=self.name, reason=why)
                await self.take([item.raw])
            elif item.type == "run-start":
                await self._start_run(item)
            else:
                status = item.fields.get("status")
                await self._end_run(status if isinstance(status, int) else None)

    def _refuse(self, item: Control) -> str | None:
        """Why a control line is not taken, or None."""
        if item.type == "invalid":
            return item.reason
        if self.run is not None and self.nonce is not None and item.fields.get("nonce") != self.nonce:
            return "a control line without the open run's nonce (output of the run itself?)"
        if item.type == "run-end":
            if self.run is None:
                return "run-end with no run open"
            if str(item.fields.get("run", "")) != self.run_id:
                return f"run-end for run {item.fields.get('run')!r}, but run {self.run_id!r} is open"
            status = item.fields.get("status")
            if status is not None and (
                isinstance(status, bool) or not isinstance(status, int) or not 0 <= status <= 255
            ):
                return f"run-end with status {status!r}, not 0-255 (the run goes on)"
        return None

    async def _start_run(self, item: Control) -> None:
        if self.run is not None:
            self.log.warning("envelope.invalid", stream=self.name, reason="run-start while a run is open: it ends")
            await self._end_run(None)
        self.runs += 1
        self.run_id = printable(str(item.fields.get("run", "")))[:64] or str(self.runs)
        nonce = item.fields.get("nonce")
        self.nonce = nonce if isinstance(nonce, str) and nonce else None
        query = item.fields.get("query")
        if query is not None and not (isinstance(query, str) and query.split()):
            self.log.warning("envelope.invalid", stream=self.name, reason="query is not a non-empty string: ignored")
            query = None
        extra: dict[str, object] = {"run": self.run_id}
        for key in ("command", "cwd"):  # null when run-start has none (every event of a run has both)
            extra[key] = item.fields[key] if isinstance(item.fields.get(key), str) else None
        self.command = printable(str(extra["command"] or ""))
        self.run = self.open_stream(f"{self.name}/{self.run_id}", query, extra)
        self.log.info("run.started", stream=self.name, run=self.run_id, command=extra.get("command"))

    async def _end_run(self, status: int | None) -> None:
        """End the open run: faithful on failure (the configured tail), terse on success."""
        if self.run is None:
            return
        run, self.run = self.run, None
        await run.end(SUCCESS_TAIL_LINES if status == 0 else None)
        if status == 0 and run.on_green is not None:
            run.on_green()
        self.ended_lines += run.filter.stats.lines
        what = f"run {self.run_id}" + (f" ({self.command[:80]})" if self.command else "")
        if status is None:
            await run.marker(f"{what} ended without an exit status", "exit", status=None)
        else:
            await run.marker(f"{what} exited with status {status}", "exit", status=status)
        self.log.info("run.ended", stream=self.name, run=self.run_id, status=status)

    async def tick(self) -> None:
        for stream in self.streams():
            await stream.tick()

    async def end(self) -> None:
        await self._end_run(None)
        if self.plain is not None:
            await self.plain.end()
            self.ended_lines += self.plain.filter.stats.lines


async def serve_socket_source(
    listener: Listener[SocketStream],
    name: str,
    open_stream: OpenStream,
    max_line_bytes: int,
    task_group: TaskGroup,
    number: Callable[[], int],
) -> None:
    """Accept connections on ``listener``; each is filtered as its own stream, each run envelope too.

    Args:
        listener: a bound listener (``bind_unix``, a TCP listener, or one from systemd).
        name: the source's name; connection ``k`` is the stream ``NAME#k``, a run ``R`` in it
            the stream ``NAME#k/R`` (see ``envelope``).
        open_stream: makes each stream.
        max_line_bytes: the line cap (``LineCap``).
        task_group: where connection tasks run.
        number: the next connection's ``k`` (``ConnectionNumbers``: counted over the daemon's
            reloads and restarts, so two connections never share a stream name).
    """
    log = get_logger().bind(source=name)

    async def handle(conn: SocketStream) -> None:
        stream_name = f"{name}#{number()}"
        peer = _peer(conn)
        log.info("connection.opened", stream=stream_name, peer=peer)
        streams = _Connection(stream_name, open_stream, log)
        cap = LineCap(max_line_bytes)
        envelopes = EnvelopeSplitter()
        ended = False  # the peer closed (else the daemon is stopping)
        reset = False  # it reset the connection: what it sent that was not read yet, the kernel dropped
        received = 0  # bytes read from the peer, all of them taken
        unended = 0  # of them, those after the last line end
        async with conn:
            try:
                while True:
                    due = streams.due()
                    timeout = max(0.0, due - time.monotonic()) if due is not None else None
                    data = b""
                    with anyio.move_on_after(timeout) if timeout is not None else anyio.CancelScope():
                        try:
                            data = await conn.receive(READ_BYTES)
                        except anyio.EndOfStream:
                            ended = True
                            break
                        except (anyio.BrokenResourceError, ConnectionError):
                            ended = reset = True
                            break
                    if data:
                        received, unended = _count(data, received, unended)
                        await streams.take(envelopes.feed(cap.feed(data)))
                        _warn_cut(log, cap, stream_name, peer)
                    else:
                        await streams.tick()
            finally:
                # the peer left or the daemon stops: what was received is decided and written
                with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_SECONDS):
                    if not ended:  # stopping: take what the peer has sent already
                        with anyio.move_on_after(DRAIN_SECONDS):
                            try:
                                while data := await conn.receive(READ_BYTES):
                                    received, unended = _count(data, received, unended)
                                    await streams.take(envelopes.feed(cap.feed(data)))
                            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                                ended = True
                        if not ended and streams.run is not None and streams.nonce is not None:
                            # its unended last line is not taken (send filters it whole) if none of it is out
                            whole = streams.run.filter.drop_partial(unended)
                            await _reply_stop(conn, received - unended if whole else received)
                    await streams.take(envelopes.feed(cap.flush()) + envelopes.flush())
                    _warn_cut(log, cap, stream_name, peer)
                    await streams.end()  # (an unterminated last line is counted then)
                    if reset:  # (a peer that sets SO_LINGER 0, or is killed with unread replies)
                        log.warning(
                            "connection.closed", stream=stream_name, peer=peer, lines=streams.ended_lines, reset=True
                        )
                    else:
                        log.info("connection.closed", stream=stream_name, peer=peer, lines=streams.ended_lines)

    await listener.serve(handle, task_group)


def _count(data: bytes, received: int, unended: int) -> tuple[int, int]:
    """Bytes read so far, and of them those after the last line end, once ``data`` is read too."""
    nl = data.rfind(b"\n")
    return received + len(data), (unended + len(data) if nl < 0 else len(data) - nl - 1)


async def _reply_stop(conn: SocketStream, received: int) -> None:
    """Tell a ``send`` client, whose run goes on, how many of its bytes were read (``{"type": "stop",
    "received": N}``): it filters the rest itself. What it sends after that is read and dropped until
    it closes, so the reply is not lost to a reset (a TCP peer that writes to a closed socket)."""
    with anyio.move_on_after(REPLY_SECONDS):
        try:
            await conn.send(stop_reply(received))
            await conn.send_eof()
            while await conn.receive(READ_BYTES):
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass


def _peer(conn: SocketStream) -> str:
    """``HOST:PORT`` of a TCP peer, ``unix`` for a unix socket's (or its path when it has one);
    ``tcp`` for a TCP peer that reset the connection before its address was read."""
    unix = conn.extra(SocketAttribute.family) == socket.AF_UNIX
    try:
        address = conn.extra(SocketAttribute.remote_address)
    except (anyio.TypedAttributeLookupError, OSError):
        return "unix" if unix else "tcp"
    if isinstance(address, tuple):
        return f"{address[0]}:{address[1]}"
    return str(address) or ("unix" if unix else "tcp")


def _warn_cut(log: FilteringBoundLogger, cap: LineCap, stream: str, peer: str) -> None:
    for length in cap.cut:
        log.warning("input.line_truncated", stream=stream, peer=peer, bytes=length, kept_bytes=cap.max_bytes)
    cap.cut.clear()
