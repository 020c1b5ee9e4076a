"""Fit the line prior (``streamfilter.core.prior``) on labelled logs, and write its weights.

Usage::

    python -m streamfilter.train_prior ../shared/corpus --out streamfilter/core/prior.npz \
        --fixture tests/data/prior-fixture.json

A corpus folder holds ``NAME.log`` beside ``NAME.json`` with ``keep`` (1-based inclusive line
ranges a developer must see) and ``repo`` (``../shared/corpus/README.md``). The shipped weights are
fitted on ``../shared/corpus`` (LogChunks and LogDx-CI: CC BY 4.0; CiDiff: Apache-2.0; see NOTICE).

Method: L2-regularized logistic regression (Cox 1958), fitted by full-batch Adam (Kingma and Ba
2015) on every labelled line and a seeded sample of the others (re-weighted), in two stages:

1. content: hashed features of each line (``prior.content_features``); a feature seen in fewer
   than ``MIN_REPOS`` repositories of the training set keeps weight 0, so no project's own names
   are learned. Its logits for the training lines come from a repository-grouped cross-fit, so the
   second stage sees them as it will on logs the model never saw.
2. context: ``prior.context_features`` of those logits (neighbours, distance to the stream's end
   and to the next exit verdict, shape repeats), a small dense model.

Deterministic for a given corpus and seed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .core.filter import FilterConfig
from .core.lines import LineSplitter
from .core.prepare import Preparer
from .core.prior import (
    N_FEATURES,
    PriorModel,
    ShapeCounter,
    content_features,
    context_features,
    scale_of,
    shape_hashes,
    to_verdict,
)
from .core.signatures import SignatureSet
from .core.tokens import Query, token_table

__all__ = ("CUT", "FIXTURE_LINES", "MIN_REPOS", "CaseData", "extract", "fit", "load_corpus", "main", "rate")

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

MIN_REPOS = 5  # a content feature is learned only when this many training repositories have it
CUT = 0.6  # the probability at or above which the filter keeps a line (benchmarks/generalize.py)
NEGATIVE_SHARE = 0.15  # the share of unlabelled lines sampled for fitting
L2_CONTENT = 3e-4  # per training line (the sum of the loss is divided by the lines' weight)
L2_CONTEXT = 1e-4
STEPS = 250
INNER_FOLDS = 2  # folds of the cross-fit that gives the second stage its content logits
LEARNING_RATE = 0.05


@dataclass(frozen=True, slots=True)
class CaseData:
    """One labelled log as the prior sees it (per-line arrays have shape ``(n_lines,)``).

    Attributes:
        name: the case's file stem.
        repo: the repository it comes from (what folds are grouped by).
        n_lines: lines in the log.
        pair_lines, pair_ids: ``content_features``' pairs over the whole log (0-based lines).
        to_end, to_verdict, seen, blank: the context inputs, as ``context_features`` takes them.
        labels: bool, the line is to be kept.
    """

    name: str
    repo: str
    n_lines: int
    pair_lines: Int64Array
    pair_ids: Int64Array
    to_end: Int64Array
    to_verdict: Int64Array
    seen: Int64Array
    blank: npt.NDArray[np.bool_]
    labels: npt.NDArray[np.bool_]


def extract(data: bytes, name: str = "-", repo: str = "-", keep: Sequence[Sequence[int]] = ()) -> CaseData:
    """The prior's inputs for one whole log, computed by the filter's own stages.

    Args:
        data: the log's bytes.
        name, repo: what the case is called and where it comes from.
        keep: ``[first, last]`` 1-based inclusive line ranges labelled to keep.
    """
    preparer = Preparer(Query.parse(""), SignatureSet(), FilterConfig().max_line_bytes)
    splitter = LineSplitter()
    blocks = [b for b in (splitter.feed(data), splitter.flush()) if b is not None]
    counter = ShapeCounter()
    lines_l, ids_l, seen_l, blank_l, verdict_l = [], [], [], [], []
    base = 0
    for block in blocks:
        facts = preparer(block)
        table = token_table(facts.norm.text, facts.norm.ends)
        pl, pi, keys = content_features(facts.norm.text, facts.norm.ends, table, facts.layout)
        lines_l.append(np.concatenate(pl) + base)
        ids_l.append(np.concatenate(pi))
        seen_l.append(counter.seen(shape_hashes(table, keys)))
        blank_l.append(facts.layout.blank)
        verdict_l.append(facts.verdicts + base)
        base += block.n_lines
    n = base
    verdicts = np.concatenate(verdict_l) if verdict_l else np.zeros(0, dtype=np.int64)
    labels = np.zeros(n, dtype=bool)
    for first, last in keep:
        labels[max(first, 1) - 1 : min(last, n)] = True
    return CaseData(
        name,
        repo,
        n,
        np.concatenate(lines_l) if lines_l else np.zeros(0, dtype=np.int64),
        np.concatenate(ids_l) if ids_l else np.zeros(0, dtype=np.int64),
        np.arange(n - 1, -1, -1, dtype=np.int64),
        to_verdict(np.arange(n, dtype=np.int64), verdicts),
        np.concatenate(seen_l) if seen_l else np.zeros(0, dtype=np.int64),
        np.concatenate(blank_l) if blank_l else np.zeros(0, dtype=bool),
        labels,
    )


def load_corpus(folder: Path, names: Sequence[str] | None = None) -> list[CaseData]:
    """``extract`` of every case of a corpus folder (or of the named ones), in name order.

    Raises:
        OSError: a case cannot be read.
        KeyError, ValueError: a case's JSON lacks ``keep`` or ``repo``, or is not JSON.
    """
    metas = sorted(folder.glob("*.json")) if names is None else [folder / f"{n}.json" for n in names]
    cases = []
    for meta_path in metas:
        if not meta_path.with_suffix(".log").exists():
            continue
        meta = json.loads(meta_path.read_text())
        data = meta_path.with_suffix(".log").read_bytes()
        cases.append(extract(data, meta_path.stem, meta["repo"], meta["keep"]))
    return cases


def _sample(cases: Sequence[CaseData], seed: int) -> list[tuple[Int64Array, Float64Array]]:
    """Per case: the lines to fit on (every labelled one and a sample of the rest) and their weights."""
    rng = np.random.default_rng(seed)
    out = []
    for case in cases:
        pick = case.labels | (rng.random(case.n_lines) < NEGATIVE_SHARE)
        rows = np.flatnonzero(pick).astype(np.int64)
        weights = np.where(case.labels[rows], 1.0, 1.0 / NEGATIVE_SHARE)
        # each log weighs the same (the figures are per log: a long one must not drown the rest)
        out.append((rows, weights / weights.sum()))
    return out


def _allowed(cases: Sequence[CaseData]) -> npt.NDArray[np.bool_]:
    """Shape ``(N_FEATURES,)``: the features that at least ``MIN_REPOS`` repositories have."""
    repos = sorted({c.repo for c in cases})
    index = {r: i for i, r in enumerate(repos)}
    pairs = [np.unique(c.pair_ids) + N_FEATURES * index[c.repo] for c in cases]
    unique = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, dtype=np.int64)
    return np.bincount(unique % N_FEATURES, minlength=N_FEATURES) >= MIN_REPOS


def _adam(
    grad: Callable[[Float64Array], Float64Array], x0: Float64Array, steps: int = STEPS, rate: float = LEARNING_RATE
) -> Float64Array:
    """Minimize with full-batch Adam; ``grad(x) -> gradient`` (shape of ``x0``)."""
    x = x0.copy()
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for t in range(1, steps + 1):
        g = grad(x)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        x -= rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return x


def _fit_content(cases: Sequence[CaseData], samples: Sequence[tuple[Int64Array, Float64Array]]) -> Float64Array:
    """Content weights (shape ``(N_FEATURES + 1,)``, the bias last) fitted on the sampled lines."""
    allowed = _allowed(cases)
    lines_l, ids_l, scale_l, y_l, w_l = [], [], [], [], []
    offset = 0
    for case, (rows, weights) in zip(cases, samples, strict=True):
        local = np.full(case.n_lines, -1, dtype=np.int64)
        local[rows] = np.arange(rows.shape[0]) + offset
        at = local[case.pair_lines]
        keep = (at >= 0) & allowed[case.pair_ids]
        lines_l.append(at[keep])
        ids_l.append(case.pair_ids[keep])
        scale_l.append(scale_of(np.bincount(case.pair_lines, minlength=case.n_lines))[case.pair_lines[keep]])
        y_l.append(case.labels[rows].astype(np.float64))
        w_l.append(weights)
        offset += rows.shape[0]
    lines, ids, scale = np.concatenate(lines_l), np.concatenate(ids_l), np.concatenate(scale_l)
    y, w = np.concatenate(y_l), np.concatenate(w_l)
    w = w / w.sum()
    n = y.shape[0]

    def grad(x: Float64Array) -> Float64Array:
        z = np.bincount(lines, weights=x[ids] * scale, minlength=n) + x[-1]
        r = w * (1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))) - y)
        g = np.empty_like(x)
        g[:-1] = np.bincount(ids, weights=r[lines] * scale, minlength=N_FEATURES) + L2_CONTENT * x[:-1]
        g[-1] = r.sum()
        return g

    x = _adam(grad, np.zeros(N_FEATURES + 1))
    x[:-1][~allowed] = 0.0
    return x


def rate(model: PriorModel, case: CaseData) -> Float64Array:
    """Shape ``(case.n_lines,)``: the prior's probability of each line of a whole log, as the filter
    rates it at the stream's end."""
    logits = model.content_logits([case.pair_lines], [case.pair_ids], case.n_lines)
    context = context_features(logits, 0, case.n_lines, case.to_end, case.to_verdict, case.seen, case.blank)
    return model.probability(context)


def _logits(case: CaseData, weights: Float64Array) -> Float64Array:
    sums = np.bincount(case.pair_lines, weights=weights[case.pair_ids], minlength=case.n_lines)
    counts = np.bincount(case.pair_lines, minlength=case.n_lines)
    logits: Float64Array = sums * scale_of(counts) + weights[-1]
    return logits


def _context_rows(case: CaseData, logits: Float64Array, rows: Int64Array) -> Float64Array:
    full = context_features(logits, 0, case.n_lines, case.to_end, case.to_verdict, case.seen, case.blank)
    return full.matrix()[rows]


def _fit_context(xs: Float64Array, y: Float64Array, w: Float64Array) -> Float64Array:
    """Context weights (shape ``(CONTEXT_FEATURES + 1,)``, the bias last) by Newton's method."""
    X = np.hstack((xs, np.ones((xs.shape[0], 1))))
    w = w / w.sum()
    beta = np.zeros(X.shape[1])
    ridge = L2_CONTEXT * np.eye(X.shape[1])
    ridge[-1, -1] = 0.0
    for _ in range(25):
        p = 1.0 / (1.0 + np.exp(-np.clip(X @ beta, -40, 40)))
        g = X.T @ (w * (p - y)) + ridge @ beta
        h = (X * (w * p * (1 - p))[:, None]).T @ X + ridge + 1e-9 * np.eye(X.shape[1])
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-7:
            break
    return beta


def fit(cases: Sequence[CaseData], seed: int = 0, cut: float = CUT) -> PriorModel:
    """Fit both stages on ``cases`` (see the module's docstring).

    Raises:
        ValueError: fewer than two repositories (nothing to cross-fit on).
    """
    repos = sorted({c.repo for c in cases})
    if len(repos) < 2:
        raise ValueError("the prior needs labelled logs of at least two repositories")
    samples = _sample(cases, seed)
    # the second stage learns from content logits of lines the first stage did not fit on
    rng = np.random.default_rng(seed + 1)
    fold_of = {r: int(k) % INNER_FOLDS for r, k in zip(repos, rng.permutation(len(repos)), strict=True)}
    held_logits: list[Float64Array | None] = [None] * len(cases)
    for k in range(INNER_FOLDS):
        train = [i for i, c in enumerate(cases) if fold_of[c.repo] != k]
        weights = _fit_content([cases[i] for i in train], [samples[i] for i in train])
        for i, case in enumerate(cases):
            if fold_of[case.repo] == k:
                held_logits[i] = _logits(case, weights)
    xs, ys, ws = [], [], []
    for case, (rows, w), logits in zip(cases, samples, held_logits, strict=True):
        assert logits is not None
        xs.append(_context_rows(case, logits, rows))
        ys.append(case.labels[rows].astype(np.float64))
        ws.append(w)
    beta = _fit_context(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws))
    content = _fit_content(cases, samples)
    return PriorModel(
        content[:-1].astype(np.float32), float(content[-1]), beta[:-1].copy(), float(beta[-1]), float(cut)
    )


# the test fixture's log: what the shipped weights must rate as the training run that made them did
FIXTURE_LINES = (
    b"   Compiling widget v0.3.1\n",
    b"test widget::parse ... ok\n",
    b"AssertionError: expected 3 but got 4\n",
    b"    at check (src/widget.rs:41)\n",
    b"Done in 2.1s\n",
)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: fit on a corpus folder, write the weights."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("corpus", type=Path, help="folder of NAME.log and NAME.json cases")
    parser.add_argument("--out", type=Path, required=True, help="where to write the weights (.npz)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cut", type=float, default=CUT, help=f"probability cut to ship (default {CUT})")
    parser.add_argument("--fixture", type=Path, help="write the test fixture (FIXTURE_LINES rated) here, as JSON")
    args = parser.parse_args(argv)
    cases = load_corpus(args.corpus)
    model = fit(cases, args.seed, args.cut)
    model.save(args.out)
    if args.fixture:
        shipped = PriorModel.load(args.out)  # as stored (float16 content weights)
        probability = rate(shipped, extract(b"".join(FIXTURE_LINES)))
        fixture = {"lines": [line.decode() for line in FIXTURE_LINES], "probability": probability.tolist()}
        args.fixture.write_text(json.dumps(fixture, indent=1) + "\n")
    kept = int((model.content != 0).sum())
    print(f"{len(cases)} cases, {kept} content features with a weight: {args.out}", file=sys.stderr)  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
