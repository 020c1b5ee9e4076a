"""The ``nats`` source: a pool of workers, each filtering the streams of the partitions it holds.

Layout (docs/fleet.md): stream ``ID``'s bytes come on ``SUBJECT.<p>.ID`` in the work-queue stream
``STREAM`` (``send --nats`` publishes there; other producers publish to ``SUBJECT.ID`` and the
server's partition mapping puts them there). Partition
``p`` has one durable push consumer, ``CONSUMER-p``, and one owner at a time: the worker holding the
lease ``partition.<p>`` in the key-value bucket ``CONSUMER-leases`` (its keys expire
``lease_seconds`` after their last renewal; every worker renews its own a third of that apart, on
a thread of its own (``leases``), and writes ``workers.<id>`` beside them). Each worker holds
about its share of the partitions (their number over the workers alive, rounded up): it claims
free ones up to its share and hands back those above it, so a worker that starts takes some over
and one that dies leaves its leases to expire and be claimed by the others. A worker takes a
partition as lost, and writes nothing more for it, once its lease could have expired (a renewal
that did not come back in time): see ``_Worker.lose``.

A message is a chunk of one stream's bytes with its offset in the ``Streamfilter-Offset`` header,
or a control message (``Streamfilter-Control: run-start`` or ``run-end``, its fields a JSON body
as in a socket's run envelope, at the offset where it applies). A message without the header holds
whole lines (``payload``: ``lines`` or Fluent Bit's JSON records), placed after the stream's bytes
so far. Each stream is a ``LiveStream`` of its own; bytes before the offset the stream has reached
(a message delivered again) are skipped, and a message that comes before its turn waits for it (a
run's data, ``Streamfilter-Run``, waits for its run-start too). One stream decides at a time
(``link.Turn``); while others wait for it, its bytes are fed in batches (``FEED_BYTES``).

A message is acked once every byte it carried is decided and written to the sinks; until then a
progress ack every third of ``ack_wait_seconds`` keeps it from being delivered again. A stream new
to this worker goes on from where its output ends, read from the last event of its subject in the
source's nats sink (``NatsSink.last_position``): what a crash left unacked is delivered again to the
new owner and its bytes up to there skipped, and a ``resumed`` event says where the stream went on.
A new owner makes the partition's consumer afresh, so the unacked messages come before newer ones.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import time
import zlib
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from typing import Any

import anyio
import nats.errors
import nats.js.errors
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, KeyValueConfig
from nats.js.kv import KeyValue

from .._logging import get_logger
from ..config import SourceConfig
from ..envelope import SUCCESS_TAIL_LINES, printable
from ..expand import archive_refs
from ..sinks import Sink
from ..stream import HOLD_SECONDS, ArchivedStream
from ..totals import Totals
from .leases import Lease, LeaseKeeper, pool_partitions
from .link import CONTROL, OFFSET, RUN, Turn, connect, drain_and_close, ensure_stream
from .sink import NatsSink, PublishFailed

__all__ = ("LeaseExpired", "NatsStream", "message_lines", "serve_nats_source")

TAKE_MESSAGES = 256  # most messages a stream takes in a turn (a loaded worker batches)...
# ...and about the most bytes: a feed keeps the event loop for its time, while the server's writes
# to a connection that is not read pile up (past its max_pending, 64 MiB, it drops the connection)
TAKE_BYTES = 1 << 20
QUEUE_MESSAGES = 64  # per stream: messages handed to it and not yet taken (the fetch waits past that)
# while other streams wait for the turn (a busy worker), a stream's bytes are fed to its filter
# once this many are placed, or the first of them waited FEED_SECONDS, else at once: a feed costs
# about 2 ms however small, so 1 KiB messages fed one by one cost 20 times the CPU of the same
# bytes fed 1 MiB at a time, and an idle worker spends that for latency
FEED_BYTES = 128 << 10
FEED_SECONDS = 0.05
# a stream that holds messages for its run's tail rule while its partition has all the messages in
# flight the server allows (max_ack_pending) and none came for this long lets its held lines out
STARVED_SECONDS = 0.25
ENDED_STREAMS = 4096  # ids of streams ended here that are remembered (their late copies are acked)
SETTLE_SECONDS = 10.0  # at a stop or hand-over, the longest a stream gets to write what it holds


class LeaseExpired(Exception):
    """A stream's partition may be another worker's by now: it must write nothing more."""


@dataclass(slots=True)
class _Held:
    """A message whose bytes are fed, not all written: acked once the output reaches ``end``."""

    seq: int
    end: int
    msg: Msg


class NatsStream(ArchivedStream):
    """A stream of a NATS source: its position also names the last message wholly written (``seq``:
    its stream sequence and the offset past it, for messages without an offset header), the open
    run's start fields (``run``) and, on a run's exit event, ``ended``, so the worker that takes it
    over has them all."""

    run_fields: dict[str, Any] | None = None
    done: tuple[int, int] = (0, 0)  # (stream sequence, end offset) of the last message wholly written
    finished = False  # its run ended: the events written from now on say so (``ended``)
    held: deque[_Held]
    lease: Lease
    turn: Turn  # the worker's: a sink's wait for the server lets it go

    def position(self) -> dict[str, str]:
        """The position (see the class docstring), asked for by a sink before each write.

        Raises:
            LeaseExpired: the partition's lease was not renewed in time: the write must not happen
                (another worker may have taken the stream over from the output before it).
        """
        if time.monotonic() >= self.lease.deadline:
            raise LeaseExpired
        out = super().position()
        seq, end = self.done
        for held in self.held:  # (those this write covers are acked right after it)
            if held.end > self.emitted_byte:
                break
            seq, end = held.seq, held.end
        out["seq"] = f"{seq} {end}"
        if self.run_fields is not None:
            out["run"] = json.dumps(self.run_fields, ensure_ascii=True, separators=(",", ":"))
        if self.finished:
            out["ended"] = "1"
        return out


def message_lines(payload: bytes, kind: str) -> bytes:
    """The bytes a message without an offset header adds to its stream: its lines, each ended.

    ``kind`` ``lines``: the payload as it is, a line end added if it lacks one (an empty payload is
    an empty line). ``fluent-bit``: the payload is Fluent Bit's JSON (``[[TIME, {RECORD}], ...]``):
    each record's ``log`` or ``message`` field is a line, a record without one its JSON; a payload
    that is not such JSON is taken as lines.
    """
    if kind == "fluent-bit":
        try:
            records = json.loads(payload)
        except ValueError:
            records = None
        if isinstance(records, list) and all(isinstance(r, list) and len(r) == 2 for r in records):
            lines = []
            for _, record in records:
                text = record.get("log", record.get("message")) if isinstance(record, dict) else None
                line = text if isinstance(text, str) else json.dumps(record, ensure_ascii=False)
                lines.append(line if line.endswith("\n") else line + "\n")
            return "".join(lines).encode("utf-8", "surrogateescape")
    return payload if payload.endswith(b"\n") else payload + b"\n"


def _moved_at(headers: dict[str, str]) -> int | None:
    """The offset a stream goes on from when this, its first message on a worker that knows no
    position for it, is not at its start: data past byte 0, or a run's data without its run-start
    (unacked messages come in order, so those before it were acked by another worker); else None."""
    if CONTROL in headers or OFFSET not in headers:
        return None
    try:
        offset = int(headers[OFFSET])
    except ValueError:
        return None  # (refused as it is placed)
    return offset if offset > 0 or (offset == 0 and RUN in headers) else None


class _Stream:
    """One stream id's messages, taken in offset order by its own task."""

    def __init__(self, partition: _Partition, sid: str) -> None:
        self.partition = partition
        self.sid = sid
        self.live: NatsStream | None = None
        self.received = 0  # offset just past the bytes fed (or skipped as written elsewhere)
        self.next_implicit = 0  # offset of the next message without an offset header
        self.done_seq = 0  # messages without one up to this stream sequence were written elsewhere
        self.implicit_seq = 0  # the stream sequence of the last message without one taken
        self.waiting: dict[int, Msg] = {}  # messages whose offset is not reached yet, by offset
        self.unfed: list[bytes] = []  # bytes placed, fed at once (FEED_BYTES, FEED_SECONDS)
        self.unfed_bytes = 0
        self.unfed_since = 0.0  # (time.monotonic()) when the first of them was placed
        self.before_start: list[Msg] = []  # a run's data delivered before its run-start (delivered again)
        self.located = False  # where its bytes start here is known (an output's position, a first message)
        self.run_fields: dict[str, Any] | None = None
        self.first_run: str | None = None  # the run its first message here names (``_msg_run``)
        self.ended = False
        self.last = time.monotonic()
        self.send, self.receive = anyio.create_memory_object_stream[Msg](QUEUE_MESSAGES)

    @property
    def source(self) -> SourceConfig:
        return self.partition.worker.source

    async def run(self) -> None:
        """Take messages until the queue is closed (a stop, a hand-over: what is held is written, as a
        pause would, and acked), the stream ends, or it is quiet for the source's ``evict_seconds``."""
        worker = self.partition.worker
        failed = False  # a write could not be published: nothing more is written for it here
        try:
            try:
                await self._take_all(worker, self.receive)
            except PublishFailed:
                failed = True
                raise
            finally:
                if not failed and not self.partition.lost:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(SETTLE_SECONDS):
                        if self.live is not None and not self.ended:
                            await self._feed()
                            await self.live.settle()
                            await self._ack_written()
        except LeaseExpired:
            worker.lose(self.partition, "its lease was not renewed in time")
        except PublishFailed as exc:
            # this stream only: the others go on; its unacked messages come again (another try)
            worker.log.error("stream.unpublished", stream=self.sid, error=str(exc))
        finally:
            self.partition.forget(self)

    async def _take_all(self, worker: _Worker, receive: MemoryObjectReceiveStream[Msg]) -> None:
        await self._resume()
        if self.ended:
            # its output ended elsewhere (the stream moved here since): its messages are a reused
            # id's, acked and said of once, as where it ended (they had been left unacked, and at
            # max_ack_pending its partition stopped for every stream on it, helper-82)
            run = (self.run_fields or {}).get("run")
            self.partition.ended(self.sid, run if isinstance(run, str) else None)
            while True:
                try:
                    msg = receive.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    return
                self.partition.late(self.sid, self.partition.recent_ends[self.sid], msg)
                await msg.ack()
        next_progress = time.monotonic() + worker.progress_seconds
        while not self.ended:
            wake = min(next_progress, self.last + self.source.evict_seconds)
            # bytes waiting to be fed are fed at their deadline; the filter's own timers wait for them
            due = self.unfed_since + FEED_SECONDS if self.unfed else self.live.due() if self.live is not None else None
            if due is not None:
                wake = min(wake, due)
            if self._starved_soon():
                wake = min(wake, max(self.last, time.monotonic()) + STARVED_SECONDS)
            batch = []
            with anyio.move_on_after(max(0.0, wake - time.monotonic())):
                try:
                    batch.append(await receive.receive())
                except anyio.EndOfStream:
                    return
            # one stream decides at a time: the others wait parked, not in the event loop's queue,
            # so its reads of the connection come between any two streams' turns (a connection not
            # read for the server's write deadline, 10 s, is dropped as a slow consumer)
            async with worker.turn.held():
                size = sum(len(m.data) for m in batch)
                while batch and len(batch) < TAKE_MESSAGES and size < TAKE_BYTES:
                    try:
                        batch.append(receive.receive_nowait())
                        size += len(batch[-1].data)
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                now = time.monotonic()
                if batch:
                    self.last = now
                    for msg in batch:
                        await self._take(msg)
                if self.unfed:
                    if (
                        not worker.turn.wanted
                        or self.unfed_bytes >= FEED_BYTES
                        or now >= self.unfed_since + FEED_SECONDS
                    ):
                        await self._feed()
                elif not batch and self.live is not None:
                    await self.live.tick()
            if (
                self.live is not None
                and len(self.live.held) >= 8  # (fewer pay for no summary: the sum below is over its streams)
                and self.partition.unacked() * 2 >= self.source.max_ack_pending
            ):
                # half the partition's messages in flight wait for output: the server sends no more
                # until some are acked, and lines dropped are written (so acked) once their summary
                # is a second old: a line a message drained at 100 a second (helper-26)
                await self.live.summarize_dropped()
            if self._starved_soon() and now >= self.last + STARVED_SECONDS and self.live is not None:
                # the server sends the partition nothing more until some of its messages are acked,
                # and this run holds some for its tail rule: its lines are decided now, as a daemon's
                # source decides them at a pause (14 slow runs on one partition, each holding its
                # last 25 lines, stalled it for good at 256, helper-42)
                self.last = now  # (once a STARVED_SECONDS at most, while it lasts)
                async with worker.turn.held():
                    await self.live.release_tail()
                    await self._ack_written()
                    if self._starved_soon():
                        # what is held is one line not ended yet: let it out, its rest to come (a
                        # line over max_ack_pending messages had stopped the partition for good,
                        # every other stream on it too, helper-72)
                        await self.live.release_line()
            if now >= next_progress:
                await self._in_progress()
                next_progress = now + worker.progress_seconds
            quiet = self.source.evict_seconds
            if now >= self.last + quiet and not self.waiting and self.live is not None:
                await self.live.end_line()  # a producer that went away: what it sent is written
                if self.run_fields is not None:
                    # a run with no end: its reader waited for an exit event that never came, with
                    # no word that its sender had gone quiet (helper-100)
                    run = self.run_fields["run"]
                    text = (
                        f"run {run} sent nothing for {quiet:g} s and no end: its sender may have stopped;"
                        " its status is not known (more of it resumes the stream)"
                    )
                    await self.live.marker(text, "quiet", seconds=quiet)  # (its run is in every event)
                await self._ack_written()
                worker.log.info("stream.evicted", stream=self.sid, quiet_seconds=quiet)
                return
            await self._ack_written()

    async def _resume(self) -> None:
        """Where the stream goes on: from its output's last event if it has one (another worker's,
        or this one's before it was handed over), else from its start."""
        worker = self.partition.worker
        position = await worker.last_position(self.sid)
        if position is None:
            return
        run = position.get("run")
        fields = json.loads(run) if run else None
        if position.get("ended") == "1":
            ended_run = (fields or {}).get("run")
            if _another_run(self.first_run, ended_run):
                # a new run under the id of one whose output ended (a CI retry that keeps its job's
                # id): filtered from its start, its events after the other's exit (it had been left
                # out, only a worker's warning said so, helper-72, helper-100)
                worker.log.info("stream.new_run", stream=self.sid, run=self.first_run, ended_run=ended_run)
                return
            self.located, self.run_fields, self.ended = True, fields, True
            return
        self.located, self.run_fields = True, fields
        seq, _, seq_end = position.get("seq", "0 0").partition(" ")
        self.received = int(position.get("next-byte", "0"))
        self.done_seq, self.next_implicit = int(seq or 0), int(seq_end or 0)
        line = int(position.get("next-line", "1"))
        rest_line = int(position.get("rest-line", "0"))
        rest_of = (rest_line, position.get("rest-kept") == "1") if rest_line else None
        live = self._open(line, self.received, rest_of)
        live.done = (self.done_seq, self.next_implicit)
        text = (
            f"stream {self.sid} resumed on worker {worker.ident} at byte {self.received} (line {line}), "
            "where its output had got to; its decisions from here are this worker's"
        )
        await self._resumed(live, text, line)

    async def _resumed(self, live: NatsStream, text: str, line: int | None) -> None:
        """Say that the stream goes on here, at byte ``received`` and ``line`` (None: not known):
        a ``resumed`` event, the moved count, a log event."""
        worker = self.partition.worker
        await live.marker(text, "resumed", offset=self.received, line=line, worker=worker.ident)
        worker.totals.moved[self.source.name] = worker.totals.moved.get(self.source.name, 0) + 1
        worker.log.info("stream.resumed", stream=self.sid, offset=self.received, line=line)

    async def _go_on_at(self, offset: int, run: str | None) -> None:
        """Start at ``offset``, a moved stream's first message here, its ``run`` started elsewhere
        (no nats sink says where its output had got to: docs/fleet.md, "Guarantees")."""
        worker = self.partition.worker
        self.received = offset
        name = printable(run)[:64] or self.sid if run is not None else None
        if name is not None:
            self.run_fields = {"run": name, "command": None, "cwd": None, "query": None}
        live = self._open(1, offset)
        text = (
            f"stream {self.sid} went on on worker {worker.ident} at byte {offset}, the first message it got; "
            "no nats sink says where its output had got to, so lines the last worker wrote may come again, "
            "and line numbers count from 1 here"
            + (f"; run {name} started elsewhere: the source's query applies" if name is not None else "")
        )
        await self._resumed(live, text, None)

    def _open(self, line: int = 1, offset: int = 0, rest_of: tuple[int, bool] | None = None) -> NatsStream:
        """The live stream, from ``line`` and byte ``offset``; archived (for refs) from a start only."""
        worker = self.partition.worker
        source = self.source
        fields = self.run_fields
        query = fields.get("query") if fields else None
        config = replace(source.filter, query=query) if isinstance(query, str) and query.split() else source.filter
        extra = {k: fields.get(k) for k in ("run", "command", "cwd")} if fields else None
        archive, refs = archive_refs(self.sid) if offset == 0 else (None, None)
        live = NatsStream(
            self.sid,
            config,
            source.timing,
            worker.sinks,
            refs,
            line,
            offset,
            worker.totals,
            source.name,
            extra,
            hold_tail=fields is not None,  # a command's run: its end applies the tail rule
            rest_of=rest_of,
        )
        live.archive = archive
        if fields is not None:
            # a run quiet for HOLD_SECONDS shows its held lines up to the last kept, as `run` does: a
            # build's errors before a 15 s wait had come only at its end (helper-82)
            live.release_after = HOLD_SECONDS
        live.lease = self.partition.lease
        live.turn = worker.turn
        live.held = deque()
        live.run_fields = fields
        self.live = live
        return live

    async def _take(self, msg: Msg) -> None:
        """One message: fed in its turn, held while it waits for it, acked when it was written already."""
        worker = self.partition.worker
        meta = msg.metadata
        if meta.num_delivered > 1:
            worker.totals.redeliveries[self.source.name] = worker.totals.redeliveries.get(self.source.name, 0) + 1
        if self.ended:  # (its output's last event says so: ended elsewhere, or before a restart)
            self.partition.late(self.sid, (self.run_fields or {}).get("run"), msg)
            await msg.ack()
            return
        headers = msg.headers or {}
        if not self.located:
            self.located = True
            offset = _moved_at(headers)
            if offset is not None:
                await self._go_on_at(offset, headers.get(RUN))
        if RUN in headers and self.run_fields is None and CONTROL not in headers:
            self.before_start.append(msg)  # its run's query and tail rule come with the run-start
            return
        other = _msg_run(msg)
        if self.run_fields is not None and _another_run(other, self.run_fields["run"]):
            # another run under this id while the stream's goes on (two senders of one id): its bytes
            # had been placed among the stream's by offset, and its end had ended the stream (helper-92)
            self.partition.late(self.sid, self.run_fields["run"], msg, other, going=True)
            await msg.ack()
            return
        if OFFSET in headers:
            try:
                offset = int(headers[OFFSET])
            except ValueError:
                offset = -1
            if offset < 0:
                worker.log.warning("message.invalid", stream=self.sid, reason=f"{OFFSET}: {headers[OFFSET]!r}")
                await msg.term()  # (never delivered again: it cannot be placed)
                return
        elif meta.sequence.stream <= max(self.done_seq, self.implicit_seq):
            await self._copy(msg)  # written elsewhere before the stream moved here, or taken already
            return
        else:
            offset = self.next_implicit
            self.implicit_seq = meta.sequence.stream
            self.next_implicit += len(message_lines(msg.data, self.source.payload))
        if offset > self.received:
            self.waiting[offset] = msg
            return
        await self._place(msg, offset)
        while self.received in self.waiting and not self.ended:
            await self._place(self.waiting.pop(self.received), self.received)

    async def _place(self, msg: Msg, offset: int) -> None:
        """Feed the bytes of ``msg`` (at ``offset``) past those already taken, or apply its control."""
        control = (msg.headers or {}).get(CONTROL)
        if control is not None:
            await self._control(msg, control, offset)
            return
        data = msg.data if OFFSET in (msg.headers or {}) else message_lines(msg.data, self.source.payload)
        end = offset + len(data)
        live = self.live or self._open()
        if end <= self.received:
            await self._copy(msg)
            return
        live.held.append(_Held(msg.metadata.sequence.stream, end, msg))
        if not self.unfed:
            self.unfed_since = time.monotonic()
        self.unfed.append(data[self.received - offset :])
        self.unfed_bytes += len(self.unfed[-1])
        self.received = end

    async def _feed(self) -> None:
        """Feed the bytes placed so far, as one chunk (the output is the same however it is cut)."""
        if self.unfed and self.live is not None:
            chunk = b"".join(self.unfed)
            self.unfed.clear()
            self.unfed_bytes = 0
            await self.live.feed(chunk)

    async def _copy(self, msg: Msg) -> None:
        """A message taken already: acked if written, else it stands in for the copy held."""
        for held in self.live.held if self.live is not None else ():
            if held.seq == msg.metadata.sequence.stream:
                held.msg = msg  # (the newest delivery is the one acked)
                return
        await msg.ack()

    async def _control(self, msg: Msg, kind: str, offset: int) -> None:
        await self._feed()  # (what comes before it first)
        worker = self.partition.worker
        try:
            fields = json.loads(msg.data) if msg.data else {}
        except ValueError:
            fields = None
        if not isinstance(fields, dict) or kind not in ("run-start", "run-end"):
            worker.log.warning("message.invalid", stream=self.sid, reason=f"control {kind!r} without a JSON object")
            await msg.term()
            return
        if kind == "run-start":
            started = {
                "run": printable(str(fields.get("run", "")))[:64] or self.sid,
                **{k: fields.get(k) if isinstance(fields.get(k), str) else None for k in ("command", "cwd", "query")},
            }
            if self.run_fields is not None and started["run"] != self.run_fields["run"]:
                worker.log.warning("stream.reused", stream=self.sid, run=started["run"], hint="one id per run")
            elif offset < self.received or self.run_fields is not None:
                # started already (before this worker took the stream over)
                self.run_fields = self.run_fields or started
            else:
                self.run_fields = started
                live = self._open()
                command = printable(str(started["command"] or ""))[:80]
                await live.marker(f"run {started['run']} started ({command})", "start")
                worker.log.info("run.started", stream=self.sid, run=started["run"], command=command)
            await msg.ack()
            early, self.before_start = self.before_start, []
            for data in early:
                await self._take(data)
            return
        status = fields.get("status")
        status = status if isinstance(status, int) and not isinstance(status, bool) and 0 <= status <= 255 else None
        live = self.live or self._open()
        run = (self.run_fields or {}).get("run", self.sid)
        command = printable(str((self.run_fields or {}).get("command") or ""))[:80]
        await live.end(SUCCESS_TAIL_LINES if status == 0 else None)
        live.finished = True  # (the exit event, the last, carries it)
        what = f"run {run}" + (f" ({command})" if command else "")
        if status is None:
            await live.marker(f"{what} ended without an exit status", "exit", status=None)
        else:
            await live.marker(f"{what} exited with status {status}", "exit", status=status)
        self.ended = True
        self.partition.ended(self.sid, run)
        worker.log.info("run.ended", stream=self.sid, run=run, status=status)
        for held in live.held:
            await held.msg.ack()
        live.held.clear()
        for waiting in self.waiting.values():  # (past the end: nothing of this stream)
            await waiting.ack()
        self.waiting.clear()
        await msg.ack()

    def _starved_soon(self) -> bool:
        """Whether this stream holds messages while its partition has all the messages in flight
        the server allows: none comes until some are acked (``STARVED_SECONDS``)."""
        held = self.live.held if self.live is not None else ()
        return bool(held) and self.partition.unacked() >= self.source.max_ack_pending

    async def _ack_written(self) -> None:
        live = self.live
        if live is None:
            return
        while live.held and live.held[0].end <= live.emitted_byte:
            held = live.held.popleft()
            live.done = (held.seq, held.end)
            await held.msg.ack()

    async def _in_progress(self) -> None:
        """Tell the server the messages held are being worked on (else they are delivered again)."""
        held = [h.msg for h in (self.live.held if self.live is not None else ())]
        for msg in held + list(self.waiting.values()) + self.before_start:
            try:
                await msg.in_progress()
            except (TimeoutError, nats.errors.Error):
                pass  # (a lost connection: the acks after it are what matter)


def _msg_run(msg: Msg) -> str | None:
    """The run ``msg`` is of: a data message's ``RUN`` header, a control message's JSON ``run``;
    None for a line without one (Vector, Fluent Bit)."""
    headers = msg.headers or {}
    return _run_of(msg) if CONTROL in headers else headers.get(RUN)


def _another_run(run: str | None, ended: str | None) -> bool:
    """Whether ``run`` (a message's) is known and another than the ended run ``ended`` (its output's
    name for it, ``printable`` and at most 64 characters)."""
    return run is not None and ended is not None and printable(run)[:64] != ended


def _run_of(msg: Msg) -> str | None:
    """The run a control message (a run-start or run-end, JSON) names, or None."""
    try:
        fields = json.loads(msg.data) if msg.data else None
    except ValueError:
        return None
    run = fields.get("run") if isinstance(fields, dict) else None
    return run if isinstance(run, str) and run else None


class _Partition:
    """One partition this worker holds: its consumer's messages, handed to each stream's task."""

    def __init__(self, worker: _Worker, number: int, lease: Lease) -> None:
        self.worker = worker
        self.number = number
        self.lease = lease
        self.streams: dict[str, _Stream] = {}
        self.recent_ends: OrderedDict[str, str | None] = OrderedDict()  # stream id -> its run's id (None: not known)
        self.reused: OrderedDict[tuple[str, str], None] = OrderedDict()  # (stream, run) said to reuse an id
        self.scope = anyio.CancelScope()
        self.stopping = False  # handed back or stopped: take no more messages
        self.lost = False  # its lease may be another worker's: stop now, writing nothing more
        self.finished = anyio.Event()
        self.hand_back = anyio.Event()
        self.subscription: JetStreamContext.PushSubscription | None = None
        self.tg: TaskGroup | None = None

    async def run(self) -> None:
        worker = self.worker
        source = worker.source
        durable = f"{source.consumer}-{self.number}"
        config = ConsumerConfig(
            durable_name=durable,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=source.ack_wait_seconds,
            max_ack_pending=source.max_ack_pending,
            max_deliver=-1,
        )
        try:
            with self.scope:
                # the consumer afresh: it gives what the last owner left unacked (killed, or handing
                # over with a backlog) first, in the stream's order; bound as it was, it gave newer
                # messages at once and those when their ack wait ran out, and lines without an offset
                # taken after newer ones are taken for copies: lost (helper-26)
                try:
                    with contextlib.suppress(nats.js.errors.NotFoundError):
                        await worker.js.delete_consumer(source.stream, durable)
                except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                    self._unavailable(exc)
                    return
                async with anyio.create_task_group() as self.tg:
                    # pushed as they come (at most max_ack_pending unacked) to a callback that nats-py
                    # calls for each queued message in turn: a pull fetch waits for its whole batch
                    # once one message came, and a wait per message costs a turn of a busy loop
                    try:
                        self.subscription = await worker.js.subscribe(
                            f"{source.subject}.{self.number}.*",
                            durable=durable,
                            stream=source.stream,
                            config=config,
                            cb=self._deliver,
                            manual_ack=True,
                            pending_msgs_limit=source.max_ack_pending + 1,
                            pending_bytes_limit=-1,  # (bounded by max_ack_pending messages)
                        )
                    except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                        self._unavailable(exc)
                        return
                    worker.claimed(self)
                    await self.hand_back.wait()
                    self.stopping = True
                    await self._unsubscribe()
                    for stream in list(self.streams.values()):
                        stream.send.close()  # each writes what it holds and stops
        finally:
            self.stopping = True
            with anyio.CancelScope(shield=True):
                await self._unsubscribe()
                worker.totals.lag.pop((source.name, str(self.number)), None)
                worker.totals.unacked.pop((source.name, str(self.number)), None)
                self.finished.set()

    def _unavailable(self, exc: Exception) -> None:
        """The server did not answer while the partition was taken on (a restarted server restores its
        streams for a while: "nats: timeout"), or refused it: let it go, to be claimed again at a
        later round. It stopped the daemon (helper-52's restart, played by a test). A refusal is the
        server's answer, named as such: another consumer of the work-queue stream whose subjects
        overlap this one's ("filtered consumer not unique on workqueue stream", helper-64) holds until
        that consumer is gone."""
        if isinstance(exc, nats.js.errors.APIError) and exc.code not in (None, 503):
            said = exc.description or str(exc)
            reason = f"the server refused it ({said}, error {exc.err_code}): claimed again later"
        else:
            reason = f"the server did not answer ({str(exc) or type(exc).__name__}): claimed again later"
        self.worker.lose(self, reason)

    async def _unsubscribe(self) -> None:
        if self.subscription is not None:
            with anyio.move_on_after(2.0):
                try:
                    await self.subscription.unsubscribe()
                except (TimeoutError, nats.errors.Error):
                    pass

    async def _deliver(self, msg: Msg) -> None:
        """nats-py's callback, in its own task: hand ``msg`` to its stream, waiting while that is full."""
        if self.tg is not None:
            await self._hand(msg, self.tg)

    async def _hand(self, msg: Msg, tg: TaskGroup) -> None:
        if self.stopping or self.lost:
            return  # (not acked: delivered again to the partition's next owner)
        sid = msg.subject.rpartition(".")[2]
        if sid in self.recent_ends:
            if not _another_run(_msg_run(msg), self.recent_ends[sid]):
                self.late(sid, self.recent_ends[sid], msg)
                await msg.ack()  # a late copy of a stream that ended here
                return
            del self.recent_ends[sid]  # a new run under its id: a stream again (``_Stream._resume``)
        stream = self.streams.get(sid)
        if stream is None:
            stream = self.streams[sid] = _Stream(self, sid)
            stream.first_run = _msg_run(msg)
            tg.start_soon(stream.run)
        try:
            try:
                stream.send.send_nowait(msg)
            except anyio.WouldBlock:
                began = time.monotonic()
                await stream.send.send(msg)
                self.worker.totals.paused(self.worker.source.name, "stream_queue", time.monotonic() - began)
        except anyio.BrokenResourceError:  # (its task ended meanwhile: the stream ended, was evicted or failed)
            if self.streams.get(sid) is stream:
                del self.streams[sid]
            await self._hand(msg, tg)

    def unacked(self) -> int:
        """The messages of this partition its streams hold, delivered and not acked yet."""
        return sum(len(s.live.held) + len(s.waiting) for s in self.streams.values() if s.live is not None)

    def forget(self, stream: _Stream) -> None:
        """``stream``'s task ended: later messages of its id start a new one (which resumes it)."""
        if self.streams.get(stream.sid) is stream:
            del self.streams[stream.sid]
        stream.receive.close()

    def ended(self, sid: str, run: str | None) -> None:
        """Stream ``sid`` ended, its run ``run``'s: its late copies are acked without a look at its output."""
        self.recent_ends[sid] = run
        if len(self.recent_ends) > ENDED_STREAMS:
            self.recent_ends.popitem(last=False)

    def late(self, sid: str, run: str | None, msg: Msg, other: str | None = None, going: bool = False) -> None:
        """``msg`` (of the run ``other``, else its header's) came for stream ``sid`` after its run
        ``run`` ended, or while it goes on (``going``; None: not known): a copy, or another run's,
        which is not filtered: said once a run (``stream.reused``, a warning; a CI retry that reused
        its job's id had its failure left out without a word, helper-72)."""
        other = other if other is not None else (msg.headers or {}).get(RUN)
        if other is None or not _another_run(other, run) or (sid, other) in self.reused:
            return
        self.reused[sid, other] = None
        if len(self.reused) > ENDED_STREAMS:
            self.reused.popitem(last=False)
        self.worker.log.warning(
            "stream.reused", stream=sid, run=printable(other)[:64], **{"running_run" if going else "ended_run": run},
            hint="its output is not filtered: the stream is another run's; use one id per run",
        )  # fmt: skip


class _Worker:
    """The partitions this worker holds, their leases, and the look-up of a stream's last position."""

    def __init__(self, source: SourceConfig, sinks: list[Sink], totals: Totals, js: JetStreamContext) -> None:
        self.source = source
        self.sinks = sinks
        self.totals = totals
        self.js = js
        host = socket.gethostname().split(".")[0]
        self.ident = "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{host}-{os.getpid()}")
        self.log = get_logger().bind(source=source.name, worker=self.ident)
        self.outputs = [s for s in sinks if isinstance(s, NatsSink)]
        self.progress_seconds = source.ack_wait_seconds / 3
        self.keeper = LeaseKeeper(
            source.servers, f"{source.consumer}-leases", self.ident, source.lease_seconds, source.partitions
        )
        self._counts_said: frozenset[str] = frozenset()  # the pool's partition counts last warned of
        self.held: dict[int, _Partition] = {}
        self._lost_why: dict[int, str] = {}  # each partition's last reason it was lost for, until claimed
        self.turn = Turn()  # held by the stream deciding (see _Stream._take_all)
        self.kv: KeyValue | None = None
        self.tg: TaskGroup | None = None
        # claims start at a partition of this worker's own, so workers starting together differ
        self.first = zlib.crc32(self.ident.encode()) % source.partitions

    async def last_position(self, sid: str) -> dict[str, str] | None:
        """The position of ``sid``'s output as its last published event says, or None (no output, or
        no nats sink to read it from: then the stream starts at the first message that comes)."""
        for sink in self.outputs:
            position = await sink.last_position(sid)
            if position is not None:
                return position
        return None

    async def run(self, tg: TaskGroup) -> None:
        """Claim and hand back leases every third of ``lease_seconds`` until cancelled (the keeper's
        thread renews those held)."""
        source = self.source
        self.tg = tg
        while self.kv is None:
            # (a server away or slow here, as it restarts, had ended the worker; tried again as a
            # renewal is)
            try:
                try:
                    self.kv = await self.js.key_value(self.keeper.bucket)
                except nats.js.errors.BucketNotFoundError:
                    config = KeyValueConfig(bucket=self.keeper.bucket, ttl=source.lease_seconds)
                    self.kv = await self.js.create_key_value(config)
            except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                self.log.warning("leases.unavailable", error=str(exc) or repr(exc))
                await anyio.sleep(source.lease_seconds / 3)
        self.keeper.start()
        while True:
            try:
                await self._balance(tg)
            except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                # the server away: the leases run on until their deadlines
                self.log.warning("leases.unavailable", error=str(exc) or repr(exc))
            await anyio.sleep(source.lease_seconds / 3)

    async def _balance(self, tg: TaskGroup) -> None:
        kv = self.kv
        assert kv is not None
        source = self.source
        now = time.monotonic()
        for partition in list(self.held.values()):
            if partition.lease.deadline <= now:
                self.lose(partition, "its lease was not renewed in time, or was taken")
        # one request that names every live worker's key (a key watcher would be a consumer a call)
        bucket = self.keeper.bucket
        info = await self.js.stream_info(f"KV_{bucket}", subjects_filter=f"$KV.{bucket}.workers.>")
        workers = max(1, len(info.state.subjects or {}))
        counts = pool_partitions(info.state.subjects or {})
        if len(counts) > 1 and counts != self._counts_said:
            # (a worker set to 16 beside three of 8: each counted 4 workers and took 2, and partitions
            # 4 and 5 were no one's, their streams stalled without a word, helper-92)
            self.log.warning(
                "pool.partitions_differ", partitions=source.partitions, pool=sorted(counts, key=int),
                hint="every worker of a pool must have the same `partitions`: some may be no one's",
            )  # fmt: skip
        self._counts_said = counts if len(counts) > 1 else frozenset()
        share = math.ceil(source.partitions / workers)
        if len(self.held) < share:
            for k in range(source.partitions):
                number = (self.first + k) % source.partitions
                if len(self.held) >= share:
                    break
                if number in self.held:
                    continue
                sent = time.monotonic()
                try:
                    revision = await kv.create(f"partition.{number}", self.ident.encode())
                except nats.js.errors.KeyWrongLastSequenceError:
                    continue  # another worker's
                lease = Lease(revision, self.keeper.deadline(sent))
                self.keeper.hold(number, lease)
                partition = self.held[number] = _Partition(self, number, lease)
                tg.start_soon(partition.run)
        for number in sorted(self.held)[share:]:
            tg.start_soon(self._hand_back, self.held.pop(number))
        for number, partition in list(self.held.items()):  # (lose() may drop one meanwhile)
            if partition.subscription is not None:
                consumer = await partition.subscription.consumer_info()
                self.totals.lag[source.name, str(number)] = consumer.num_pending or 0
                # (delivered, not acked: a stalled partition's, whose lag stays 0 while the server waits, helper-82)
                self.totals.unacked[source.name, str(number)] = consumer.num_ack_pending or 0

    def claimed(self, partition: _Partition) -> None:
        """``partition`` took its consumer on: its messages come."""
        self._lost_why.pop(partition.number, None)
        self.log.info("partition.claimed", partition=partition.number)

    def lose(self, partition: _Partition, why: str) -> None:
        """``partition`` is no longer surely this worker's: it stops at once, writing nothing more
        (what it held unacked goes to the next owner), and its lease, if still ours, is freed."""
        if partition.lost:
            return
        partition.lost = True
        partition.scope.cancel()
        if self.held.get(partition.number) is partition:
            del self.held[partition.number]
        if self._lost_why.get(partition.number) != why:  # (a reason that stands, a refusal: once, not every round)
            self.log.warning("partition.lost", partition=partition.number, reason=why)
        self._lost_why[partition.number] = why
        if self.tg is not None:
            self.tg.start_soon(self._release, partition)

    async def _hand_back(self, partition: _Partition) -> None:
        """Stop taking ``partition``'s messages, write what its streams hold, then free its lease."""
        partition.hand_back.set()
        await partition.finished.wait()
        await self._release(partition)
        self.log.info("partition.handed_back", partition=partition.number)

    async def _release(self, partition: _Partition) -> None:
        assert self.kv is not None
        lease = self.keeper.drop(partition.number) or partition.lease
        try:
            await self.kv.delete(f"partition.{partition.number}", last=lease.revision)
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error):
            pass  # (renewed meanwhile, taken, or the server away: the lease expires by itself)

    async def stop(self) -> None:
        """Once the partitions' tasks are done (their streams wrote what they held), free their leases
        for the other workers at once, and leave the pool."""
        # (the renewal thread may take up to lease_seconds to end: the daemon's other sources go on)
        await anyio.to_thread.run_sync(self.keeper.close)
        for partition in list(self.held.values()):
            await self._release(partition)
            self.log.info("partition.handed_back", partition=partition.number)  # (at a stop too, helper-82)
        self.held.clear()
        if self.kv is not None:
            bucket = self.keeper.bucket
            try:
                # purged, not deleted: a delete leaves a marker on the subject, which the others count
                # as a worker (``_balance``) until the bucket's TTL: they took its partitions only then,
                # 12 s after a stop (helper-83)
                await self.js.purge_stream(f"KV_{bucket}", subject=f"$KV.{bucket}.{self.keeper.worker_key}")
            except (TimeoutError, nats.errors.Error, nats.js.errors.Error):
                pass


async def serve_nats_source(
    source: SourceConfig,
    sinks: list[Sink],
    totals: Totals,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``source`` as one worker of the pool until cancelled; then hand its partitions back.

    Raises:
        StreamfilterError: the servers cannot be reached, or the stream cannot be made.
    """
    name = f"streamfilter source {source.name}"
    nc = await connect(source.servers, name)
    try:
        js = nc.jetstream()
        await ensure_stream(js, source.stream, [f"{source.subject}.*.*"], work_queue=True)
        worker = _Worker(source, sinks, totals, js)
        if not worker.outputs:
            worker.log.warning(
                "source.no_nats_sink",
                hint="a stream that moves starts at the first message the new worker gets; "
                "output another worker wrote just before may be repeated (docs/fleet.md)",
            )
        worker.log.info("source.opened", servers=list(source.servers), stream=source.stream)
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker.run, tg)
                try:
                    await anyio.sleep_forever()
                finally:
                    for sink in worker.outputs:  # (a stop: the streams' last writes wait this long at most)
                        sink.give_up(SETTLE_SECONDS)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
                await worker.stop()
    finally:
        with anyio.CancelScope(shield=True):
            await drain_and_close(nc, name)
