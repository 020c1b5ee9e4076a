"""Windows -> BM25 scores (stage 4), with corpus statistics updated incrementally.

The formula is BM25 (Robertson & Zaragoza 2009) in the BM25+ form of Lv & Zhai
(2011) exactly as rank-bm25's ``BM25Plus`` computes it::

    idf(t)      = ln((N + 1) / df(t))            (0 for a term no window has had)
    score(w, q) = sum_t idf(t) * (delta + tf(t,w) * (k1 + 1)
                                  / (k1 * (1 - b + b * |w| / avgdl) + tf(t,w)))

This IDF stays positive for a term found in every window (BM25Okapi's does not,
and raises on an empty corpus). Window ``i`` is scored with the statistics of
windows ``0..i`` (N = i + 1), so a window's score depends only on the stream up
to it, never on how the stream was chunked. rank-bm25 adds ``idf * delta`` even
where ``tf = 0``; the decision stage therefore also requires a query term to be
present (``tf > 0``), so a window without a term never outranks one with it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ("BM25Scorer",)

FloatArray = npt.NDArray[np.float64]

# k1 and delta: 0 to 100 (common values 1.2-2.0 and 0.5-1.0; past that a window's length
# no longer matters, and scores near 1e308 overflow); b: 0 to 1 by definition
PARAMETER_RANGES = {"k1": (0.0, 100.0), "b": (0.0, 1.0), "delta": (0.0, 100.0)}


class BM25Scorer:
    """Incremental BM25+ over the stream's windows.

    Args:
        n_terms: number of distinct query terms.
        k1: term-frequency saturation (rank-bm25 default 1.5).
        b: length normalization (rank-bm25 default 0.75).
        delta: BM25+ lower bound per term (rank-bm25 default 1.0).

    State: the number of windows seen, their total length in tokens, and one
    document frequency per query term: O(n_terms), whatever the stream's length.

    Raises:
        ValueError: a parameter outside ``PARAMETER_RANGES`` (where scores stay finite
            and a term's weight grows with its frequency).
    """

    def __init__(self, n_terms: int, k1: float = 1.5, b: float = 0.75, delta: float = 1.0) -> None:
        for name, value in (("k1", k1), ("b", b), ("delta", delta)):
            low, high = PARAMETER_RANGES[name]
            if not low <= value <= high:  # NaN fails too
                raise ValueError(f"BM25 {name} must be {low} to {high}, not {value}")
        self.k1, self.b, self.delta = k1, b, delta
        self.windows = 0
        self.total_tokens = 0
        self.df = np.zeros(n_terms, dtype=np.int64)

    def score(self, lengths: npt.NDArray[np.int64], tf: npt.NDArray[np.int64]) -> FloatArray:
        """Score the next windows of the stream, in order, and add them to the statistics.

        Args:
            lengths: shape ``(W,)``: tokens in each window.
            tf: shape ``(W, n_terms)``: occurrences of each query term in each window.

        Returns:
            shape ``(W,)`` float64 scores; window ``i`` uses the statistics of every
            window before it and itself.
        """
        n_windows = int(lengths.shape[0])
        if n_windows == 0:
            return np.zeros(0, dtype=np.float64)
        n = self.windows + np.arange(1, n_windows + 1, dtype=np.float64)
        total = self.total_tokens + np.cumsum(lengths, dtype=np.float64)
        avgdl = total / n
        df = self.df + np.cumsum(tf > 0, axis=0)
        self.windows += n_windows
        self.total_tokens += int(lengths.sum())
        self.df = df[-1].copy()
        if tf.shape[1] == 0:
            return np.zeros(n_windows, dtype=np.float64)
        with np.errstate(divide="ignore"):
            idf = np.where(df > 0, np.log((n[:, None] + 1.0) / np.maximum(df, 1)), 0.0)
        # avgdl is 0 only while every window so far is empty: then every tf and idf is 0 too
        norm = self.k1 * (1.0 - self.b + self.b * lengths / np.where(avgdl > 0, avgdl, 1.0))
        # a term absent from a window adds idf * delta: its fraction is 0, also where the
        # denominator is 0 too (an empty window at b = 1, or k1 = 0), where 0/0 would be NaN
        saturation = np.divide(
            tf * (self.k1 + 1.0), norm[:, None] + tf, out=np.zeros(tf.shape, dtype=np.float64), where=tf > 0
        )
        scores: FloatArray = (idf * (self.delta + saturation)).sum(axis=1)
        return scores
