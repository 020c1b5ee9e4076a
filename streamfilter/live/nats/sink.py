"""The ``nats`` sink: each stream's JSONL events published to ``SUBJECT.<stream>`` in a JetStream stream.

Every message is one write of one stream (its runs, or one event) and carries where that stream's
output then ends (``Streamfilter-Next-Byte``, ``-Next-Line``, and ``-Rest-Line``/``-Rest-Kept``
inside a line; a NATS source adds ``-Seq``, ``-Run``, and ``-Ended`` on a run's exit event), so the last
message of a subject is the stream's checkpoint, written in the same step as its output: a worker
that takes the stream over goes on exactly from there (``last_position``). ``Nats-Msg-Id`` is the
stream and the byte range (or ``EVENT@OFFSET``), so a message published twice, by a retry or a
worker that repeats it after a crash, is dropped by the server within its duplicate window.
A publish waits for the server's ack; while the server is away it is retried (the stream waits:
backpressure), which the de-duplication makes safe.
"""

from __future__ import annotations

import anyio
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext

from ...core.errors import StreamfilterError
from .._logging import get_logger
from ..config import SinkConfig
from ..sinks import Positioned, Sink
from .link import POSITION, connect, ensure_stream, subject_token

__all__ = ("NatsSink",)

PUBLISH_SECONDS = 5.0  # one publish's wait for the server's ack
RETRY_SECONDS = (0.1, 0.5, 1.0, 2.0)  # waits between tries while the server is away (the last repeats)


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

    async def start(self) -> None:
        """Connect, and make the events' stream if it is missing.

        Raises:
            StreamfilterError: the servers cannot be reached, or the stream cannot be made.
        """
        self._nc = await connect(self.config.servers, f"streamfilter sink {self.name}")
        self._js = self._nc.jetstream()
        await ensure_stream(self._js, self.config.stream, [f"{self.config.subject}.>"], work_queue=False)

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
        """Publish ``data``, ``stream``'s output, with its position; retried until the server takes it."""
        assert self._js is not None, "start() first"
        headers = {"Nats-Msg-Id": f"{subject_token(stream.source)}:{key}"}
        headers.update({POSITION + name.title(): value for name, value in stream.position().items()})
        subject = self.subject(stream.source)
        tries = 0
        while True:
            try:
                await self._js.publish(subject, data, timeout=PUBLISH_SECONDS, headers=headers)
                break
            except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                if not tries:
                    self._log.warning("sink.unavailable", error=str(exc) or type(exc).__name__, subject=subject)
                await anyio.sleep(RETRY_SECONDS[min(tries, len(RETRY_SECONDS) - 1)])
                tries += 1
        if tries:
            self._log.info("sink.available", subject=subject, tries=tries + 1)

    async def last_position(self, stream: str) -> dict[str, str] | None:
        """The position headers of the last event published for ``stream`` (any worker's), or None
        when it has none (names without the ``Streamfilter-`` prefix, lower case: ``next-byte``...).

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
        return {
            name[len(POSITION) :].lower(): value
            for name, value in (msg.headers or {}).items()
            if name.startswith(POSITION)
        }

    async def aclose(self) -> None:
        """Flush what is published and close the connection."""
        if self._nc is not None and not self._nc.is_closed:
            with anyio.move_on_after(PUBLISH_SECONDS):
                await self._nc.drain()
