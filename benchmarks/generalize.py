#!/usr/bin/env python3
"""How the filter does on repositories it never saw: repository-grouped 5-fold figures.

Usage:
    python benchmarks/generalize.py [CORPUS] [--folds 5] [--seed 0] [--jobs 2] [--cut P ...]
                                    [--extra [DIR ...]] [--kinds] [--no-reference]
                                    [--write benchmarks/quality.md]

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
written looking at this corpus, so their share of every figure with them is in-sample. The
figure that predicts a tool no signature knows is **signatures off, out-of-fold**
(``FilterConfig(signatures=False)``: the query, the prior and the tail keep lines), and the
prior's ranking of each log's lines, its **per-case average precision** out of fold. The
reference prior of ``../shared/reference/prior``, fitted on the same folds by its own code, gives
both beside ours in the same run (``benchmarks/reference_prior.py``; ``--no-reference`` leaves it
out). ``--cut`` scores the out-of-fold models at other probability cuts (the shipped
``train_prior.CUT`` is chosen so, on the signatures-off out-of-fold figure).

``--extra DIR ...`` (``benchmarks/realtools``: logs made here of tools the corpus lacks) adds
labelled logs that every fit learns from too; the shipped prior learns from none (session 54
measured realtools so, ``benchmarks/quality.md``). Those logs are then scored out of fold, in a
table of their own: dealt into ``--folds`` folds by repository, each scored with the prior fitted
on the whole corpus and the other folds' logs.
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
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from quality import KINDS, score  # noqa: E402
from reference_prior import average_precision, reference_rows  # noqa: E402

from streamfilter.core.filter import DEFAULT_QUERY  # noqa: E402
from streamfilter.core.prior import PriorModel  # noqa: E402
from streamfilter.train_prior import CUT, CaseData, extract, fit, inner_folds, labelled_ranges, rate  # noqa: E402

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


def fold_of_cases(corpus: Path, k: int, seed: int) -> dict[str, int]:
    """Case name -> fold (``folds_of`` over the cases' ``repo`` fields)."""
    repo_of = {
        m.stem: json.loads(m.read_text())["repo"] for m in corpus.glob("*.json") if m.with_suffix(".log").exists()
    }
    counts: dict[str, int] = {}
    for repo in repo_of.values():
        counts[repo] = counts.get(repo, 0) + 1
    fold_of = {repo: f for f, fold in enumerate(folds_of(counts, k, seed)) for repo in fold}
    return {name: fold_of[repo] for name, repo in repo_of.items()}


def _extract(meta_path: Path) -> CaseData:
    meta = json.loads(meta_path.read_text())
    return extract(meta_path.with_suffix(".log").read_bytes(), meta_path.stem, meta["repo"], labelled_ranges(meta))


def _fit(job: tuple[str, list[CaseData], int]) -> tuple[str, PriorModel]:
    name, cases, seed = job
    return name, fit(cases, seed)


def _init(models: dict[str, PriorModel]) -> None:
    _MODELS.update(models)


def _score(job: tuple[Path, str | None, str, bool]) -> dict[str, object]:
    meta_path, query, model, signatures = job
    settings: dict[str, object] = {"prior": model != "none", "signatures": signatures}
    return score(meta_path, query, settings, _MODELS.get(model))


def summary(rows: list[dict[str, object]]) -> tuple[float, float, float, float]:
    """(full-recall share, mean recall, median out_ratio, total out_ratio) of scored cases."""
    full = statistics.mean(float(bool(r["full"])) for r in rows)
    mean = statistics.mean(float(r["recall"]) for r in rows)  # type: ignore[arg-type]
    median = statistics.median(float(r["out_ratio"]) for r in rows)  # type: ignore[arg-type]
    total = sum(float(r["out_ratio"]) * int(r["bytes"]) for r in rows) / sum(int(r["bytes"]) for r in rows)  # type: ignore[call-overload]
    return full, mean, median, total


def _ap_cells(values: list[float]) -> str:
    known = [v for v in values if v == v]  # (NaN: a log with no labelled line)
    return f"{statistics.mean(known):.3f} | {statistics.median(known):.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cut", type=float, action="append", default=[], help="also score out of fold at this cut")
    parser.add_argument("--kinds", action="store_true", help="print the figures per kind too")
    parser.add_argument("--no-reference", action="store_true", help="leave out the reference prior's rows")
    parser.add_argument("--write", type=Path, help="append the tables to this Markdown file")
    parser.add_argument("--json", type=Path, help="write every case's scores here (a list of objects)")
    parser.add_argument(
        "--extra",
        type=Path,
        nargs="*",
        default=[],
        help="folders of labelled logs made here that every fit learns from too (default: none)",
    )
    args = parser.parse_args()
    metas = sorted(p for p in args.corpus.glob("*.json") if p.with_suffix(".log").exists())
    extra_metas = [p for d in args.extra for p in sorted(d.glob("*.json")) if p.with_suffix(".log").exists()]
    started = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        cases = pool.map(_extract, metas, chunksize=4)
        extra = pool.map(_extract, extra_metas, chunksize=4)
    fold_of_case = fold_of_cases(args.corpus, args.folds, args.seed)
    extra_fold = {c.name: f for c, f in zip(extra, inner_folds(extra, args.folds), strict=True)} if extra else {}
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.repo] = counts.get(c.repo, 0) + 1
    folds = folds_of(counts, args.folds, args.seed)
    seed = args.seed
    fits = [("all", cases + extra, seed)]
    fits += [(f"fold{k}", [c for c in cases if fold_of_case[c.name] != k] + extra, seed) for k in range(args.folds)]
    if extra:
        fits += [(f"extra{k}", cases + [c for c in extra if extra_fold[c.name] != k], seed) for k in range(args.folds)]
    with multiprocessing.Pool(args.jobs) as pool:
        models = dict(pool.map(_fit, fits, chunksize=1))
    for k in range(args.folds):
        for cut in args.cut:
            models[f"fold{k}@{cut}"] = replace(models[f"fold{k}"], cut=cut)
    fitted = time.perf_counter() - started
    ap = {
        "in-sample": [average_precision(c.labels, rate(models["all"], c)) for c in cases],
        "out-of-fold": [average_precision(c.labels, rate(models[f"fold{fold_of_case[c.name]}"], c)) for c in cases],
    }
    ap_of = {c.name: a for c, a in zip(cases, ap["out-of-fold"], strict=True)}
    extra_ap = [average_precision(c.labels, rate(models[f"extra{extra_fold[c.name]}"], c)) for c in extra]
    del cases, extra

    def oof(m: Path) -> str:
        return f"fold{fold_of_case[m.stem]}"

    # (name, model of a case, signatures on)
    settings: list[tuple[str, Callable[[Path], str], bool]] = [
        ("no prior", lambda _m: "none", True),
        ("in-sample", lambda _m: "all", True),
        ("out-of-fold", oof, True),
        ("signatures off, no prior", lambda _m: "none", False),
        ("signatures off, out-of-fold", oof, False),
    ]
    for cut in args.cut:
        settings.append((f"out-of-fold, cut {cut}", lambda m, c=cut: f"{oof(m)}@{c}", True))
        settings.append((f"signatures off, out-of-fold, cut {cut}", lambda m, c=cut: f"{oof(m)}@{c}", False))
    queries = [("default query", DEFAULT_QUERY), ("own queries", None)]
    jobs = [(m, q, pick(m), sigs) for _, q in queries for _, pick, sigs in settings for m in metas]
    extra_of = {m.stem: f"extra{extra_fold[m.stem]}" for m in extra_metas}
    extra_jobs = [(m, DEFAULT_QUERY, extra_of[m.stem], sigs) for sigs in (True, False) for m in extra_metas]
    with multiprocessing.Pool(args.jobs, initializer=_init, initargs=(models,)) as pool:
        rows = pool.map(_score, jobs, chunksize=8)
        extra_rows = pool.map(_score, extra_jobs, chunksize=4)
    for row, (m, _, _, _) in zip(extra_rows, extra_jobs, strict=True):
        row["bytes"] = m.with_suffix(".log").stat().st_size
    for row, (m, query, model, sigs) in zip(rows, jobs, strict=True):
        row["bytes"] = m.with_suffix(".log").stat().st_size
        row["query"], row["model"], row["signatures"] = query or "own", model, sigs
        row["ap"] = ap_of[m.stem]
    by_setting: dict[tuple[str, str], list[dict[str, object]]] = {}
    n = len(metas)
    for i, (qname, _) in enumerate(queries):
        for j, (sname, _, _) in enumerate(settings):
            at = (i * len(settings) + j) * n
            by_setting[(qname, sname)] = rows[at : at + n]
    if not args.no_reference:
        reference = reference_rows(args.corpus, fold_of_case, args.seed)
        ref = [
            {"case": m.stem, "kind": json.loads(m.read_text()).get("kind", "other"), **reference[m.stem]} for m in metas
        ]
        by_setting[("any query", "reference alone (signatures off), out-of-fold")] = ref
        ap["reference, out-of-fold"] = [float(r["ap"]) for r in ref]  # type: ignore[arg-type]
    if args.json:
        args.json.write_text(json.dumps(rows) + "\n")
    learnt = f"; every fit learns from {len(extra_metas)} logs of {', '.join(str(d) for d in args.extra)} too"
    lines = [
        f"{len(metas)} cases, {len(counts)} repositories in {args.folds} folds of "
        f"{', '.join(str(sum(counts[r] for r in f)) for f in folds)} cases (seed {args.seed})"
        f"{learnt if extra_metas else ''}; fits {fitted:.0f} s, all {time.perf_counter() - started:.0f} s",
        "",
        "| query | prior | full-recall share | mean recall | median out_ratio | total out_ratio |",
        "|---|---|---|---|---|---|",
    ]
    for (qname, sname), part in by_setting.items():
        full, mean, median, total = summary(part)
        lines.append(f"| {qname} | {sname} | {full:.3f} | {mean:.3f} | {median:.4f} | {total:.4f} |")
    lines += [
        "",
        "The prior's per-case average precision (its ranking of a log's lines against the labels):",
        "",
        "| prior | mean AP | median AP |",
        "|---|---|---|",
        *(f"| {name} | {_ap_cells(values)} |" for name, values in ap.items()),
    ]
    if args.kinds:
        named = list(by_setting)
        lines += [
            "",
            "Per kind (full-recall share / mean recall / median out_ratio; out-of-fold AP mean):",
            "",
            "| kind | cases | " + " | ".join(f"{q}, {s}" for q, s in named) + " | AP |",
            "|---|---|" + "---|" * (len(named) + 1),
        ]
        for kind in (*KINDS, "all"):
            cells = []
            for key in named:
                part = [r for r in by_setting[key] if kind in ("all", r["kind"])]
                if part:
                    full, mean, median, _ = summary(part)
                    cells.append(f"{full:.3f} / {mean:.3f} / {median:.4f}")
            if cells:
                part = [r for r in by_setting[named[0]] if kind in ("all", r["kind"])]
                aps = [float(r["ap"]) for r in part if float(r["ap"]) == float(r["ap"])]  # type: ignore[arg-type]
                lines.append(f"| {kind} | {len(part)} | " + " | ".join(cells) + f" | {statistics.mean(aps):.3f} |")
    if extra_metas:
        n_extra = len(extra_metas)
        lines += [
            "",
            f"The {n_extra} logs of {', '.join(str(d) for d in args.extra)} out of fold (default query; each fold's "
            "prior fitted on the corpus and the other folds' logs, by repository):",
            "",
            "| prior | full-recall share | mean recall | median out_ratio | total out_ratio | mean AP | median AP |",
            "|---|---|---|---|---|---|---|",
        ]
        halves = (("out-of-fold", extra_rows[:n_extra]), ("signatures off, out-of-fold", extra_rows[n_extra:]))
        for name, part in halves:
            full, mean, median, total = summary(part)
            lines.append(f"| {name} | {full:.3f} | {mean:.3f} | {median:.4f} | {total:.4f} | {_ap_cells(extra_ap)} |")
    bad = [r["case"] for r in [*rows, *extra_rows] if not r["accounted"]]
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
