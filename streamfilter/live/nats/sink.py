"""The ``nats`` sink: each stream's JSONL events published to ``SUBJECT.<stream>`` in a JetStream stream.

Every message is one write of one stream (its runs, or one event) and carries where that stream's
output then ends (``Streamfilter-Next-Byte``, ``-Next-Line``, and ``-Rest-Line``/``-Rest-Kept``
inside a line; a NATS source adds ``-Seq``, ``-Run``, and ``-Ended`` on a run's exit event), so the last
message of a subject is the stream's checkpoint, written in the same step as its output: a worker
that takes the stream over goes on exactly from there (``last_position``). ``Nats-Msg-Id`` is the
stream, its run's id when it has one, and the byte range (or ``EVENT@OFFSET``), so a message
published twice, by a retry or a worker that repeats it after a crash, is dropped by the server
within its duplicate window.
A publish waits for the server's ack; while the server is away it is retried (the stream waits:
backpressure), which the de-duplication makes safe, until ``give_up`` (a stop) says how long.

A write longer than a message can hold (the server's ``max_payload``, or the output stream's
``max_msg_size``, less the headers) is published as parts, each with ``Streamfilter-Part: I/N``:
the write's bytes are the parts' concatenated (``Parts`` reassembles them). Only the last part
carries the position after the write; the others carry the position before it, so a worker that
dies between parts leaves a last message from which the stream goes on where the cut write began
(and a reader drops the parts of a write that no last part completed).
"""

from __future__ import annotations

import contextlib
import time
import zlib
from weakref import WeakKeyDictionary

import anyio
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext

from ...core.errors import StreamfilterError
from .._logging import get_logger
from ..config import SinkConfig
from ..sinks import Positioned, Sink
from .link import POSITION, Turn, connect, drain_and_close, ensure_stream, subject_token

__all__ = ("PART", "NatsSink", "Parts", "PublishFailed")

PUBLISH_SECONDS = 5.0  # one publish's wait for the server's ack
RETRY_SECONDS = (0.1, 0.5, 1.0, 2.0)  # waits between tries while the server is away (the last repeats)
PART = POSITION + "Part"  # a part of a write: "I/N", 1-based
HEADER_ROOM = 256  # bytes of a message kept for the protocol's own (HPUB's header block framing)
# errors that mean the server is away or busy (the publish is tried again); any other is the
# message's own (too large, a header it refuses) and trying again cannot help
_AWAY = (
    TimeoutError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoRespondersError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.ServerError,
    nats.js.errors.NoStreamResponseError,
)


class PublishFailed(StreamfilterError):
    """A stream's output could not be published: the server refused it (the message says why), or
    it stayed away past the deadline a stop gave (``NatsSink.give_up``). The stream writes nothing
    more here; what it did not write is for another try (its input is delivered again)."""


class Parts:
    """A reader's reassembly of one subject's messages into the writes they carry (see the module
    docstring): ``add`` each message in order; it returns the write's bytes once complete."""

    def __init__(self) -> None:
        self._id = ""
        self._parts: list[bytes] = []

    def add(self, headers: dict[str, str], data: bytes) -> bytes | None:
        """The bytes of the write that ``data`` (a message with ``headers``) completes, or None
        while its parts are not all in; a write cut short by a message of another is dropped."""
        part = headers.get(PART)
        if part is None:
            self._parts = []
            return data
        number, _, count = part.partition("/")
        ident = headers.get("Nats-Msg-Id", "").rpartition(":")[0]
        if number == "1":
            self._id, self._parts = ident, []
        elif ident != self._id or int(number) != len(self._parts) + 1:
            self._parts = []
            return None
        self._parts.append(data)
        if number != count:
            return None
        out, self._parts = b"".join(self._parts), []
        return out


class NatsSink(Sink):
    """Publishes each stream's events to its own subject (see the module docstring).

    Args:
        config: the sink's settings (``servers``, ``stream``, ``subject``).
    """

    def __init__(self, config: SinkConfig) -> None:
        super().__init__(config)
        self.text_refs = None
        self.config = config
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._log = get_logger().bind(sink=config.name)
        self._message_bytes = 0  # the most a message may hold, headers and all
        self._give_up_at = float("inf")  # (time.monotonic()) a publish still retried then fails
        # the position headers each stream's last message carried (the earlier parts of a write carry them)
        self._published: WeakKeyDictionary[Positioned, dict[str, str]] = WeakKeyDictionary()

    async def start(self) -> None:
        """Connect, and make the events' stream if it is missing.

        Raises:
            StreamfilterError: the servers cannot be reached, or the stream cannot be made.
        """
        self._nc = await connect(self.config.servers, f"streamfilter sink {self.name}")
        self._js = self._nc.jetstream()
        await ensure_stream(self._js, self.config.stream, [f"{self.config.subject}.>"], work_queue=False)
        limit = (await self._js.stream_info(self.config.stream)).config.max_msg_size or -1
        self._message_bytes = min(self._nc.max_payload, limit if limit > 0 else self._nc.max_payload)

    def give_up(self, seconds: float) -> None:
        """Publishes still retried ``seconds`` from now fail (``PublishFailed``): a stop's deadline."""
        self._give_up_at = time.monotonic() + seconds

    def subject(self, stream: str) -> str:
        """The subject of ``stream``'s events."""
        return f"{self.config.subject}.{subject_token(stream)}"

    async def send(self, data: bytes) -> None:
        """Not used: each write is a stream's (``send_from``).

        Raises:
            StreamfilterError: always (no stream to publish for).
        """
        raise StreamfilterError(f"sink {self.name!r}: a nats sink publishes a stream's events only")

    async def send_from(self, stream: Positioned, data: bytes, key: str) -> None:
        """Publish ``data``, ``stream``'s output, with its position: as one message, or as parts when
        it is longer than a message can hold; each retried while the server is away.

        Raises:
            PublishFailed: the server refused a message, or a stop's deadline passed (``give_up``).
            LeaseExpired: (from ``stream.position()``, a NATS source's) the stream's partition is
                no longer surely this worker's: nothing is published.
        """
        subject = self.subject(stream.source)
        # a run's writes are told from another run's under the same stream id (a retry's, filtered
        # after the first's exit: the server had dropped them as repeats of the first run's)
        run = (getattr(stream, "run_fields", None) or {}).get("run")
        ident = (
            f"{subject_token(stream.source)}:{key}"
            if run is None
            else f"{subject_token(stream.source)}:{subject_token(run)}:{key}"
        )
        after = self._position(stream)
        room = self._message_bytes - HEADER_ROOM - sum(len(k) + len(v) + 4 for k, v in after.items()) - len(ident)
        turn = getattr(stream, "turn", None)  # (a NATS source's stream: others decide while it retries)
        turn = turn if isinstance(turn, Turn) else None
        if len(data) <= room:
            await self._publish(subject, data, {"Nats-Msg-Id": ident, **after}, turn)
        else:
            before = self._published.get(stream, {})
            room -= len(PART) + 32  # (its header, and the checksum and part number in the id)
            if room < 1024:
                raise PublishFailed(f"sink {self.name!r}: {stream.source}'s position headers fill a message")
            count = -(-len(data) // room)
            ident += f":{zlib.crc32(data):08x}"  # (a write done again differently is no copy of this one)
            view = memoryview(data)
            for number in range(1, count + 1):
                now = self._position(stream)  # (before each part: the lease is checked again)
                headers = now if number == count else before
                part = {"Nats-Msg-Id": f"{ident}:{number}/{count}", PART: f"{number}/{count}", **headers}
                await self._publish(subject, bytes(view[(number - 1) * room : number * room]), part, turn)
        self._published[stream] = after

    def _position(self, stream: Positioned) -> dict[str, str]:
        return {POSITION + name.title(): value for name, value in stream.position().items()}

    async def _publish(self, subject: str, data: bytes, headers: dict[str, str], turn: Turn | None) -> None:
        """Publish one message; retried while the server is away, and meanwhile ``turn`` is let go.

        A publish the server takes waits for its ack in the turn: those waits are the event loop's
        idle time in which the connection is read (a worker that decided through them read it too
        seldom under load, and the server dropped it as a slow consumer)."""
        assert self._js is not None, "start() first"
        tries = 0
        async with contextlib.AsyncExitStack() as away:
            while True:
                try:
                    await self._js.publish(subject, data, timeout=PUBLISH_SECONDS, headers=headers)
                    break
                except _AWAY as exc:
                    if time.monotonic() >= self._give_up_at:
                        raise PublishFailed(
                            f"sink {self.name!r}: {subject} not taken by the stop's deadline: {exc}"
                        ) from None
                    if not tries:
                        self._log.warning("sink.unavailable", error=str(exc) or type(exc).__name__, subject=subject)
                        if turn is not None:
                            await away.enter_async_context(turn.away())
                    await anyio.sleep(RETRY_SECONDS[min(tries, len(RETRY_SECONDS) - 1)])
                    tries += 1
                except (nats.errors.Error, nats.js.errors.Error) as exc:
                    raise PublishFailed(
                        f"sink {self.name!r}: the server refused a message of {len(data)} B to {subject}: "
                        f"{exc or type(exc).__name__}"
                    ) from None
        if tries:
            self._log.info("sink.available", subject=subject, tries=tries + 1)

    async def last_position(self, stream: str) -> dict[str, str] | None:
        """The position headers of the last event published for ``stream`` (any worker's), or None
        when it has none, or only parts of a write cut short before any whole write (names without
        the ``Streamfilter-`` prefix, lower case: ``next-byte``...).

        Raises:
            StreamfilterError: the server does not answer (after the retries ``send_from`` makes).
        """
        assert self._js is not None, "start() first"
        waits = iter(RETRY_SECONDS)
        while True:
            try:
                msg = await self._js.get_last_msg(self.config.stream, self.subject(stream))
                break
            except nats.js.errors.NotFoundError:
                return None
            except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                wait = next(waits, None)
                if wait is None:
                    raise StreamfilterError(f"sink {self.name!r}: cannot read {stream}'s last event: {exc}") from None
                await anyio.sleep(wait)
        headers = msg.headers or {}
        if POSITION + "Next-Byte" not in headers:
            return None
        return {name[len(POSITION) :].lower(): value for name, value in headers.items() if name.startswith(POSITION)}

    async def aclose(self) -> None:
        """Flush what is published and close the connection (a server that is away is logged:
        ``link.drain_and_close``)."""
        if self._nc is not None:
            await drain_and_close(self._nc, f"streamfilter sink {self.name}")
