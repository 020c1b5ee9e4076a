#!/usr/bin/env python3
"""A hash list of the CLI's output on every corpus case, to show a refactor changed nothing.

Usage:
    python benchmarks/output_hashes.py [CORPUS] [--jobs 2] > hashes.txt
    diff before.txt after.txt

For each case it runs ``streamfilter filter`` four times through the installed command
(text and ``--format jsonl --explain``; the default query and the case's own query) and
prints one line per run: the case, the form, the SHA-256 of stdout and the exit status.
Two lists are equal exactly when every output is byte-identical.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMS = ("text", "jsonl")


def hash_case(args: tuple[str, Path, str]) -> list[str]:
    """Hash the four outputs of one case; returns one ``case form digest status`` line each."""
    command, log, query = args
    lines = []
    for form in FORMS:
        for name, extra in (("default", []), ("own", ["--query", query])):
            argv = [command, "filter", "--format", form, *extra, str(log)]
            if form == "jsonl":
                argv.insert(4, "--explain")
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False)
            digest = hashlib.sha256(proc.stdout).hexdigest()[:16]
            lines.append(f"{log.stem} {form}/{name} {digest} {proc.returncode}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--command", default=str(Path(sys.executable).parent / "streamfilter"))
    args = parser.parse_args()
    cases = []
    for meta in sorted(Path(args.corpus).glob("*.json")):
        query = json.loads(meta.read_text())["query"]
        cases.append((args.command, meta.with_suffix(".log"), query))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for lines in pool.map(hash_case, cases):
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
