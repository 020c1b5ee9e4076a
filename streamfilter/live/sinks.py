"""Sinks: where a live stream's runs go (stdout, an appended file, unix-socket subscribers).

Every sink takes already rendered bytes (``output.render``) in its own format, in order.
``send`` applies backpressure: it returns once the bytes are written (stdout, file) or queued
(subscribers). Each subscriber has a bounded queue; one that stops reading holds the others and
the sources up for at most ``ROOM_SECONDS``, then gets a last line saying so and is disconnected.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import struct
import sys
import termios
import time
from dataclasses import dataclass
from typing import BinaryIO, Protocol

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskGroup

from ..core.errors import StreamfilterError
from ..core.words import counted
from ._logging import get_logger
from .config import SinkConfig
from .expand import TextRefs
from .terminal import escape_controls
from .totals import Totals
from .unix import bind_unix

__all__ = (
    "FileSink",
    "HoldingSink",
    "Positioned",
    "Sink",
    "StdoutSink",
    "SubscriberSink",
    "open_sink",
)

LAST_LINE_SECONDS = 10.0  # how long a dropped subscriber has to take its last line
# how long a send waits for room in a subscriber's full queue before dropping it: its writer may
# not have had a turn yet (a burst fills a queue within one event loop iteration) or its reader
# may not have been scheduled; a reader that takes nothing for this long is not reading
ROOM_SECONDS = 1.0
PIECE_BYTES = 16 << 10  # a subscriber is written an event in pieces of at most this many bytes
# bytes queued per subscriber besides ``queue_events``: a send is up to a MiB, so 1024 of them had
# held 120 MB for one slow reader before its sources were slowed (helper-94)
QUEUE_BYTES = 16 << 20
OUTQ_POLL_SECONDS = 0.1  # while a send waits for a subscriber's room, how often its reading is looked at
SLOWED_LOG_SECONDS = 10.0  # a unix sink's waits for a slow subscriber are logged at most this often
CLOSE_SECONDS = 5.0  # at a stop, how long subscribers get to take what is queued for them (their streams' ends)
BLOCKED_SECONDS = 1.0  # a write blocked this long is logged as reading.paused (and .resumed after)
FULL_RETRY_SECONDS = 1.0  # a file sink on a full disk tries its write again this often


class Positioned(Protocol):
    """A stream as a sink sees it: its name, and where its written output ends (``LiveStream``)."""

    source: str

    def position(self) -> dict[str, str]:
        """``next-byte``, ``next-line`` and, inside a line, ``rest-line`` and ``rest-kept``."""
        ...


class Sink:
    """Base of the sinks: a name, a format (``text``/``jsonl``), ``send`` and ``aclose``.

    Attributes:
        open_line: the stream (a ``LiveStream``) whose last bytes written here lack a line end,
            or None; kept by the streams, so that one stream's line let out at a pause is ended
            before another stream's output in a text sink they share.
        shared: more than one stream may write here (set by whoever opens the sink); a shared
            text sink gets a ``==> NAME <==`` line each time the stream writing to it changes.
        last_stream: the name of the stream that wrote a ``==> NAME <==`` here last, or None.
        fresh: nothing was written here yet (a file sink: the file was empty when opened), so
            the first ``==> NAME <==`` needs no blank line before it.
        text_refs: how a text sink read from its start writes refs (``expand.TextRefs``: a
            source named once in a row); None where a reader may come in between (a subscriber).
        file: the (device, inode) of the file it writes (a file sink), or None: a source does
            not read its own sinks' files.
    """

    def __init__(self, config: SinkConfig) -> None:
        self.name = config.name
        self.format = config.format
        self.open_line: object | None = None
        self.shared = False
        self.last_stream: str | None = None
        self.fresh = True
        self.text_refs: TextRefs | None = TextRefs()
        self.file: tuple[int, int] | None = None

    async def send(self, data: bytes) -> None:
        """Write ``data`` (whole rendered events), waiting while the sink is full."""
        raise NotImplementedError

    async def send_from(self, stream: Positioned, data: bytes, key: str) -> None:
        """``send`` the output of ``stream``; ``key`` names it within the stream (``START-END``, the
        byte range of the runs in it, or ``EVENT@OFFSET``), for a sink that de-duplicates (nats)."""
        await self.send(data)

    def stopping(self) -> None:
        """The daemon is stopping: a sink that waits for room gives up (``FileSink``)."""

    async def aclose(self) -> None:
        """Flush and release the sink."""


class HoldingSink(Sink):
    """Another sink whose writes wait, in memory, until ``let_go``: ``run`` holds what it prints
    while its command's output may still be written whole instead (``run.ShortOutput``).

    Args:
        sink: where the writes go; its name and format are this one's.

    Attributes:
        holding: set at the first write held.
    """

    def __init__(self, sink: Sink) -> None:
        super().__init__(SinkConfig(sink.name, "held", format=sink.format))
        self.sink = sink
        self.holding = anyio.Event()
        self._writes: list[bytes] | None = []

    async def send(self, data: bytes) -> None:
        if self._writes is None:
            await self.sink.send(data)
            return
        self._writes.append(data)
        self.holding.set()

    async def let_go(self) -> None:
        """Write what was held, in order, and every write from now on as it comes."""
        writes, self._writes = self._writes, None
        with anyio.CancelScope(shield=True):  # (a stop mid-way must not lose the rest)
            for data in writes or ():
                await self.sink.send(data)

    def drop(self) -> None:
        """Forget what was held (its place taken by whole lines the caller writes to ``sink``: no
        line is left open); later writes go through."""
        self._writes, self.open_line = None, None


class StdoutSink(Sink):
    """Standard output. Writes go through a worker thread, so a full pipe stalls only this sink's senders.

    Once its reader goes away (a broken pipe, e.g. ``| head``), output is discarded and the
    sources go on (``run`` still waits for its command and returns its status).

    On a terminal, control bytes are escaped unless ``raw`` (escape sequences in a log must
    not move the cursor or set the title); to files and pipes the bytes go verbatim.

    Args:
        config: the sink's settings.
        out: the binary stream (default ``sys.stdout.buffer``).
        totals: where a pause of reading (a write blocked ``BLOCKED_SECONDS``) is counted.
        log_closed: log ``sink.closed`` when the reader goes away: the daemon's and ``follow``'s
            logs say why they stop; ``run``'s stay quiet, as a reader that goes away is normal
            for a command line tool (``| head``).
        hold_failure: a write that fails (a full disk) is not raised: ``failed`` says why, and
            output is discarded since (``run``: its command runs to its end, whose status is said
            with the failure).

    Raises:
        StreamfilterError: stdout is closed; ``send``: a write failed (without ``hold_failure``).
    """

    def __init__(
        self,
        config: SinkConfig,
        out: BinaryIO | None = None,
        totals: Totals | None = None,
        log_closed: bool = True,
        hold_failure: bool = False,
    ) -> None:
        super().__init__(config)
        self._totals = totals
        self._hold_failure = hold_failure
        self.failed: str | None = None  # why a write failed, with ``hold_failure``
        if out is None and sys.stdout is None:
            raise StreamfilterError("cannot write output: standard output is closed")
        self._out = out if out is not None else sys.stdout.buffer
        self.broken = False  # the reader went away (a broken pipe): output is discarded since
        self.gone = anyio.Event()  # set once it is broken
        self._escape = not config.raw and self._out.isatty()
        self._lock = anyio.Lock()
        self._blocked_since: float | None = None
        self._log_closed = log_closed

    async def send(self, data: bytes) -> None:
        if self._escape:
            data = escape_controls(data)
        async with self._lock:  # one writer at a time keeps events whole
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._report_blocked)
                await anyio.to_thread.run_sync(self._write, data)
                tg.cancel_scope.cancel()
            if self.broken:
                self.gone.set()
            if self._blocked_since is not None:
                waited = round(time.monotonic() - self._blocked_since, 3)
                get_logger().info("reading.resumed", sink=self.name, blocked_seconds=waited)
                if self._totals is not None:
                    self._totals.paused(self.name, "sink", waited)
                self._blocked_since = None

    async def _report_blocked(self) -> None:
        # the sources feeding this sink wait for it (backpressure): say so once it lasts
        await anyio.sleep(BLOCKED_SECONDS)
        self._blocked_since = time.monotonic() - BLOCKED_SECONDS
        get_logger().info("reading.paused", sink=self.name, reason="the sink is not taking output")

    def _write(self, data: bytes) -> None:
        if self.broken or self.failed is not None:
            return
        try:
            self._out.write(data)
            self._out.flush()
        except BrokenPipeError:
            self.broken = True
            if self._log_closed:
                get_logger().info("sink.closed", sink=self.name, reason="the reader of standard output went away")
        except OSError as exc:  # a full disk (ENOSPC), an I/O error: said as the filter says it
            reason = f"cannot write output: {exc.strerror or exc}"
            if not self._hold_failure:
                raise StreamfilterError(reason) from None
            self.failed = reason


class FileSink(Sink):
    """A file, opened for appending (created with mode 0600 if missing). Each send is written whole
    before it returns: on a full disk (ENOSPC, EDQUOT) it waits and tries again every
    ``FULL_RETRY_SECONDS``, so its sources wait (backpressure) instead of the daemon stopping
    (``sink.full`` is logged once, ``sink.resumed`` when the write went through), until the
    daemon stops (``stopping``).

    Args:
        config: the sink's settings.
        totals: where its waits for room are counted (``streamfilter_backpressure_*``).

    Raises:
        OSError: the file cannot be opened; ``send``: another write error.
        StreamfilterError: ``send``: the disk is still full when the daemon stops (what was not
            written is read again after a restart: its checkpoints were not advanced).
    """

    def __init__(self, config: SinkConfig, totals: Totals | None = None) -> None:
        super().__init__(config)
        self._totals = totals
        self.path = config.path
        self._fd = os.open(config.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        info = os.fstat(self._fd)
        self.fresh = info.st_size == 0  # appending after a restart or reload: not fresh
        self.file = (info.st_dev, info.st_ino)
        self._stopping = anyio.Event()
        self._lock = anyio.Lock()

    async def send(self, data: bytes) -> None:
        async with self._lock:  # (one send at a time: a send that waits for room is undone whole)
            view, full_since = memoryview(data), None
            while view:
                try:
                    view = view[os.write(self._fd, view) :]  # (a full disk may take part of it first)
                except OSError as exc:
                    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                        raise
                    if self._stopping.is_set():  # (a stream's writes are shielded from the stop: give up here)
                        # the part written goes: a restart writes it whole, not after half an event
                        part = len(data) - len(view)
                        if part:
                            os.ftruncate(self._fd, os.fstat(self._fd).st_size - part)
                        raise StreamfilterError(
                            f"sink {self.name!r}: cannot write {self.path} while stopping: {exc.strerror}; what "
                            "it did not take is read again after a restart"
                        ) from None
                    if full_since is None:
                        full_since = time.monotonic()
                        get_logger().warning("sink.full", sink=self.name, path=self.path, error=exc.strerror)
                    with anyio.move_on_after(FULL_RETRY_SECONDS):
                        await self._stopping.wait()
            if full_since is not None:
                waited = round(time.monotonic() - full_since, 3)
                get_logger().info("sink.resumed", sink=self.name, waited_seconds=waited)
                if self._totals is not None:
                    self._totals.paused(self.name, "sink", waited)

    def stopping(self) -> None:
        self._stopping.set()

    async def aclose(self) -> None:
        os.close(self._fd)


@dataclass(slots=True)
class _Reading:
    """How a unix sink's subscriber reads: its socket, when it last took a piece of an event or read
    from its socket (``time.monotonic()``), and the bytes its socket held unread when looked at."""

    sock: socket.socket
    took: float = 0.0
    unread: int | None = None

    def last_read(self) -> float:
        """When it last read: its socket's unread bytes going down count too (``SIOCOUTQ``; a unix
        socket's writer is woken only once the reader took three quarters of its buffer, so a steady
        slow reader takes no piece for seconds, helper-52)."""
        try:
            unread = int(struct.unpack("i", fcntl.ioctl(self.sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0])
        except (OSError, ValueError):  # (closed, or a system without it: the pieces taken tell)
            return self.took
        if self.unread is not None and unread < self.unread:
            self.took = time.monotonic()
        self.unread = unread
        return self.took


class _Queue:
    """A subscriber's queue of sends, bounded in sends (``events``) and in bytes (``QUEUE_BYTES``;
    one send of any size fits an empty queue)."""

    def __init__(self, events: int) -> None:
        self.sends, self.receive = anyio.create_memory_object_stream[bytes](events)
        self.held = 0  # bytes queued
        self._room = anyio.Event()  # set when the reader takes a send

    def put_nowait(self, data: bytes) -> bool:
        """Queue ``data`` if there is room; whether it was queued.

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError: the reader went, or the queue was closed.
        """
        if self.held and self.held + len(data) > QUEUE_BYTES:
            return False
        try:
            self.sends.send_nowait(data)
        except anyio.WouldBlock:
            return False
        self.held += len(data)
        return True

    async def put(self, data: bytes) -> None:
        """Queue ``data`` once there is room (raises as ``put_nowait``)."""
        while True:
            room = self._room
            if self.put_nowait(data):
                return
            await room.wait()

    def took(self, data: bytes) -> None:
        """The reader took ``data`` off the queue."""
        self.held -= len(data)
        self._room.set()
        self._room = anyio.Event()


class SubscriberSink(Sink):
    """A unix socket that subscribers connect to; each gets the events sent after it connected.

    Each subscriber has a queue of ``queue_events`` sends and ``QUEUE_BYTES``, written to it in pieces
    of at most ``PIECE_BYTES``. A send that finds queues full waits for room in them, its sources waiting with
    it (backpressure: a burst is not taken for a reader falling behind; a reader slower than the
    sources slows them), as long as each subscriber takes a piece at least every ``ROOM_SECONDS``.
    One that takes nothing that long (it is not reading) gets a final line (a JSONL
    ``subscriber.dropped`` event or a text line) and is disconnected, and a ``subscriber.dropped``
    log event names the sink. Each wait for room is counted in ``totals``
    (``streamfilter_backpressure_*``), and the seconds waited are logged, ``reading.slowed``, at
    the first wait and then at most every ``SLOWED_LOG_SECONDS`` while waits go on.

    Raises:
        SocketInUseError, OSError: see ``unix.bind_unix``.
    """

    def __init__(self, config: SinkConfig, task_group: TaskGroup, totals: Totals | None = None) -> None:
        super().__init__(config)
        self._totals = totals
        self._reading: dict[int, _Reading] = {}  # how each subscriber reads
        self._waited = 0.0  # seconds waited for room since reading.slowed was last logged
        self._said_at: float | None = None  # when it was
        self.text_refs = None  # a subscriber may connect at any point: each ref names its source
        self.path = config.path
        self.queue_events = config.queue_events
        self._mode = config.mode
        self._group = config.group
        self._tg = task_group
        self._queues: dict[int, _Queue] = {}
        self._scopes: dict[int, anyio.CancelScope] = {}
        self._none_left = anyio.Event()  # set when the last subscriber went (``aclose`` waits for it)
        self._dropped: set[int] = set()
        self._next = 0
        self._lock = anyio.Lock()
        self._log = get_logger().bind(sink=config.name)

    async def start(self) -> None:
        """Bind the socket and start accepting subscribers."""
        listener = await bind_unix(self.path, self._mode, self._group)
        self._listener = listener
        self._tg.start_soon(listener.serve, self._serve, self._tg)

    async def _serve(self, stream: SocketStream) -> None:
        queue = _Queue(self.queue_events)
        ident, self._next = self._next, self._next + 1
        self._queues[ident] = queue
        self._reading[ident] = _Reading(stream.extra(SocketAttribute.raw_socket))
        self._log.info("subscriber.connected", subscriber=ident)
        # shielded: at a stop, what is queued (the streams' end events) is still written (``aclose``)
        with anyio.CancelScope(shield=True) as scope:
            self._scopes[ident] = scope
            if self._none_left.is_set():  # (one came after all had gone)
                self._none_left = anyio.Event()
            try:
                async with stream, queue.receive:
                    async for data in queue.receive:
                        queue.took(data)
                        # (in pieces, each a sign of life: a reader slower than one event a second still
                        # reads, and is waited for, helper-52)
                        for at in range(0, len(data), PIECE_BYTES):
                            await stream.send(data[at : at + PIECE_BYTES])
                            self._reading[ident].took = time.monotonic()
                        if ident in self._dropped:  # what it was being sent is whole: now the last line
                            await stream.send(self._last_line())
                            break
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._log.info("subscriber.disconnected", subscriber=ident)
        self._queues.pop(ident, None)
        self._scopes.pop(ident, None)
        self._reading.pop(ident, None)
        self._dropped.discard(ident)
        if not self._scopes:
            self._none_left.set()

    async def send(self, data: bytes) -> None:
        async with self._lock:  # one send at a time: a send that waits keeps its place in every queue
            full: list[tuple[int, _Queue]] = []
            for ident, queue in list(self._queues.items()):
                try:
                    if not queue.put_nowait(data):
                        full.append((ident, queue))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._queues.pop(ident, None)
            waiting_since = time.monotonic() if full else None
            stuck: list[tuple[int, _Queue]] = []
            try:
                while full:
                    ident, queue = full[0]
                    # until it has taken no byte for ROOM_SECONDS (one deadline for all the stuck
                    # ones: each costs it once)
                    assert waiting_since is not None
                    reading = self._reading.get(ident)
                    took = reading.last_read() if reading is not None else 0.0
                    left = max(waiting_since, took) + ROOM_SECONDS - time.monotonic()
                    if left <= 0:
                        stuck.append(full.pop(0))
                        continue
                    with anyio.move_on_after(min(left, OUTQ_POLL_SECONDS)):
                        try:
                            await queue.put(data)
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                            self._queues.pop(ident, None)
                        del full[0]
            finally:  # (a send cancelled while it waits too: no subscriber goes on past a write it lacks)
                for ident, queue in stuck + full:
                    if self._queues.get(ident) is queue:  # (not one that went away meanwhile)
                        self._drop(ident, queue)
                if waiting_since is not None:
                    self._slowed(time.monotonic() - waiting_since)

    def _slowed(self, seconds: float) -> None:
        """Its sources waited ``seconds`` for room in a subscriber's queue: counted, and said at the
        first wait and then at most every ``SLOWED_LOG_SECONDS``."""
        if self._totals is not None:
            self._totals.paused(self.name, "sink", seconds)
        self._waited += seconds
        now = time.monotonic()
        if self._said_at is None or now - self._said_at >= SLOWED_LOG_SECONDS:
            since = None if self._said_at is None else round(now - self._said_at, 3)
            self._log.info(
                "reading.slowed", reason="a subscriber is reading slower than the sources write",
                waited_seconds=round(self._waited, 3), over_seconds=since,
            )  # fmt: skip
            self._waited, self._said_at = 0.0, now

    def _last_line(self) -> bytes:
        queue = f"{counted(self.queue_events, 'event')} or {QUEUE_BYTES >> 20} MiB"
        what = f"subscriber too slow: its queue of {queue} is full; disconnected"
        if self.format == "jsonl":
            return json.dumps({"event": "subscriber.dropped", "sink": self.name, "reason": what}).encode() + b"\n"
        return f"[streamfilter: {what}]\n".encode()

    def _drop(self, ident: int, queue: _Queue) -> None:
        """Stop queueing for a subscriber; once the write in progress is done it gets the last line.

        A subscriber that reads nothing for ``LAST_LINE_SECONDS`` is cut off without it.
        """
        del self._queues[ident]
        self._dropped.add(ident)
        queue.sends.close()
        self._log.warning("subscriber.dropped", subscriber=ident, queue_events=self.queue_events)

        async def cut_off() -> None:
            await anyio.sleep(LAST_LINE_SECONDS)
            scope = self._scopes.get(ident)
            if scope is not None:
                scope.cancel()

        self._tg.start_soon(cut_off)

    async def aclose(self) -> None:
        """Stop taking subscribers; each gets what is queued for it, for ``CLOSE_SECONDS`` in all."""
        for queue in self._queues.values():
            await queue.sends.aclose()
        self._queues.clear()
        if self._scopes:
            with anyio.move_on_after(CLOSE_SECONDS):
                await self._none_left.wait()
        for scope in list(self._scopes.values()):
            scope.cancel()
        listener = getattr(self, "_listener", None)
        if listener is not None:
            await listener.aclose()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


async def open_sink(config: SinkConfig, task_group: TaskGroup, totals: Totals | None = None) -> Sink:
    """The sink ``config`` describes, ready to send to (pauses counted in ``totals``); not a
    ``nats`` sink (``nats.sink.NatsSink``, loaded only for a config that has one).

    Raises:
        OSError, SocketInUseError: a file or socket that cannot be opened or bound.
    """
    if config.type == "stdout":
        return StdoutSink(config, totals=totals)
    if config.type == "file":
        return FileSink(config, totals)
    sink = SubscriberSink(config, task_group, totals)
    await sink.start()
    return sink
