#!/usr/bin/env python3
"""The CPU time of a wrapped command, this checkout against another, whole processes in turn.

Usage:
    python benchmarks/run_cpu.py --against PATH [--runs 40] [--command 'make -v']

Runs ``streamfilter run --budget-tokens 4000 -- sh -c COMMAND`` (what an agent's hook runs) with
the code of this checkout and of ``--against`` (e.g. main in a temporary worktree), alternating,
``--runs`` times each after two warm-up rounds (the bytecode caches), and prints each one's median
CPU time (user and system, of the processes) and the difference. Alternating puts the machine's
noise on both; the CPU time moves less with the load than the wall time (``hook_latency.py``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other checkout")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--command", default="make -v")
    args = parser.parse_args()
    state = tempfile.mkdtemp()
    trees = {"against": str(Path(args.against).resolve()), "this": str(ROOT)}
    argv = [sys.executable, "-m", "streamfilter", "run", "--budget-tokens", "4000", "--", "sh", "-c", args.command]
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    for i in range(args.runs + 2):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": tree, "XDG_STATE_HOME": state, "HOME": state}
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(argv, capture_output=True, env=env, cwd=state, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i >= 2:
                used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpu[name].append(used * 1000)
    for name, values in cpu.items():
        q = statistics.quantiles(values, n=4)
        median = statistics.median(values)
        print(f"{name} ({trees[name]}): CPU median {median:.1f} ms (quartiles {q[0]:.1f} / {q[2]:.1f})")
    added = statistics.median(cpu["this"]) - statistics.median(cpu["against"])
    print(f"added CPU: {added:+.1f} ms ({args.runs} runs each; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
