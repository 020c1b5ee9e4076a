#!/usr/bin/env python3
"""A hash list of ``run``'s output on corpus cases, to show a change to ``run`` changed nothing.

Usage:
    python benchmarks/run_hashes.py [CORPUS] [--cases 60] [--tree PATH] [--jobs 2] > hashes.txt
    diff before.txt after.txt

``output_hashes.py`` runs ``filter``; this runs each case's log through the command a wrapped
command goes through, as a whole process: ``streamfilter run -- cat LOG`` (the output filtered
live) and ``streamfilter run --budget-tokens 4000 --tee FILE -- cat LOG`` (decided at the end, what
an agent's hook runs; ``--tee`` gives the whole output a fixed name, which its refs and the last
line carry). It prints one line per run: the case, the form, the SHA-256 of stdout and the exit
status. The plain form's refs name an archive file made per run (``stdin-TIME-PID``): that name is
replaced by ``stdin-N`` before hashing. Each case and form gets a fresh state directory (no
baseline from another run). ``--tree`` runs the code of another checkout (e.g. main, in a
temporary worktree), with this Python; ``--cases N`` takes N cases spread over the sorted corpus
(0: all).

The live form decides pending lines when the command pauses 50 ms, so on a loaded machine its
output may differ from one run to the next, with the same code. ``--against TREE`` runs each
case's forms with both checkouts in turn, up to ``--repeat`` times, until an output of one is an
output of the other (``same``), and says ``DIFFERENT`` with the outputs seen when none is.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ARCHIVE = re.compile(rb"stdin-\d+-\d+")
WORK = Path(tempfile.gettempdir()) / "streamfilter-run-hashes"  # fixed: the --tee names are the same each time


FORMS = ("run", "budget")


def hash_one(tree: Path, log: Path, form: str) -> str:
    """``digest status`` of ``log``'s run in ``form`` with the code in ``tree``."""
    extra = ["--budget-tokens", "4000", "--tee", str(WORK / f"{log.stem}.log")] if form == "budget" else []
    state = WORK / "state" / f"{log.stem}-{form}"
    shutil.rmtree(state, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "XDG_STATE_HOME": str(state)}
    proc = subprocess.run(
        [sys.executable, "-m", "streamfilter", "run", *extra, "--", "cat", str(log)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        cwd=WORK,
        check=False,
    )
    shutil.rmtree(state, ignore_errors=True)
    return f"{hashlib.sha256(_ARCHIVE.sub(b'stdin-N', proc.stdout)).hexdigest()[:16]} {proc.returncode}"


def hash_case(tree: Path, log: Path) -> list[str]:
    """Run ``log``'s two forms with the code in ``tree``; one ``case form digest status`` line each."""
    return [f"{log.stem} {form} {hash_one(tree, log, form)}" for form in FORMS]


def compare_case(tree: Path, other: Path, log: Path, repeat: int) -> list[str]:
    """Run ``log``'s two forms with both trees, in turn, until an output of one is an output of the
    other, ``repeat`` times at most: ``case form same|DIFFERENT`` and the outputs seen."""
    lines = []
    for form in FORMS:
        seen: dict[Path, set[str]] = {other: set(), tree: set()}
        for _ in range(repeat):
            for where in (other, tree):
                seen[where].add(hash_one(where, log, form))
            if seen[other] & seen[tree]:
                break
        verdict = "same" if seen[other] & seen[tree] else "DIFFERENT"
        lines.append(f"{log.stem} {form} {verdict} {sorted(seen[other])} {sorted(seen[tree])}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--cases", type=int, default=60, help="cases spread over the corpus (0: all)")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout whose code runs (default: this one)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--against", help="compare with the code of this checkout (see --repeat)")
    parser.add_argument("--repeat", type=int, default=3, help="with --against: most runs of each tree per output")
    args = parser.parse_args()
    logs = sorted(meta.with_suffix(".log") for meta in Path(args.corpus).glob("*.json"))
    if args.cases and args.cases < len(logs):
        logs = [logs[i * len(logs) // args.cases] for i in range(args.cases)]
    WORK.mkdir(exist_ok=True)
    tree = Path(args.tree).resolve()
    with ThreadPoolExecutor(args.jobs) as pool:
        if args.against:
            other = Path(args.against).resolve()
            results = pool.map(lambda log: compare_case(tree, other, log, args.repeat), logs)
        else:
            results = pool.map(lambda log: hash_case(tree, log), logs)
        for lines in results:
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
