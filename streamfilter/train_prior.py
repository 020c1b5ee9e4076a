"""Fit the line prior (``streamfilter.core.prior``) on labelled logs, and write its weights.

Usage::

    python -m streamfilter.train_prior ../shared/corpus --out streamfilter/core/prior.npz \
        --fixture tests/data/prior-fixture.json

A corpus folder holds ``NAME.log`` beside ``NAME.json`` with ``keep`` (1-based inclusive line
ranges a developer must see) and ``repo`` (``../shared/corpus/README.md``); several folders are
fitted on together (``../shared/corpus benchmarks/realtools``: measured in session 54, not
shipped, ``benchmarks/quality.md``). The shipped weights are fitted on ``../shared/corpus``
(LogChunks and LogDx-CI: CC BY 4.0; CiDiff: Apache-2.0; see NOTICE). Fitting needs scipy (the
``train`` extra).

Method: L2-regularized logistic regression (Cox 1958) over every feature of ``prior`` at once,
fitted by L-BFGS (Liu and Nocedal 1989; scipy's ``L-BFGS-B``) on every labelled line and a seeded
sample of the others. Every log weighs the same, half on its labelled lines and half on the rest
(the figures are per log: a long one must not drown the rest), as the reference prior in
``../shared/reference/prior`` does. A word feature seen in fewer than ``MIN_REPOS`` repositories of
the training set keeps weight 0, so no project's own names are learned. The second stage
(``prior.context_features``: a line's log-odds beside its neighbours') is a small logistic
regression fitted the same way on the first stage's log-odds out of fold (``INNER_FOLDS`` folds
grouped by repository: stacked generalization, Wolpert 1992), so it learns how far log-odds of an
unseen log can be trusted; fitting costs ``INNER_FOLDS + 1`` first stages. Deterministic for a
given corpus and seed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .core.filter import FilterConfig
from .core.lines import LineSplitter
from .core.prepare import Preparer
from .core.prior import (
    ABSENT,
    CONTEXT_NAMES,
    CONTEXT_REACH,
    N_FEATURES,
    STRUCTURE_NAMES,
    LineFeatures,
    PriorModel,
    ShapeCounter,
    StreamFacts,
    ahead_counts,
    content_features,
    context_features,
    scale_of,
    structure,
)
from .core.signatures import SignatureSet
from .core.tokens import Query, token_table

__all__ = (
    "CUT",
    "FIXTURE_LINES",
    "MIN_REPOS",
    "CaseData",
    "extract",
    "first_stage",
    "fit",
    "inner_folds",
    "labelled_ranges",
    "load_corpus",
    "main",
    "rate",
)

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

MIN_REPOS = 3  # a word feature is learned only when this many training repositories have it
# the probability at or above which the filter keeps a line (with hits.PRIOR_OWN; beside a query
# term, hits.PRIOR_NEAR_CUT). Out of fold, full / mean recall / median out_ratio, signatures off and
# on (session 45, generalize.py's fold models): 0.65 0.916 / 0.956 / 0.0820 and 0.963 / 0.988 /
# 0.0862; 0.75 0.886 / 0.938 / 0.0753 and 0.958 / 0.987 / 0.0763; 0.8 0.874 / 0.932 / 0.0714 and
# 0.956 / 0.986 / 0.0720; 0.85 0.844 / 0.909 / 0.0681 and 0.951 / 0.984 / 0.0711. With the lines
# beside a query term at 0.5 (session 53, session 46's fold models): 0.8 0.889 / 0.939 / 0.0706,
# 0.85 0.876 / 0.932 / 0.0676 and 0.956 / 0.985 / 0.0720, 0.88 0.857 / 0.923 / 0.0664: 0.85 is
# the highest that keeps both recalls over issue 37's floors (0.86 / 0.92 and 0.95 / 0.98). The
# lines it keeps grow with a log's length: in the corpus's longest quarter (246 KB to 3 MB),
# signatures off, the median output was 0.016 of a log without the prior, 0.120 with it at 0.65
# and 0.072 at 0.8
CUT = 0.85
NEGATIVE_SHARE = 0.25  # the share of unlabelled lines sampled for fitting
# on the loss of logs that weigh 1 in all; out of fold with the words (AP mean / median, and the
# filter with signatures off): 1e-4 0.598 / 0.684, 0.908 / 0.944 / 0.0922; 5e-5 0.603 / 0.697,
# 0.908 / 0.946 / 0.0930; 3e-5 (the reference prior's) 0.603 / 0.722, 0.908 / 0.945 / 0.0959
L2 = 5e-5
ITERATIONS = 150
INNER_FOLDS = 3  # folds of the first stage's out-of-fold log-odds the second stage is fitted on
CONTEXT_L2 = 1e-3


@dataclass(frozen=True, slots=True)
class CaseData:
    """One labelled log as the prior sees it (per-line arrays have shape ``(n_lines,)``).

    Attributes:
        name: the case's file stem.
        repo: the repository it comes from (what folds are grouped by).
        n_lines: lines in the log.
        features: ``content_features`` over the whole log (0-based lines, one part each).
        facts: its exit verdicts and failure summaries.
        seen: earlier lines with the line's shape hash.
        ahead: lines with its shape hash within ``REACH`` after it.
        blank: the line is blank.
        labels: bool, the line is to be kept.
    """

    name: str
    repo: str
    n_lines: int
    features: LineFeatures
    facts: StreamFacts
    seen: Int64Array
    ahead: Int64Array
    blank: npt.NDArray[np.bool_]
    labels: npt.NDArray[np.bool_]


def _joined(parts: list[Int64Array]) -> Int64Array:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


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
    lines_l, ids_l, counts_l, near_l, near_ids_l, seen_l, shape_l, blank_l, verdict_l, static_l = (
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
    )
    base = 0
    for block in blocks:
        facts = preparer(block)
        table = token_table(facts.norm.text, facts.norm.ends)
        features = content_features(facts.norm.text, facts.norm.ends, table, facts.layout)
        lines_l.append(np.concatenate(features.lines) + base)
        ids_l.append(np.concatenate(features.ids))
        counts_l.append(features.counts)
        near_l.append(features.near_lines + base)
        near_ids_l.append(features.near_ids)
        static_l.append(features.static)
        shape_l.append(features.shapes)
        seen_l.append(counter.seen(shape_l[-1]))
        blank_l.append(facts.layout.blank)
        verdict_l.append(facts.verdicts + base)
        base += block.n_lines
    n = base
    labels = np.zeros(n, dtype=bool)
    for first, last in keep:
        labels[max(first, 1) - 1 : min(last, n)] = True
    static = np.concatenate(static_l) if static_l else np.zeros((0, 4), dtype=np.int64)
    verdicts = _joined(verdict_l)
    features = LineFeatures(
        [_joined(lines_l)],
        [_joined(ids_l)],
        _joined(counts_l),
        _joined(near_l),
        _joined(near_ids_l),
        _joined(shape_l),
        static,
    )
    stream = StreamFacts(
        verdicts,
        np.flatnonzero(static[:, 3]),
        int(verdicts[0]) if verdicts.shape[0] else -1,
        np.flatnonzero(static[:, 2]),
    )
    blank = np.concatenate(blank_l) if blank_l else np.zeros(0, dtype=bool)
    ahead = ahead_counts(_joined(shape_l), n)
    return CaseData(name, repo, n, features, stream, _joined(seen_l), ahead, blank, labels)


def labelled_ranges(meta: dict[str, Any]) -> list[list[int]]:
    """A case's lines to keep (``keep``) and every alternative range that holds the same text
    (``keep_alternatives``): each is a right answer, so each is a positive line to learn from."""
    return [*meta["keep"], *meta.get("keep_alternatives", [])]


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
        cases.append(extract(data, meta_path.stem, meta["repo"], labelled_ranges(meta)))
    return cases


def _padded(rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``rows`` with a row of zeros before and after (no line before the first, none after the last)."""
    pad = np.zeros((1, *rows.shape[1:]), dtype=rows.dtype)
    return np.concatenate((pad, rows, pad))


def _slots(case: CaseData) -> Int64Array:
    lines = np.arange(case.n_lines, dtype=np.int64)
    to_end = case.n_lines - 1 - lines
    return structure(lines, to_end, case.facts, case.seen, case.ahead, _padded(case.features.static), case.blank)


def first_stage(model: PriorModel, case: CaseData) -> Float64Array:
    """Shape ``(case.n_lines,)``: the first stage's log-odds of each line of a whole log."""
    logits = model.line_logits(case.features, case.n_lines)
    return model.logit(_padded(logits), _slots(case))


def _context(z: Float64Array) -> Float64Array:
    """``context_features`` of a whole log's lines (no line before the first nor after the last)."""
    pad = np.full(CONTEXT_REACH, ABSENT)
    return context_features(np.concatenate((pad, z, pad)))


def rate(model: PriorModel, case: CaseData) -> Float64Array:
    """Shape ``(case.n_lines,)``: the prior's probability of each line of a whole log, as the filter
    rates it at the stream's end."""
    return model.probability(_context(first_stage(model, case)))


def _allowed(cases: Sequence[CaseData]) -> npt.NDArray[np.bool_]:
    """Shape ``(N_FEATURES,)``: the word features that at least ``MIN_REPOS`` repositories have."""
    repos = sorted({c.repo for c in cases})
    index = {r: i for i, r in enumerate(repos)}
    pairs = [
        np.unique(np.concatenate((*c.features.ids, c.features.near_ids))) + N_FEATURES * index[c.repo] for c in cases
    ]
    unique = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, dtype=np.int64)
    return np.bincount(unique % N_FEATURES, minlength=N_FEATURES) >= MIN_REPOS


def _design(
    case: CaseData, rows: Int64Array, allowed: npt.NDArray[np.bool_]
) -> tuple[Int64Array, Int64Array, Float64Array]:
    """The sparse design of a case's ``rows`` (sorted lines): ``(row, column, value)`` triples, rows
    numbered ``0 .. len(rows) - 1``; columns: own words, the line above's, the line below's (each
    ``N_FEATURES``), then the structure slots and the bias."""
    n = case.n_lines
    local = np.full(n + 2, -1, dtype=np.int64)  # line + 1 -> its row
    local[rows + 1] = np.arange(rows.shape[0])
    lines, ids = case.features.lines[0], case.features.ids[0]
    scale = scale_of(case.features.counts)
    near_lines, near_ids = case.features.near_lines, case.features.near_ids
    r, c, v = [], [], []
    for at, cols, values in (
        (local[lines + 1], ids, scale[lines]),
        (local[near_lines + 2], near_ids + N_FEATURES, np.ones(near_lines.shape[0])),  # the line below's row
        (local[near_lines], near_ids + 2 * N_FEATURES, np.ones(near_lines.shape[0])),  # the line above's row
    ):
        ok = (at >= 0) & allowed[cols % N_FEATURES]
        r.append(at[ok])
        c.append(cols[ok])
        v.append(values[ok])
    slots = _slots(case)[rows]
    groups = slots.shape[1]
    r.append(np.repeat(np.arange(rows.shape[0], dtype=np.int64), groups + 1))
    c.append(
        np.hstack((slots + 3 * N_FEATURES, np.full((rows.shape[0], 1), 3 * N_FEATURES + len(STRUCTURE_NAMES)))).ravel()
    )
    v.append(np.ones(rows.shape[0] * (groups + 1)))
    return np.concatenate(r), np.concatenate(c), np.concatenate(v)


def _case_weights(labels: npt.NDArray[np.bool_]) -> Float64Array:
    """Each of a log's lines' weight: the log weighs 1, half on its labelled lines, half on the rest."""
    positives = int(labels.sum())
    return np.where(labels, 0.5 / max(1, positives), 0.5 / max(1, labels.shape[0] - positives))


def inner_folds(cases: Sequence[CaseData], k: int = INNER_FOLDS) -> list[int]:
    """Per case, its fold of ``k`` grouped by repository: repositories, most cases first (then by
    name), each to the fold with the fewest cases so far. Deterministic."""
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.repo] = counts.get(c.repo, 0) + 1
    sizes = [0] * k
    fold_of: dict[str, int] = {}
    for repo in sorted(counts, key=lambda r: (-counts[r], r)):
        f = sizes.index(min(sizes))
        fold_of[repo] = f
        sizes[f] += counts[repo]
    return [fold_of[c.repo] for c in cases]


def fit(cases: Sequence[CaseData], seed: int = 0, cut: float = CUT) -> PriorModel:
    """Fit the prior on ``cases`` (see the module's docstring): the first stage on every case; the
    second on the first stage's log-odds out of fold, ``INNER_FOLDS`` folds grouped by repository
    (so it learns how far to trust log-odds of logs the first stage never saw; stacked
    generalization, Wolpert 1992).

    Raises:
        ValueError: no case has a labelled line.
        ImportError: scipy is not installed (``pip install streamfilter[train]``).
    """
    if not any(c.labels.any() for c in cases):
        raise ValueError("the prior needs labelled lines to learn from")
    fold = inner_folds(cases)
    held: list[tuple[CaseData, Float64Array]] = []
    for k in range(INNER_FOLDS):
        inside = [c for c, f in zip(cases, fold, strict=True) if f != k]
        if not any(c.labels.any() for c in inside):
            continue  # (a tiny training set: this fold's first stage would have nothing to learn)
        first = _fit_first(inside, seed, cut)
        held += [(c, first_stage(first, c)) for c, f in zip(cases, fold, strict=True) if f == k]
    model = _fit_first(cases, seed, cut)
    return replace(model, context=_fit_context(held))


def _logistic(
    x: Any,
    xt: Any,
    y: Float64Array,
    w: Float64Array,
    penalty: Float64Array,
    start: Float64Array,
    maxiter: int | None = None,
) -> Float64Array:
    """The weights of an L2-regularized logistic regression (Cox 1958) by L-BFGS (scipy's
    ``L-BFGS-B``) from ``start``: rows ``x`` (shape ``(n, d)``, dense or sparse; ``xt`` its
    transpose), labels ``y`` and row weights ``w`` (shape ``(n,)``, summing to 1), ``penalty`` per
    weight (shape ``(d,)``), at most ``maxiter`` iterations (None: scipy's default)."""
    from scipy.optimize import minimize  # the train extra: only fitting needs it

    def loss(theta: Float64Array) -> tuple[float, Float64Array]:
        z = x @ theta
        value = float(w @ (np.logaddexp(0.0, z) - y * z)) + 0.5 * float(penalty @ (theta * theta))
        g: Float64Array = xt @ (w * (1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))) - y)) + penalty * theta
        return value, g

    options = {"maxiter": maxiter} if maxiter is not None else None
    fitted: Float64Array = minimize(loss, start, jac=True, method="L-BFGS-B", options=options).x
    return fitted


def _first_alone() -> Float64Array:
    """``PriorModel.context`` of a second stage that passes the first's log-odds through."""
    identity = np.zeros(len(CONTEXT_NAMES) + 1)
    identity[0] = 1.0
    return identity


def _fit_context(held: Sequence[tuple[CaseData, Float64Array]]) -> Float64Array:
    """The second stage's weights (``PriorModel.context``) fitted on logs and their out-of-fold
    first-stage log-odds (``_logistic``, ``CONTEXT_L2``), every log weighing the same as in the
    first stage; with no log, the first stage alone."""
    if not held:
        return _first_alone()
    x = np.hstack((np.vstack([_context(z) for _, z in held]), np.ones((sum(c.n_lines for c, _ in held), 1))))
    y = np.concatenate([c.labels for c, _ in held]).astype(np.float64)
    w = np.concatenate([_case_weights(c.labels) for c, _ in held])
    w /= w.sum()
    penalty = np.full(x.shape[1], CONTEXT_L2)
    penalty[-1] = 0.0
    return _logistic(x, x.T, y, w, penalty, _first_alone())


def _fit_first(cases: Sequence[CaseData], seed: int, cut: float) -> PriorModel:
    """The first stage fitted on ``cases`` (the second passes its log-odds through)."""
    from scipy.sparse import csr_matrix  # the train extra: only fitting needs it

    rng = np.random.default_rng(seed)
    allowed = _allowed(cases)
    r_l, c_l, v_l, y_l, w_l = [], [], [], [], []
    offset = 0
    for case in cases:
        pick = case.labels | (rng.random(case.n_lines) < NEGATIVE_SHARE)
        rows = np.flatnonzero(pick).astype(np.int64)
        y = case.labels[rows]
        w_l.append(_case_weights(y))
        y_l.append(y.astype(np.float64))
        r, c, v = _design(case, rows, allowed)
        r_l.append(r + offset)
        c_l.append(c)
        v_l.append(v)
        offset += rows.shape[0]
    width = 3 * N_FEATURES + len(STRUCTURE_NAMES) + 1
    # only the columns some training line has: L-BFGS's cost grows with the parameters it carries
    used, columns = np.unique(np.concatenate(c_l), return_inverse=True)
    x = csr_matrix((np.concatenate(v_l), (np.concatenate(r_l), columns)), shape=(offset, used.shape[0]))
    xt = x.T.tocsr()
    labels: Float64Array = np.concatenate(y_l)
    w = np.concatenate(w_l)
    w /= w.sum()
    penalty = np.where(used == width - 1, 0.0, L2)  # not the bias
    fitted = _logistic(x, xt, labels, w, penalty, np.zeros(used.shape[0]), ITERATIONS)
    theta = np.zeros(width)
    theta[used] = fitted
    words = theta[: 3 * N_FEATURES].astype(np.float32)
    words[np.tile(~allowed, 3)] = 0.0
    return PriorModel(
        words[:N_FEATURES].copy(),
        words[N_FEATURES : 2 * N_FEATURES].copy(),
        words[2 * N_FEATURES :].copy(),
        theta[3 * N_FEATURES : -1].copy(),
        float(theta[-1]),
        _first_alone(),
        float(cut),
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
    """The command line: fit on corpus folders, write the weights."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("corpus", type=Path, nargs="+", help="folders of NAME.log and NAME.json cases")
    parser.add_argument("--out", type=Path, required=True, help="where to write the weights (.npz)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cut", type=float, default=CUT, help=f"probability cut to ship (default {CUT})")
    parser.add_argument("--fixture", type=Path, help="write the test fixture (FIXTURE_LINES rated) here, as JSON")
    args = parser.parse_args(argv)
    cases = [case for folder in args.corpus for case in load_corpus(folder)]
    model = fit(cases, args.seed, args.cut)
    model.save(args.out)
    if args.fixture:
        shipped = PriorModel.load(args.out)  # as stored (float16 word weights)
        probability = rate(shipped, extract(b"".join(FIXTURE_LINES)))
        fixture = {"lines": [line.decode() for line in FIXTURE_LINES], "probability": probability.tolist()}
        args.fixture.write_text(json.dumps(fixture, indent=1) + "\n")
    kept = sum(int((words != 0).sum()) for words in (model.own, model.above, model.below))
    print(f"{len(cases)} cases, {kept} word features with a weight: {args.out}", file=sys.stderr)  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
