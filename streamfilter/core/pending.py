"""The lines a filter has read but not yet emitted, and the windows they lie in.

``StreamFilter`` appends each block's facts here and trims the lines it has decided; the stages
that read them (``hits``, ``runs``, ``explain``) are handed these stores, never a line at a time.
Indexes: a *pending index* counts from the first pending line (stream line index ``base``); a
*stream index* is the 0-based line number in the stream; a window is named by its 0-based id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ("PendingLines", "WindowTable")

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _int64() -> Int64Array:
    return np.zeros(0, dtype=np.int64)


def _bool() -> BoolArray:
    return np.zeros(0, dtype=bool)


@dataclass(slots=True)
class PendingLines:
    """Per-line arrays and raw bytes of the lines not yet emitted (index 0 = stream line ``base``).

    Every per-line array has shape ``(n,)`` (``tf``: ``(n, terms)``), n the pending lines; the
    prior's arrays (``logit``, ``static``, ``seen``, ``shape``, ``blank``) stay empty without a prior.

    Attributes:
        base: stream index of pending line 0.
        ends: stream offset (bytes) one past each line's last byte.
        shape_ends: offset one past each line's shape in the stream's line shapes
            (``summarize.line_shapes``).
        warnings: warnings counted in each line (``summarize.warn_counts``).
        term: whether the line holds a query term (one that counts).
        uncounted: the line holds query terms that do not count: its shape held one on
            ``filter.TERM_REPEATS`` lines before (the repeat rule).
        repeat: a failure line past its shape's ``max_repeats`` (not protected).
        frames: carriage-return frames drawn in the line.
        window: the line's window id (-1 until the segmenter assigns it).
        cont: the line continues the record above it.
        record: the line's record id (-1 until assigned).
        forced: kept whatever its window (around a hit, a carried record or section).
        hit: the line is a protected hit itself.
        lead: kept before a hit: its context and lead-in lines (``forced`` too).
        tokens: tokens in the line's scoring text.
        tf: query term counts, one column per term.
        logit: shape ``(n, 3)``: the prior's word logits (``PriorModel.line_logits``).
        static: shape ``(n, 4)``: the prior's static line features (``LineFeatures.static``).
        seen: earlier lines of the stream with the line's shape hash.
        shape: the line's shape hash (``prior.shape_hashes``).
        blank: the line is blank.
        buf: the raw bytes of the pending lines.
        buf_start: stream offset of ``buf[0]``.
        shapes: the line shapes of the pending lines (for DROP summaries).
        shapes_start: offset of ``shapes[0]`` in the stream's line shapes.
        stops: stream indexes of pending lines that end sections (``BlockFacts.section_stops``), sorted.
        verdicts: stream indexes of pending lines with a command's exit verdict, sorted.
    """

    base: int = 0
    ends: Int64Array = field(default_factory=_int64)
    shape_ends: Int64Array = field(default_factory=_int64)
    warnings: Int64Array = field(default_factory=_int64)
    term: BoolArray = field(default_factory=_bool)
    uncounted: BoolArray = field(default_factory=_bool)
    repeat: BoolArray = field(default_factory=_bool)
    frames: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    window: Int64Array = field(default_factory=_int64)
    cont: BoolArray = field(default_factory=_bool)
    record: Int64Array = field(default_factory=_int64)
    forced: BoolArray = field(default_factory=_bool)
    hit: BoolArray = field(default_factory=_bool)
    lead: BoolArray = field(default_factory=_bool)
    tokens: Int64Array = field(default_factory=_int64)
    tf: Int64Array = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    logit: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 3), dtype=np.float64))
    static: Int64Array = field(default_factory=lambda: np.zeros((0, 4), dtype=np.int64))
    seen: Int64Array = field(default_factory=_int64)
    shape: Int64Array = field(default_factory=_int64)
    blank: BoolArray = field(default_factory=_bool)
    buf: bytearray = field(default_factory=bytearray)
    buf_start: int = 0
    shapes: bytearray = field(default_factory=bytearray)
    shapes_start: int = 0
    stops: Int64Array = field(default_factory=_int64)
    verdicts: Int64Array = field(default_factory=_int64)

    def line_start(self, i: int) -> int:
        """Stream offset of pending line ``i``'s first byte."""
        return int(self.ends[i - 1]) if i > 0 else self.buf_start

    def lengths(self, a: int, b: int) -> Int64Array:
        """Shape ``(b - a,)``: the raw length in bytes of pending lines ``a .. b-1``."""
        lengths: Int64Array = np.diff(self.ends[a:b], prepend=np.int64(self.line_start(a)))
        return lengths

    def line(self, i: int) -> bytes:
        """The raw bytes of pending line ``i``, with its line end."""
        return bytes(self.buf[self.line_start(i) - self.buf_start : int(self.ends[i]) - self.buf_start])

    def line_shapes(self, a: int, b: int) -> bytes:
        """The shapes of pending lines ``a .. b-1``, each with its line end."""
        first = (int(self.shape_ends[a - 1]) if a > 0 else self.shapes_start) - self.shapes_start
        return bytes(self.shapes[first : int(self.shape_ends[b - 1]) - self.shapes_start])

    def trim(self, n: int) -> None:
        """Forget the first ``n`` pending lines (``n >= 1``; decided and accounted for)."""
        end = int(self.ends[n - 1])
        del self.buf[: end - self.buf_start]
        self.buf_start = end
        shapes_end = int(self.shape_ends[n - 1])
        del self.shapes[: shapes_end - self.shapes_start]
        self.shapes_start = shapes_end
        self.base += n
        self.stops = self.stops[self.stops >= self.base]
        self.verdicts = self.verdicts[self.verdicts >= self.base]
        self.ends, self.shape_ends, self.warnings = self.ends[n:], self.shape_ends[n:], self.warnings[n:]
        self.term, self.repeat, self.frames = self.term[n:], self.repeat[n:], self.frames[n:]
        self.uncounted = self.uncounted[n:]
        self.window, self.cont, self.record = self.window[n:], self.cont[n:], self.record[n:]
        self.forced, self.hit, self.lead = self.forced[n:], self.hit[n:], self.lead[n:]
        self.tokens, self.tf = self.tokens[n:], self.tf[n:]
        self.logit, self.static, self.seen = self.logit[n:], self.static[n:], self.seen[n:]
        self.shape, self.blank = self.shape[n:], self.blank[n:]


@dataclass(slots=True)
class WindowTable:
    """Per-window facts of the windows pending lines lie in (index 0 = window ``base``).

    Every array has shape ``(w,)``, w the windows held.

    Attributes:
        base: id of window 0.
        score: BM25 score (0 until scored).
        term: the window holds a query term in a line that scores.
        prot: id of the signature that protects the window's first hit (``SignatureSet.names``),
            or -1.
        hit: 1-based line of the window's first hit, or 0.
    """

    base: int = 0
    score: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    term: BoolArray = field(default_factory=_bool)
    prot: Int64Array = field(default_factory=_int64)
    hit: Int64Array = field(default_factory=_int64)

    def grow(self, top: int) -> None:
        """Hold windows up to id ``top - 1`` (new ones unscored and unprotected)."""
        grow = top - self.base - self.score.shape[0]
        if grow > 0:
            self.score = np.concatenate((self.score, np.zeros(grow)))
            self.term = np.concatenate((self.term, np.zeros(grow, dtype=bool)))
            self.prot = np.concatenate((self.prot, np.full(grow, -1, dtype=np.int64)))
            self.hit = np.concatenate((self.hit, np.zeros(grow, dtype=np.int64)))

    def forget_before(self, window: int) -> None:
        """Drop the windows before id ``window`` (no pending line lies in them)."""
        if window > self.base:
            k = window - self.base
            self.score, self.term, self.prot, self.hit = self.score[k:], self.term[k:], self.prot[k:], self.hit[k:]
            self.base = window
