"""What the NATS source, sink and ``send --nats`` share: the connection, the JetStream streams
they make when missing, and the names of the headers (docs/fleet.md describes the layout).

Workers take a stream's bytes from ``SUBJECT.<partition>.<stream id>``, kept in a work-queue stream
until a worker acks them. ``send --nats`` publishes there itself (``partition_of``); a producer that
cannot compute the partition (Vector, Fluent Bit) publishes to ``SUBJECT.<stream id>``, and the
server's partition mapping (``mappings = {"SUBJECT.*": "SUBJECT.{{partition(N,1)}}.{{wildcard(1)}}"}``)
puts each message on the same subject.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress

import anyio
import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StreamConfig

from ...core.errors import StreamfilterError
from .._logging import get_logger

__all__ = (
    "CONTROL",
    "OFFSET",
    "POSITION",
    "RUN",
    "STREAM_ID",
    "Turn",
    "connect",
    "drain_and_close",
    "ensure_stream",
    "partition_of",
    "subject_token",
)

OFFSET = "Streamfilter-Offset"  # a data message: the stream offset of its first byte (decimal)
CONTROL = "Streamfilter-Control"  # a control message: run-start or run-end (its fields in a JSON body)
RUN = "Streamfilter-Run"  # a data message of a run: its id (the data waits for the run's start)
POSITION = "Streamfilter-"  # + Next-Byte, Next-Line, Rest-Line, Rest-Kept, Seq, Run, Ended: on output
STREAM_ID = re.compile(r"[A-Za-z0-9_-]+")  # a stream id is one subject token
CONNECT_SECONDS = 5.0
DRAIN_SECONDS = 5.0  # at a stop, the longest a connection's drain may take (then it is closed)
CLOSE_SECONDS = 3.0  # ...and its close (nats-py waits up to 2 s for a reconnect under way to end)
# what nats-py raises when a connection cannot be drained, flushed or closed because the server is
# away: the connection is lost (reconnecting), closing or closed, a flush is not answered (its
# TimeoutErrors are the builtin's), or the socket's last write fails
CONNECTION_LOST = (
    OSError,
    TimeoutError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
)
SLOW_LOG_SECONDS = 10.0  # a subscription's dropped messages are logged this often at most (with their count)
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193  # FNV-1a, 32 bits


def partition_of(stream_id: str, partitions: int) -> int:
    """The partition (0 to ``partitions`` - 1) of stream ``stream_id``, as nats-server's subject
    mapping function ``partition(partitions,1)`` computes it for ``SUBJECT.<stream_id>``: the 32-bit
    FNV-1a hash of the id's UTF-8 bytes, modulo ``partitions`` (``getHashPartition`` in the server's
    ``subject_transform.go``; tests/integration/test_nats.py checks it against a server's mapping).
    """
    h = _FNV_OFFSET
    for byte in stream_id.encode():
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h % partitions


class Turn:
    """A worker's streams decide one at a time (``held``), so the connection's reader gets the
    event loop between any two turns; a stream lets its turn go while it waits for a server that
    does not take its output (``away``: its publish retried), so the others decide meanwhile."""

    def __init__(self) -> None:
        self._lock = anyio.Lock()
        self._holder: object = None  # the task holding the turn (anyio.get_current_task().id)

    @property
    def wanted(self) -> bool:
        """Other streams wait for the turn (the worker is busy)."""
        return self._lock.statistics().tasks_waiting > 0

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold the turn (waiting for it) for the body."""
        async with self._lock:
            self._holder = anyio.get_current_task().id
            try:
                yield
            finally:
                self._holder = None

    @asynccontextmanager
    async def away(self) -> AsyncIterator[None]:
        """Let the turn go for the body if this task holds it, and take it back after (a cancel
        waits for it: the holder's body expects it held)."""
        me = anyio.get_current_task().id
        if self._holder != me:
            yield
            return
        self._holder = None
        self._lock.release()
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self._lock.acquire()
            self._holder = me


def subject_token(name: str) -> str:
    """``name`` as one subject token: every character but letters, digits, ``_`` and ``-`` as ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"


async def connect(servers: Sequence[str], name: str) -> Client:
    """A connection to the first of ``servers`` that answers; once made, it reconnects by itself
    whenever it is lost (logged as ``nats.disconnected`` and ``nats.reconnected``).

    Raises:
        StreamfilterError: none of the servers answered (each is tried twice, 2 s apart).
    """
    log = get_logger().bind(connection=name)

    async def disconnected() -> None:
        if connected and connected[0].is_closed:
            return  # (our own close: a send that ended printed it every time, helper-26)
        log.info("nats.disconnected")

    async def reconnected() -> None:
        log.info("nats.reconnected")

    connected: list[Client] = []  # (the client, once made: the callbacks come before)
    slow = [0, -SLOW_LOG_SECONDS]  # messages dropped since the last nats.slow_consumer, when that was said

    async def error(exc: Exception) -> None:
        if isinstance(exc, nats.errors.SlowConsumerError):  # (one call a message dropped)
            slow[0] += 1
            if time.monotonic() >= slow[1] + SLOW_LOG_SECONDS:
                hint = "a stream's queue is full; the messages are delivered again (they are not acked)"
                log.warning("nats.slow_consumer", subject=exc.subject, dropped=slow[0], hint=hint)
                slow[:] = [0, time.monotonic()]
            return
        log.warning("nats.error", error=str(exc) or type(exc).__name__)

    try:
        client = await nats.connect(
            servers=list(servers),
            name=name,
            connect_timeout=CONNECT_SECONDS,
            allow_reconnect=True,
            max_reconnect_attempts=1,  # (at the start: each server tried twice, then an error)
            disconnected_cb=disconnected,
            reconnected_cb=reconnected,
            error_cb=error,
        )
        # once connected, a lost connection is tried again for good (nats-py reads its options then)
        client.options["max_reconnect_attempts"] = -1
        connected.append(client)
        return client
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        raise StreamfilterError(
            f"cannot connect to NATS at {', '.join(servers)}: {exc or type(exc).__name__}"
        ) from None


async def drain_and_close(client: Client, name: str) -> None:
    """At a stop: drain ``client`` (its subscriptions' pending messages handled, what it published
    and acked sent) and close it. When the server is away (the drain fails, or takes longer than
    ``DRAIN_SECONDS``) that cannot be done: it is logged (``nats.drain_failed``, with the connection's
    ``name``) and the connection closed all the same. Nothing is lost: the messages a worker did not
    ack are delivered again. Errors other than a lost connection's are raised.
    """
    if client.is_closed:
        return
    error = ""
    with anyio.move_on_after(DRAIN_SECONDS) as drained:
        try:
            await client.drain()
        except CONNECTION_LOST as exc:
            error = str(exc) or type(exc).__name__
    if drained.cancelled_caught:
        error = f"not drained within {DRAIN_SECONDS:g} s"
    if error:
        hint = "the server is away; the messages not acked are delivered again"
        get_logger().warning("nats.drain_failed", connection=name, error=error, hint=hint)
    if not client.is_closed:  # (a failed drain leaves it open, trying to reconnect for good)
        with anyio.move_on_after(CLOSE_SECONDS), suppress(*CONNECTION_LOST):
            await client.close()


async def ensure_stream(js: JetStreamContext, name: str, subjects: list[str], work_queue: bool) -> None:
    """Make the JetStream stream ``name`` on ``subjects`` unless it exists (an existing one is left
    as it is: its operator may have set limits or replicas). A work queue keeps each message until
    it is acked; otherwise messages stay within the server's limits.

    Raises:
        StreamfilterError: the server has no JetStream, or refuses the stream (say, another stream
            has those subjects).
    """
    try:
        await js.stream_info(name)
        return
    except nats.js.errors.NotFoundError:
        pass
    except (TimeoutError, nats.errors.NoRespondersError):
        raise StreamfilterError("the NATS server does not answer JetStream requests: is JetStream enabled?") from None
    retention = RetentionPolicy.WORK_QUEUE if work_queue else RetentionPolicy.LIMITS
    try:
        await js.add_stream(StreamConfig(name=name, subjects=subjects, retention=retention, duplicate_window=120.0))
    except nats.js.errors.APIError as exc:
        raise StreamfilterError(f"cannot make the JetStream stream {name} on {', '.join(subjects)}: {exc}") from None
    get_logger().info("nats.stream_made", stream=name, subjects=subjects, work_queue=work_queue)
