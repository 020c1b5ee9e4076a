#!/usr/bin/env python3
"""Throughput and peak memory of ``streamfilter filter`` beside ``grep -i -C3 error``, same file, same run.

Usage:
    python benchmarks/throughput.py [--sizes 200] [--repeat 1] [--data benchmarks/data]

``streamfilter filter --no-prior`` runs too, so the learned prior's cost is an A/B of the same run:
the commands alternate, ``--repeat`` rounds, and each figure is the median of its rounds. So does
``streamfilter run -- cat LOG`` (the same bytes as a command's live output, read from its pipe):
its time over ``filter``'s (fed 64 KiB a read, it took 1.7 times filter's time on 20 MB, helper-48).

``streamfilter filter --budget-tokens 4000`` (what an agent's hook runs: two passes over the input)
runs beside the plain filter on a log of short lines too (``seq``'s numbers, the same size, 20 MB
at most): the ratio of their times. A window's trace once compared every window with every line
of a batch, so 10,000-window batches of short lines made the budget 4.4 times the plain filter's
time (3 million lines: 15.5 s against 3.5 s; 1.05 after the fix). Its peak memory beside the
plain filter's, on a log whose failure is one line of 50 MB (the size at most): per-byte arrays of
the line had taken 1.5 GB against the plain filter's 0.22 GB (helper-67). And the plain filter's
peak memory on the short lines over its peak on the bench log: a read of 1 MiB is a block of
150,000 such lines (a million blank ones), whose per-line arrays took 650 MB before blocks were
cut at ``lines.MAX_BLOCK_LINES`` (helper-69). And its peak memory on one progress bar redrawn by
carriage returns with no newline (the size, 100 MB at most) over its peak on the bench log: the
line was held whole, 406 MiB for 64 MB, before a line past ``filter.HELD_LINE_BYTES`` was let out
in pieces.

For each size (MB, 10**6 bytes) a log is generated once with ``../shared/bench/gen_log.py``
(seeded, so the same file every time) and kept under ``--data`` (git-ignored). Each command
runs as its own process, writing to a file; MB/s is input bytes / wall seconds, peak RSS is
the child's ``ru_maxrss`` from ``wait4``. The ratio is the filter's MB/s over grep's, so a
noisy shared machine slows both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT.parent / "shared" / "bench" / "gen_log.py"


def measure(argv: list[str], out_path: str) -> tuple[float, float]:
    """Run ``argv`` with stdout to ``out_path``; return (wall seconds, peak RSS in MiB)."""
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # grep exits 1 when nothing matched
        raise RuntimeError(f"{argv[0]} exited {code}")
    return seconds, usage.ru_maxrss / 1024


def ensure_log(size_mb: int, data_dir: Path) -> Path:
    path = data_dir / f"bench-{size_mb}MB.log"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(GEN), str(size_mb), str(path)], check=True)
    return path


def ensure_short_lines(size_mb: int, data_dir: Path) -> Path:
    """A log of ``size_mb`` MB of numbers, one a line (``seq 1 N``), kept under ``data_dir``."""
    path = data_dir / f"short-lines-{size_mb}MB.log"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            i, size = 1, 0
            while size < size_mb * 10**6:
                chunk = "".join(f"{n}\n" for n in range(i, i + 100_000)).encode()
                out.write(chunk)
                i, size = i + 100_000, size + len(chunk)
    return path


def ensure_long_line(size_mb: int, data_dir: Path) -> Path:
    """A log whose failure is one line of ``size_mb`` MB (a traceback's message), between passing
    lines, kept under ``data_dir``."""
    path = data_dir / f"long-line-{size_mb}MB.log"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        words = b"abc 12 xyz, error "
        with open(path, "wb") as out:
            out.write(b"".join(b"test_%d PASSED\n" % i for i in range(100)))
            out.write(b'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\nValueError: ')
            out.write(words * (size_mb * 10**6 // len(words)) + b"\n")
            out.write(b"".join(b"after %d\n" % i for i in range(20)))
    return path


def ensure_progress_line(size_mb: int, data_dir: Path) -> Path:
    """A log that is one progress bar of ``size_mb`` MB redrawn by carriage returns, with no line
    end (a download's), kept under ``data_dir``."""
    path = data_dir / f"progress-line-{size_mb}MB.log"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        frames = b"".join(b"\rDownloading %3d%%" % (i % 100) for i in range(100))
        with open(path, "wb") as out:
            for _ in range(size_mb * 10**6 // len(frames)):
                out.write(frames)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200", help="comma-separated sizes in MB (default 200)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every command; medians are reported")
    parser.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data")
    args = parser.parse_args()
    streamfilter = [sys.executable, "-m", "streamfilter", "filter"]
    rows = []
    budget_ratio: dict[int, float] = {}  # short lines: --budget-tokens 4000's time over the plain filter's
    short_rss: dict[int, float] = {}  # short lines: the plain filter's peak RSS over its peak on the bench log
    long_rss: dict[int, float] = {}  # one long line: --budget-tokens 4000's peak RSS over the plain filter's
    progress_rss: dict[int, float] = {}  # one progress line: the plain filter's peak RSS over its peak on the bench log
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        for size in (int(s) for s in args.sizes.split(",")):
            log = ensure_log(size, args.data)
            mb = log.stat().st_size / 1e6
            # run reads CMD's pipe, 64 KiB a read, as live output (no second process): the same bytes
            wrapped = ["env", f"XDG_STATE_HOME={tmp}", sys.executable, "-m", "streamfilter", "run", "--no-baseline"]
            commands = (
                ("grep -i -C3 error", ["grep", "-i", "-C3", "error", str(log)]),
                ("streamfilter filter", [*streamfilter, str(log)]),
                ("filter --no-prior", [*streamfilter, "--no-prior", str(log)]),
                ("run -- cat", [*wrapped, "--", "cat", str(log)]),
            )
            times: dict[str, list[tuple[float, float, int]]] = {name: [] for name, _ in commands}
            for _ in range(args.repeat):
                for name, argv in commands:
                    seconds, rss = measure(argv, out)
                    times[name].append((seconds, rss, os.path.getsize(out)))
            for name, _ in commands:
                seconds = statistics.median(t[0] for t in times[name])
                rows.append((size, name, mb / seconds, max(t[1] for t in times[name]), times[name][-1][2]))
            short = ensure_short_lines(min(size, 20), args.data)
            budget = {
                "plain": [*streamfilter, str(short)],
                "budget": [*streamfilter, "--budget-tokens", "4000", str(short)],
            }
            spent: dict[str, list[float]] = {name: [] for name in budget}
            short_peak: list[float] = []
            for _ in range(args.repeat):
                for name, argv in budget.items():
                    seconds, peak = measure(argv, out)
                    spent[name].append(seconds)
                    if name == "plain":
                        short_peak.append(peak)
            short_rss[size] = max(short_peak) / max(t[1] for t in times["streamfilter filter"])
            budget_ratio[size] = statistics.median(spent["budget"]) / statistics.median(spent["plain"])
            long = ensure_long_line(min(size, 50), args.data)
            plain_rss = measure([*streamfilter, str(long)], out)[1]
            long_rss[size] = measure([*streamfilter, "--budget-tokens", "4000", str(long)], out)[1] / plain_rss
            progress = ensure_progress_line(min(size, 100), args.data)
            progress_rss[size] = measure([*streamfilter, str(progress)], out)[1] / max(
                t[1] for t in times["streamfilter filter"]
            )
    print(f"command: python benchmarks/throughput.py --sizes {args.sizes} --repeat {args.repeat}")
    print(f"{'input':>8} {'tool':22} {'MB/s':>8} {'peak RSS MiB':>13} {'ratio to grep':>14} {'output bytes':>13}")
    grep_speed = {size: speed for size, name, speed, _, _ in rows if name.startswith("grep")}
    for size, name, speed, rss, out_bytes in rows:
        print(f"{size:>6}MB {name:22} {speed:8.1f} {rss:13.1f} {speed / grep_speed[size]:14.3f} {out_bytes:13d}")
    for size in grep_speed:
        speeds = {name: speed for s, name, speed, _, _ in rows if s == size}
        cost = 1 - speeds["streamfilter filter"] / speeds["filter --no-prior"]
        print(f"{size:>6}MB the prior costs {cost:.1%} of throughput (medians of {args.repeat} alternating rounds)")
        run_ratio = speeds["streamfilter filter"] / speeds["run -- cat"]
        print(f"{size:>6}MB run -- cat takes {run_ratio:.2f} times filter's time (its archive is capped at 128 MiB)")
        ratio = budget_ratio[size]
        print(f"{size:>6}MB short lines: --budget-tokens 4000 takes {ratio:.2f} times the plain filter's time")
        peak = short_rss[size]
        print(f"{size:>6}MB short lines: the filter's peak RSS is {peak:.2f} times its peak on the bench log")
        line, rss = min(size, 50), long_rss[size]
        print(f"{size:>6}MB one {line} MB failure line: --budget-tokens 4000's peak RSS is {rss:.2f} times filter's")
        bar, rss = min(size, 100), progress_rss[size]
        print(f"{size:>6}MB one {bar} MB progress line: the filter's peak RSS is {rss:.2f} times its bench log peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
