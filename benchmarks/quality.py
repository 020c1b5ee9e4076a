#!/usr/bin/env python3
"""Quality on the labelled corpus, per kind, computed in-process (fast) the way
``../shared/eval/evaluate.py`` computes it through the CLI (the figure to quote).

Usage:
    python benchmarks/quality.py [CORPUS] [--query Q] [--write benchmarks/quality.md] [--misses N]

Per case: recall of labelled lines inside KEEP runs (any of ``keep_alternatives``
counts), full recall, and out_ratio = bytes of the text output / bytes of the log;
beside it the tail baseline at the same byte budget. ``--misses N`` prints, for the
N worst cases, the labelled lines that were dropped.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamfilter.core.filter import FilterConfig, StreamFilter  # noqa: E402
from streamfilter.core.output import render  # noqa: E402
from streamfilter.core.prior import PriorModel  # noqa: E402
from streamfilter.live.expand import Ref, TextRefs  # noqa: E402

KINDS = ("maven", "gradle", "pytest", "npm", "make", "cargo", "go", "other")


def labelled(ranges: list[list[int]], n: int) -> set[int]:
    return {i for a, b in ranges for i in range(max(1, a), min(n, b) + 1)}


def score_case(args: tuple[Path, str | None, dict[str, str]]) -> dict[str, object]:
    meta_path, query, overrides = args
    fields = FilterConfig.__dataclass_fields__
    defaults = FilterConfig()
    settings: dict[str, object] = {}
    for k, v in overrides.items():
        if k in fields:
            kind = type(getattr(defaults, k))
            settings[k] = v.lower() in ("1", "true", "yes") if kind is bool else kind(v)
    return score(meta_path, query, settings)


def score(
    meta_path: Path, query: str | None, settings: dict[str, object], prior_model: PriorModel | None = None
) -> dict[str, object]:
    """One case through the filter in-process: recall, full, out_ratio (as the CLI's text output) and
    the tail baseline's recall at the same bytes; ``settings`` are FilterConfig fields, ``prior_model``
    replaces the shipped prior."""
    meta = json.loads(meta_path.read_text())
    data = meta_path.with_suffix(".log").read_bytes()
    config = FilterConfig(query=query or meta["query"], **settings)  # type: ignore[arg-type]
    sf = StreamFilter(config, source=meta_path.stem, prior_model=prior_model)
    runs = []
    for i in range(0, len(data), 1 << 20):
        runs += sf.feed(data[i : i + (1 << 20)])
    runs += sf.flush()
    source = str(meta_path.with_suffix(".log").resolve())  # the CLI's refs point into the file
    text_refs = TextRefs()  # as the CLI writes them: the source named once in a row
    out = 0
    for r in runs:
        ref = text_refs(str(Ref(source, r.start_byte, r.end_byte, r.checksum))) if r.decision == "drop" else ""
        out += len(render(r, "text", "-", ref, note=text_refs.note(ref)))  # (the first ref's note too)
    kept = {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    n_lines = sf.stats.lines
    choices = [labelled(meta["keep"], n_lines)] + [labelled([r], n_lines) for r in meta.get("keep_alternatives", [])]

    def recall(wanted: set[int], have: set[int]) -> float:
        return len(wanted & have) / len(wanted) if wanted else 1.0

    lines = data.split(b"\n")
    tail: set[int] = set()
    used = 0
    for number in range(n_lines, 0, -1):
        used += len(lines[number - 1]) + 1
        if used > out:
            break
        tail.add(number)
    best = max(choices, key=lambda w: recall(w, kept))
    return {
        "case": meta_path.stem,
        "kind": meta.get("kind", "other"),
        "repo": meta["repo"],
        "recall": recall(best, kept),
        "full": any(w <= kept for w in choices),
        "out_ratio": out / max(1, len(data)),
        "tail_recall": max(recall(w, tail) for w in choices),
        "missed": sorted(best - kept)[:12],
        "accounted": sum(r.lines for r in runs) == n_lines,
    }


def table(rows: list[dict[str, object]]) -> list[str]:
    out = [
        "| kind | cases | full-recall share | mean recall | median out_ratio | tail recall, same budget |",
        "|---|---|---|---|---|---|",
    ]
    for kind in (*KINDS, "all"):
        part = rows if kind == "all" else [r for r in rows if r["kind"] == kind]
        if not part:
            continue
        out.append(
            f"| {kind} | {len(part)} | {statistics.mean(float(bool(r['full'])) for r in part):.3f} "
            f"| {statistics.mean(float(r['recall']) for r in part):.3f} "  # type: ignore[arg-type]
            f"| {statistics.median(float(r['out_ratio']) for r in part):.4f} "  # type: ignore[arg-type]
            f"| {statistics.mean(float(r['tail_recall']) for r in part):.3f} |"  # type: ignore[arg-type]
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--query", help="replace every case's own query")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", type=Path, help="append the tables to this Markdown file")
    parser.add_argument("--misses", type=int, default=0, help="print the N worst cases")
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="override a FilterConfig field (experiments)"
    )
    args = parser.parse_args()
    cases = sorted(p for p in args.corpus.glob("*.json") if p.with_suffix(".log").exists())
    with multiprocessing.Pool(args.jobs) as pool:
        overrides = dict(item.split("=", 1) for item in args.set)
        rows = pool.map(score_case, [(c, args.query, overrides) for c in cases], chunksize=4)
    lines = table(rows)
    print("\n".join(lines))
    bad = [r["case"] for r in rows if not r["accounted"]]
    print(f"not accounted: {len(bad)} {bad[:5]}")
    if args.misses:
        for r in sorted(rows, key=lambda r: float(r["recall"]))[: args.misses]:  # type: ignore[arg-type]
            print(f"{float(r['recall']):.2f} {float(r['out_ratio']):.3f} {r['case']} missed {r['missed']}")  # type: ignore[arg-type]
    if args.write:
        query = f'--query "{args.query}"' if args.query else "the cases' own queries"
        with args.write.open("a") as f:
            f.write(f"\n## {datetime.date.today()}: {query}\n\n")
            f.write(
                f"`python benchmarks/quality.py{' --query ' + repr(args.query) if args.query else ''}`"
                f" on {len(rows)} cases of `{os.path.relpath(args.corpus, ROOT)}`\n\n"
            )
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
