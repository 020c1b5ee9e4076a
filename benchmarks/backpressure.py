#!/usr/bin/env python3
"""Peak memory of ``streamfilter follow`` when its output is read far slower than its input grows.

Usage:
    python benchmarks/backpressure.py [--lines 10000,1000000]

For each size, a log of that many distinct lines (all kept: ``--head`` covers them, so the output
is as large as the input) is appended to a followed file at once (the input grows at disk speed),
while the reader of the follower's stdout drains it at ``--drain-mbps`` (a slow sink). The
follower must stop reading the file while its stdout is full (backpressure) instead of buffering:
its peak RSS (``ru_maxrss`` from ``wait4``) should not grow with the size. Also printed: whether
every line arrived, once and in order.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(lines: int, drain_mbps: float) -> tuple[float, bool, float]:
    """(peak RSS in MiB, every line arrived in order, seconds) for a burst of ``lines`` lines."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "burst.log"
        log.write_bytes(b"")
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamfilter", "follow", str(log), "--head", str(10**12)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        time.sleep(1.5)
        start = time.monotonic()
        payload = b"".join(b"L%08d commit complete txn=%08x epoch=0x2507693\n" % (i, i * 7919) for i in range(lines))
        with log.open("ab") as out:
            out.write(payload)
        got = bytearray()
        while len(got) < len(payload):
            chunk = proc.stdout.read1(1 << 16)  # type: ignore[attr-defined]
            if not chunk:
                break
            got += chunk
            time.sleep(len(chunk) / (drain_mbps * 1e6))
        proc.terminate()
        got += proc.stdout.read()
        _, _, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
    numbers = [int(line[1:9]) for line in bytes(got).splitlines() if line.startswith(b"L")]
    return usage.ru_maxrss / 1024, numbers == list(range(lines)), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", default="10000,1000000", help="burst sizes, comma-separated")
    parser.add_argument("--drain-mbps", type=float, default=5.0, help="how fast stdout is read (MB/s)")
    args = parser.parse_args()
    print("| burst lines | input MB | peak RSS MiB | all lines, in order | seconds |")
    print("|---|---|---|---|---|")
    for lines in (int(x) for x in args.lines.split(",")):
        rss, whole, seconds = measure(lines, args.drain_mbps)
        print(f"| {lines} | {55 * lines / 1e6:.1f} | {rss:.0f} | {whole} | {seconds:.1f} |")
    print("rerun: python benchmarks/backpressure.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
