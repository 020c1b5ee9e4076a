#!/usr/bin/env python3
"""Latency of ``streamfilter follow``: a writer appends a line every millisecond; how late is it on stdout?

Usage:
    python benchmarks/latency.py [--seconds 5] [--interval-ms 1] [--idle-seconds 10]

The writer appends ``ERROR tick <seq>`` lines (all kept: ``--head`` covers them) to a followed
file every ``--interval-ms``; a reader thread takes the follower's stdout and notes when each
line arrives. Latency is arrival minus append (both ``time.monotonic()`` in this process); p50,
p99 and max are printed. Then nothing is written for ``--idle-seconds`` and the follower's CPU
time over that span (``/proc/PID/stat`` utime+stime) is printed as a share of one core.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_follower(log: Path, marker: bytes, *options: str) -> tuple[subprocess.Popen[bytes], dict[int, float]]:
    """``streamfilter follow LOG OPTIONS`` started; a reader thread notes when each output line
    ``MARKER<n> ...`` arrives: ``{n: time.monotonic()}``, filled as they come."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "follow", str(log), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    arrived: dict[int, float] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(marker):
                arrived[int(line[len(marker) :].split()[0])] = time.monotonic()

    threading.Thread(target=read, daemon=True).start()
    return proc, arrived


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the writer writes")
    parser.add_argument("--interval-ms", type=float, default=1.0, help="pause between appended lines")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="quiet span for the idle CPU figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "app.log"
        log.write_bytes(b"")
        proc, arrived = start_follower(log, b"ERROR tick ", "-q", "tick", "--head", "1000000000")
        time.sleep(1.5)  # start-up
        written: dict[int, float] = {}
        count = int(args.seconds * 1000 / args.interval_ms)
        with log.open("ab", buffering=0) as out:
            start = time.monotonic()
            for seq in range(count):
                target = start + seq * args.interval_ms / 1000
                while (now := time.monotonic()) < target:
                    time.sleep(max(0.0, min(target - now, 0.0005)))
                out.write(b"ERROR tick %d\n" % seq)
                written[seq] = time.monotonic()
        time.sleep(1.0)
        before = cpu_seconds(proc.pid)
        time.sleep(args.idle_seconds)
        idle = (cpu_seconds(proc.pid) - before) / args.idle_seconds
        proc.terminate()
        proc.wait(30)
    late = np.array([arrived[s] - written[s] for s in written if s in arrived]) * 1000
    missing = len(written) - late.shape[0]
    print(f"lines appended: {len(written)} (one every {args.interval_ms} ms), arrived: {late.shape[0]}")
    print(f"missing: {missing}")
    print(
        f"append -> KEEP line on stdout: p50 {np.percentile(late, 50):.1f} ms, "
        f"p99 {np.percentile(late, 99):.1f} ms, max {late.max():.1f} ms"
    )
    print(f"idle CPU over {args.idle_seconds:.0f} s: {idle * 100:.2f} % of one core")
    print("rerun: python benchmarks/latency.py " + " ".join(sys.argv[1:]))
    return 0 if missing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
