#!/usr/bin/env python3
"""Does ``streamfilter follow`` keep up with a file growing at R MB/s? Its lag, second by second.

Usage:
    python benchmarks/follow_rate.py [--mbps 5,50] [--seconds 10]

For each rate, a writer appends lines from a 20 MB log of ``../shared/bench/gen_log.py`` (the
throughput benchmark's, regenerated if missing) at R MB/s for ``--seconds``, and every 100 ms a
marker line ``FATAL lag-probe N`` (kept by ``--protect``, every one of them). A reader takes the
follower's stdout and notes when each marker arrives. Printed per rate: the marker lag (arrival
minus append) in the first and the last second of writing, the largest, and how long after the
writer stopped the last marker came: a lag that grows with time means the follower falls behind.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from latency import start_follower  # noqa: E402
from throughput import ensure_log  # noqa: E402


def measure(mbps: float, seconds: float, source: bytes) -> tuple[float, float, float, float, int]:
    """(lag in the first second, lag in the last second, max lag, drain seconds, markers lost) in seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "growing.log"
        log.write_bytes(b"")
        proc, arrived = start_follower(log, b"FATAL lag-probe ", "--protect", "^FATAL lag-probe ")
        time.sleep(1.5)
        written: dict[int, float] = {}
        step = 0.1
        chunk = int(mbps * 1e6 * step)
        pos = 0
        with log.open("ab", buffering=0) as out:
            start = time.monotonic()
            for probe in range(int(seconds / step)):
                end = source.rfind(b"\n", pos, pos + chunk) + 1 or pos + chunk
                out.write(source[pos:end])
                pos = end if end < len(source) - chunk else 0
                out.write(b"FATAL lag-probe %d\n" % probe)
                written[probe] = time.monotonic()
                time.sleep(max(0.0, start + (probe + 1) * step - time.monotonic()))
        stopped = time.monotonic()
        deadline = stopped + 120
        while len(arrived) < len(written) and time.monotonic() < deadline:
            time.sleep(0.05)
        drained = max(arrived.values(), default=stopped) - stopped
        proc.terminate()
        proc.wait(30)
    lags = {p: arrived[p] - written[p] for p in written if p in arrived}
    per_second = int(1 / step)
    first = [lags[p] for p in range(per_second) if p in lags]
    last = [lags[p] for p in range(len(written) - per_second, len(written)) if p in lags]
    return (
        max(first, default=float("nan")),
        max(last, default=float("nan")),
        max(lags.values(), default=float("nan")),
        drained,
        len(written) - len(lags),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mbps", default="5,50", help="growth rates to try, MB/s, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the file grows")
    args = parser.parse_args()
    source = ensure_log(20, ROOT / "benchmarks" / "data").read_bytes()
    print("| growth MB/s | lag, first second | lag, last second | max lag | last probe after writer stopped | lost |")
    print("|---|---|---|---|---|---|")
    for rate in (float(x) for x in args.mbps.split(",")):
        first, last, worst, drained, lost = measure(rate, args.seconds, source)
        lags = f"{first * 1000:.0f} ms | {last * 1000:.0f} ms | {worst * 1000:.0f} ms"
        print(f"| {rate:g} | {lags} | {drained:.1f} s | {lost} |")
    print("rerun: python benchmarks/follow_rate.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
