#!/usr/bin/env python3
"""What an agent's hook adds to a command: bare, a hook that leaves it alone, a hook that wraps it.

Usage:
    python benchmarks/hook_latency.py [--runs 30]

Each row times, as whole processes, what an agent runs for one command (medians and 90th
percentiles over ``--runs`` runs, the rows interleaved so the machine's noise falls on all):

* ``bare``: ``sh -c CMD`` alone;
* ``hook, left alone``: ``streamfilter hook claude`` fed Claude Code's JSON for CMD (it answers
  nothing), then ``sh -c CMD``;
* ``hook, wrapped``: the hook fed a command it wraps, then the rewritten command
  ``streamfilter run --budget-tokens 4000 -- CMD``.

The added time is each row's median minus the bare median of the same command; the CPU time
(user and system, of the processes) moves less with the machine's load than the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STREAMFILTER = str(Path(sys.executable).parent / "streamfilter")


def _payload(command: str) -> bytes:
    tool_input = {"command": command, "description": "benchmark"}
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": tool_input}).encode()


def _time(steps: list[tuple[list[str], bytes | None]], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, of the child processes) of ``steps``, in seconds."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for argv, stdin in steps:
        subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - start
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    state = tempfile.mkdtemp()
    env = {**os.environ, "XDG_STATE_HOME": state, "HOME": state}
    # as installed: Python writes and reads its bytecode cache (a sandbox may turn it off)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    hook = [STREAMFILTER, "hook", "claude"]
    wrapped = [STREAMFILTER, "run", "--budget-tokens", "4000", "--", "sh", "-c"]
    rows = {
        "true, bare": [(["sh", "-c", "true"], None)],
        "ls, bare": [(["sh", "-c", "ls"], None)],
        "ls, hook, left alone": [(hook, _payload("ls")), (["sh", "-c", "ls"], None)],
        "make -v, bare": [(["sh", "-c", "make -v"], None)],
        "make -v, hook, wrapped": [(hook, _payload("make -v")), ([*wrapped, "make -v"], None)],
    }
    for steps in rows.values():  # a first run of each writes the bytecode caches
        _time(steps, env)
    walls: dict[str, list[float]] = {name: [] for name in rows}
    cpus: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, steps in rows.items():
            wall, cpu = _time(steps, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print("| what | wall median (ms) | wall 90th pct (ms) | added wall (ms) | CPU median (ms) | added CPU (ms) |")
    print("|---|---|---|---|---|---|")
    for name in rows:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        p90 = statistics.quantiles(walls[name], n=10)[-1]
        bare = f"{name.split(',')[0]}, bare"
        added = ""
        if "hook" in name:
            wall_added = (wall - statistics.median(walls[bare])) * 1000
            cpu_added = (cpu - statistics.median(cpus[bare])) * 1000
            added = f"{wall_added:.0f} | {cpu * 1000:.0f} | {cpu_added:.0f}"
        else:
            added = f" | {cpu * 1000:.0f} | "
        print(f"| {name} | {wall * 1000:.0f} | {p90 * 1000:.0f} | {added} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
