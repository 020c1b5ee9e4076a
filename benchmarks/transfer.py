#!/usr/bin/env python3
"""The shipped prior against the reference prior on labelled logs outside the corpus.

Usage:
    python benchmarks/transfer.py [DIR ...] [--query Q] [--jobs 2] [--json FILE]

Each DIR holds ``NAME.log`` with ``NAME.json`` beside it (``../shared/eval/evaluate.py``'s
contract; default ``benchmarks/unseen``, logs of tools neither the corpus nor ``benchmarks/realtools``
has, made here and labelled before filtering). Neither model was fitted on them: the shipped
weights (``prior.npz``) and
the reference prior of ``../shared/reference/prior`` fitted on the whole of ``../shared/corpus``
by its own code (scheme ``case``, λ 3e-5, 150 iterations, as its ``run_shared.sh``; cached in
``/tmp/prior_cache``). Rows, full-recall share / mean recall / median out_ratio (the arithmetic
of ``evaluate.py``):

- the filter, signatures off, in process (``benchmarks/quality.py``'s ``score``), query ``Q``;
- the reference alone with its selection ``MS`` (thr 0.5, ext 20, before 2, after 5, low 0.2, top 5)
  and the same without its 5 most probable lines of each log (top 0): the global top lines are
  what a streaming filter cannot take without reading a log twice;

and the per-case average precision (mean / median) of each model's probabilities. The figures
of the corpus (``generalize.py``) are out of fold by repository; these are out of sample for
both models, on logs of tools none of their training logs is of.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from quality import score  # noqa: E402
from reference_prior import CACHE, ITERATIONS, LAMBDA, REFERENCE, SELECTION, _modules, average_precision  # noqa: E402

from streamfilter.core.prior import default_model  # noqa: E402
from streamfilter.train_prior import extract, labelled_ranges, rate  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


def reference_weights(corpus: Path = CORPUS) -> tuple[np.ndarray, float]:
    """The reference prior fitted on every case of ``corpus``: weights (shape ``(DIM,)``) and bias.

    Raises:
        OSError: the reference's folder or the corpus cannot be read.
        subprocess.CalledProcessError: its featurizer failed.
    """
    m = _modules(REFERENCE)
    features = CACHE / "shared.npz"
    if not features.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REFERENCE / "build_cache.py"), str(corpus), str(features)], check=True)
    z = np.load(features)
    facts = sorted((p.stem, p.stat().st_size) for p in corpus.glob("*.log"))
    key = hashlib.sha256(json.dumps([facts, LAMBDA, ITERATIONS]).encode()).hexdigest()[:16]
    path = CACHE / f"reference_all_{key}.npz"
    if not path.exists():
        weights = m["cv"].weights("case", z["y"], z["mask"], z["case_ptr"])
        rows = m["lr"].Rows(z["indptr"], z["indices"], m["features"].DIM)
        w, b = m["lr"].fit(rows, z["y"], weights, LAMBDA, ITERATIONS, verbose=False)
        np.savez(path, w=w, b=np.asarray(b))
    saved = np.load(path)
    return saved["w"], float(saved["b"])


def _recall(meta: dict[str, Any], keep: np.ndarray) -> float:
    n = keep.shape[0]
    best = 0.0
    for ranges in [meta["keep"], *([r] for r in meta.get("keep_alternatives", []))]:
        idx = np.concatenate([np.arange(max(1, a) - 1, min(n, e)) for a, e in ranges])
        best = max(best, float(keep[idx].mean()) if idx.shape[0] else 1.0)
    return best


def reference_case(meta_path: Path, w: np.ndarray, b: float) -> dict[str, float]:
    """One log through the reference: recall and out_ratio with and without its top 5, and its AP."""
    m = _modules(REFERENCE)
    f, lr, pf = m["features"], m["lr"], m["prior_filter"]
    meta = json.loads(meta_path.read_text())
    data = meta_path.with_suffix(".log").read_bytes()
    info = f.LogInfo(data)
    indptr, indices = f.featurize(info)
    p = lr.predict(lr.Rows(indptr, indices, f.DIM), w, b)
    labels, _ = f.labels(meta, info.n)
    nbytes = np.array([len(r) + 1 for r in info.raw], dtype=np.int64)
    if info.n and not data.endswith(b"\n"):
        nbytes[-1] -= 1
    out: dict[str, float] = {"ap": average_precision(labels > 0, p)}
    for name, selection in (("ms", SELECTION), ("ms_top0", {**SELECTION, "topk": 0})):
        keep = pf.select(p, info.indent, info.blank, **selection)
        out[f"{name}_recall"] = _recall(meta, keep)
        out[f"{name}_out"] = pf.text_size(meta_path.with_suffix(".log").name, keep, nbytes) / max(1, int(nbytes.sum()))
    return out


def ours_case(job: tuple[Path, str]) -> dict[str, float]:
    """One log through the filter, signatures off, and the shipped prior's AP."""
    meta_path, query = job
    row = score(meta_path, query, {"signatures": False})
    meta = json.loads(meta_path.read_text())
    case = extract(meta_path.with_suffix(".log").read_bytes(), meta_path.stem, "-", labelled_ranges(meta))
    return {
        "recall": float(row["recall"]),  # type: ignore[arg-type]
        "out": float(row["out_ratio"]),  # type: ignore[arg-type]
        "ap": average_precision(case.labels, rate(default_model(), case)),
    }


def _row(name: str, recalls: list[float], outs: list[float]) -> str:
    full = statistics.mean(float(r >= 1.0) for r in recalls)
    return f"| {name} | {full:.3f} / {statistics.mean(recalls):.3f} / {statistics.median(outs):.4f} |"


def _ap(values: list[float]) -> str:
    known = [v for v in values if v == v]
    return f"{statistics.mean(known):.3f} / {statistics.median(known):.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=[ROOT / "benchmarks" / "unseen"])
    parser.add_argument("--query", default="error failed fatal assert", help="the filter's query (BM25)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write every case's figures here")
    args = parser.parse_args()
    metas = sorted(m for d in args.dirs for m in d.glob("*.json") if m.with_suffix(".log").exists())
    if not metas:
        parser.error("no NAME.log with NAME.json in " + ", ".join(map(str, args.dirs)))
    w, b = reference_weights()
    with multiprocessing.Pool(args.jobs) as pool:
        ours = pool.map(ours_case, [(m, args.query) for m in metas], chunksize=2)
    reference = [reference_case(m, w, b) for m in metas]
    print(f"{len(metas)} logs; full / mean recall / median out_ratio")
    print("| row | figures |")
    print("|---|---|")
    print(_row("filter, signatures off (shipped prior)", [r["recall"] for r in ours], [r["out"] for r in ours]))
    print(_row("reference alone (MS)", [r["ms_recall"] for r in reference], [r["ms_out"] for r in reference]))
    print(
        _row(
            "reference alone, no top 5", [r["ms_top0_recall"] for r in reference], [r["ms_top0_out"] for r in reference]
        )
    )
    print(f"| AP, shipped prior (mean / median) | {_ap([r['ap'] for r in ours])} |")
    print(f"| AP, reference (mean / median) | {_ap([r['ap'] for r in reference])} |")
    if args.json:
        rows = [{"case": m.stem, "ours": o, "reference": r} for m, o, r in zip(metas, ours, reference, strict=True)]
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
