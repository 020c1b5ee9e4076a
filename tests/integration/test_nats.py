"""A pool of ``streamfilter daemon`` workers over a real ``nats-server`` (JetStream) on loopback.

The server is started by each test (skipped when the binary is absent: ``.ci/run`` installs it).
Producers are real clients: ``streamfilter send --nats`` and nats-py publishing the same messages
(offset headers, run envelopes) for many streams at once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import nats
import pytest
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from streamfilter.core.settings import FilterConfig
from streamfilter.live.config import SinkConfig, Timing
from streamfilter.live.nats.leases import Lease, LeaseKeeper
from streamfilter.live.nats.link import CONTROL, OFFSET, RUN, Turn, ensure_stream, partition_of
from streamfilter.live.nats.sink import PART, NatsSink, Parts
from streamfilter.live.nats.source import LeaseExpired, NatsStream
from streamfilter.live.totals import Totals
from tests.conftest import run_cli
from tests.live.nats import NatsServer, free_port, worker_config
from tests.live.proc import Live

PARTITIONS = 6


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # nats-py runs on asyncio


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    srv = NatsServer(tmp_path / "nats", PARTITIONS)
    yield srv
    srv.stop()


def start_worker(tmp: Path, url: str, extra: str = "", source_extra: str = "") -> Live:
    live = Live(
        tmp,
        "daemon",
        "--config",
        str(worker_config(tmp, url, PARTITIONS, extra, source_extra)),
        env={"XDG_STATE_HOME": str(tmp / f"state-{time.monotonic_ns()}")},
    )
    live.log_event("daemon.ready", timeout=20)
    return live


def held(live: Live) -> set[int]:
    """The partitions ``live`` holds, by its logs."""
    out: set[int] = set()
    for event in live.logs():
        if event.get("event") == "partition.claimed":
            out.add(event["partition"])
        elif event.get("event") in ("partition.handed_back", "partition.lost"):
            out.discard(event["partition"])
    return out


def wait_balanced(workers: list[Live], each: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        parts = [held(w) for w in workers]
        if all(len(p) == each for p in parts) and len(set().union(*parts)) == each * len(workers):
            return
        time.sleep(0.1)
    raise AssertionError(f"not balanced: {[sorted(held(w)) for w in workers]}")


async def read_output(url: str, until: set[str], seconds: float) -> dict[str, list[tuple[dict[str, str], bytes]]]:
    """Every write on ``filtered.>`` (a message, or the parts of one reassembled: the last part's
    headers), by stream, read until each stream of ``until`` has its run's exit event
    (``Streamfilter-Ended``), for ``seconds`` at most."""
    out: dict[str, list[tuple[dict[str, str], bytes]]] = defaultdict(list)
    parts: dict[str, Parts] = defaultdict(Parts)  # (a write longer than a message comes in parts)
    ended: set[str] = set()
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().subscribe("filtered.>", ordered_consumer=True)
        with anyio.move_on_after(seconds):
            while not until <= ended:
                try:
                    msg = await sub.next_msg(timeout=1.0)
                except TimeoutError:
                    continue
                stream = msg.subject.split(".", 1)[1]
                data = parts[stream].add(msg.headers or {}, msg.data)
                if data is not None:
                    out[stream].append((msg.headers or {}, data))
                if (msg.headers or {}).get("Streamfilter-Ended") == "1":
                    ended.add(stream)
    finally:
        await nc.close()
    assert until <= ended, f"streams without an end: {sorted(until - ended)[:10]}"
    return out


async def events_until(js: JetStreamContext, sid: str, length: int, seconds: float) -> list[dict[str, Any]]:
    """The events on ``filtered.SID`` until its output reaches byte ``length`` (a line that never
    comes: fails after ``seconds``)."""
    sub = await js.subscribe(f"filtered.{sid}", ordered_consumer=True)
    events: list[dict[str, Any]] = []
    reach = 0
    with anyio.fail_after(seconds):
        while reach < length:
            msg = await sub.next_msg(timeout=seconds)
            events += [json.loads(line) for line in msg.data.splitlines()]
            reach = int((msg.headers or {}).get("Streamfilter-Next-Byte", "0"))
    await sub.unsubscribe()
    return events


def events_of(messages: list[tuple[dict[str, str], bytes]]) -> list[dict[str, Any]]:
    return [json.loads(line) for _, data in messages for line in data.splitlines()]


def check_covered(stream: str, data: bytes, events: list[dict[str, Any]], failures: list[int], start: int = 0) -> None:
    """Every input line from byte ``start`` on (its lines counted from 1 there) exactly once, in
    order (KEEP verbatim, DROP counted); failure lines kept."""
    runs = [e for e in events if e["event"] in ("keep", "drop")]
    assert runs, stream
    offset, line = start, 1
    kept: list[tuple[int, int]] = []
    for run in runs:
        assert run["start_byte"] == offset, (stream, run, offset)
        if run.get("rest"):
            assert run["first_line"] == run["last_line"] == line - 1, (stream, run, line)
        else:
            assert run["first_line"] == line, (stream, run, line)
        if run["event"] == "keep":
            assert run["text"].encode() == data[run["start_byte"] : run["end_byte"]], (stream, run)
            kept.append((run["start_byte"], run["end_byte"]))
        else:
            assert run["bytes"] == run["end_byte"] - run["start_byte"], (stream, run)
        offset, line = run["end_byte"], run["last_line"] + 1
    assert offset == len(data), (stream, offset, len(data))
    assert line == data.count(b"\n", start) + 1, (stream, line)
    for failure in failures:
        end = data.index(b"\n", failure) + 1
        assert any(a <= failure and end <= b for a, b in kept), (stream, data[failure:end])


def make_stream(rng: random.Random, n_lines: int) -> tuple[bytes, list[int], int]:
    """A build log of ``n_lines`` lines with a few failures; its bytes, the failures' offsets, a status."""
    lines, failures, offset = [], [], 0
    status = rng.choice([0, 1, 2])
    for i in range(n_lines):
        if status and rng.random() < 0.004:
            text = f"src/mod{i}.c:{i}: error: expected ';' before '}}' token\n"
            failures.append(offset)
        else:
            text = f"[{i:05d}] compiling unit {rng.randrange(10**6)} with flags -O2 -Wall ok\n"
        lines.append(text)
        offset += len(text)
    if status and not failures:
        text = f"FAILED tests/test_unit.py::test_case_{n_lines} - AssertionError: assert 1 == 2\n"
        failures.append(offset)
        lines.append(text)
    return "".join(lines).encode(), failures, status


async def publish_stream(
    js: JetStreamContext, sid: str, data: bytes, status: int, rng: random.Random, seconds: float
) -> None:
    """Publish stream ``sid`` as ``send --nats`` does, in chunks of random sizes over about ``seconds``."""
    subject = f"logs.{sid}"
    start = {"type": "run-start", "run": sid, "command": f"make -C {sid}", "cwd": "/src"}
    headers = {"Streamfilter-Control": "run-start", "Streamfilter-Offset": "0", "Nats-Msg-Id": f"{sid}:start"}
    await js.publish(subject, json.dumps(start).encode(), headers=headers)
    offset, pieces = 0, []
    while offset < len(data):
        size = rng.randrange(1, 3000)
        pieces.append((offset, data[offset : offset + size]))
        offset += size
    for offset, piece in pieces:
        headers = {"Streamfilter-Offset": str(offset), "Streamfilter-Run": sid, "Nats-Msg-Id": f"{sid}:{offset}"}
        await js.publish(subject, piece, headers=headers)
        await anyio.sleep(seconds / len(pieces) * rng.uniform(0.5, 1.5))
    end = {"type": "run-end", "run": sid, "status": status}
    headers = {"Streamfilter-Control": "run-end", "Streamfilter-Offset": str(len(data)), "Nats-Msg-Id": f"{sid}:end"}
    await js.publish(subject, json.dumps(end).encode(), headers=headers)


@pytest.mark.anyio
async def test_three_workers_one_killed_half_way_every_line_once_in_order_failures_kept(
    tmp_path: Path, server: NatsServer
) -> None:
    port = free_port()
    workers = [start_worker(tmp_path, server.url, f'[metrics]\naddress = "127.0.0.1:{port + i}"\n') for i in range(3)]
    wait_balanced(workers, PARTITIONS // 3)
    victim = max(workers, key=lambda w: len(held(w)))
    rng = random.Random(29)
    streams = {f"build-{i:02d}": make_stream(rng, rng.randrange(1500, 4000)) for i in range(60)}
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    killed = anyio.Event()

    async def kill_half_way() -> None:
        await anyio.sleep(3.0)  # of about 6 s of publishing
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        killed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(kill_half_way)
        for i, (sid, (data, _, status)) in enumerate(streams.items()):
            tg.start_soon(publish_stream, js, sid, data, status, random.Random(i), 6.0)
    await nc.close()
    assert killed.is_set()
    output = await read_output(server.url, set(streams), seconds=90)
    moved = 0
    for sid, (data, failures, status) in streams.items():
        events = events_of(output[sid])
        check_covered(sid, data, events, failures)
        exits = [e for e in events if e["event"] == "exit"]
        assert [e["status"] for e in exits] == [status], (sid, exits)
        assert events[-1]["event"] == "exit"
        assert all(e.get("run") == sid for e in events), sid  # (its run's start taken before its data)
        moved += any(e["event"] == "resumed" for e in events)
    assert moved, "no stream moved from the killed worker"
    survivors = [w for w in workers if w is not victim]
    scraped = [await anyio.to_thread.run_sync(scrape, port + workers.index(w)) for w in survivors]
    assert any("streamfilter_nats_streams_resumed_total{" in text for text in scraped)
    for worker in survivors:
        assert worker.stop() == 0


@pytest.mark.anyio
async def test_send_nats_publishes_a_run_and_exits_with_its_status(tmp_path: Path, server: NatsServer) -> None:
    worker = start_worker(tmp_path, server.url)
    script = "for i in $(seq 1 300); do echo step $i ok; done; echo 'error: linker failed'; exit 4"
    done = run_cli(
        "send", "--nats", server.url, "--stream", "job-7", "--partitions", str(PARTITIONS), "--", "sh", "-c", script
    )
    assert done.returncode == 4, done.stderr
    assert b"nats.disconnected" not in done.stderr  # (its own close: helper-26 saw it after every send)
    events = events_of((await read_output(server.url, {"job-7"}, seconds=30))["job-7"])
    data = "".join(f"step {i} ok\n" for i in range(1, 301)).encode() + b"error: linker failed\n"
    check_covered("job-7", data, events, [data.index(b"error:")])
    assert events[0]["event"] == "start" and events[0]["command"].startswith("sh -c")
    assert events[-1]["event"] == "exit" and events[-1]["status"] == 4
    bad = run_cli("send", "--nats", server.url, "--stream", "a.b", "--", "true")
    assert bad.returncode == 2 and b"--stream 'a.b'" in bad.stderr
    away = run_cli("send", "--nats", f"nats://127.0.0.1:{free_port()}", "--stream", "x", "--", "true")
    assert away.returncode == 1 and b"cannot connect to NATS" in away.stderr
    assert worker.stop() == 0


def test_send_nats_with_other_partitions_than_the_workers_is_warned_of(tmp_path: Path, server: NatsServer) -> None:
    """helper-92: `send --partitions 4` to workers of 6 published to a partition a worker took, the
    wrong one for the id, and fleet.md's promised warning did not come."""
    worker = start_worker(tmp_path, server.url)
    held_all = worker.wait_for(lambda: len(held(worker)) == PARTITIONS, 20)
    assert held_all
    for partitions, warned in ((PARTITIONS, False), (4, True)):
        done = run_cli("send", "--nats", server.url, "--stream", "job-3", "--partitions", str(partitions), "--", "true")
        assert done.returncode == 0, done.stderr
        said = f"warning: the workers' partitions are {PARTITIONS}, not {partitions} (--partitions)".encode()
        assert (said in done.stderr) is warned, done.stderr
    assert worker.stop() == 0


def test_send_nats_that_loses_its_server_mid_run_filters_the_rest_here_and_exits_with_its_status(
    tmp_path: Path, server: NatsServer
) -> None:
    # its connection's close failed too ("Connection lost"): exit 1 instead of the command's 3, and
    # the output filtered here had no end (helper-31)
    worker = start_worker(tmp_path, server.url)
    wait_balanced([worker], PARTITIONS)
    gate = tmp_path / "gate"
    script = (
        f"echo first step ok; while [ ! -e {gate} ]; do sleep 0.05; done; "
        "for i in $(seq 1 50); do echo step $i ok; done; echo 'error: late failed'; exit 3"
    )
    argv = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--stream", "job-9"]
    argv += ["--partitions", str(PARTITIONS), "--"]
    proc = subprocess.Popen([*argv, "sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)  # (connected, its first line published)
    server.proc.kill()
    server.proc.wait()
    gate.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert b"the NATS server was lost" in err and b"error: Connection lost" not in err
    assert b"error: late failed" in out and b"exit" in out.splitlines()[-1].lower()
    assert worker.stop(timeout=40) == 0


@pytest.mark.anyio
async def test_send_nats_goes_on_while_no_stream_answers(tmp_path: Path, server: NatsServer) -> None:
    # a restarting server answers "no responders" while it restores its streams: send took that
    # for no stream at all, stopped the command and lost its output, exit 1 (helper-42). Played
    # here by the stream gone for a second mid-run
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    await ensure_stream(js, "STREAMFILTER", ["logs.*.*"], work_queue=True)
    ended = tmp_path / "ended"
    script = f"for i in $(seq 1 60); do echo step $i ok; sleep 0.1; done; echo 'error: late failed'; touch {ended}"
    argv = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--stream", "job-11"]
    argv += ["--partitions", str(PARTITIONS), "--", "sh", "-c", f"{script}; exit 3"]
    proc = await anyio.open_process(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    await anyio.sleep(1.5)  # (connected, its first lines published)
    await js.delete_stream("STREAMFILTER")
    await anyio.sleep(1.5)
    await ensure_stream(js, "STREAMFILTER", ["logs.*.*"], work_queue=True)
    assert proc.stderr is not None
    with anyio.fail_after(90):
        err = b"".join([chunk async for chunk in proc.stderr])  # (a few lines at most)
        await proc.wait()
    assert proc.returncode == 3 and ended.exists(), err
    info = await js.stream_info("STREAMFILTER")
    assert info.state.messages > 5  # (what it sent after the stream came back)
    await nc.close()


@pytest.mark.anyio
async def test_slow_runs_that_hold_all_of_a_partitions_messages_still_end(tmp_path: Path) -> None:
    # a slow run's messages hold a line each, and a run holds its last 25 lines for its tail rule:
    # 14 such runs on one partition held its 256 messages in flight, the server sent no more, and
    # no run ended, for good (helper-42); played with 6 runs and max_ack_pending 64
    srv = NatsServer(tmp_path / "nats", 1)
    try:
        config = worker_config(tmp_path, srv.url, 1, source_extra="max_ack_pending = 64\n")
        worker = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "state")})
        worker.log_event("daemon.ready", timeout=20)
        slow = "for i in $(seq 1 60); do echo \"step $i ok\"; sleep 0.05; done; echo 'error: run {k} failed'; exit 1"
        send = [sys.executable, "-m", "streamfilter", "send", "--nats", srv.url, "--partitions", "1", "--stream"]
        sends = [
            await anyio.open_process([*send, f"slow-{k}", "--", "sh", "-c", slow.format(k=k)], stdout=None, stderr=None)
            for k in range(6)
        ]
        with anyio.fail_after(120):
            assert [await p.wait() for p in sends] == [1] * 6
        names = {f"slow-{k}" for k in range(6)}
        output = await read_output(srv.url, names, seconds=60)
        for k in range(6):
            events = events_of(output[f"slow-{k}"])
            data = "".join(f"step {i} ok\n" for i in range(1, 61)).encode() + f"error: run {k} failed\n".encode()
            check_covered(f"slow-{k}", data, events, [data.index(b"error:")])
        assert worker.stop(timeout=40) == 0
    finally:
        srv.stop()


@pytest.mark.anyio
async def test_output_longer_than_max_payload_is_published_in_parts_and_every_stream_goes_on(tmp_path: Path) -> None:
    srv = NatsServer(tmp_path / "nats", PARTITIONS, max_payload=32 << 10)
    try:
        worker = start_worker(tmp_path, srv.url)
        wait_balanced([worker], PARTITIONS)
        rng = random.Random(40)
        head = "".join(f"step {i} ok\n" for i in range(100)).encode()
        # one kept line of 300 kB (the failure), and lines with characters JSON escapes
        line = b"error: generated table too long: " + bytes(rng.choice(b'abc "\\\t') for _ in range(300_000)) + b"\n"
        data = head + line + "".join(f"after {i} \u00e9\n" for i in range(50)).encode()
        streams = {"long-1": (data, [len(head)], 1)} | {f"short-{i}": make_stream(rng, 800) for i in range(5)}
        nc = await nats.connect(srv.url)
        js = nc.jetstream()
        async with anyio.create_task_group() as tg:
            for i, (sid, (data, _, status)) in enumerate(streams.items()):
                tg.start_soon(publish_stream, js, sid, data, status, random.Random(i), 2.0)
        await nc.close()
        output = await read_output(srv.url, set(streams), seconds=60)
        for sid, (data, failures, status) in streams.items():
            events = events_of(output[sid])
            check_covered(sid, data, events, failures)
            assert [e["status"] for e in events if e["event"] == "exit"] == [status], sid
        assert any(headers.get(PART, "1/1") != "1/1" for headers, _ in output["long-1"])
        began = time.monotonic()
        assert worker.stop() == 0
        assert time.monotonic() - began < 10
        assert not [e for e in worker.logs() if e.get("level") in ("warning", "error")]
    finally:
        srv.stop()


@pytest.mark.anyio
async def test_a_stream_whose_output_is_not_taken_stops_no_other_and_sigterm_stops_the_worker(
    tmp_path: Path, server: NatsServer
) -> None:
    stuck = "stuck-1"
    others = [
        sid
        for sid in (f"ok-{i}" for i in range(40))
        if partition_of(sid, PARTITIONS) != partition_of(stuck, PARTITIONS)
    ]
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    # the output stream, made before the worker, takes the other streams' subjects but not stuck-1's
    await js.add_stream(name="STREAMFILTER_OUT", subjects=[f"filtered.{sid}" for sid in others[:5]])
    worker = start_worker(tmp_path, server.url)
    wait_balanced([worker], PARTITIONS)
    rng = random.Random(7)
    streams = {sid: make_stream(rng, 800) for sid in others[:5]}
    for i in range(300):  # (lines without offsets, as Vector sends them: its first write is of runs)
        await js.publish(f"logs.{stuck}", b"error: disk full" if i == 150 else f"step {i} ok".encode())
    async with anyio.create_task_group() as tg:
        for i, (sid, (data, _, status)) in enumerate(streams.items()):
            tg.start_soon(publish_stream, js, sid, data, status, random.Random(i), 2.0)
    await nc.close()
    output = await read_output(server.url, set(others[:5]), seconds=60)
    for sid in others[:5]:
        data, failures, _ = streams[sid]
        check_covered(sid, data, events_of(output[sid]), failures)
    worker.wait_for(
        lambda: any(e["event"] == "sink.unavailable" and e["subject"] == f"filtered.{stuck}" for e in worker.logs()),
        what="the stuck stream's warning",
    )
    began = time.monotonic()
    assert worker.stop(timeout=30) == 0
    assert time.monotonic() - began < 20  # (its write waits SETTLE_SECONDS, 10 s, at most)
    assert any(e["event"] == "stream.unpublished" and e["stream"] == stuck for e in worker.logs())


@pytest.mark.anyio
async def test_sigterm_while_the_server_is_away_stops_the_worker_cleanly(tmp_path: Path, server: NatsServer) -> None:
    """A worker stopped while its server is gone cannot drain its connections (nats-py raises
    ConnectionReconnectingError): that crashed it with a traceback and status 1. It says what it
    could not do and exits 0 within about 20 s (docs/fleet.md); what it did not ack is delivered
    again to the next owner."""
    worker = start_worker(tmp_path, server.url)
    wait_balanced([worker], PARTITIONS)
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    # a run that has not ended: its last lines wait for its end (the tail rule), their message unacked
    start = {"type": "run-start", "run": "away-1", "command": "make"}
    await js.publish("logs.away-1", json.dumps(start).encode(), headers={CONTROL: "run-start", OFFSET: "0"})
    data = "".join(f"step {i} ok\n" for i in range(100)).encode()
    await js.publish("logs.away-1", data, headers={OFFSET: "0", RUN: "away-1"})
    await nc.close()
    worker.wait_for(lambda: any(e["event"] == "run.started" for e in worker.logs()), what="the run's start")
    server.proc.kill()
    server.proc.wait()
    lost = {"streamfilter source fleet", "streamfilter sink out"}

    def disconnected() -> bool:
        return lost <= {e.get("connection") for e in worker.logs() if e["event"] == "nats.disconnected"}

    worker.wait_for(disconnected, what="both connections lost")
    began = time.monotonic()
    code = worker.stop(timeout=40)
    took = time.monotonic() - began
    err = worker.err_path.read_text()
    assert code == 0, err[-3000:]
    assert took < 20, took  # (the run's last write waits SETTLE_SECONDS, 10 s, at most)
    undrained = {e["connection"] for e in worker.logs() if e["event"] == "nats.drain_failed"}
    assert lost <= undrained, undrained
    assert "ConnectionReconnectingError" not in err


@pytest.mark.anyio
@pytest.mark.parametrize("partitions", [6, 64, 1024])
async def test_partition_of_is_the_servers_partition_mapping(tmp_path: Path, partitions: int) -> None:
    srv = NatsServer(tmp_path / "nats", partitions)
    rng = random.Random(partitions)
    ids = {
        "".join(rng.choices(string.ascii_letters + string.digits + "_-", k=rng.randrange(1, 48))) for _ in range(300)
    }
    mapped: dict[str, int] = {}
    try:
        nc = await nats.connect(srv.url)
        sub = await nc.subscribe("logs.*.*")
        for sid in ids:
            await nc.publish(f"logs.{sid}", b"")  # as Vector does: the server's mapping places it
        with anyio.fail_after(10):
            while len(mapped) < len(ids):
                msg = await sub.next_msg(timeout=10)
                _, partition, sid = msg.subject.split(".")
                mapped[sid] = int(partition)
        await nc.close()
    finally:
        srv.stop()
    assert mapped == {sid: partition_of(sid, partitions) for sid in ids}


@pytest.mark.anyio
async def test_send_nats_to_a_bare_server_and_one_worker(tmp_path: Path) -> None:
    srv = NatsServer(tmp_path / "nats", None)  # nats-server -js: no partition mapping
    try:
        # docs/fleet.md's first try: both sides with the default partitions (8)
        config = worker_config(tmp_path, srv.url, 8)
        worker = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "st")})
        worker.log_event("daemon.ready", timeout=20)
        wait_balanced([worker], 8)
        script = "for i in $(seq 1 200); do echo step $i ok; done; echo 'error: test_io failed'; exit 3"
        done = run_cli("send", "--nats", srv.url, "--stream", "job-1", "--", "sh", "-c", script)
        assert done.returncode == 3 and b"warning" not in done.stderr, done.stderr
        events = events_of((await read_output(srv.url, {"job-1"}, seconds=30))["job-1"])
        data = "".join(f"step {i} ok\n" for i in range(1, 201)).encode() + b"error: test_io failed\n"
        check_covered("job-1", data, events, [data.index(b"error:")])
        assert events[-1]["event"] == "exit" and events[-1]["status"] == 3
        # a producer that counts more partitions than the workers: its partition has no consumer
        sid = next(f"job-{i}" for i in range(100) if partition_of(f"job-{i}", 9) == 8)
        wrong = run_cli("send", "--nats", srv.url, "--stream", sid, "--partitions", "9", "--", "true")
        assert wrong.returncode == 0 and b"no worker takes logs.8.* yet" in wrong.stderr, wrong.stderr
        assert b"are the workers' partitions 9 (--partitions)?" in wrong.stderr
        assert worker.stop() == 0
    finally:
        srv.stop()


@pytest.mark.anyio
async def test_lines_without_offsets_from_vector_and_fluent_bit(tmp_path: Path, server: NatsServer) -> None:
    worker = start_worker(tmp_path, server.url, source_extra='payload = "fluent-bit"\n')
    lines = [f"step {i} ok" for i in range(200)] + ["error: disk full"] + [f"after {i}" for i in range(20)]
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    for line in lines[:150]:  # as Vector's text codec sends them: a line a message, no line end
        await js.publish("logs.vec-1", line.encode())
    records = [
        [1700000000 + i, {"log": line + "\n", "file": "/var/log/ci/vec-1.log"}] for i, line in enumerate(lines[150:])
    ]
    await js.publish("logs.vec-1", json.dumps(records).encode())  # as Fluent Bit flushes
    data = "".join(line + "\n" for line in lines).encode()
    events = await events_until(js, "vec-1", len(data), 30)
    await nc.close()
    check_covered("vec-1", data, events, [data.index(b"error: disk full")])
    assert worker.stop() == 0


@pytest.mark.anyio
async def test_lines_without_offsets_left_unacked_by_an_owner_come_before_newer_ones(
    tmp_path: Path, server: NatsServer
) -> None:
    """An owner of a partition had messages of lines without offsets (Vector's) delivered and left
    them unacked (killed, or handing the partition over with a backlog); newer lines came. The next
    owner got the newer ones at once and the older ones only when their ack wait ran out, then took
    those for copies of lines it had placed: 96 lines lost, no gap in the line numbers, no warning
    (helper-26). Each new owner makes the partition's consumer afresh, so what is left unacked comes
    first, in the stream's order. Here the test is that owner: it takes the first lines from the
    partition's consumer and acks none."""
    sid = "vec-order"
    p = partition_of(sid, PARTITIONS)
    lines = [f"step {i:04d} compiled module_{i}.c ok" for i in range(400)]
    lines[300] = "error: module_300.c: undefined reference to 'frobnicate'"
    data = "".join(line + "\n" for line in lines).encode()
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    await ensure_stream(js, "STREAMFILTER", ["logs.*.*"], work_queue=True)
    for line in lines[:100]:
        await js.publish(f"logs.{sid}", line.encode())
    config = ConsumerConfig(
        durable_name=f"streamfilter-{p}",
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=60,  # (far past the test: only a consumer made afresh gives them again)
        max_ack_pending=256,
        max_deliver=-1,
    )
    owner = await js.subscribe(f"logs.{p}.*", durable=config.durable_name, stream="STREAMFILTER", config=config)
    for _ in range(100):
        await owner.next_msg(timeout=10)  # (delivered, never acked)
    await owner.unsubscribe()
    for line in lines[100:]:
        await js.publish(f"logs.{sid}", line.encode())
    worker = Live(
        tmp_path,
        "daemon",
        "--config",
        str(worker_config(tmp_path, server.url, PARTITIONS)),
        env={"XDG_STATE_HOME": str(tmp_path / "state-order")},
    )
    worker.log_event("daemon.ready", timeout=20)
    events = await events_until(js, sid, len(data), 30)
    await nc.close()
    check_covered(sid, data, events, [data.index(b"error: module_300.c")])
    assert worker.stop() == 0


@pytest.mark.anyio
async def test_a_run_that_moves_to_a_worker_without_a_nats_sink_goes_on_at_its_first_message(
    tmp_path: Path, server: NatsServer
) -> None:
    """A worker writing to a file sink was killed mid-run: it had acked the run-start and the first
    messages. The next owner held the run's data back for a run-start that never came again, wrote
    nothing, and left the rest in the work queue for good (helper-34). Now it goes on at the first
    message it gets, says so, and applies the run's end. Here the test is the killed owner."""
    sid = "moved-run"
    p = partition_of(sid, PARTITIONS)
    rng = random.Random(41)
    data, failures, status = make_stream(rng, 800)
    status = status or 1
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    await ensure_stream(js, "STREAMFILTER", ["logs.*.*"], work_queue=True)
    start = {"type": "run-start", "run": sid, "command": "make", "cwd": "/src"}
    await js.publish(f"logs.{sid}", json.dumps(start).encode(), headers={CONTROL: "run-start", OFFSET: "0"})
    offsets = list(range(0, len(data), 1000))
    for offset in offsets:
        await js.publish(f"logs.{sid}", data[offset : offset + 1000], headers={OFFSET: str(offset), RUN: sid})
    end = {"type": "run-end", "run": sid, "status": status}
    await js.publish(f"logs.{sid}", json.dumps(end).encode(), headers={CONTROL: "run-end", OFFSET: str(len(data))})
    config = ConsumerConfig(
        durable_name=f"streamfilter-{p}",
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=60,
        max_ack_pending=256,
        max_deliver=-1,
    )
    owner = await js.subscribe(f"logs.{p}.*", durable=config.durable_name, stream="STREAMFILTER", config=config)
    for _ in range(1 + 20):  # the run-start and 20 KB written and acked, 3 more delivered when it died
        await (await owner.next_msg(timeout=10)).ack_sync()
    for _ in range(3):
        await owner.next_msg(timeout=10)
    await owner.unsubscribe()
    await nc.close()
    out = tmp_path / "out.jsonl"
    config_path = tmp_path / "file-sink.toml"
    config_path.write_text(
        f'[[source]]\nname = "fleet"\ntype = "nats"\nservers = ["{server.url}"]\npartitions = {PARTITIONS}\n'
        'lease_seconds = 3\nack_wait_seconds = 2\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    worker = Live(tmp_path, "daemon", "--config", str(config_path), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    worker.log_event("daemon.ready", timeout=20)
    worker.wait_for(lambda: out.exists() and b'"exit"' in out.read_bytes(), what="the run's exit event", timeout=30)
    assert worker.stop() == 0
    events = [json.loads(line) for line in out.read_bytes().splitlines()]
    resumed = events[0]
    assert resumed["event"] == "resumed" and resumed["offset"] == offsets[20] and resumed["line"] is None, resumed
    assert "line numbers count from 1 here" in resumed["text"]
    check_covered(sid, data, events, [f for f in failures if f >= offsets[20]], start=offsets[20])
    assert [e["status"] for e in events if e["event"] == "exit"] == [status]
    assert events[-1]["event"] == "exit"
    assert all(e.get("run") == sid for e in events[1:]), events[1]


@pytest.mark.anyio
async def test_a_line_a_message_is_not_held_back_by_the_ack_window(tmp_path: Path, server: NatsServer) -> None:
    """A stream of a line a message (Vector's) whose lines are dropped: a partition's 256 messages in
    flight waited for their summary, written once a second old, so a worker took about 100 lines a
    second, idle (helper-26: 100k messages drained for over ten minutes). The summary is written
    once half the window waits for it: 3000 lines take a few seconds, not 30."""
    worker = start_worker(tmp_path, server.url)
    lines = [f"step {i:05d} compiled module_{i}.c ok" for i in range(3000)]
    data = "".join(line + "\n" for line in lines).encode()
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    began = time.monotonic()
    for line in lines:
        await js.publish("logs.vec-fast", line.encode())
    events = await events_until(js, "vec-fast", len(data), 60)
    took = time.monotonic() - began
    await nc.close()
    check_covered("vec-fast", data, events, [])
    assert took < 15, took
    assert worker.stop() == 0


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return str(answer.read().decode())


def test_a_daemon_serves_its_counts_on_metrics(tmp_path: Path) -> None:
    port, sock = free_port(), tmp_path / "in.sock"
    config = tmp_path / "m.toml"
    config.write_text(
        f'[[source]]\nname = "ci"\ntype = "unix"\npath = "{sock}"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{tmp_path / "out.jsonl"}"\nformat = "jsonl"\n'
        f'[metrics]\naddress = "127.0.0.1:{port}"\n'
    )
    live = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    live.log_event("daemon.ready")
    done = run_cli(
        "send", "--socket", str(sock), "--", sys.executable, "-c", "print('ok\\n' * 50 + 'error: x'); exit(1)"
    )
    assert done.returncode == 1
    live.wait_for(lambda: b'"exit"' in (tmp_path / "out.jsonl").read_bytes(), what="the run's exit event")
    text = scrape(port)
    samples = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line and line[0] != "#"}
    assert samples['streamfilter_input_lines_total{source="ci"}'] == 51
    kept, dropped = (
        samples['streamfilter_kept_lines_total{source="ci"}'],
        samples['streamfilter_dropped_lines_total{source="ci"}'],
    )
    assert kept + dropped == 51 and kept >= 1
    assert samples['streamfilter_command_runs_total{outcome="failure",source="ci"}'] == 1
    assert samples['streamfilter_decision_latency_seconds_count{source="ci"}'] >= 1
    assert 'streamfilter_output_runs_total{decision="keep",source="ci"}' in samples
    # only /metrics: a probe of another path is not answered 200 with the counts (helper-82)
    with pytest.raises(urllib.error.HTTPError) as other:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
    assert other.value.code == 404
    head = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", method="HEAD")
    with urllib.request.urlopen(head, timeout=5) as answer:  # (a probe's HEAD: 200, no body)
        assert answer.status == 200 and answer.read() == b""
    assert live.stop() == 0


def test_a_workers_log_stays_json_lines_through_a_server_restart(tmp_path: Path) -> None:
    """helper-52: the leases' connection left nats-py's own callbacks, which printed "nats:
    encountered error" and a traceback among the JSON events while the server restarted."""
    srv = NatsServer(tmp_path / "nats", PARTITIONS)
    try:
        config = worker_config(tmp_path, srv.url, PARTITIONS)  # (leases of 3 s, renewed each second)
        worker = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "state")})
        worker.log_event("daemon.ready", timeout=20)
        srv.restart(down_seconds=3)  # (a lease renewal, every second, fails meanwhile)
        worker.log_event("nats.reconnected", timeout=30)
        time.sleep(2)
        status = worker.stop(timeout=40)
        lines = worker.err_path.read_bytes().splitlines()
        assert status == 0, b"\n".join(lines[-8:])
        assert [line for line in lines if not line.startswith(b"{")] == []
        assert any(b'"leases.' in line for line in lines)  # (the renewals' failures, said as events)
    finally:
        srv.stop()


@pytest.mark.anyio
async def test_a_stream_whose_lease_lapsed_counts_what_it_read_and_not_what_it_never_wrote(
    tmp_path: Path, server: NatsServer
) -> None:
    """helper-55: a worker whose partition was lost (a server restart) and claimed again read its
    streams again from their output's position, and its metrics counted 6,460 dropped lines that
    no summary written holds. The lines read count; what is kept and dropped counts once written."""
    sink = NatsSink(SinkConfig(name="out", type="nats", servers=[server.url]))
    await sink.start()
    totals = Totals()
    live = NatsStream("s1", FilterConfig(), Timing(), [sink], None, 1, 0, totals, "fleet")
    live.lease, live.turn, live.held = Lease(1, 0.0), Turn(), deque()  # (its deadline has passed)
    data = b"".join(b"step %d ok\n" % i for i in range(300)) + b"error: the build failed\n"
    await live.feed(data)
    with pytest.raises(LeaseExpired):
        await live.end()
    lines, kept, dropped, n_bytes, kept_bytes, dropped_bytes, keep_runs, drop_runs = totals.by_source["fleet"]
    assert (lines, n_bytes) == (301, len(data))
    assert (kept, dropped, kept_bytes, dropped_bytes, keep_runs, drop_runs) == (0, 0, 0, 0, 0, 0)
    # the same lines written (a lease in force) count once, kept and dropped
    totals = Totals()
    live = NatsStream("s2", FilterConfig(), Timing(), [sink], None, 1, 0, totals, "fleet")
    live.lease, live.turn, live.held = Lease(1, time.monotonic() + 60), Turn(), deque()
    await live.feed(data)
    await live.end()
    lines, kept, dropped, *_, keep_runs, drop_runs = totals.by_source["fleet"]
    assert lines == 301 and kept + dropped == 301 and kept >= 1 and keep_runs >= 1 and drop_runs >= 1
    await sink.aclose()


def test_a_pool_the_server_refuses_says_so_once_a_partition(tmp_path: Path, server: NatsServer) -> None:
    """A second pool on the work-queue stream, under another consumer name: the server refuses its
    consumers ("filtered consumer not unique on workqueue stream"). It was logged as "the server did
    not answer", three times a second, for as long as it ran (helper-64)."""
    first = start_worker(tmp_path, server.url)
    second = start_worker(tmp_path, server.url, source_extra='consumer = "other"\n')
    try:
        lost = second.log_event("partition.lost", timeout=30)
        assert "the server refused it (filtered consumer not unique on workqueue stream" in lost["reason"], lost
        time.sleep(6)  # (rounds of claims, each refused again)
        said = [e["partition"] for e in second.logs() if e.get("event") == "partition.lost"]
        assert said and len(said) == len(set(said)), said
        assert not held(second)
    finally:
        second.stop()
        first.stop()


async def long_line_run(tmp_path: Path, data: bytes, source_extra: str = "") -> list[dict[str, Any]]:
    """``data`` (a command's output: its failure on its last line) sent as run ``long`` to a worker
    of one partition, then a run ``after`` on it: ``after``'s output checked, ``long``'s events
    (covered, its failure kept)."""
    srv = NatsServer(tmp_path / "nats", 1)
    try:
        config = worker_config(tmp_path, srv.url, 1, source_extra=source_extra)
        worker = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "state")})
        worker.log_event("daemon.ready", timeout=20)
        log = tmp_path / "long.log"
        log.write_bytes(data)
        send = [sys.executable, "-m", "streamfilter", "send", "--nats", srv.url, "--partitions", "1", "--stream"]
        long = await anyio.open_process([*send, "long", "--", "sh", "-c", f"cat {log}; exit 2"])
        with anyio.fail_after(120):
            assert await long.wait() == 2
        other = await anyio.open_process([*send, "after", "--", "sh", "-c", "echo error: next run; exit 1"])
        with anyio.fail_after(60):
            assert await other.wait() == 1
        output = await read_output(srv.url, {"long", "after"}, seconds=60)
        events = events_of(output["long"])
        check_covered("long", data, events, [data.rindex(b"\n", 0, len(data) - 1) + 1])
        check_covered("after", b"error: next run\n", events_of(output["after"]), [0])
        assert worker.stop(timeout=40) == 0
        return events
    finally:
        srv.stop()


@pytest.mark.anyio
async def test_a_line_longer_than_the_messages_in_flight_does_not_stop_its_partition(tmp_path: Path) -> None:
    """helper-72: a line over max_ack_pending messages (20 MiB in 64 KiB messages at 256) could
    never end: its messages were held for it, the server sent no more, and the partition stopped
    for good, every other stream on it too. The line is let out, its rest after it; played with a
    6 MB line at max_ack_pending 64."""
    data = b"building\n" + b"x" * (6 << 20) + b" error: at the end of it\n" + b"make: *** [all] Error 2\n"
    events = await long_line_run(tmp_path, data, "max_ack_pending = 64\n")
    rest = [e for e in events if e["event"] in ("keep", "drop") and e.get("rest")]
    assert rest and rest[-1]["event"] == "keep" and rest[-1]["text"].endswith(" error: at the end of it\n")


@pytest.mark.anyio
async def test_a_kept_line_past_the_held_cap_goes_out_in_pieces_and_its_partition_goes_on(tmp_path: Path) -> None:
    """helper-82: a 20 MB line whose start is a failure, past the 8 MiB a line is held
    (``lines.HELD_LINE_BYTES``): its rest's wait for a pause that could not let it out (a run
    holds its tail) spun the worker's loop, which read no more messages; its partition stopped."""
    data = b"building\nAssertionError: " + b"x" * (20 << 20) + b" the end of it\n" + b"make: *** [all] Error 2\n"
    events = await long_line_run(tmp_path, data)
    pieces = [e for e in events if e["event"] in ("keep", "drop") and e["first_line"] <= 2 <= e["last_line"]]
    assert len(pieces) == 3 and all(e["event"] == "keep" for e in pieces)  # (8 MiB, 8 MiB, the rest)


async def events_until_exits(url: str, sid: str, exits: int, seconds: float) -> list[dict[str, Any]]:
    """The events on ``filtered.SID`` until ``exits`` runs' exit events came (fails after ``seconds``)."""
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().subscribe(f"filtered.{sid}", ordered_consumer=True)
        events: list[dict[str, Any]] = []
        with anyio.fail_after(seconds):
            while sum(e["event"] == "exit" for e in events) < exits:
                events += [json.loads(line) for line in (await sub.next_msg(timeout=seconds)).data.splitlines()]
    finally:
        await nc.close()
    return events


def second_run(events: list[dict[str, Any]], statuses: tuple[int, int]) -> list[dict[str, Any]]:
    """The events of the second of two runs under one stream id, once each run's exit status is
    checked (``statuses``) and the second is seen to start after the first's exit."""
    exits = [e for e in events if e["event"] == "exit"]
    assert tuple(e["status"] for e in exits) == statuses and exits[0]["run"] != exits[1]["run"], exits
    second = events[events.index(exits[0]) + 1 :]
    assert second[0]["event"] == "start" and second[0]["run"] == exits[1]["run"], second[:2]
    return second


@pytest.mark.anyio
async def test_a_new_run_under_an_id_whose_run_ended_is_filtered_after_it(tmp_path: Path, server: NatsServer) -> None:
    """helper-72, helper-100: a second run under an id whose run had ended was acked and left out, only
    a worker's warning said so: a CI retry that reused its job's id lost its failure. It is filtered
    now, its events after the first run's exit; within the server's duplicate window too (its
    writes had the first run's message ids)."""
    worker = start_worker(tmp_path, server.url)
    send = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--partitions", str(PARTITIONS)]
    first = await anyio.open_process([*send, "--stream", "job-7", "--run-id", "first", "--", "sh", "-c", "echo ok"])
    with anyio.fail_after(60):
        assert await first.wait() == 0
    await read_output(server.url, {"job-7"}, seconds=30)
    retry = "for i in $(seq 1 200); do echo step $i ok; done; echo 'error: retry failed'; exit 3"
    second = await anyio.open_process([*send, "--stream", "job-7", "--run-id", "retry", "--", "sh", "-c", retry])
    with anyio.fail_after(60):
        assert await second.wait() == 3
    events = second_run(await events_until_exits(server.url, "job-7", 2, 60), (0, 3))
    assert events[0]["run"] == "retry"
    expected = "".join(f"step {i} ok\n" for i in range(1, 201)) + "error: retry failed\n"
    check_covered("job-7", expected.encode(), events, [expected.index("error: retry failed")])
    assert not [e for e in worker.logs() if e.get("event") == "stream.reused"]
    assert worker.stop(timeout=40) == 0


@pytest.mark.anyio
async def test_a_second_run_under_a_running_stream_s_id_is_left_out_and_warned_of(
    tmp_path: Path, server: NatsServer
) -> None:
    """helper-92: two senders of one id at once: the second's bytes were placed among the first's by
    offset (lines cut in two), its run-end ended the stream with its status, and the first's
    failure was neither kept nor counted."""
    worker = start_worker(tmp_path, server.url)
    send = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--partitions", str(PARTITIONS)]
    alpha = "for i in $(seq 1 120); do echo alpha build step $i; sleep 0.01; done; echo 'alpha: link failed'; exit 2"
    beta = "for i in $(seq 1 60); do echo beta test $i passed; sleep 0.01; done; exit 1"
    first = await anyio.open_process([*send, "--stream", "job-9", "--run-id", "alpha", "--", "sh", "-c", alpha])
    await anyio.sleep(0.4)
    second = await anyio.open_process([*send, "--stream", "job-9", "--run-id", "beta", "--", "sh", "-c", beta])
    with anyio.fail_after(60):
        assert await second.wait() == 1 and await first.wait() == 2
    output = await read_output(server.url, {"job-9"}, seconds=30)
    events = events_of(output["job-9"])
    expected = "".join(f"alpha build step {i}\n" for i in range(1, 121)) + "alpha: link failed\n"
    check_covered("job-9", expected.encode(), events, [expected.index("alpha: link failed")])
    (end,) = [e for e in events if e["event"] == "exit"]
    assert end["status"] == 2 and "run alpha " in end["text"]
    said = worker.wait_for(lambda: [e for e in worker.logs() if e.get("event") == "stream.reused"], 20)
    assert [(e["run"], e["running_run"], e["level"]) for e in said] == [("beta", "alpha", "warning")]
    assert worker.stop(timeout=40) == 0


@pytest.mark.anyio
async def test_a_new_run_under_the_id_of_a_stream_that_ended_on_a_stopped_worker_is_filtered(
    tmp_path: Path, server: NatsServer
) -> None:
    """helper-82: a new run under the id of a stream that ended on a worker since stopped: the
    worker that took its partition found the stream ended by its output and left its messages
    unacked, without a word; at max_ack_pending the partition stopped for every stream on it. They
    were then acked and left out (a warning); now the run is filtered after the first's exit, and
    the partition's other streams go on (helper-100)."""
    extra = "max_ack_pending = 64\n"
    send = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--partitions", str(PARTITIONS)]
    first_worker = start_worker(tmp_path, server.url, source_extra=extra)
    first = await anyio.open_process([*send, "--stream", "job-8", "--", "sh", "-c", "echo error: one; exit 1"])
    with anyio.fail_after(60):
        assert await first.wait() == 1
    await read_output(server.url, {"job-8"}, seconds=30)
    assert first_worker.stop(timeout=40) == 0
    assert held(first_worker) == set()  # (each given up, and said so: partition.handed_back)
    worker = start_worker(tmp_path, server.url, source_extra=extra)
    slow = "for i in $(seq 1 150); do echo line $i; sleep 0.005; done; exit 2"  # (more messages than 64)
    again = await anyio.open_process([*send, "--stream", "job-8", "--", "sh", "-c", slow])
    with anyio.fail_after(60):
        assert await again.wait() == 2
    events = second_run(await events_until_exits(server.url, "job-8", 2, 60), (1, 2))
    check_covered("job-8", "".join(f"line {i}\n" for i in range(1, 151)).encode(), events, [])
    partition = partition_of("job-8", PARTITIONS)
    other = next(f"next-{i}" for i in range(1000) if partition_of(f"next-{i}", PARTITIONS) == partition)
    after = await anyio.open_process([*send, "--stream", other, "--", "sh", "-c", "echo error: next job; exit 3"])
    with anyio.fail_after(60):
        assert await after.wait() == 3
    output = await read_output(server.url, {other}, seconds=30)
    check_covered(other, b"error: next job\n", events_of(output[other]), [0])
    assert not [e for e in worker.logs() if e.get("event") == "stream.reused"]
    assert worker.stop(timeout=40) == 0


@pytest.mark.anyio
async def test_a_run_s_failure_is_written_while_the_command_is_quiet_not_at_its_end(
    tmp_path: Path, server: NatsServer
) -> None:
    """helper-82: a build's linker errors, then 15 s of nothing before it exited: a worker wrote
    them at its end (held for the tail rule); `run` and `follow` show them within a second or
    so. A run quiet for HOLD_SECONDS lets out its held lines up to the last kept one, as `run` does."""
    worker = start_worker(tmp_path, server.url)
    before = "".join(f"cc -c module_{i}.c\n" for i in range(60))
    failure = "echo 'ld: undefined reference to foo'; echo 'collect2: error: ld returned 1 exit status'"
    script = f"printf '{before}'; {failure}; sleep 20"
    send = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--partitions", str(PARTITIONS)]
    build = await anyio.open_process([*send, "--stream", "slow-ld", "--", "sh", "-c", script])
    try:
        nc = await nats.connect(server.url)
        error_end = len(before) + len("ld: undefined reference to foo\n")
        events = await events_until(nc.jetstream(), "slow-ld", error_end, 12)  # (long before the 20 s)
        await nc.close()
        kept = "".join(e.get("text", "") for e in events if e["event"] == "keep")
        assert "ld: undefined reference to foo\n" in kept and build.returncode is None
    finally:
        build.kill()
        await build.wait()
    assert worker.stop(timeout=40) == 0


def test_a_worker_stopped_gives_its_partitions_to_the_others_at_their_next_count(tmp_path: Path) -> None:
    """helper-83: a worker's key deleted at its stop left a marker that the others counted as a
    worker until the bucket's TTL: its partitions went unowned for lease_seconds and more, as
    after a SIGKILL. Purged, the others take them at their next count (a third of lease_seconds)."""
    srv = NatsServer(tmp_path / "nats", PARTITIONS)
    try:
        workers = [
            Live(
                tmp_path,
                "daemon",
                "--config",
                str(worker_config(tmp_path, srv.url, PARTITIONS, lease_seconds=9)),
                env={"XDG_STATE_HOME": str(tmp_path / f"state-{i}")},
            )
            for i in range(2)
        ]
        for worker in workers:
            worker.log_event("daemon.ready", timeout=20)
        wait_balanced(workers, PARTITIONS // 2)
        assert workers[1].stop(timeout=40) == 0
        wait_balanced(workers[:1], PARTITIONS, timeout=7.0)  # (3 s a count; the TTL, 9 s, and more before)
        assert workers[0].stop(timeout=40) == 0
    finally:
        srv.stop()


def test_a_worker_set_to_other_partitions_than_the_pool_is_warned_of(tmp_path: Path, server: NatsServer) -> None:
    """helper-92: a worker with `partitions = 16` beside one of 8 made each count two workers and take
    a share of 4, so partitions of the 8 were held by none, their streams stalled, and nothing said so."""
    first = start_worker(tmp_path, server.url)
    config = worker_config(tmp_path, server.url, 2 * PARTITIONS)
    other = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "other")})
    for live in (first, other):
        (said, *_) = live.wait_for(
            lambda w=live: [e for e in w.logs() if e.get("event") == "pool.partitions_differ"], 30
        )
        assert said["level"] == "warning" and said["pool"] == [str(PARTITIONS), str(2 * PARTITIONS)]
    assert other.stop(timeout=40) == 0 and first.stop(timeout=40) == 0


def test_a_lease_keeper_stopped_before_it_started_stops_cleanly() -> None:
    """A worker stopped while the server restarted, before the pool's bucket was found (its renewal
    thread not started yet), exited 1 with "cannot join thread before it is started"."""
    keeper = LeaseKeeper(["nats://127.0.0.1:1"], "pool-leases", "w1", 3.0, 8)
    keeper.close()
    assert keeper.drop(0) is None


@pytest.mark.anyio
async def test_a_run_whose_sender_died_gets_a_quiet_event_after_its_last_lines(
    tmp_path: Path, server: NatsServer
) -> None:
    """helper-100: a sender killed mid-run left its stream at its last lines, with no end and no
    word, for ever: a reader waiting for its exit waited on. Once it is quiet for ``evict_seconds``
    its unended line is written, then a ``quiet`` event that says its status is not known."""
    worker = start_worker(tmp_path, server.url, source_extra="evict_seconds = 2\n")
    send = [sys.executable, "-m", "streamfilter", "send", "--nats", server.url, "--partitions", str(PARTITIONS)]
    script = "printf 'step 1\\nerror: the sender dies after this'; sleep 60"
    sender = await anyio.open_process(
        [*send, "--stream", "lost-1", "--run-id", "r1", "--", "sh", "-c", script], start_new_session=True
    )
    nc = await nats.connect(server.url)
    try:
        sub = await nc.jetstream().subscribe("filtered.lost-1", ordered_consumer=True)
        events: list[dict[str, Any]] = []
        with anyio.fail_after(40):
            while not any(e["event"] == "start" for e in events):
                events += [json.loads(line) for line in (await sub.next_msg(timeout=40)).data.splitlines()]
            os.killpg(sender.pid, signal.SIGKILL)
            await sender.wait()
            while not any(e["event"] in ("quiet", "exit") for e in events):
                events += [json.loads(line) for line in (await sub.next_msg(timeout=40)).data.splitlines()]
    finally:
        await nc.close()
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "quiet" and "exit" not in kinds, kinds
    kept = "".join(e.get("text", "") for e in events if e["event"] == "keep")
    assert kept.endswith("error: the sender dies after this")  # (its line, unended, as it came)
    quiet = events[-1]
    assert (quiet["run"], quiet["seconds"], quiet["source"]) == ("r1", 2, "lost-1")
    assert "its status is not known" in quiet["text"]
    assert worker.stop(timeout=40) == 0
