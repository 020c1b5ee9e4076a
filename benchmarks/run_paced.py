#!/usr/bin/env python3
"""The CPU time of ``run`` on a command that prints a line at a time, over ``filter``'s on its bytes.

Usage:
    python benchmarks/run_paced.py [--lines 20000] [--pause 0.0002] [--rounds 3]

The command (Python, ``print(..., flush=True)`` then ``time.sleep(PAUSE)``) gives the pipe a read a
line; ``streamfilter run -- CMD`` filters it live, ``streamfilter filter FILE`` the same bytes from a
file. Each round runs both (alternating; the CPU time of the processes, user and system, from
``wait4``, the command's own subtracted from ``run``'s by running it alone too) and the medians are
printed with their ratio: the cost of live reads beyond the filtering itself. helper-29 measured
5.7 s of CPU for ``run`` where ``filter`` took 0.27 s (20,000 lines in 6 s): each read was a block.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SF = [sys.executable, "-m", "streamfilter"]
PACED = (
    "import sys, time\n"
    "for i in range(int(sys.argv[1])):\n"
    "    print(f'tick {i} processing batch ok', flush=True)\n"
    "    time.sleep(float(sys.argv[2]))\n"
)


def cpu(argv: list[str], env: dict[str, str], out: Path) -> float:
    """CPU seconds (user + system) of ``argv`` and its children, stdout to ``out``."""
    with out.open("wb") as handle:
        proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv} exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--pause", type=float, default=0.0002)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "XDG_STATE_HOME": str(folder / "state")}
        command = [sys.executable, "-c", PACED, str(args.lines), str(args.pause)]
        log = folder / "paced.log"
        subprocess.run(command, stdout=log.open("wb"), check=True)
        alone, run, filtered = [], [], []
        for _ in range(args.rounds):
            alone.append(cpu(command, env, folder / "alone.out"))
            run.append(cpu([*SF, "run", "--", *command], env, folder / "run.out") - alone[-1])
            filtered.append(cpu([*SF, "filter", str(log)], env, folder / "filter.out"))
    r, f = statistics.median(run), statistics.median(filtered)
    print(
        f"{args.lines} lines, a read each ({args.pause * 1000:g} ms apart), {args.rounds} rounds, CPU seconds (median):"
    )
    print(f"  run (the command's own {statistics.median(alone):.2f} s taken off): {r:.2f}")
    print(f"  filter of the same bytes from a file: {f:.2f}")
    print(f"  ratio: {r / f:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
