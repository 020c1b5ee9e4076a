"""``streamfilter send --nats URL --stream ID -- CMD``: a command's output published as one run.

Messages go to ``SUBJECT.<partition>.ID``, the partition computed here as the server's partition
mapping would (``link.partition_of``), so a server without the mapping works (docs/fleet.md): first a
``run-start`` control message (the run's id, command, directory and query, as in a socket's run
envelope), then CMD's output as it comes, each chunk with its byte offset in ``Streamfilter-Offset``,
then ``run-end`` with CMD's exit status at the offset where the output ends. Each publish waits for
the server's ack; ``Nats-Msg-Id`` is the stream, run and offset, so a publish repeated after a lost
ack is stored once. If the server goes away for good mid-run, CMD still runs to its end and the rest
of its output is filtered here, as ``send`` does when a daemon's socket goes away.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import uuid
from collections.abc import Sequence

import anyio
import nats.errors
import nats.js.errors
from nats.js import JetStreamContext

from ...core.errors import StreamfilterError
from ...core.words import counted
from ..envelope import SUCCESS_TAIL_LINES, Ended, exit_text, status_of
from ..process import passed_signals
from ..run import CommandError, Stopping, command_text, filtered_here, pass_signals, pump, start_command
from ..stream import LiveStream
from .leases import pool_partitions
from .link import CONNECTION_LOST, CONTROL, OFFSET, RUN, connect, partition_of

__all__ = ("send_to_nats",)

READ_BYTES = 1 << 16  # at most this much output a message (or the server's max_payload less HEADER_BYTES)
HEADER_BYTES = 1024  # room left in a message for its headers
PUBLISH_SECONDS = 5.0  # one try's wait for the server's ack
TRIES = 6  # a publish tried this often (a reconnect in between) before the server is given up


class _Lost(Exception):
    """The server did not take a message in ``TRIES`` tries."""


class _NoStream(_Lost):
    """No stream took the message in ``TRIES`` tries (no responders: none there, or a server
    restarting, which answers so while it restores its streams)."""


async def _publish(js: JetStreamContext, subject: str, data: bytes, headers: dict[str, str]) -> None:
    for attempt in range(TRIES):
        try:
            await js.publish(subject, data, timeout=PUBLISH_SECONDS, headers=headers)
            return
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
            # (no stream is tried again too: a server restarting says so for a while; it was taken
            # for good mid-run, and the command stopped with its output lost, helper-42)
            if attempt == TRIES - 1:
                lost = _NoStream if isinstance(exc, nats.js.errors.NoStreamResponseError) else _Lost
                raise lost(str(exc) or type(exc).__name__) from None
            await anyio.sleep(0.5 * (attempt + 1))


async def _warn_untaken(js: JetStreamContext, target: str, partitions: int) -> None:
    """Warn when the workers' consumers take other partitions but none takes ``target``'s (its
    messages would wait for a worker with ``partitions`` partitions, ``--partitions``), or when the
    live workers are set to other partitions than ``partitions`` (``_pool_partitions``)."""
    wanted = target.rpartition(".")[0] + ".*"
    others = 0
    try:
        stream = await js.find_stream_name_by_subject(target)
        while True:  # (the server lists 256 consumers a request)
            page = await js.consumers_info(stream, offset=others)
            if any(c.config.filter_subject == wanted for c in page):
                others = 0
                break
            if not page:
                break
            others += len(page)
    except (TimeoutError, nats.errors.Error, nats.js.errors.Error):
        return  # (no stream: the publish says so; no answer: the publish retries)
    if others:
        consumers = f"{counted(others, 'consumer')} {'takes' if others == 1 else 'take'}"
        sys.stderr.write(
            f"streamfilter: warning: no worker takes {wanted} yet ({consumers} other subjects): "
            f"are the workers' partitions {partitions} (--partitions)?\n"
        )
        return
    # a worker takes it, but of a pool set to other partitions, whose worker for this id's messages
    # is another: they are filtered, by the worker of the wrong partition (helper-92: no warning)
    counts = await _pool_partitions(js)
    if counts and str(partitions) not in counts:
        sys.stderr.write(
            f"streamfilter: warning: the workers' partitions are {', '.join(sorted(counts, key=int))}, "
            f"not {partitions} (--partitions): this run's messages go to another partition than the workers'\n"
        )


async def _pool_partitions(js: JetStreamContext) -> set[str]:
    """The partitions the live workers are set to, by their keys in the pools' lease buckets
    (``workers.<id>.<partitions>``, ``leases``); empty when none can be read."""
    counts: set[str] = set()
    try:
        for info in await js.streams_info():
            name = info.config.name or ""
            if name.startswith("KV_") and name.endswith("-leases"):
                bucket = name.removeprefix("KV_")
                found = await js.stream_info(name, subjects_filter=f"$KV.{bucket}.workers.>")
                counts |= pool_partitions(found.state.subjects or {})
    except (TimeoutError, nats.errors.Error, nats.js.errors.Error):
        return set()
    return counts


async def send_to_nats(
    servers: Sequence[str],
    stream_id: str,
    argv: Sequence[str],
    query: str | None = None,
    run_id: str | None = None,
    subject: str = "logs",
    partitions: int = 8,
) -> Ended:
    """Run ``argv`` and publish its merged output as stream ``stream_id`` to partition
    ``partition_of(stream_id, partitions)`` of the workers' ``partitions``; return how it ended.

    Raises:
        CommandError: CMD cannot be started (after a run-end with status 127 or 126 is published).
        StreamfilterError: the servers cannot be reached, or no stream takes the subject.
    """
    nc = await connect(servers, f"streamfilter send {stream_id}")
    js = nc.jetstream()
    target = f"{subject}.{partition_of(stream_id, partitions)}.{stream_id}"
    read_bytes = min(READ_BYTES, nc.max_payload - HEADER_BYTES)
    run = run_id or uuid.uuid4().hex[:12]
    start: dict[str, object] = {"run": run, "command": shlex.join(argv), "cwd": os.getcwd()}
    if query:
        start["query"] = query

    def control(kind: str, offset: int) -> dict[str, str]:
        return {CONTROL: kind, OFFSET: str(offset), "Nats-Msg-Id": f"{stream_id}:{run}:{kind}"}

    here: LiveStream | None = None  # the rest of the output, once the server is gone
    lost = ""
    offset = 0
    stack = contextlib.ExitStack()  # (our stop signals, taken just before CMD starts)
    try:
        await _warn_untaken(js, target, partitions)
        try:
            await _publish(js, target, json.dumps({"type": "run-start", **start}).encode(), control("run-start", 0))
        except _NoStream:
            raise StreamfilterError(
                f"no JetStream stream takes {target}: start a worker first (it makes the stream), "
                "with the same subject prefix (docs/fleet.md)"
            ) from None
        except _Lost as exc:
            raise StreamfilterError(f"cannot publish to {target}: {exc}") from None
        signals = stack.enter_context(anyio.open_signal_receiver(*passed_signals()))  # (before CMD starts)
        try:
            process = await start_command(argv, separate=False)
        except CommandError as exc:
            failed = json.dumps({"type": "run-end", "run": run, "status": exc.exit_code}).encode()
            with contextlib.suppress(_Lost):  # (the error says what matters)
                await _publish(js, target, failed, control("run-end", 0))
            raise
        assert process.stdout is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(pass_signals, signals, process, Stopping())
            while True:
                try:
                    data = await process.stdout.receive(read_bytes)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
                try:
                    headers = {OFFSET: str(offset), RUN: run, "Nats-Msg-Id": f"{stream_id}:{run}:{offset}"}
                    await _publish(js, target, data, headers)
                except _Lost as exc:
                    lost = str(exc)
                    here = filtered_here(argv, query)
                    await here.marker(
                        f"the NATS server was lost ({lost}); the output from byte {offset} on is filtered here"
                    )
                    await here.feed(data)
                    await pump(here, process.stdout, None)
                    break
                offset += len(data)
            returncode = await process.wait()
            tg.cancel_scope.cancel()
        await process.aclose()
        if here is None:
            end = json.dumps({"type": "run-end", "run": run, "status": status_of(returncode)}).encode()
            try:
                await _publish(js, target, end, control("run-end", offset))
            except _Lost as exc:
                sys.stderr.write(f"streamfilter: warning: the run's end (status) could not be published: {exc}\n")
    finally:
        stack.close()
        # (a server lost mid-run fails the close too: the loss is said below, the output filtered here)
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(PUBLISH_SECONDS),
            contextlib.suppress(*CONNECTION_LOST),
        ):
            await nc.close()
    if here is not None:
        await here.end(here.filter.config.tail_lines if returncode != 0 else SUCCESS_TAIL_LINES)
        await here.marker(exit_text(command_text(argv), returncode), "exit", status=status_of(returncode))
        sys.stderr.write(
            f"streamfilter: warning: the NATS server was lost ({lost}); output from byte {offset} on was not sent\n"
        )
    return Ended.of(returncode)
