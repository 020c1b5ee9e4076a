from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Plus

from streamfilter.core.score import BM25Scorer
from streamfilter.core.tokens import Query

DOCS = [
    b"collected 12 items",
    b"tests/test_a.py::test_one PASSED",
    b"tests/test_a.py::test_two FAILED\nAssertionError: assert 1 == 2",
    b"=== 1 failed, 11 passed in 0.3s ===",
    b"",
    b"error: could not compile `foo` due to previous error",
]


def windows_of(docs: list[bytes], q: Query) -> tuple[list[list[bytes]], np.ndarray, np.ndarray]:
    toks = [q.terms_in(d) for d in docs]
    lengths = np.asarray([len(t) for t in toks], dtype=np.int64)
    tf = np.asarray([[Counter(t)[term] for term in q.terms] for t in toks], dtype=np.int64).reshape(len(docs), -1)
    return toks, lengths, tf


@pytest.mark.parametrize("query", ["failed", "error failed", "assert", "nothing here", "failed failed error"])
def test_scores_equal_rank_bm25_bm25plus_prefix_by_prefix(query: str) -> None:
    q = Query.parse(query)
    toks, lengths, tf = windows_of(DOCS, q)
    ours = BM25Scorer(len(q.terms)).score(lengths, tf)
    for i in range(len(DOCS)):
        corpus = toks[: i + 1]
        if sum(map(len, corpus)) == 0:
            continue  # rank-bm25 divides by a zero average length here
        oracle = BM25Plus(corpus).get_scores(list(q.terms))
        assert ours[i] == pytest.approx(oracle[i], abs=1e-9)


def test_incremental_calls_equal_one_call() -> None:
    q = Query.parse("error failed")
    _, lengths, tf = windows_of(DOCS, q)
    whole = BM25Scorer(2).score(lengths, tf)
    s = BM25Scorer(2)
    parts = np.concatenate([s.score(lengths[:2], tf[:2]), s.score(lengths[2:3], tf[2:3]), s.score(lengths[3:], tf[3:])])
    assert np.allclose(parts, whole, atol=1e-12, rtol=0)


@pytest.mark.parametrize("n_before", [0, 1, 2, 3])
def test_term_window_never_scores_below_equal_window_without_it(n_before: int) -> None:
    # the same window twice, once with the term and once with a neutral word, after n windows that all have it
    q = Query.parse("failed")
    docs = [b"step failed here"] * n_before + [b"step failed here", b"step passed here"]
    _, lengths, tf = windows_of(docs, q)
    scores = BM25Scorer(1).score(lengths, tf)
    assert scores[-2] > scores[-1]


def test_term_in_every_window_keeps_a_positive_idf() -> None:
    q = Query.parse("failed")
    _, lengths, tf = windows_of([b"failed a", b"failed b", b"failed c"], q)
    assert (BM25Scorer(1).score(lengths, tf) > 0).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([b"error", b"fail", b"ok", b"x", b"warn"]), max_size=12), min_size=1, max_size=10)
)
def test_random_corpora_match_the_oracle(docs_tokens: list[list[bytes]]) -> None:
    q = Query.parse("error fail")
    docs = [b" ".join(d) for d in docs_tokens]
    toks, lengths, tf = windows_of(docs, q)
    if sum(map(len, toks)) == 0:
        return
    ours = BM25Scorer(len(q.terms)).score(lengths, tf)
    oracle = BM25Plus(toks).get_scores(list(q.terms))
    assert ours[-1] == pytest.approx(oracle[-1], abs=1e-9)


@pytest.mark.parametrize(("name", "value"), [("k1", 1e308), ("k1", -1.0), ("b", 1.5), ("delta", float("nan"))])
def test_parameters_outside_their_ranges_raise_a_value_error_naming_them(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=f"BM25 {name} must be"):
        BM25Scorer(1, **{name: value})


@pytest.mark.parametrize(("k1", "b"), [(0.0, 0.75), (1.5, 1.0), (0.0, 1.0)])
def test_scores_stay_finite_at_the_ends_of_the_ranges_also_for_empty_windows(k1: float, b: float) -> None:
    """k1 = 0 or b = 1 with a window of no tokens made a term's fraction 0/0 (NaN); it is 0."""
    lengths = np.array([0, 3, 0, 5], dtype=np.int64)
    tf = np.array([[0], [1], [0], [0]], dtype=np.int64)
    scores = BM25Scorer(1, k1=k1, b=b).score(lengths, tf)
    assert np.isfinite(scores).all()
    assert scores[1] > max(scores[2], scores[3]) > 0  # idf * delta for the windows without the term
