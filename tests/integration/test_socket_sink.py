"""A unix-socket sink with a real daemon subprocess, real files and a real subscriber."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path

from tests.integration.test_daemon import connect_unix, runs, start
from tests.integration.test_nats import free_port, scrape
from tests.live.proc import Live


def distinct_word(n: int) -> bytes:
    """A word of consonants for ``n``: failure lines that differ in words, not in numbers (a
    number's shape repeats, and repeated shapes are dropped), so most of them are kept."""
    word = b""
    while True:
        word += b"bcdfghjklmnpqrstvwxz"[n % 20 : n % 20 + 1]
        n //= 20
        if not n:
            return word


def subscribe(live: Live, sub: Path, size: int, pause: float) -> tuple[socket.socket, bytearray, threading.Thread]:
    """A subscriber of the unix sink ``sub``, connected, that a thread reads ``size`` bytes at a time
    into the bytearray, waiting ``pause`` seconds after each read."""
    reader = connect_unix(sub)
    live.log_event("subscriber.connected")
    received = bytearray()

    def read() -> None:
        with contextlib.suppress(OSError):  # (the test closed the socket under it: reading is over)
            while chunk := reader.recv(size):
                received.extend(chunk)
                time.sleep(pause)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return reader, received, thread


def start_one_file(tmp: Path, protect: str, sink: str) -> tuple[Live, Path, Path]:
    """A daemon whose one file source ``app.log`` (every line matching ``protect`` kept) writes to
    the unix sink ``sub.sock`` (``sink``: its further TOML lines); its file and socket."""
    sub, log = tmp / "sub.sock", tmp / "app.log"
    log.touch()
    live = start(
        tmp,
        f'[defaults]\nprotect = ["{protect}"]\n[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\n'
        f'sinks = ["sub"]\n[[sink]]\nname = "sub"\ntype = "unix"\npath = "{sub}"\n{sink}',
    )
    return live, log, sub


def test_a_subscriber_reading_as_fast_as_it_can_gets_every_event_of_a_burst(tmp_path: Path) -> None:
    # a user's find: with queue_events = 64, a reader in a tight recv() loop was dropped as too
    # slow, a burst of sends filling its queue before its writer task had a turn
    out, sub = tmp_path / "out.jsonl", tmp_path / "sub.sock"
    logs = [tmp_path / f"app{i}.log" for i in range(3)]
    sources = ""
    for i, log in enumerate(logs):
        log.touch()
        sources += f'[[source]]\nname = "app{i}"\ntype = "file"\npath = "{log}"\nsinks = ["out", "sub"]\n'
    live = start(
        tmp_path,
        f'[defaults]\nquery = "failure"\n{sources}'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
        f'[[sink]]\nname = "sub"\ntype = "unix"\npath = "{sub}"\nformat = "jsonl"\nqueue_events = 16\n',
    )
    reader, received, thread = subscribe(live, sub, 1 << 16, 0.0)
    lines, block = 50_000, 5_000
    files = [log.open("ab", buffering=0) for log in logs]
    for first in range(0, lines, block):  # the three files appended to in turn, at full speed
        for n, file in enumerate(files):
            file.write(
                b"".join(
                    b"ERROR failure in %s of app%d\n" % (distinct_word(i), n)
                    if i % 10 == 0
                    else b"INFO step %d of app%d done\n" % (i, n)
                    for i in range(first, first + block)
                )
            )
    for file in files:
        file.close()

    def all_written() -> bool:  # every line of every file is in the file sink's runs
        events = live.events(out)
        return all(sum(e["lines"] for e in runs(events, f"app{i}")) == lines for i in range(3))

    live.wait_for(all_written, 60, "every line in the file sink")
    expected = out.read_bytes()
    live.wait_for(lambda: len(received) >= len(expected) or not thread.is_alive(), 30, "the subscriber's events")
    assert not [e for e in live.logs() if e.get("event") == "subscriber.dropped"]
    assert b"too slow" not in received
    assert sorted(received.splitlines()) == sorted(expected.splitlines())  # every event, none twice
    assert len(runs([json.loads(line) for line in expected.splitlines()])) > 5000  # (a burst of them)
    assert live.stop() == 0
    thread.join(10)
    reader.close()


def test_a_slow_subscriber_is_said_and_counted_as_backpressure(tmp_path: Path) -> None:
    """helper-50: a subscriber reading 4 KiB every 10 ms slowed the sources, and neither the log nor
    the metrics said so (only the stdout sink reported its waits)."""
    port = free_port()
    live, log, sub = start_one_file(
        tmp_path, ".", f'format = "jsonl"\nqueue_events = 1\n[metrics]\naddress = "127.0.0.1:{port}"\n'
    )
    reader, _, _ = subscribe(live, sub, 16384, 0.01)
    with log.open("ab") as file:  # (appended in pieces: each read of the file is a few events)
        for first in range(0, 100_000, 5_000):
            file.write(b"".join(b"line %d of a burst\n" % i for i in range(first, first + 5_000)))
            file.flush()
    slowed = live.log_event("reading.slowed")
    assert slowed["sink"] == "sub" and slowed["waited_seconds"] > 0
    samples = {
        line.split(" ")[0]: float(line.split(" ")[1]) for line in scrape(port).splitlines() if line and line[0] != "#"
    }
    assert samples['streamfilter_backpressure_pauses_total{reason="sink",where="sub"}'] >= 1
    assert samples['streamfilter_backpressure_seconds_total{reason="sink",where="sub"}'] > 0
    assert not [e for e in live.logs() if e.get("event") == "subscriber.dropped"]
    assert live.stop() == 0
    reader.close()


def test_a_subscriber_that_reads_slowly_but_steadily_gets_every_event(tmp_path: Path) -> None:
    """helper-52: a subscriber reading 40 KB/s, a piece every 0.1 s, was dropped as "not reading" a
    second after its queue filled: one 90 KB event took it 2 s. It is waited for while it takes bytes."""
    live, log, sub = start_one_file(tmp_path, ".", 'format = "jsonl"\nqueue_events = 1\n')
    # 160 KB/s, a piece every 0.05 s: each 290 KB event takes it 1.8 s, past the socket's buffer
    reader, received, thread = subscribe(live, sub, 8192, 0.05)
    for first in range(0, 48_000, 12_000):  # (each read of the file is an event: the queue fills)
        with log.open("ab") as file:
            file.write(b"".join(b"line %06d of a burst\n" % i for i in range(first, first + 12_000)))
        time.sleep(0.2)

    def lines_received() -> int:
        events = [json.loads(line) for line in bytes(received).splitlines() if line.endswith(b"}")]
        return sum(e["lines"] for e in events if e.get("event") == "keep")

    live.wait_for(lambda: lines_received() >= 48_000, 30, "every line at the slow subscriber")
    assert not [e for e in live.logs() if e.get("event") == "subscriber.dropped"]
    assert live.stop() == 0
    reader.close()
    thread.join(10)


def peak_rss_mib(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024


def test_a_slow_subscriber_s_queue_is_bounded_in_bytes_too(tmp_path: Path) -> None:
    """helper-94: a queue of 1024 sends of up to a MiB each held 120 MB for a subscriber reading 160
    KB/s before its sources were slowed (and none was, for 96 MB). The queue holds ``QUEUE_BYTES``."""
    live, log, sub = start_one_file(tmp_path, "seq", 'format = "text"\n')
    reader, received, thread = subscribe(live, sub, 65536, 0.01)  # about 6 MB/s
    before = peak_rss_mib(live.proc.pid)
    line = b"seq %06d " + b"x" * 8180 + b"\n"  # 8 KiB lines, each kept: a read of the file is one send
    total = 96 << 20
    with log.open("ab") as file:
        for n in range(total // len(line % 0)):
            file.write(line % n)
    slowed = live.log_event("reading.slowed", 60)
    assert slowed["sink"] == "sub"
    live.wait_for(lambda: len(received) >= total, 60, "every byte at the slow subscriber")
    grew = peak_rss_mib(live.proc.pid) - before
    assert not [e for e in live.logs() if e.get("event") == "subscriber.dropped"]
    assert live.stop() == 0
    reader.close()
    thread.join(10)
    assert grew < 60, grew  # (QUEUE_BYTES, 16 MiB, with the reads' and the filter's own)
