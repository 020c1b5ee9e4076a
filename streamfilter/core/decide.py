"""Scores -> KEEP/DROP (stage 5): the cut, and the line ranges protected hits keep.

The cut is Otsu's threshold (Otsu 1979, "A threshold selection method from
gray-level histograms") over the scores of recent windows that contain a query
term, floored by a configured minimum. It is computed once per group of
``group_windows`` windows, when the next group is complete, from a bounded
history ending at that next group's last window (so a group's cut sees the windows
after it as well as those before, and the first group is not judged on its own few
windows), so it depends only on window order, never on chunking.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

__all__ = ("CutTracker", "RepeatGate", "otsu_threshold", "protected_ranges")

FloatArray = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]


def otsu_threshold(values: FloatArray, bins: int = 64) -> float:
    """Otsu's threshold of ``values``: the cut that maximizes between-class variance.

    Args:
        values: shape ``(n,)`` scores, n >= 1.
        bins: histogram bins.

    Returns:
        The lowest value of the upper class: values ``>=`` it are the high class.
        When all values are equal, that value (everything is in the upper class).
    """
    lo, hi = float(values.min()), float(values.max())
    if hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return lo
    edges, centers = _bins(lo, hi, bins)
    # the same bins as np.histogram(values, bins, (lo, hi)), the last one closed
    index = np.minimum(((values - lo) * (bins / (hi - lo))).astype(np.int64), bins - 1)
    weight = np.bincount(index, minlength=bins).astype(np.float64)
    w0 = np.cumsum(weight)[:-1]
    w1 = weight.sum() - w0
    m0 = np.cumsum(weight * centers)[:-1]
    m1 = (weight * centers).sum() - m0
    valid = (w0 > 0) & (w1 > 0)
    # the weights count values (w0, w1 >= 1 where valid): dividing by at least 1 elsewhere gives
    # the same numbers where valid, without a masked copy of every array
    between = np.where(valid, w0 * w1 * (m0 / np.maximum(w0, 1.0) - m1 / np.maximum(w1, 1.0)) ** 2, 0.0)
    k = int(np.argmax(between))
    return float(edges[k + 1])


@functools.lru_cache(maxsize=16)
def _bins(lo: float, hi: float, bins: int) -> tuple[FloatArray, FloatArray]:
    """The ``bins + 1`` edges of equal bins over ``[lo, hi]`` (``np.linspace``) and the bins' centers.

    Cached: the history's least and greatest scores stay the same for many groups, and
    ``np.linspace`` costs more than the rest of the threshold. The arrays are read-only.
    """
    edges = np.linspace(lo, hi, bins + 1)
    centers = (edges[:-1] + edges[1:]) / 2.0
    edges.flags.writeable = centers.flags.writeable = False
    return edges, centers


class CutTracker:
    """The score cut per group of windows.

    Args:
        min_score: floor of the cut.
        group_windows: windows per group; a group's cut is known once the last
            window of the next group is scored, or at ``flush`` (this is the
            decision's look-ahead, in windows).
        history: how many recent term-bearing window scores Otsu sees.
        min_samples: below this many term-bearing windows in the history, the
            cut is the floor (every window with a query term is kept).
        wait_groups: while the history holds fewer than ``min_samples`` scores, a group's cut
            waits for up to this many more groups: a term a stream's first lines share with
            ordinary prose (``useful error messages`` in a CI machine's setup) is not kept for
            want of windows to compare it with, and a query whose terms stay rare still keeps
            every window that has one (the decision's look-ahead grows by as many windows).

    State is bounded by ``history`` scores and the cuts of undecided groups.
    """

    def __init__(
        self,
        min_score: float = 0.0,
        group_windows: int = 32,
        history: int = 1024,
        min_samples: int = 4,
        wait_groups: int = 8,
    ) -> None:
        self.min_score = min_score
        self.group = group_windows
        self.min_samples = min_samples
        self.wait_groups = wait_groups
        # the recent term-bearing scores, in no order (Otsu's threshold does not depend on it): a
        # ring of floats overwritten oldest first, so no Python float is made per window
        self._ring = np.zeros(history, dtype=np.float64)
        self._filled = 0  # scores in the ring
        self._oldest = 0  # where the next score goes once the ring is full
        self._pending = 0  # scored windows of the open group
        self._changed = False  # history changed since the last cut was computed
        self._last_cut: float | None = None
        self._cuts: dict[int, float] = {}
        self._closed = 0  # groups 0.._closed-1 are complete
        self.known_groups = 0  # groups 0..known_groups-1 have a cut

    def add(self, scores: FloatArray, has_term: npt.NDArray[np.bool_]) -> None:
        """Add the next windows' scores, in stream order."""
        i, n = 0, int(scores.shape[0])
        while i < n:
            take = min(self.group - self._pending, n - i)
            added = scores[i : i + take][has_term[i : i + take]]
            if added.shape[0]:  # the history changed: the next cut is computed again
                self._remember(added)
                self._changed = True
            self._pending += take
            i += take
            if self._pending == self.group:
                self._close_group()

    def _remember(self, scores: FloatArray) -> None:
        """Put ``scores`` in the ring, each over the oldest once it is full."""
        size = self._ring.shape[0]
        scores = scores[-size:]
        if self._filled < size:
            room = min(size - self._filled, scores.shape[0])
            self._ring[self._filled : self._filled + room] = scores[:room]
            self._filled += room
            scores = scores[room:]
        for part in (scores[: size - self._oldest], scores[size - self._oldest :]):  # up to the end, then from 0
            self._ring[self._oldest : self._oldest + part.shape[0]] = part
            self._oldest = (self._oldest + part.shape[0]) % size

    def _otsu_now(self) -> float:
        """The cut of the history as it is now."""
        recent = self._ring[: self._filled]
        return max(self.min_score, otsu_threshold(recent)) if self._filled >= self.min_samples else self.min_score

    def flush(self) -> None:
        """End of input: the groups without a cut, the open one too, get it from what was seen."""
        if self._pending:
            self._closed += 1
            self._pending = 0
        self._set_cuts(self._closed)

    def _close_group(self) -> None:
        self._closed += 1
        self._pending = 0
        if self._filled < self.min_samples and self._closed - 1 - self.known_groups < self.wait_groups:
            return  # too few scores to cut by yet: wait for more windows
        self._set_cuts(self._closed - 1)  # the group before this one now has the windows after it

    def _set_cuts(self, upto: int) -> None:
        """Groups ``known_groups..upto-1`` get the cut of the history as it is now."""
        if self.known_groups >= upto:
            return
        if self._changed or self._last_cut is None:
            self._last_cut, self._changed = self._otsu_now(), False
        for group in range(self.known_groups, upto):
            self._cuts[group] = self._last_cut
        self.known_groups = upto

    def cuts(self, windows: Int64Array, pending: float | None = None) -> FloatArray:
        """The cut in force for each window id.

        Args:
            windows: shape ``(w,)`` window ids, of groups not yet forgotten.
            pending: the cut given to a window of a group with no cut yet; with None,
                every window must be in a known group (else ``KeyError``).
        """
        groups = windows // self.group
        if groups.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        low = int(groups.min())  # the windows' groups are few and consecutive: one float per group
        span = range(low, int(groups.max()) + 1)
        per_group = np.asarray(
            [self._cuts[g] if pending is None else self._cuts.get(g, pending) for g in span], dtype=np.float64
        )
        cut: FloatArray = per_group[groups - low]
        return cut

    def cuts_now(self, windows: Int64Array) -> FloatArray:
        """Like ``cuts``, but a window of a group with no cut yet gets the cut of the history now."""
        if windows.shape[0] == 0 or int(windows.max()) // self.group < self.known_groups:
            return self.cuts(windows)
        return self.cuts(windows, pending=self._otsu_now())

    def forget_before(self, window: int) -> None:
        """Drop cuts of groups wholly before ``window`` (they are decided)."""
        for g in [g for g in self._cuts if (g + 1) * self.group <= window]:
            del self._cuts[g]


# most lines between a hit's continuation lines and more of them that are still its own
# (1: full recall 0.926, 2: 0.929, 3: 0.931, 5: 0.931 on the corpus; none: 0.918)
BRIDGE_LINES = 3


def bridged_ends(cont: npt.NDArray[np.bool_], breaks: Int64Array, ends: Int64Array) -> Int64Array:
    """Where runs of continuation lines end once a gap of at most ``BRIDGE_LINES`` lines after
    each is bridged to the continuation lines that follow it (a detail and its stack frames may
    follow after blank lines, as in Node's assertion errors).

    Args:
        cont: shape ``(n,)``: whether each line continues the one before it.
        breaks: the lines that do not (``~cont``), sorted, then ``n``.
        ends: shape ``(h,)``: each run's end, the first line past it (a break, or ``n``).

    Returns:
        shape ``(h,)``: each run's end after the bridge (``ends`` where none is bridged).
    """
    n = int(cont.shape[0])
    conts = np.append(np.flatnonzero(cont), n + BRIDGE_LINES + 1)  # (past the end: no more)
    more = conts[np.searchsorted(conts, ends)]  # the first continuation line after the gap
    more_end = breaks[np.searchsorted(breaks, np.minimum(more, n - 1), side="right")]
    bridged: Int64Array = np.where(more - ends <= BRIDGE_LINES, more_end, ends)
    return bridged


def protected_ranges(
    hits: Int64Array,
    cont: npt.NDArray[np.bool_],
    before: int,
    extend: int | Int64Array,
    section: npt.NDArray[np.bool_] | None = None,
    section_lines: int = 0,
    records: Int64Array | None = None,
    whole_record: npt.NDArray[np.bool_] | None = None,
    section_end: Int64Array | None = None,
) -> tuple[Int64Array, Int64Array]:
    """Line ranges kept around protected hits.

    Each hit keeps ``before`` lines before it and extends forward through the
    continuation lines that follow it (stack frames, indented notes, a trace's
    column-0 lines), and on through a gap of at most ``BRIDGE_LINES`` lines to the
    continuation lines after it, at most ``extend`` lines.

    Args:
        hits: shape ``(h,)``: indexes into ``cont`` of protected lines, sorted.
        cont: shape ``(n,)``: whether each line continues the one before it (all
            lines up to ``hit + extend`` must be present, or the array ends the stream).
        before: lines kept before each hit.
        extend: most lines kept after each hit (one for all, or shape ``(h,)``: each hit's).
        section: shape ``(h,)``: hits that head a section; those keep the
            ``section_lines`` lines after them whatever their indentation.
        section_lines: see ``section``.
        records: shape ``(n,)``: record id of each line (non-decreasing); when given,
            the lines before a hit are only taken from its own record.
        whole_record: shape ``(h,)``: hits (with ``records``) that keep the rest of
            their record, at most ``section_lines`` lines after them.
        section_end: shape ``(h,)``: the last line a section hit may keep (its section
            ends there, before ``section_lines``).

    Returns:
        ``(first, last)``: shape ``(h,)`` each, inclusive indexes into ``cont``.
    """
    n = int(cont.shape[0])
    if hits.shape[0] == 0:
        return hits, hits
    breaks = np.append(np.flatnonzero(~cont), n)  # lines that start something new (n: the end)
    next_break = breaks[np.searchsorted(breaks, hits, side="right")]
    last = np.minimum(bridged_ends(cont, breaks, next_break) - 1, hits + extend)
    if section is not None:
        stop = hits + section_lines if section_end is None else np.minimum(hits + section_lines, section_end)
        last = np.where(section, stop, last)
    if whole_record is not None and records is not None and whole_record.any():
        record_end = np.searchsorted(records, records[hits], side="right") - 1
        last = np.where(whole_record, np.minimum(record_end, hits + section_lines), last)
    last = np.minimum(last, n - 1)
    first = np.maximum(hits - before, 0)
    if records is not None:
        starts = np.flatnonzero(np.diff(records, prepend=np.int64(-2)) != 0)  # first line of each record
        first = np.maximum(first, starts[np.searchsorted(starts, hits, side="right") - 1])
    return first.astype(np.int64), np.maximum(last, hits).astype(np.int64)


class RepeatGate:
    """Admits the first ``max_repeats`` lines of each shape; the rest are repeats.

    A failure repeated by the hundred (the same ``Error: ...`` after every test) is
    protected the first few times; the developer needs the first, and the DROP
    summaries count the rest. Shapes are masked lines (``summarize.mask_shapes``).

    Args:
        max_repeats: how many lines of one shape are admitted.
        max_shapes: most shapes remembered; once full, unseen shapes are admitted
            (and not remembered), so memory stays bounded.
    """

    def __init__(self, max_repeats: int = 3, max_shapes: int = 10_000) -> None:
        self.max_repeats = max_repeats
        self.max_shapes = max_shapes
        self._seen: dict[bytes, int] = {}

    def admit(self, shapes: list[bytes]) -> npt.NDArray[np.bool_]:
        """For each shape, in stream order: whether it is still within ``max_repeats``."""
        out = np.ones(len(shapes), dtype=bool)
        seen = self._seen
        for i, shape in enumerate(shapes):
            count = seen.get(shape)
            if count is None:
                if len(seen) < self.max_shapes:
                    seen[shape] = 1
            elif count >= self.max_repeats:
                out[i] = False
            else:
                seen[shape] = count + 1
        return out
