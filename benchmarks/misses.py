#!/usr/bin/env python3
"""Miss analysis: for each corpus case with recall < 1, the labelled lines that were dropped and why.

Usage:
    python benchmarks/misses.py [CORPUS] [--query Q] [--cases N] [--lines N] [--kind KIND]

For every case whose labelled lines are not all kept (worst recall first), prints the case, its
kind, recall and output ratio, then each dropped labelled line (up to ``--lines``) with the
decision trace of its window: BM25 score, the cut in force, and the reason it was dropped
(``below-cut``: it has a query term but scored under the cut; ``no-term``: no query term and no
failure signature). The filter runs in-process with ``explain`` on, exactly as the CLI would.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamfilter.core.filter import FilterConfig, StreamFilter  # noqa: E402
from streamfilter.core.normalize import strip_ansi  # noqa: E402
from streamfilter.core.output import render  # noqa: E402


def analyse(meta_path: Path, query: str | None) -> dict[str, object] | None:
    meta = json.loads(meta_path.read_text())
    data = meta_path.with_suffix(".log").read_bytes()
    config = replace(FilterConfig(query=query or meta["query"]), explain=True)
    sf = StreamFilter(config, source=meta_path.stem)
    runs = sf.feed(data) + sf.flush()
    kept = {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    choices = [meta["keep"], *([r] for r in meta.get("keep_alternatives", []))]
    wanted_sets = [{n for a, b in ranges for n in range(a, b + 1)} for ranges in choices]
    wanted = max(wanted_sets, key=lambda w: len(w & kept))
    missed = sorted(wanted - kept)
    if not missed:
        return None
    # missed lines are in DROP runs: their traces say why (a window can also reach into a KEEP run)
    traces = {
        n: t for r in runs if r.decision == "drop" for t in r.traces for n in range(t.first_line, t.last_line + 1)
    }
    lines = data.split(b"\n")
    out_bytes = sum(len(render(r, "text", "-")) for r in runs)
    return {
        "case": meta_path.stem,
        "kind": meta.get("kind", "other"),
        "recall": len(wanted & kept) / len(wanted),
        "out_ratio": out_bytes / max(1, len(data)),
        "missed": [(n, traces.get(n), strip_ansi(lines[n - 1]).decode("utf-8", "replace")) for n in missed],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--query", help="replace every case's own query")
    parser.add_argument("--cases", type=int, default=20, help="how many cases to show (worst first)")
    parser.add_argument("--lines", type=int, default=6, help="dropped lines shown per case")
    parser.add_argument("--kind", help="only cases of this kind")
    args = parser.parse_args()
    results = []
    for meta_path in sorted(args.corpus.glob("*.json")):
        if not meta_path.with_suffix(".log").exists():
            continue
        if args.kind and json.loads(meta_path.read_text()).get("kind") != args.kind:
            continue
        result = analyse(meta_path, args.query)
        if result is not None:
            results.append(result)
    results.sort(key=lambda r: float(r["recall"]))  # type: ignore[arg-type]
    print(f"{len(results)} cases with recall < 1")
    for r in results[: args.cases]:
        print(f"\n{r['case']} ({r['kind']}): recall {float(r['recall']):.2f}, out_ratio {float(r['out_ratio']):.3f}")  # type: ignore[arg-type]
        missed = r["missed"]
        assert isinstance(missed, list)
        for n, trace, text in missed[: args.lines]:
            why = f"score {trace.score:.2f} cut {trace.cut:.2f} {trace.reason}" if trace else "no trace"
            print(f"  {n:>6} [{why}] {text[:110]}")
        if len(missed) > args.lines:
            print(f"  ... {len(missed) - args.lines} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
