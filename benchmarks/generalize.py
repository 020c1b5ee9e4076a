#!/usr/bin/env python3
"""How the filter does on repositories it never saw: repository-grouped 5-fold figures.

Usage:
    python benchmarks/generalize.py [CORPUS] [--folds 5] [--seed 0] [--jobs 2] [--cut P ...]
                                    [--kinds] [--write benchmarks/quality.md]

The corpus's repositories (the ``repo`` field) are dealt into ``--folds`` folds of similar case
counts (largest repositories first, ties in a seeded order, each to the fold with fewest cases).
For each fold the line prior (``streamfilter.train_prior.fit``) is fitted on the other folds'
repositories and the filter, with that prior, is scored on the fold's cases: that is the
**out-of-fold** figure. Beside it, **in-sample**: the prior fitted on every case, scored on every
case; and the filter **without a prior** (``FilterConfig(prior=False)``). Each is given for the
default query (``DEFAULT_QUERY``, what a user who names none gets) and for the cases' own queries:
full-recall share, mean recall, median and total out_ratio, as ``benchmarks/quality.py`` computes
them in-process (``../shared/eval/evaluate.py`` through the CLI is the figure to quote for the
shipped build).

The signature table and the filter's rules are hand-written, not fitted per fold: they were
written looking at this corpus, so their share of every figure here is in-sample. Only the prior
is held out. ``--cut`` scores the out-of-fold models at other probability cuts (the shipped
``train_prior.CUT`` is chosen so, on the out-of-fold figure).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from quality import KINDS, score  # noqa: E402

from streamfilter.core.filter import DEFAULT_QUERY  # noqa: E402
from streamfilter.core.prior import PriorModel  # noqa: E402
from streamfilter.train_prior import CUT, CaseData, extract, fit  # noqa: E402

_MODELS: dict[str, PriorModel] = {}  # set in each pool process (``_init``)


def folds_of(repos: dict[str, int], k: int, seed: int) -> list[list[str]]:
    """Deal repositories (name -> case count) into ``k`` folds of similar case counts."""
    names = sorted(repos)
    order = np.random.default_rng(seed).permutation(len(names)).tolist()
    ranked = sorted(order, key=lambda i: -repos[names[i]])  # stable: ties keep the seeded order
    folds: list[list[str]] = [[] for _ in range(k)]
    sizes = [0] * k
    for i in ranked:
        f = sizes.index(min(sizes))
        folds[f].append(names[i])
        sizes[f] += repos[names[i]]
    return folds


def _extract(meta_path: Path) -> CaseData:
    meta = json.loads(meta_path.read_text())
    return extract(meta_path.with_suffix(".log").read_bytes(), meta_path.stem, meta["repo"], meta["keep"])


def _init(models: dict[str, PriorModel]) -> None:
    _MODELS.update(models)


def _score(job: tuple[Path, str | None, str]) -> dict[str, object]:
    meta_path, query, model = job
    settings: dict[str, object] = {"prior": model != "none"}
    return score(meta_path, query, settings, _MODELS.get(model))


def summary(rows: list[dict[str, object]]) -> tuple[float, float, float, float]:
    """(full-recall share, mean recall, median out_ratio, total out_ratio) of scored cases."""
    full = statistics.mean(float(bool(r["full"])) for r in rows)
    mean = statistics.mean(float(r["recall"]) for r in rows)  # type: ignore[arg-type]
    median = statistics.median(float(r["out_ratio"]) for r in rows)  # type: ignore[arg-type]
    total = sum(float(r["out_ratio"]) * int(r["bytes"]) for r in rows) / sum(int(r["bytes"]) for r in rows)  # type: ignore[call-overload]
    return full, mean, median, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cut", type=float, action="append", default=[], help="also score out of fold at this cut")
    parser.add_argument("--kinds", action="store_true", help="print the figures per kind too")
    parser.add_argument("--write", type=Path, help="append the tables to this Markdown file")
    parser.add_argument("--json", type=Path, help="write every case's scores here (a list of objects)")
    args = parser.parse_args()
    metas = sorted(p for p in args.corpus.glob("*.json") if p.with_suffix(".log").exists())
    started = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        cases = pool.map(_extract, metas, chunksize=4)
    repo_of = {c.name: c.repo for c in cases}
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.repo] = counts.get(c.repo, 0) + 1
    folds = folds_of(counts, args.folds, args.seed)
    fold_of = {repo: k for k, fold in enumerate(folds) for repo in fold}
    models = {"all": fit(cases, args.seed)}
    for k in range(args.folds):
        models[f"fold{k}"] = fit([c for c in cases if fold_of[c.repo] != k], args.seed)
        for cut in args.cut:
            models[f"fold{k}@{cut}"] = replace(models[f"fold{k}"], cut=cut)
    fitted = time.perf_counter() - started
    del cases
    settings = [("no prior", lambda _m: "none"), ("in-sample", lambda _m: "all")]
    settings.append(("out-of-fold", lambda m: f"fold{fold_of[repo_of[m.stem]]}"))
    for cut in args.cut:
        settings.append((f"out-of-fold, cut {cut}", lambda m, c=cut: f"fold{fold_of[repo_of[m.stem]]}@{c}"))
    queries = [("default query", DEFAULT_QUERY), ("own queries", None)]
    jobs = [(m, q, pick(m)) for _, q in queries for _, pick in settings for m in metas]
    with multiprocessing.Pool(args.jobs, initializer=_init, initargs=(models,)) as pool:
        rows = pool.map(_score, jobs, chunksize=8)
    for row, (m, query, model) in zip(rows, jobs, strict=True):
        row["bytes"] = m.with_suffix(".log").stat().st_size
        row["query"], row["model"] = query or "own", model
    if args.json:
        args.json.write_text(json.dumps(rows) + "\n")
    lines = [
        f"{len(metas)} cases, {len(counts)} repositories in {args.folds} folds of "
        f"{', '.join(str(sum(counts[r] for r in f)) for f in folds)} cases (seed {args.seed}); "
        f"fits {fitted:.0f} s, all {time.perf_counter() - started:.0f} s",
        "",
        "| query | prior | full-recall share | mean recall | median out_ratio | total out_ratio |",
        "|---|---|---|---|---|---|",
    ]
    n = len(metas)
    by_setting: dict[tuple[str, str], list[dict[str, object]]] = {}
    at = 0
    for qname, _ in queries:
        for sname, _ in settings:
            part = rows[at : at + n]
            at += n
            by_setting[(qname, sname)] = part
            full, mean, median, total = summary(part)
            lines.append(f"| {qname} | {sname} | {full:.3f} | {mean:.3f} | {median:.4f} | {total:.4f} |")
    if args.kinds:
        for qname, _ in queries:
            lines += [
                "",
                f"{qname}, per kind (full-recall share / mean recall / median out_ratio):",
                "",
                "| kind | cases | " + " | ".join(s for s, _ in settings) + " |",
                "|---|---|" + "---|" * len(settings),
            ]
            for kind in (*KINDS, "all"):
                cells = []
                for sname, _ in settings:
                    part = [r for r in by_setting[(qname, sname)] if kind in ("all", r["kind"])]
                    if part:
                        full, mean, median, _ = summary(part)
                        cells.append(f"{full:.3f} / {mean:.3f} / {median:.4f}")
                if cells:
                    size = sum(1 for r in by_setting[(qname, settings[0][0])] if kind in ("all", r["kind"]))
                    lines.append(f"| {kind} | {size} | " + " | ".join(cells) + " |")
    bad = [r["case"] for r in rows if not r["accounted"]]
    lines.append("")
    lines.append(f"not accounted: {len(bad)} {bad[:5]}")
    print("\n".join(lines))
    if args.write:
        with args.write.open("a") as f:
            f.write(f"\n## {datetime.date.today()}: out of fold (`python benchmarks/generalize.py")
            f.write(f"{' --kinds' if args.kinds else ''}` on `{os.path.relpath(args.corpus, ROOT)}`, cut {CUT})\n\n")
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
