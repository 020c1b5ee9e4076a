#!/usr/bin/env python3
"""How much of each DROP run its summary names, over the corpus, computed in-process.

Usage:
    python benchmarks/summaries.py [CORPUS] [--query Q] [--jobs 2] [--show N]

Every ``CORPUS/*.log`` goes through the filter with the default settings (the default query
unless ``--query``), in 1 MiB pieces, and is rendered as the CLI's ``text`` output would be
(refs into the file, the source named once in a row: ``expand.TextRefs``). For each DROP
summary, the *named* lines are the sum of the counts of the shapes it names (``40× ...``,
the number before each ``×`` that starts a piece, and ``12 blank lines``); a run is *covered* when they are at least
80 % of its lines. Printed: DROP runs, the share covered, the mean named share, and the
total output bytes beside the input bytes. ``--show N`` prints N summaries from the
uncovered runs of the most lines (to see what is left).

The figures of the code in another checkout: run this file with that checkout's root
first on ``PYTHONPATH`` (``PYTHONPATH=/tmp/base python benchmarks/summaries.py``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if not os.environ.get("PYTHONPATH"):  # (a checkout named on PYTHONPATH is the one measured)
    sys.path.insert(0, str(ROOT))

from streamfilter.core.filter import FilterConfig, StreamFilter  # noqa: E402
from streamfilter.core.output import render  # noqa: E402
from streamfilter.live.expand import Ref, TextRefs  # noqa: E402

COVERED = 0.8  # share of a run's lines its named shapes must hold
_HEAD = re.compile(r"\[streamfilter: dropped [^(]*\((\d+) lines?, [^)]*\)(?:: (.*))?\]$")
# a named shape's count, at the start of a piece ("40× ..." and "12 blank lines")
_NAMED = re.compile(r"(?:^|; )(\d+)(?:× | blank lines?(?=;|$))")


def named_share(summary: str) -> tuple[int, int]:
    """``(lines, named lines)`` of a summary (its ref already taken off)."""
    m = _HEAD.match(summary)
    if m is None:
        raise ValueError(f"not a summary: {summary!r}")
    lines = int(m[1])
    return lines, min(lines, sum(int(n) for n in _NAMED.findall(m[2] or "")))


def measure(path: Path, query: str | None) -> dict[str, object]:
    """One log: its DROP runs as ``(lines, named lines, summary)``, its input and output bytes."""
    data = path.read_bytes()
    config = FilterConfig(query=query) if query else FilterConfig()
    sf = StreamFilter(config, source=path.name)
    runs = []
    for i in range(0, len(data), 1 << 20):
        runs += sf.feed(data[i : i + (1 << 20)])
    runs += sf.flush()
    source = str(path.resolve())
    text_refs = TextRefs()
    out = 0
    drops = []
    for r in runs:
        ref = text_refs(str(Ref(source, r.start_byte, r.end_byte, r.checksum))) if r.decision == "drop" else ""
        # (as the CLI writes it: the first ref's note too, where there is one)
        out += len(render(r, "text", "-", ref, **({"note": text_refs.note(ref)} if hasattr(text_refs, "note") else {})))
        if r.decision == "drop" and r.summary and not r.rest:
            drops.append((*named_share(r.summary), r.summary))
    return {"case": path.stem, "in": len(data), "out": out, "drops": drops}


def _measure(args: tuple[Path, str | None]) -> dict[str, object]:
    return measure(*args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--query", help="the filter's query (default: its default query)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show", type=int, default=0, help="print N uncovered summaries, the longest runs first")
    args = parser.parse_args()
    logs = sorted(args.corpus.glob("*.log"))
    with multiprocessing.Pool(args.jobs) as pool:
        rows = pool.map(_measure, [(p, args.query) for p in logs], chunksize=4)
    drops = [d for r in rows for d in r["drops"]]  # type: ignore[attr-defined]
    covered = sum(named >= COVERED * lines for lines, named, _ in drops)
    mean = sum(named / lines for lines, named, _ in drops) / max(1, len(drops))
    bytes_in = sum(int(r["in"]) for r in rows)  # type: ignore[call-overload]
    bytes_out = sum(int(r["out"]) for r in rows)  # type: ignore[call-overload]
    print(f"logs: {len(rows)}; DROP runs: {len(drops)}")
    print(f"covered (named shapes hold >= {COVERED:.0%} of the run's lines): {covered} = {covered / len(drops):.3f}")
    print(f"mean named share of a run's lines: {mean:.3f}")
    print(f"output bytes: {bytes_out} of {bytes_in} in ({bytes_out / bytes_in:.4f})")
    if args.show:
        left = sorted((d for d in drops if d[1] < COVERED * d[0]), key=lambda d: -d[0])
        for lines, named, summary in left[: args.show]:
            print(f"{named}/{lines}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
