#!/usr/bin/env python3
"""A pool of NATS workers: throughput with 1 and 2 workers, and publish -> decision latency.

Usage:
    python benchmarks/fleet.py [--mb 64] [--streams 32] [--chunk 65536] [--log FILE] [--latency-seconds 10] [--json]

Starts a ``nats-server`` (JetStream, 8 partitions on ``logs.*``; Debian's package) on loopback.

Throughput: for 1 and then 2 workers (``streamfilter daemon`` with a nats source and a nats sink,
started and balanced first), ``--streams`` runs of real build logs (tests/data/*.log repeated, or
``--log``'s bytes, ``--mb`` MB in all) are published at once in ``--chunk`` chunks (64 KiB), after a warm-up
run per partition; the
time from the first publish to the last run's exit event is the wall time. Each worker's CPU time
(``/proc``) over that span gives the rate per core (MB per worker CPU second); the server's CPU is
shown beside it. The reference, timed in the same run: ``streamfilter filter --format jsonl`` over
the same bytes (one file per run, all in one process), its CPU seconds less those of the same
command over an empty file (the start-up, which a worker's warm-up also leaves out).

Latency: with 1 worker, 20 runs each publish a chunk of 20 lines (1 % of them failures) every
50 ms for ``--latency-seconds``. Printed: from a chunk's publish to the arrival of the first event
whose byte range reaches its end (every byte of it decided), and from the publish of a failure line
to the event that reaches past it (both ``time.monotonic()`` in this process). A run's last 25
lines wait for its end (the tail rule, as over sockets), and a stretch of dropped lines is
summarized at the next kept line or once a second old at a pause: both set the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import nats
import numpy as np
from nats.js.api import DeliverPolicy

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin")
    if binary is None:
        sys.exit("nats-server is not installed (apt-get install nats-server)")
    port = free_port()
    conf = folder / "nats.conf"
    conf.write_text(
        f'listen: 127.0.0.1:{port}\njetstream {{ store_dir: "{folder / "js"}" }}\n'
        f'mappings = {{ "logs.*": "logs.{{{{partition({PARTITIONS},1)}}}}.{{{{wildcard(1)}}}}" }}\n'
    )
    proc = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, f"nats://127.0.0.1:{port}"


def start_worker(folder: Path, url: str, n: int) -> subprocess.Popen[bytes]:
    conf = folder / f"worker{n}.toml"
    conf.write_text(
        f'[[source]]\nname = "fleet"\ntype = "nats"\nservers = ["{url}"]\npartitions = {PARTITIONS}\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "nats"\nservers = ["{url}"]\n'
    )
    err = open(folder / f"worker{n}.err", "wb")  # (the child's stderr: closed at exit)
    env = {**os.environ, "XDG_STATE_HOME": str(folder / f"state{n}")}
    return subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "daemon", "--config", str(conf)], stderr=err, env=env
    )


def held(folder: Path, n: int) -> set[int]:
    out: set[int] = set()
    for line in (folder / f"worker{n}.err").read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "partition.claimed":
            out.add(event["partition"])
        elif event.get("event") in ("partition.handed_back", "partition.lost"):
            out.discard(event["partition"])
    return out


def wait_balanced(folder: Path, workers: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        parts = [held(folder, n) for n in range(workers)]
        if sum(map(len, parts)) == PARTITIONS and max(map(len, parts)) - min(map(len, parts)) <= 1:
            return
        time.sleep(0.2)
    sys.exit(f"workers did not balance: {[sorted(held(folder, n)) for n in range(workers)]}")


def corpus(total: int, log: Path | None) -> bytes:
    """A run's bytes: the first ``total`` of ``log`` (default: tests/data/*.log), repeated as needed."""
    paths = [log] if log is not None else sorted((ROOT / "tests" / "data").glob("*.log"))
    logs = b"".join(p.read_bytes() for p in paths)
    return (logs * (total // len(logs) + 1))[:total]


def filter_rate(folder: Path, data: bytes, streams: int) -> dict[str, float]:
    """``streamfilter filter --format jsonl`` over ``streams`` files of ``data``: MB per CPU second,
    less the CPU of its start-up (the same command over one empty file)."""
    files = []
    for i in range(streams):
        files.append(folder / f"run{i}.log")
        files[-1].write_bytes(data)
    (folder / "empty.log").write_bytes(b"")

    def cpu(paths: list[Path]) -> float:
        argv = [sys.executable, "-m", "streamfilter", "filter", "--format", "jsonl", *map(str, paths)]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):  # (1: the logs hold failures)
            sys.exit(f"streamfilter filter exited {proc.returncode}")
        return float(usage.ru_utime + usage.ru_stime)

    startup = min(cpu([folder / "empty.log"]) for _ in range(3))
    seconds = cpu(files) - startup
    for path in files:
        path.unlink()
    mb = len(data) * streams / 1e6
    return {"mb": round(mb, 1), "cpu_s": round(seconds, 2), "mb_per_cpu_s": round(mb / seconds, 2)}


async def publish_run(
    js: Any, sid: str, data: bytes, sent: dict[str, list[tuple[int, float]]] | None, chunk: int = 64 << 10
) -> None:
    subject = f"logs.{sid}"
    start = json.dumps({"type": "run-start", "run": sid, "command": "bench"}).encode()
    await js.publish(subject, start, headers={"Streamfilter-Control": "run-start", "Streamfilter-Offset": "0"})
    for offset in range(0, len(data), chunk):
        piece = data[offset : offset + chunk]
        await js.publish(subject, piece, headers={"Streamfilter-Offset": str(offset), "Streamfilter-Run": sid})
        if sent is not None:
            sent[sid].append((offset + len(piece), time.monotonic()))
    end = json.dumps({"type": "run-end", "run": sid, "status": 1}).encode()
    await js.publish(subject, end, headers={"Streamfilter-Control": "run-end", "Streamfilter-Offset": str(len(data))})


async def wait_ended(url: str, streams: set[str]) -> float:
    """Read ``filtered.>`` until every stream of ``streams`` has its exit event; the time of the last."""
    nc = await nats.connect(url)
    sub = await nc.jetstream().subscribe("filtered.>", ordered_consumer=True)
    ended: set[str] = set()
    last = time.monotonic()
    while not streams <= ended:
        msg = await sub.next_msg(timeout=600)
        if (msg.headers or {}).get("Streamfilter-Ended") == "1":
            ended.add(msg.subject.split(".", 1)[1])
            last = time.monotonic()
    await nc.close()
    return last


async def throughput(
    url: str, workers: list[subprocess.Popen[bytes]], args: argparse.Namespace, server: int
) -> dict[str, float]:
    data = corpus(args.mb * 1_000_000 // args.streams, args.log)
    prefix = f"t{len(workers)}-"
    sids = [f"{prefix}{i}" for i in range(args.streams)]
    nc = await nats.connect(url)
    js = nc.jetstream()
    # a run on each partition first: the workers' first streams load the filter's tables (about a second)
    warm = {f"warm{len(workers)}-{i}" for i in range(PARTITIONS * 2)}
    waiter = asyncio.create_task(wait_ended(url, warm))
    await asyncio.gather(*(publish_run(js, sid, data[:100_000], None) for sid in warm))
    await waiter
    before = [cpu_seconds(w.pid) for w in workers]
    server_before = cpu_seconds(server)
    waiter = asyncio.create_task(wait_ended(url, set(sids)))
    began = time.monotonic()
    await asyncio.gather(*(publish_run(js, sid, data, None, args.chunk) for sid in sids))
    published = time.monotonic()
    done = await waiter
    cpu = sum(cpu_seconds(w.pid) - b for w, b in zip(workers, before, strict=True))
    await nc.close()
    mb = len(data) * len(sids) / 1e6
    return {
        "workers": len(workers),
        "mb": round(mb, 1),
        "publish_s": round(published - began, 2),
        "wall_s": round(done - began, 2),
        "mb_per_s": round(mb / (done - began), 2),
        "worker_cpu_s": round(cpu, 2),
        "mb_per_cpu_s": round(mb / cpu, 2),
        "server_cpu_s": round(cpu_seconds(server) - server_before, 2),
    }


async def latency(url: str, seconds: float) -> dict[str, float]:
    rng = random.Random(7)
    # stream -> [(end offset, publish time, failure)]: each chunk's end, and each failure line's end
    marks: dict[str, list[tuple[int, float, bool]]] = defaultdict(list)
    delays: dict[bool, list[float]] = {False: [], True: []}
    nc = await nats.connect(url)
    js = nc.jetstream()
    # (only what comes from now on: the throughput round's events are in the stream before)
    sub = await js.subscribe("filtered.>", ordered_consumer=True, deliver_policy=DeliverPolicy.NEW)

    async def produce(sid: str) -> None:
        subject, offset, i = f"logs.{sid}", 0, 0
        start = {"Streamfilter-Control": "run-start", "Streamfilter-Offset": "0"}
        await js.publish(subject, b'{"type": "run-start", "run": "x"}', headers=start)
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            piece, failures = b"", []
            for _ in range(20):
                i += 1
                if rng.random() < 0.01:
                    piece += f"src/x{i}.c:{i}: error: undeclared identifier 'y{i}'\n".encode()
                    failures.append(offset + len(piece))
                else:
                    piece += f"[{i}] CC obj/unit{i}.o ok\n".encode()
            await js.publish(subject, piece, headers={"Streamfilter-Offset": str(offset), "Streamfilter-Run": sid})
            now = time.monotonic()
            offset += len(piece)
            marks[sid] += [(offset, now, False)] + [(end, now, True) for end in failures]
            await asyncio.sleep(0.05)
        end = b'{"type": "run-end", "run": "x", "status": 1}'
        await js.publish(subject, end, headers={"Streamfilter-Control": "run-end", "Streamfilter-Offset": str(offset)})

    async def consume() -> None:
        ended: set[str] = set()
        while len(ended) < 20:
            msg = await sub.next_msg(timeout=60)
            now = time.monotonic()
            sid = msg.subject.split(".", 1)[1]
            if not sid.startswith("l-"):
                continue
            reach = int((msg.headers or {}).get("Streamfilter-Next-Byte", "0"))
            waiting = marks[sid]
            while waiting and waiting[0][0] <= reach:
                _, published, failure = waiting.pop(0)
                delays[failure].append(now - published)
            if (msg.headers or {}).get("Streamfilter-Ended") == "1":
                ended.add(sid)

    consumer = asyncio.create_task(consume())
    await asyncio.gather(*(produce(f"l-{i}") for i in range(20)))
    await consumer
    await nc.close()

    def ms(values: list[float], q: float) -> float:
        return round(float(np.percentile(values, q)) * 1000, 1) if values else 0.0

    return {
        "chunks": len(delays[False]),
        "p50_ms": ms(delays[False], 50),
        "p99_ms": ms(delays[False], 99),
        "failures": len(delays[True]),
        "failure_p50_ms": ms(delays[True], 50),
        "failure_p99_ms": ms(delays[True], 99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=64, help="MB published per throughput round (default 64)")
    parser.add_argument("--streams", type=int, default=32, help="runs published at once (default 32)")
    parser.add_argument("--chunk", type=int, default=64 << 10, help="bytes a message (default 65536)")
    parser.add_argument("--log", type=Path, help="the bytes to publish (default: tests/data/*.log, repeated)")
    parser.add_argument("--latency-seconds", type=float, default=10.0, help="length of the latency round")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    results: dict[str, Any] = {"cores": os.cpu_count(), "throughput": []}
    with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
        results["filter"] = filter_rate(Path(tmp), corpus(args.mb * 1_000_000 // args.streams, args.log), args.streams)
    for count in (1, 2):
        with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
            folder = Path(tmp)
            server, url = start_server(folder)
            workers = []
            try:
                for n in range(count):
                    workers.append(start_worker(folder, url, n))
                    time.sleep(0.5)
                wait_balanced(folder, count)
                results["throughput"].append(asyncio.run(throughput(url, workers, args, server.pid)))
                if count == 1:
                    results["latency"] = asyncio.run(latency(url, args.latency_seconds))
            finally:
                for w in workers:
                    w.send_signal(signal.SIGTERM)
                for w in workers:
                    w.wait(30)
                server.terminate()
                server.wait(10)
    reference = results["filter"]
    for r in results["throughput"]:
        r["of_filter"] = round(r["mb_per_cpu_s"] / reference["mb_per_cpu_s"], 2)
    if args.json:
        print(json.dumps(results))
        return
    columns = (
        ("workers", "workers"),
        ("MB", "mb"),
        ("wall s", "wall_s"),
        ("MB/s", "mb_per_s"),
        ("worker CPU s", "worker_cpu_s"),
        ("MB/CPU s", "mb_per_cpu_s"),
        ("x filter", "of_filter"),
        ("server CPU s", "server_cpu_s"),
    )
    print(
        f"streamfilter filter --format jsonl: {reference['mb']} MB in {reference['cpu_s']} CPU s "
        f"(less its start-up), {reference['mb_per_cpu_s']} MB per CPU s"
    )
    print(" ".join(f"{title:>12}" for title, _ in columns))
    for r in results["throughput"]:
        print(" ".join(f"{r[key]:>12}" for _, key in columns))
    lat = results["latency"]
    print(
        f"publish -> decision, 1 worker: every byte of a chunk ({lat['chunks']}) p50 {lat['p50_ms']} ms, "
        f"p99 {lat['p99_ms']} ms; a failure line ({lat['failures']}) p50 {lat['failure_p50_ms']} ms, "
        f"p99 {lat['failure_p99_ms']} ms"
    )


if __name__ == "__main__":
    main()
