"""Explain traces (``--explain``): why each window of a run was kept or dropped.

``StreamFilter`` hands a ``Tracer`` what each decision batch knew of its windows (``BatchFacts``);
``runs.RunBuilder`` has it trace the lines of each run (or piece of a KEEP run) as it adds them,
and takes the run's traces when it closes the run. A window two runs share is traced in both; a
window that goes on in a later batch, or past a short gap, stays one trace. At most
``MAX_TRACES`` windows are traced per run; the rest are counted (``Run.traces_omitted``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from .pending import PendingLines
from .records import WindowTrace

__all__ = ("MAX_TRACES", "BatchFacts", "Tracer")

MAX_TRACES = 256  # window traces kept per run with explain; the rest are counted

_Decision = Literal["keep", "drop"]
Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """What one decision batch knew of its windows and lines.

    The window arrays have shape ``(w,)``, index 0 = window ``first_window``, for the windows of
    the batch's lines; line indexes are pending indexes (``pending.PendingLines``).

    Attributes:
        first_window: id of the batch's first window.
        score: each window's BM25 score.
        term: the window holds a query term in a line that scores.
        prot: id of the signature of the window's first hit (``SignatureSet.names``), or -1.
        hit: 1-based line of the window's first hit, or 0.
        cut: the score cut in force for each window.
        window_keep: the window is kept (protected, or a query term and a score at the cut).
        head: lines below this are head lines.
        tail: lines from this on are tail lines...
        tail_end: ...up to this one (the tail's first exit verdict, or all).
        last: lines from this on are the stream's last lines, kept with the tail.
        natural: with a token budget's selection, shape ``(n,)``: each line's decision without it.
        weighed: with a baseline (``baseline.Novelty``): the window is kept for a score that
            reaches the cut only weighed up for its novel lines.
        novel: with a baseline: how many of the window's lines the last green run never printed.
        seen: with a baseline, shape ``(n,)``: each line was printed by the last green run too.
        after_seen: with a baseline, shape ``(n,)``: the line follows a hit (its continuation
            lines, its section), which keeps it without a baseline, and is ``seen``.
        lone: with a baseline, shape ``(n,)``: the line is a lone novel line (``Novelty.lone``).
        results: with ``FilterConfig.results``, shape ``(n,)``: the line is a test result line.
        weak: shape ``(n,)``: the line is kept only as a protected hit itself (``hits.weak_lines``:
            over-long, or redrawn with no query term).
    """

    first_window: int
    score: npt.NDArray[np.float64]
    term: BoolArray
    prot: Int64Array
    hit: Int64Array
    cut: npt.NDArray[np.float64]
    window_keep: BoolArray
    head: int
    tail: int
    tail_end: int
    last: int
    natural: BoolArray | None
    weighed: BoolArray | None = None
    novel: Int64Array | None = None
    seen: BoolArray | None = None
    after_seen: BoolArray | None = None
    lone: BoolArray | None = None
    results: BoolArray | None = None
    weak: BoolArray | None = None


def _termless(p: PendingLines, lines: Int64Array) -> str:
    """The reason dropped ``lines`` (pending indexes) of a window were not kept for a query term:
    ``weak-line`` (their terms are in over-long lines, which do not score), ``repeated-term`` (their
    terms do not count: the repeat rule), else ``no-term``."""
    if p.term[lines].any():
        return "weak-line"
    return "repeated-term" if p.uncounted[lines].any() else "no-term"


def _seen(why: BatchFacts, k: int, lines: Int64Array) -> bool:
    """Whether the dropped ``lines`` (pending indexes) of the batch's window ``k`` were dropped for
    the baseline: each was printed by the last green run too, and without a baseline the window
    (kept for a signature or its score) or the tail would have kept them."""
    if why.seen is None or not why.seen[lines].all():
        return False
    by_score = bool(why.term[k] and why.score[k] >= why.cut[k])
    return bool(why.prot[k] >= 0 or by_score or why.tail <= int(lines[0]) < why.tail_end)


class Tracer:
    """The window traces of the open KEEP run and the open DROP run.

    Args:
        names: signature names by id (``SignatureSet.names``), for ``protected:<name>``.
        prior_id: the learned prior's signature id (``SignatureSet.prior_id``; -1 without one).
        window_lines: N, most lines packed into a window (how far back a rating is looked up).
    """

    def __init__(self, names: tuple[str, ...], prior_id: int, window_lines: int) -> None:
        self._names = names
        self._prior_id = prior_id
        self._window_lines = window_lines
        self._facts: BatchFacts | None = None
        # (window id, trace) in line order, per open run
        self._traces: dict[_Decision, list[tuple[int, WindowTrace]]] = {"keep": [], "drop": []}
        self._omitted: dict[_Decision, int] = {"keep": 0, "drop": 0}
        self._traced: dict[_Decision, int] = {"keep": -1, "drop": -1}  # the window last traced for each open run
        self._gap: list[tuple[int, WindowTrace]] = []  # a short DROP run's traces, joining the KEEP run
        self._ratings: dict[int, tuple[float, tuple[str, ...]]] = {}  # 1-based line -> the prior's rating

    def begin(self, facts: BatchFacts) -> None:
        """The next decision batch: the lines traced until the next call are its lines."""
        self._facts = facts

    def rated(self, line: int, probability: float, words: tuple[str, ...]) -> None:
        """The prior rated 1-based ``line`` at its cut: ``probability``, and the ``words`` (features) that raised
        it most (``PriorModel.explain``: words and structure slots), shown in the trace of the window it protects."""
        self._ratings[line] = (probability, words)

    def forget_ratings(self, base: int) -> None:
        """Forget the ratings no trace looks up any more: ``base`` is the stream index of the first
        pending line, and a window's trace looks up the rating of its first hit, at most a window's
        lines back (a window holds up to 4 times ``window_lines`` with its continuation lines)."""
        for line in [k for k in self._ratings if k <= base - 4 * self._window_lines]:
            del self._ratings[line]

    def trace(self, p: PendingLines, a: int, b: int, decision: _Decision) -> None:
        """Record the windows of pending lines ``a .. b-1`` (of the current batch) for the open run."""
        traces = self._traces[decision]
        # the piece's lines grouped by window, in window order (one sort: a piece of a hundred
        # thousand lines has ten thousand windows, and comparing each with every line was quadratic)
        window = p.window[a:b]
        order = np.argsort(window, kind="stable")  # (stable: each window's lines in line order)
        ordered = window[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if b > a else np.zeros(0, dtype=np.int64)
        ends = np.r_[starts[1:], ordered.shape[0]]
        ids = ordered[starts].tolist()
        for i, w in enumerate(ids):
            lines = order[starts[i] : ends[i]] + a  # its lines in this piece
            if self._traced[decision] == w:  # the same window, continued (a later batch, or past a short gap)
                # traces are added in line order, so a listed one is the last (an omitted one stays counted)
                if traces and traces[-1][0] == w:
                    last = traces[-1][1]
                    if last.reason == "short-gap":  # the gap's window goes on here: it has this window's reason
                        fresh = self._new_trace(p, w, a, b, lines, decision)
                        traces[-1] = (w, replace(fresh, first_line=last.first_line))
                    else:
                        traces[-1] = (w, replace(last, last_line=p.base + int(lines[-1]) + 1))
                continue
            if len(traces) >= MAX_TRACES:  # this window and every later one of the piece: counted
                self._omitted[decision] += len(ids) - i
                self._traced[decision] = ids[-1]
                break
            self._traced[decision] = w
            traces.append((w, self._new_trace(p, w, a, b, lines, decision)))

    def _new_trace(
        self,
        p: PendingLines,
        w: int,
        a: int,
        b: int,
        lines: Int64Array,
        decision: _Decision,
    ) -> WindowTrace:
        """The trace of window ``w`` in the open run: its ``lines`` there (pending indexes in ``a..b-1``)."""
        why = self._facts
        assert why is not None
        k = w - why.first_window
        prot = int(why.prot[k])
        if decision == "keep":
            if prot >= 0:
                reason = f"protected:{self._names[prot]}"
            elif why.window_keep[k]:
                reason = "novel" if why.weighed is not None and why.weighed[k] else "score"
            else:
                first = int(lines[0])  # in this run
                tail = why.tail <= first < why.tail_end or first >= why.last
                marks = (
                    ("head", first < why.head),
                    ("tail", tail),
                    ("result", why.results is not None and bool(why.results[first])),
                    ("novel-line", why.lone is not None and bool(why.lone[first])),
                )
                reason = next((name for name, marked in marks if marked), "context")
        elif why.natural is not None and why.natural[a:b][p.window[a:b] == w].any():
            reason = "budget"  # kept on its own, not chosen within the token budget
        elif why.after_seen is not None and why.after_seen[lines].any():
            reason = "seen-after-hit"  # what follows a hit, printed by the last green run too
        elif _seen(why, k, lines):
            reason = "seen"
        elif prot >= 0 and (why.weak is None or why.weak[lines].any() or prot != self._prior_id):
            reason = "weak-line"  # an over-long or redrawn line in a kept window
        elif prot >= 0:
            # the learned prior keeps the lines around its line, not its whole window as a signature does
            reason = "beside-prior"
        elif why.window_keep[k]:  # kept for its score: these lines hold no query term
            reason = _termless(p, lines)
        elif p.repeat[lines].any():
            reason = "duplicate"  # a failure line whose shape was protected max_repeats times already
        elif why.term[k]:
            reason = "below-cut"
        else:  # its query terms, if any, are in over-long lines (they do not score) or repeats
            reason = _termless(p, lines)
        hit_line = int(why.hit[k]) if prot >= 0 else 0
        prior, features = self._ratings.get(hit_line, (0.0, ())) if prot == self._prior_id else (0.0, ())
        return WindowTrace(
            p.base + int(lines[0]) + 1,
            p.base + int(lines[-1]) + 1,
            round(float(why.score[k]), 6),
            round(float(why.cut[k]), 6),
            reason,
            # its first failure line, also when it is past this run (a lead-up to it) or before it
            hit_line,
            prior,
            features,
            int(why.novel[k]) if why.novel is not None else None,
        )

    def take(self, decision: _Decision) -> tuple[tuple[WindowTrace, ...], int]:
        """The closing run's traces in line order, and how many windows were left out of them."""
        traces = tuple(sorted((t for _, t in self._traces[decision]), key=lambda t: t.first_line))
        omitted = self._omitted[decision]
        self._traces[decision], self._omitted[decision], self._traced[decision] = [], 0, -1
        return traces, omitted

    def gap_joins(self) -> None:
        """The open DROP run is a short gap that joins the open KEEP run (``RunBuilder``): its
        traces go with the KEEP run's lines (``gap_piece_ends``, ``gap_joined``); its omitted
        windows are not counted."""
        self._gap = self._traces["drop"]
        self._traces["drop"], self._omitted["drop"], self._traced["drop"] = [], 0, -1

    def gap_piece_ends(self, line: int) -> None:
        """The KEEP piece the gap joins ends at 1-based ``line`` of the gap (``max_keep_event_bytes``):
        it gets the gap's windows up to there; a window that goes on is in the next piece too."""
        self._merge_gap(
            [(w, replace(t, last_line=min(t.last_line, line))) for w, t in self._gap if t.first_line <= line]
        )
        self._gap = [
            (w, replace(t, first_line=max(t.first_line, line + 1))) for w, t in self._gap if t.last_line > line
        ]

    def gap_joined(self) -> None:
        """The gap's last lines joined the open KEEP piece: it gets their windows."""
        self._merge_gap(self._gap)
        self._gap = []

    def _merge_gap(self, traces: list[tuple[int, WindowTrace]]) -> None:
        """Add a kept short gap's window traces (its lines in the open KEEP piece) to the piece's.

        The piece's last window, going on over the gap, reaches over it instead (or stays counted
        once when omitted); another is a ``short-gap`` window, within the piece's ``MAX_TRACES``
        (the KEEP lines after the gap give it their reason when it goes on there, see ``trace``).
        """
        keep = self._traces["keep"]
        for w, t in traces:
            if w == self._traced["keep"]:
                if keep and keep[-1][0] == w:
                    keep[-1] = (w, replace(keep[-1][1], last_line=t.last_line))
                continue
            self._traced["keep"] = w
            if len(keep) >= MAX_TRACES:
                self._omitted["keep"] += 1
            else:
                keep.append((w, replace(t, reason="short-gap")))
