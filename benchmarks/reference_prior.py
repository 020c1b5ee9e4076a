#!/usr/bin/env python3
"""The reference line prior of ``../shared/reference/prior``, fitted and scored on our folds.

Usage:
    python benchmarks/reference_prior.py [CORPUS] [--folds 5] [--seed 0]

``benchmarks/generalize.py`` imports ``reference_rows`` to print the reference's figures beside
ours in one run. The reference's own code does the work (its ``features``, ``lr``, ``cv`` and
``prior_filter`` modules, imported from its folder, read-only): its featurized corpus
(``build_cache.py``), one model per fold fitted on the other folds' repositories (``cv.weights``
scheme ``case``, λ 3e-5, 150 L-BFGS iterations, as its ``run_shared.sh``), and its selection
``MS`` (thr 0.5, ext 20, before 2, after 5, low 0.2, top 5), its "model alone, no signatures"
row. Per case: recall, full recall and out_ratio with its own summary lines (the arithmetic of
``../shared/eval/evaluate.py``, as its ``tune.py``), and the average precision of its
probabilities. The featurized corpus and the out-of-fold probabilities are cached in
``/tmp/prior_cache`` (keyed by the corpus's case names and sizes, the folds and the seed): the
fits take some minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "reference" / "prior"
CACHE = Path("/tmp/prior_cache")
# the reference's selection for its "model alone" row (its README and run_shared.sh: MS)
SELECTION = {"thr": 0.5, "ext": 20, "before": 2, "after": 5, "low": 0.2, "topk": 5}
LAMBDA, ITERATIONS = 3e-5, 150


def _modules(folder: Path) -> dict[str, ModuleType]:
    sys.path.insert(0, str(folder))
    import cv  # type: ignore[import-not-found]
    import features  # type: ignore[import-not-found]
    import lr  # type: ignore[import-not-found]
    import prior_filter  # type: ignore[import-not-found]

    return {"cv": cv, "features": features, "lr": lr, "prior_filter": prior_filter}


def _key(corpus: Path, fold_of_case: dict[str, int], seed: int) -> str:
    facts = sorted((p.stem, p.stat().st_size) for p in corpus.glob("*.log"))
    blob = json.dumps([facts, sorted(fold_of_case.items()), seed, LAMBDA, ITERATIONS]).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def average_precision(labels: np.ndarray, p: np.ndarray) -> float:
    """Average precision of ranking a log's lines by ``p`` (shape ``(n,)``) against ``labels``
    (bool, shape ``(n,)``): the mean over labelled lines of the precision at each one's rank
    (ties in line order). NaN for a log with no labelled line."""
    order = np.argsort(-p, kind="stable")
    hit = labels[order]
    if not hit.any():
        return float("nan")
    precision = np.cumsum(hit) / np.arange(1, hit.shape[0] + 1)
    return float(precision[hit].mean())


def reference_rows(
    corpus: Path, fold_of_case: dict[str, int], seed: int = 0, folder: Path = REFERENCE
) -> dict[str, dict[str, float]]:
    """Per case name: ``recall``, ``full`` (0 or 1), ``out_ratio``, ``bytes`` and ``ap`` of the
    reference model fitted on the other folds (``fold_of_case``: case name -> fold).

    Raises:
        OSError: the reference's folder or the corpus cannot be read.
        subprocess.CalledProcessError: its featurizer failed.
    """
    m = _modules(folder)
    CACHE.mkdir(parents=True, exist_ok=True)
    features = CACHE / "shared.npz"
    if not features.exists():
        subprocess.run([sys.executable, str(folder / "build_cache.py"), str(corpus), str(features)], check=True)
    z = np.load(features)
    names = [str(x) for x in z["names"]]
    ptr, y, mask = z["case_ptr"], z["y"], z["mask"]
    oof_path = CACHE / f"reference_oof_{_key(corpus, fold_of_case, seed)}.npy"
    if oof_path.exists():
        oof = np.load(oof_path)
    else:
        indptr, indices = z["indptr"], z["indices"]
        weights = m["cv"].weights("case", y, mask, ptr)
        fold = np.asarray([fold_of_case[n] for n in names])
        oof = np.full(y.shape[0], np.nan)
        lr = m["lr"]
        for k in sorted(set(fold.tolist())):
            train = [(int(ptr[c]), int(ptr[c + 1])) for c in range(len(names)) if fold[c] != k]
            test = [(int(ptr[c]), int(ptr[c + 1])) for c in range(len(names)) if fold[c] == k]
            rows = np.concatenate([np.arange(a, b) for a, b in train])
            ip, ix = lr.take_rows(indptr, indices, train)
            w, b = lr.fit(lr.Rows(ip, ix, m["features"].DIM), y[rows], weights[rows], LAMBDA, ITERATIONS, verbose=False)
            ip, ix = lr.take_rows(indptr, indices, test)
            oof[np.concatenate([np.arange(a, b) for a, b in test])] = lr.predict(
                lr.Rows(ip, ix, m["features"].DIM), w, b
            )
            print(f"reference fold {k} fitted", file=sys.stderr)
        np.save(oof_path, oof)
    select, text_size = m["prior_filter"].select, m["prior_filter"].text_size
    out: dict[str, dict[str, float]] = {}
    for c, name in enumerate(names):
        a, b = int(ptr[c]), int(ptr[c + 1])
        n = b - a
        p, nbytes = oof[a:b], z["nbytes"][a:b]
        keep = select(p, z["indent"][a:b], z["blank"][a:b], **SELECTION)
        meta = json.loads((corpus / f"{name}.json").read_text())
        recall = 0.0
        for ranges in [meta["keep"], *([r] for r in meta.get("keep_alternatives", []))]:
            idx = np.concatenate([np.arange(max(1, x) - 1, min(n, e)) for x, e in ranges])
            recall = max(recall, float(keep[idx].mean()) if idx.shape[0] else 1.0)
        size = int(nbytes.sum())
        out[name] = {
            "recall": recall,
            "full": float(recall >= 1.0),
            "out_ratio": text_size(f"{name}.log", keep, nbytes) / max(1, size),
            "bytes": size,
            "ap": average_precision(y[a:b] > 0, p),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generalize import fold_of_cases

    rows = reference_rows(args.corpus, fold_of_cases(args.corpus, args.folds, args.seed), args.seed)
    values = list(rows.values())
    ap = [r["ap"] for r in values if r["ap"] == r["ap"]]
    print(
        f"reference, out of fold: full {np.mean([r['full'] for r in values]):.3f} "
        f"mean {np.mean([r['recall'] for r in values]):.3f} "
        f"median out_ratio {np.median([r['out_ratio'] for r in values]):.4f} "
        f"AP mean {np.mean(ap):.3f} median {np.median(ap):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
