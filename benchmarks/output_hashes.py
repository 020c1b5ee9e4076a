#!/usr/bin/env python3
"""A hash list of the command line's output on every corpus case, to show a refactor changed nothing.

Usage:
    python benchmarks/output_hashes.py [CORPUS] [--jobs 2] [--subprocess] > hashes.txt
    diff before.txt after.txt

For each case it runs ``streamfilter filter`` four times (text and ``--format jsonl --explain``;
the default query and the case's own query) and prints one line per run: the case, the form,
the SHA-256 of stdout and the exit status. Two lists are equal exactly when every output is
byte-identical. By default the command line's ``main`` runs in worker processes (about ten times
faster than a process per run); ``--subprocess`` runs the installed command instead.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import io
import json
import multiprocessing
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FORMS = ("text", "jsonl")


def _argvs(log: Path, query: str) -> list[tuple[str, list[str]]]:
    out = []
    for form in FORMS:
        for name, extra in (("default", []), ("own", ["--query", query])):
            explain = ["--explain"] if form == "jsonl" else []
            out.append((f"{form}/{name}", ["filter", "--format", form, *explain, *extra, str(log)]))
    return out


def _cli_main() -> Callable[[list[str]], int]:
    try:  # the command line as a package (streamfilter/cli/main.py)
        main = importlib.import_module("streamfilter.cli.main").main
    except ModuleNotFoundError:  # before it, one module
        main = importlib.import_module("streamfilter.cli").main
    assert callable(main)
    return main  # type: ignore[no-any-return]


def _in_process(argv: list[str]) -> tuple[bytes, int]:
    buffer = io.BytesIO()
    stdout = sys.stdout
    sys.stdout = io.TextIOWrapper(buffer, write_through=True)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            status = _cli_main()(argv)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # (filter takes them: the pool's
            signal.signal(signum, signal.SIG_DFL)  # SIGTERM at its end must stop this worker)
        sys.stdout.flush()
        return buffer.getvalue(), status
    finally:
        sys.stdout = stdout


def hash_case(args: tuple[str | None, Path, str]) -> list[str]:
    """Hash the four outputs of one case; returns one ``case form digest status`` line each."""
    command, log, query = args
    lines = []
    for form, argv in _argvs(log, query):
        if command is None:
            data, status = _in_process(argv)
        else:
            proc = subprocess.run([command, *argv], stdin=subprocess.DEVNULL, capture_output=True, check=False)
            data, status = proc.stdout, proc.returncode
        lines.append(f"{log.stem} {form} {hashlib.sha256(data).hexdigest()[:16]} {status}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--subprocess", action="store_true", help="run the installed command, a process per run")
    args = parser.parse_args()
    command = str(Path(sys.executable).parent / "streamfilter") if args.subprocess else None
    cases = []
    for meta in sorted(Path(args.corpus).glob("*.json")):
        query = json.loads(meta.read_text())["query"]
        cases.append((command, meta.with_suffix(".log"), query))
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for lines in pool.imap(hash_case, cases):
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
