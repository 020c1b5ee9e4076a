"""Protected hits (stage 5b): the lines a failure signature or the learned prior protects, and
the lines each keeps around it.

A *hit* is a line a failure signature matches (``signatures.SignatureSet``) or the learned line
prior rates at its cut (``prior``). ``Hits`` admits a block's signature hits (each signature's
``max_hits``, at most ``max_repeats`` lines of one shape), queues them until the lines they may
keep have come in, then applies them to the pending lines: each keeps the context before it and
the lead-in lines right before that, and its continuation lines or its section after it
(``decide.protected_ranges``). ``PriorRater`` rates the lines once their context is in and queues
those at its cut as hits of the signature ``prior``. A *weak* line (``weak_lines``) is kept only
when it is a hit itself.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from .decide import RepeatGate, protected_ranges
from .explain import Tracer
from .normalize import normalize_block, strip_ansi
from .pending import PendingLines, WindowTable
from .prepare import BlockFacts
from .prior import (
    ABSENT,
    CONTEXT_REACH,
    REACH,
    STRUCTURE_GROUPS,
    PriorModel,
    ShapeCounter,
    StreamFacts,
    ahead_counts,
    context_features,
    structure,
)
from .signatures import LEAD_IN, LEAD_LINES, SignatureSet

__all__ = (
    "PRIOR_AFTER",
    "PRIOR_BEFORE",
    "PRIOR_EXTEND",
    "PRIOR_FLOOR",
    "PRIOR_HEAD",
    "PRIOR_REPEATS",
    "PRIOR_SURE",
    "PRIOR_TOP",
    "REDRAW_FRAMES",
    "STREAM_TOP",
    "TOP_FLOOR",
    "Hits",
    "PriorRater",
    "weak_lines",
)

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
_Row = TypeVar("_Row", np.float64, np.int64)

# a line redrawn more often than this (carriage returns) is a progress display, not a message; CI
# logs put a few CRs in ordinary lines (Travis's "\r\x1b[0K" fold markers, testify's overwrites),
# labelled as needed in the corpus with up to 5 frames; progress bars redraw by the dozen
REDRAW_FRAMES = 9
# lines of one shape (``prior.shape_hashes``) the prior keeps per stream: a path or an id is one
# token of a shape, so a lint's findings in thirty files are thirty lines of one shape (out of fold,
# signatures off, cut 0.65: full recall 0.862 with a cap of 5, 0.877 with 10, 0.894 with 30, 0.896
# with 100, median out_ratio 0.089 to 0.093); a line repeated by the hundred is still not kept each time
PRIOR_REPEATS = 30
# most lines a line of the prior keeps after it through its continuation lines (a signature's keep
# ``extend_lines``): a likely failure line, not a known one, keeps its own block, not a whole trace
# (out of fold, signatures off, with PRIOR_AFTER 2: full / mean recall / median out_ratio 0.904 /
# 0.944 / 0.0820 with 20, 0.908 / 0.945 / 0.0820 with 30, 0.909 / 0.946 / 0.0820 with 40, 0.911 /
# 0.948 / 0.0824 with 60, whose total out_ratio is past 20's with PRIOR_AFTER 5)
PRIOR_EXTEND = 40
# lines of one shape the stretch a hit keeps after it keeps (its continuation lines, its section):
# a list under a failure is one shape many times (the files a step archived after "psql: error:",
# a kernel build's CC lines after an "error:", a recursion's identical frames, helper-76), which a
# DROP summary names as "148× ..."; a failure's own lines are of shapes of their own
CONT_REPEATS = 30
# a line of the prior keeps, from up to this many lines above it, the line its block hangs from (its
# record's first line, or the nearest less indented line: an exception's message over its frames, a
# test's name over its table of fields) and the lines between (out of fold, signatures off: full
# recall 0.894 -> 0.909 at median out_ratio 0.0922 -> 0.0927; 10 lines: 0.896 at 0.0927)
PRIOR_HEAD = 20
# lines a line of the prior keeps before it and, within its record, whatever its continuation, after it
# (the reference prior's selection): it takes these, not its whole window as a signature's line does.
# Its continuation (PRIOR_EXTEND) and the line its block hangs from (PRIOR_HEAD) hold the rest: out
# of fold, signatures off, 2 and 5 lines gave 0.904 / 0.945 / 0.0877, 2 and 2 0.904 / 0.945 / 0.0832,
# 1 and 2 0.904 / 0.944 / 0.0820 (0 before as 1: the head rule keeps it), 2 and 0 0.877 / 0.932 / 0.0819
PRIOR_BEFORE, PRIOR_AFTER = 1, 2
# at the end of a stream that ends in a failure (an exit verdict or a failure summary in its last
# REACH lines), those lines' PRIOR_TOP most probable (of at least PRIOR_FLOOR) are the prior's lines
# too, under the cut or not: the failure is most often near the end, and a log of an unknown tool
# may have no line at the cut (out of fold, signatures off, on two seeds: full recall
# 0.857 / 0.859 -> 0.869 / 0.869 for the same bytes; 3 lines, or a floor of 0.1, measured the
# same; 0.3 0.861 on the second seed, 0.4 0.859 on the first; 0.25 as 0.2 on both). A failed
# command's most probable lines are read again for only at PRIOR_FLOOR or more too (``live.batch``).
PRIOR_TOP, PRIOR_FLOOR = 2, 0.25
# so too, of at least TOP_FLOOR, at the end of a stream where no failure was found (``Hits.found``,
# ``PriorRater.sure``) and that is not known to have passed: a tool's own run often ends in no
# verdict ("./deploy.sh: line 11: DB_REPLICA_HOST: unbound variable", rated 0.23 and first of its
# 360 lines, 100 before the end). The corpus out of fold the same (its logs end in verdicts);
# benchmarks/realtools, signatures off, 0.689 / 0.826 / 0.0738 -> 0.722 / 0.860 / 0.0758, on 0.867
# / 0.934 / 0.0741 -> 0.889 / 0.951 / 0.0749 (a floor of 0.15: 0.711 / 0.849, 0.05: the median
# 0.0798). At every stream's end, found or not, the same but a go test's output whose panic was
# found kept two "--- PASS" lines of its end too (benchmarks/quality.md, session 55).
TOP_FLOOR = 0.1
# a line within PRIOR_NEAR_LINES of a line that holds a query term is the prior's at PRIOR_NEAR_CUT,
# under the cut: the query found the failure's line, the prior its neighbours in the tool's own
# words (tar's "Unexpected EOF in archive" over "Error is not recoverable"). Out of fold, signatures
# off, with the model's cut (full / mean recall / median out_ratio, total): cut 0.8 alone 0.871 /
# 0.930 / 0.0681 (0.1225); cut 0.85 with 0.5 and 1 line 0.876 / 0.932 / 0.0676 (0.1177); 0.45 0.877 /
# 0.933 / 0.0690; 0.6 0.871 / 0.929 / 0.0670; 2 lines 0.877 / 0.936 / 0.0706; cut 0.8 with 0.5 and 1
# line 0.889 / 0.939 / 0.0706; cut 0.88 with 0.45 0.859 / 0.924 / 0.0668. Signatures on, cut 0.85
# with 0.5 and 1 line: 0.956 / 0.985 / 0.0720 (0.1548; cut 0.8 alone 0.955 / 0.985 / 0.0720, 0.1595).
# On benchmarks/realtools (shipped weights), signatures off: 0.556 / 0.778 / 0.0680 -> 0.689 / 0.826
# / 0.0738 (benchmarks/quality.md, session 53)
PRIOR_NEAR_CUT, PRIOR_NEAR_LINES = 0.5, 1
# a line at the cut is the prior's only when its first stage alone gives it at least this: the second
# stage raises a line beside a likely one (a failure is a block), but a noise line beside a traceback
# is not the failure, and the kept lines grow into their neighbours anyway (out of fold, signatures
# off, cut 0.65, session 35's model: 0.877 / 0.940 / 0.0940 with 0.2, 0.882 / 0.941 / 0.0981 without;
# with the words: 0.909 / 0.945 / 0.0927 with 0.2, 0.908 / 0.944 / 0.0922 with 0.25, 0.906 / 0.943 /
# 0.0918 with 0.3; at 0.25 the next passing TAP suite's header after a failed one, 0.22, is not one)
PRIOR_OWN = 0.25
# a line that counts failures (``prior._FAILURE_SUMMARY``: "29 passed, 1 failed", "Failures: 2") and
# whose shape has at least 2 other lines before it or within REACH after it is one suite's or file's
# result among many: it is the prior's line whatever its probability, the first COUNT_REPEATS of
# a shape. Its shape's lines count 0 failures (or count them in other words) and are not marked;
# in a DROP summary the numbers are masked, and the one result that failed was lost among 250
# (helper-27), rated 0.03 for its shape's 163 earlier lines. (The corpus has 8 such lines, none labelled.)
COUNT_REPEATS = 5
# a line the prior rates at this or more is as sure a failure as a signature's that shows what failed
# (``Signature.found``): once the prior has one, the tail shows only how the run ended
# (``FilterConfig.found_tail_lines``). Out of fold, signatures off: full / mean recall / median
# out_ratio 0.908 / 0.946 / 0.0930 -> 0.904 / 0.945 / 0.0877 (216 of 595 outputs smaller; 0.95:
# 0.899 / 0.944 / 0.0868, 0.99: 0.904 / 0.945 / 0.0897; a cut of 0.7 instead: 0.884 / 0.935 /
# 0.0887); with the signatures the same figures. At the cut 0.8 (sessions 45 and 48, the same measure):
# 0.98 0.874 / 0.932 / 0.0714, 0.97 0.872 / 0.931 / 0.0709, 0.95 0.871 / 0.930 / 0.0681, 0.9
# 0.859 / 0.924 / 0.0671; with the signatures 0.956 / 0.986 and 0.955 / 0.985, both at 0.0720
PRIOR_SURE = 0.95
# the stream's most probable lines a rater remembers (``PriorRater.likeliest``): a failed command's
# whole output read again keeps them wherever they are (``StreamFilter(prior_seeds=...)``). More than
# a tail's lines: a CI step's last line ("##[error]Process completed with exit code 1.") raises the
# lines above it, and with 8 the most probable were all in the tail, kept, so nothing was read again
# for (helper-107). `filter --budget-tokens 4000 --failed`, signatures off, 122 logs of tools the
# corpus lacks (realtools and two helpers' sets): 8 0.836 / 0.913 / 0.0786, 40 0.861 / 0.923 / 0.0857
# (signatures on 0.885 / 0.934 / 0.0858 and 0.902 / 0.942 / 0.0944); the corpus (in sample for the
# prior) 0.859 / 0.911 at 0.0432 and 0.0471
STREAM_TOP = 40


def weak_lines(p: PendingLines, a: int, b: int, max_line_bytes: int) -> BoolArray:
    """Which of pending lines ``a .. b-1`` are kept only as protected hits themselves: over-long
    lines (over ``max_line_bytes``), and lines redrawn by carriage returns (more than
    ``REDRAW_FRAMES`` frames) with no query term.

    Returns:
        shape ``(b - a,)``, bool.
    """
    long = p.lengths(a, b) > max_line_bytes
    weak: BoolArray = long | ((p.frames[a:b] > REDRAW_FRAMES) & ~p.term[a:b])
    return weak


class Hits:
    """The hits not yet applied, in stream order, and what applying them keeps.

    Args:
        signatures: the stream's signatures (ids, names, limits, which head sections).
        context_lines: C, lines kept before each hit (within its record).
        extend_lines: most lines a hit keeps after it, through its continuation lines.
        section_lines: lines kept after a hit that heads a section of failure reports.
        max_repeats: a built-in signature protects the first this many lines of each line shape.
    """

    def __init__(
        self, signatures: SignatureSet, *, context_lines: int, extend_lines: int, section_lines: int, max_repeats: int
    ) -> None:
        self._signatures = signatures
        self._context_lines = context_lines
        self._extend_lines = extend_lines
        self._section_lines = section_lines
        self._repeats = RepeatGate(max_repeats)
        self._last_shape = b""  # the shape of the stream's last line so far (with its line end)
        self._lines = np.zeros(0, dtype=np.int64)  # stream indexes of the hits not yet applied
        self._ids = np.zeros(0, dtype=np.int64)  # their signature ids
        self._found = False
        # a section head applied at a settle before its end came in: its lines still to come
        # (at most this many) are kept up to a section stop (not the one at line _section_ignore)
        self._section_carry = 0
        self._section_ignore = -1

    @property
    def found(self) -> bool:
        """Whether a signature that shows what failed (``Signature.found``) protected a line."""
        return self._found

    @property
    def queued(self) -> Int64Array:
        """Shape ``(h,)``: stream indexes of the hits not yet applied, ascending."""
        return self._lines

    def taken(self, start: int, end: int) -> Int64Array:
        """Stream indexes, ascending, of the signatures' hits not yet applied from ``start`` to ``end - 1``."""
        mine = (self._lines >= start) & (self._lines < end) & (self._ids != self._signatures.prior_id)
        result: Int64Array = self._lines[mine]
        return result

    def admit(self, facts: BlockFacts) -> BoolArray:
        """Queue the signature hits of the stream's next block that count: within their signature's
        ``max_hits``, and for a built-in signature the first ``max_repeats`` of their line shape (told
        apart by the line above too for some signatures, ``SignatureSet.shape_above``).

        Returns:
            shape ``(n,)`` over the block's lines: the failure lines left out as repeats.
        """
        n = int(facts.tokens.shape[0])
        counted = self._signatures.limit(facts.hit_ids)
        hits, ids = facts.hits[counted], facts.hit_ids[counted]
        repeats = np.zeros(n, dtype=bool)
        if hits.shape[0]:
            shapes = [shape for shape, c in zip(facts.hit_shapes, counted.tolist(), strict=True) if c]
            above = [shape for shape, c in zip(facts.above_shapes, counted.tolist(), strict=True) if c]
            for k in np.flatnonzero(self._signatures.shape_above[ids]).tolist():
                # told apart by the line above too (ruff's "  --> a.py:3:1" under its code and message)
                shapes[k] = (above[k] if hits[k] else self._last_shape) + shapes[k]
            gated = ids < self._signatures.builtin  # --protect patterns keep every line they match
            fresh = np.ones(hits.shape[0], dtype=bool)
            if gated.any():
                fresh[gated] = self._repeats.admit([s for s, g in zip(shapes, gated.tolist(), strict=True) if g])
            repeats[hits[~fresh]] = True
            hits, ids = hits[fresh], ids[fresh]
        if not self._found:
            self._found = bool(self._signatures.found[ids].any())
        if n:
            self._last_shape = facts.last_shape
        self._lines = np.concatenate((self._lines, hits + (facts.first_line - 1)))
        self._ids = np.concatenate((self._ids, ids))
        return repeats

    def add_rated(self, lines: Int64Array) -> None:
        """Queue ``lines`` (stream indexes, shape ``(r,)``, none queued already) as hits of the prior."""
        hits = np.concatenate((self._lines, lines))
        ids = np.concatenate((self._ids, np.full(lines.shape[0], self._signatures.prior_id, dtype=np.int64)))
        order = np.argsort(hits, kind="stable")
        self._lines, self._ids = hits[order], ids[order]

    def apply(
        self,
        p: PendingLines,
        windows: WindowTable,
        assigned: int,
        final: bool,
        upto: int = -1,
        settling: bool = False,
    ) -> None:
        """Protect around the hits whose reach is known: mark the lines they keep (``p.forced``), the
        hits (``p.hit``), the lines each keeps before it (``p.lead``), and each window's first hit
        (``windows.prot``, ``windows.hit``).

        Args:
            p: the pending lines.
            windows: their windows.
            assigned: stream index one past the last line with a window.
            final: the stream ended: apply all.
            upto: apply all before this stream index too (a settle).
            settling: a settle applies them, not the stream's end: a section whose end has not come
                in goes on in the lines assigned later (``carry_section``).
        """
        reach = max(self._extend_lines, self._section_lines)
        ready = self._lines + reach < assigned if not final else np.ones_like(self._lines, dtype=bool)
        ready |= self._lines < upto
        ready &= self._lines < assigned
        if not ready.any():
            return
        n_assigned = assigned - p.base
        hits = self._lines[ready] - p.base
        ids = self._ids[ready]
        self._lines, self._ids = self._lines[~ready], self._ids[~ready]
        # a section ends before the next line that ends sections (``BlockFacts.section_stops``):
        # pytest's FAILURES at "short test summary info", cargo's failures at "test result:",
        # unittest's report at its closing rule (not at the rule right under its header); the
        # log's own lines after the tool's last line are not the section's
        stops = np.append(p.stops - p.base, n_assigned + 1)  # (a sentinel: none)
        nxt = np.minimum(np.searchsorted(stops, hits + 1, side="right"), stops.shape[0] - 1)
        section_end = stops[nxt] - 1
        section = self._signatures.section[ids]
        if settling:  # a section whose end has not come in goes on in the lines to come
            going = section & (nxt == stops.shape[0] - 1) & (hits + self._section_lines >= n_assigned)
            if going.any():
                head = int(hits[going].max())
                self._section_carry = max(self._section_carry, head + self._section_lines - n_assigned + 1)
                self._section_ignore = p.base + head + 1  # a rule right under the head
        prior = ids == self._signatures.prior_id
        records = p.record[:n_assigned]
        first, last = protected_ranges(
            hits,
            p.cont[:n_assigned],
            self._context_lines,
            np.where(prior, PRIOR_EXTEND, self._extend_lines),
            section,
            self._section_lines,
            records,
            self._signatures.record[ids],
            section_end,
        )
        # (the lines after it within its record: not the next record's, nor a record's trailing blank line)
        record_end = np.searchsorted(records, records[hits], side="right") - 1
        last = np.where(prior, np.maximum(last, np.minimum(hits + PRIOR_AFTER, record_end)), last)
        # a hit's reach does not go on over a line that ends sections right after its continuation
        # lines (node --test's next "# Subtest:" after a failed suite's report): what follows is
        # another test's
        breaks = np.append(np.flatnonzero(~p.cont[:n_assigned]), n_assigned)
        after = breaks[np.minimum(np.searchsorted(breaks, hits, side="right"), breaks.shape[0] - 1)]
        stopped = ~section & np.isin(after, stops)
        last = np.where(stopped, np.minimum(last, np.maximum(after - 1, hits)), last)
        first = self._lead_ins(p, hits, first)
        first = np.where(prior, np.maximum(np.minimum(first, hits - PRIOR_BEFORE), 0), first)
        if prior.any():
            first[prior] = np.minimum(first[prior], _heads(p, records, hits[prior]))
        marks = np.zeros(p.forced.shape[0] + 1, dtype=np.int64)
        np.add.at(marks, first, 1)
        np.add.at(marks, last + 1, -1)
        around = np.cumsum(marks[:-1]) > 0
        # the lines before a hit (its context, lead-in): with a baseline, a seen line after a hit
        # goes (``StreamFilter._emit``), one before it stays, what ran right before the failure
        marks[:] = 0
        np.add.at(marks, first, 1)
        np.add.at(marks, hits, -1)
        before = np.cumsum(marks[:-1]) > 0
        around[_listed(p, hits, last, before)] = False
        around[hits] = True
        p.forced |= around
        p.lead |= before
        p.hit[hits] = True
        # a window is explained by its first signature's hit, else by its first of the prior's (hits
        # are in order, and an earlier one is never applied after a later one), however the hits were
        # batched: a signature's window is kept whole, the prior's only around its lines
        for mine, over_prior in ((~prior, True), (prior, False)):
            wrel, first_hit = np.unique(p.window[hits[mine]] - windows.base, return_index=True)
            unset = windows.prot[wrel] < 0
            if over_prior:
                unset |= windows.prot[wrel] == self._signatures.prior_id
            windows.prot[wrel[unset]] = ids[mine][first_hit[unset]]
            windows.hit[wrel[unset]] = p.base + hits[mine][first_hit[unset]] + 1

    def carry_section(self, p: PendingLines, first_line: int, k: int) -> None:
        """Lines ``first_line .. first_line+k-1`` (stream indexes) were assigned windows: keep those of
        a section a settle applied before its end came in, up to its stop (``p.forced``)."""
        if not self._section_carry:
            return
        later = p.stops[(p.stops >= first_line) & (p.stops != self._section_ignore)]
        stop = int(later[0]) - first_line if later.shape[0] else k
        upto = min(k, stop, self._section_carry)
        a = first_line - p.base
        p.forced[a : a + upto] = True
        self._section_carry = 0 if stop < k else self._section_carry - upto

    def _lead_ins(self, p: PendingLines, hits: Int64Array, first: Int64Array) -> Int64Array:
        """Each hit's first kept line (pending indexes, shape ``(h,)``), moved back over the lead-in
        lines right before it (``LEAD_IN``: where a compiler's diagnostic comes from), within the
        hit's record and at most ``LEAD_LINES`` before it."""
        records = p.record
        out = first.copy()
        for k, (hit, start) in enumerate(zip(hits.tolist(), first.tolist(), strict=True)):
            line = start - 1
            while line >= max(0, hit - LEAD_LINES) and records[line] == records[hit]:
                if LEAD_IN.match(strip_ansi(p.line(line))) is None:
                    break
                line -= 1
            out[k] = line + 1
        return out


def _listed(p: PendingLines, hits: Int64Array, last: Int64Array, before: BoolArray) -> Int64Array:
    """Pending indexes of the lines that every hit whose stretch after it (``hits + 1 .. last``)
    takes them in keeps past its ``CONT_REPEATS``-th line of their shape (``PendingLines.line_shapes``)
    in that stretch, and no hit keeps before it (``before``, per pending line). Blank lines are not
    counted.

    A line's count is least in the stretch of the latest hit that takes it in, so that one decides:
    each line is looked at once, however many stretches overlap (one per hit had cost 4 times the
    filter's time on a failure over 60,000 indented error lines of their own)."""
    if not (last - hits > CONT_REPEATS).any():
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(hits[0]) + 1, int(last.max()) + 1
    latest = np.full(hi - lo, -1, dtype=np.int64)  # (relative to lo: the hit lo - 1 is 0)
    for h, end in zip(hits.tolist(), last.tolist(), strict=True):  # (ascending: a later hit overwrites)
        latest[h + 1 - lo : end + 1 - lo] = h + 1 - lo
    index: dict[bytes, int] = {}
    shapes = p.line_shapes(lo, hi).split(b"\n")[: hi - lo]
    sid = np.asarray([index.setdefault(s, len(index)) if s.strip() else -1 for s in shapes], dtype=np.int64)
    m = hi - lo
    key = (sid + 1) * (m + 1) + np.arange(m, dtype=np.int64)  # (by shape, then line)
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    upto = np.empty(m, dtype=np.int64)
    upto[order] = np.arange(m, dtype=np.int64)  # (lines of its shape before it, less group)
    # lines of its shape from the latest hit that takes it in (at latest - 1 relative) up to it
    since = upto - np.searchsorted(ordered, (sid + 1) * (m + 1) + latest - 1, side="right") + 1
    past = (latest >= 0) & (sid >= 0) & (since > CONT_REPEATS)
    lines = np.flatnonzero(past) + lo
    # (a hit's window is still kept whole)
    result: Int64Array = lines[~before[lines]]
    return result


def _heads(p: PendingLines, records: Int64Array, hits: Int64Array) -> Int64Array:
    """Per hit (pending indexes, shape ``(h,)``): the line its block hangs from, the nearest line
    above it, within ``PRIOR_HEAD`` lines, that is less indented (``static[:, 0]``'s bins) and not
    blank (``case x ... DIVERGED`` over its indented table, an exception's message over its
    frames); the hit itself when there is none."""
    record_start = np.searchsorted(records, records[hits], side="left")
    back = np.arange(1, PRIOR_HEAD + 1, dtype=np.int64)
    above = hits[:, None] - back[None, :]
    inside = above >= 0
    above = np.maximum(above, 0)
    indent = p.static[:, 0]
    shallower = inside & (indent[above] < indent[hits][:, None]) & ~p.blank[above]
    found = shallower.any(axis=1)
    out: Int64Array = np.where(found, hits - 1 - np.argmax(shallower, axis=1), hits)
    return np.where(hits - record_start <= PRIOR_HEAD, np.minimum(out, record_start), out)


class PriorRater:
    """Rates the stream's lines with the learned prior (``prior.PriorModel``), each once.

    A line's first-stage features look at its neighbours, and at the exit verdicts, failure
    summaries and the stream's end within ``REACH`` lines after it; its probability (the second
    stage) at the first-stage log-odds of the ``CONTEXT_REACH`` lines either side: a line is rated
    once ``REACH + 1 + CONTEXT_REACH`` lines after it are in (so the rating does not depend on
    chunking), or at the stream's end; a settle rates the lines it decides with what has come in.

    Args:
        model: the prior's weights.
        first_line: stream index of the stream's first line fed.
        max_line_bytes: a line longer than this is weak (``weak_lines``), never rated at the cut.
        tracer: with explain, told each rating at the cut and the features that raised it.
        seeds: shape ``(s,)``, sorted: stream indexes of lines the prior takes whatever their
            probability (of a failed command's output read again: lines its first reading left
            out, ``likeliest`` ones and rare ones, ``Run.rare_lines``).
    """

    def __init__(
        self,
        model: PriorModel,
        first_line: int,
        max_line_bytes: int,
        tracer: Tracer | None,
        seeds: Int64Array | None = None,
    ) -> None:
        self._model = model
        self._seeds = seeds if seeds is not None else np.zeros(0, dtype=np.int64)
        # the stream's STREAM_TOP most probable lines rated so far, and their probabilities
        self._best_lines = np.zeros(0, dtype=np.int64)
        self._best_prob = np.zeros(0, dtype=np.float64)
        self._sure = False  # a line rated so far is at PRIOR_SURE (``sure``)
        self._max_line_bytes = max_line_bytes
        self._tracer = tracer
        # the last REACH lines rated and their probabilities (0 for a weak line)
        self._recent_lines = np.zeros(0, dtype=np.int64)
        self._recent_prob = np.zeros(0, dtype=np.float64)
        self._done = first_line
        # the first stage's log-odds of the lines from _z_base on (CONTEXT_REACH before the first
        # line not rated, to the last the first stage has reached), with their structure slots for explain
        self._z_base = first_line
        self._z = np.zeros(0, dtype=np.float64)
        self._slots = np.zeros((0, STRUCTURE_GROUPS), dtype=np.int64)
        self._shape_counts = ShapeCounter()  # every line so far, by shape
        self._rated = ShapeCounter()  # lines rated at the cut, by shape
        self._counted = ShapeCounter()  # lines that count failures, by shape
        # of the lines decided and gone: the last one's logits and static features, the last
        # exit verdict and failure summary among them, and the stream's first exit verdict
        self._logit_before = np.zeros((1, 3), dtype=np.float64)
        self._static_before = np.zeros((1, 4), dtype=np.int64)
        self._verdict_before = np.zeros(0, dtype=np.int64)
        self._summary_before = np.zeros(0, dtype=np.int64)
        self._error_before = np.zeros(0, dtype=np.int64)
        self._term_before = np.zeros(0, dtype=np.int64)  # the last line with a query term seen (``_near_terms``)
        self._first_verdict = -1

    @property
    def done(self) -> int:
        """Stream index of the first line not rated yet."""
        return self._done

    def likeliest(self) -> tuple[Int64Array, Float64Array]:
        """The stream's ``STREAM_TOP`` most probable lines rated so far (not weak, blank or a
        signature's repeat) and their probabilities, most probable first (a tie: the earlier line).

        Returns:
            shapes ``(k,)``, ``k <= STREAM_TOP``: stream indexes, and probabilities in (0, 1].
        """
        return self._best_lines, self._best_prob

    @property
    def sure(self) -> bool:
        """Whether a line rated so far (not weak, blank, a signature's line or an exit verdict) is at
        ``PRIOR_SURE``."""
        return self._sure

    def seen(self, shape_hashes: Int64Array) -> Int64Array:
        """Shape ``(n,)``: for each of the stream's next ``n`` lines (``prior.shape_hashes``), the
        earlier lines of its shape."""
        return self._shape_counts.seen(shape_hashes)

    def rate(self, p: PendingLines, upto: int, final: bool, hits: Hits, passed: bool = False) -> None:
        """Rate the lines from ``done`` up to stream index ``upto``, and queue those at or above the cut
        (and, at the end of a stream not known to have passed, with an exit verdict or a failure
        summary in its last ``REACH`` lines or no failure found, the ``PRIOR_TOP`` most probable of
        those lines, those rated before included: ``PRIOR_FLOOR``, ``TOP_FLOOR``) as
        hits (``Hits.add_rated``): not a line that is a hit already or a signature's repeat, a
        blank line, a weak line, nor one of a shape rated at the cut ``PRIOR_REPEATS`` times already.

        The first stage's log-odds are computed as far as the lines' reach allows (``upto`` at least);
        a line's probability takes those of the ``CONTEXT_REACH`` lines either side, ``ABSENT`` for
        lines not rated by the first stage yet: so ``upto`` is ``CONTEXT_REACH`` lines short of the
        first stage's limit for a rating that does not depend on chunking.

        Args:
            p: the pending lines (with the prior's arrays).
            upto: stream index one past the last line to rate.
            final: the stream ended (each line's distance to the end is known).
            hits: the stream's hits.
            passed: the command the stream came from is known to have passed: at its end there is
                no failure to look for.
        """
        total = p.base + p.ends.shape[0]
        self._first_stage(p, total if final else max(upto, total - REACH - 1), final)
        if upto <= self._done:
            return
        lo, hi = self._done - p.base, upto - p.base
        lines = np.arange(self._done, upto, dtype=np.int64)
        # the first stage's log-odds of the lines CONTEXT_REACH either side, ABSENT where none is known
        around = np.full(hi - lo + 2 * CONTEXT_REACH, ABSENT)
        start = self._done - CONTEXT_REACH
        known = self._z[max(0, start - self._z_base) : upto + CONTEXT_REACH - self._z_base]
        at = max(0, self._z_base - start)
        around[at : at + known.shape[0]] = known
        prob = self._model.probability(context_features(around))
        # not a line that is a hit already, a signature's line past its repeats (the signature left it to
        # BM25: a summary counts it once, as a failure line), a blank line, an over-long line or a
        # progress display
        # (and of the PRIOR_NEAR_LINES either side, for the query terms near a line)
        start, ahead = max(0, lo - PRIOR_NEAR_LINES), min(p.ends.shape[0], hi + PRIOR_NEAR_LINES)
        weak_around = weak_lines(p, start, ahead, self._max_line_bytes)
        weak = weak_around[lo - start : hi - start] | p.blank[lo:hi] | p.repeat[lo:hi]
        own = around[CONTEXT_REACH : CONTEXT_REACH + hi - lo]
        seeds = (prob >= self._model.cut) & (own >= np.log(PRIOR_OWN / (1 - PRIOR_OWN)))
        seeds |= (prob >= PRIOR_NEAR_CUT) & self._near_terms(p, lo, hi, start, p.term[start:ahead] & ~weak_around)
        likely = np.where(weak, 0.0, prob)
        self._remember_best(lines, likely)
        if not self._sure:
            # not a line a signature took (one that shows what failed says so itself; make's "***
            # [all] Error 2" does not) nor an exit verdict: the prior rates them high, and the
            # lines before them are what the tail is for
            other = np.concatenate((hits.taken(self._done, upto), p.verdicts)) - self._done
            taken = p.hit[lo:hi].copy()
            taken[other[(other >= 0) & (other < hi - lo)]] = True
            self._sure = bool((likely[~taken] >= PRIOR_SURE).any())
        forced = self._seeds[(self._seeds >= self._done) & (self._seeds < upto)] - self._done
        forced = np.union1d(forced, self._failure_counts(p, lo, hi))
        seeds[forced] = True
        verdict = final and self._ends_in_a_verdict(p, total)
        if final and not passed and (verdict or not (hits.found or self._sure)):
            # of the last REACH lines, those rated before (at a settle) too: the top ones may be kept already
            old, now = self._recent_lines >= total - REACH, lines >= total - REACH
            near = np.concatenate((self._recent_lines[old], lines[now]))
            chance = np.concatenate((self._recent_prob[old], likely[now]))
            top = near[np.argsort(-chance, kind="stable")[:PRIOR_TOP]] - lines[0]
            top = top[top >= 0]  # (stream order: a tie goes to the earlier line)
            seeds[top[likely[top] >= (PRIOR_FLOOR if verdict else TOP_FLOOR)]] = True
        self._recent_lines = np.concatenate((self._recent_lines, lines[-REACH:]))[-REACH:]
        self._recent_prob = np.concatenate((self._recent_prob, likely[-REACH:]))[-REACH:]
        rated = np.flatnonzero(seeds) + lo
        # (a line read again for is taken even when weak: a progress display whose last frame is
        # the failure, "pkg-141.tar.zst: digest ... does not match the lockfile")
        strong = ~weak
        strong[forced] = True
        fresh = ~p.hit[rated] & strong[rated - lo] & ~np.isin(rated + p.base, hits.queued)
        rated = rated[fresh]
        # the first PRIOR_REPEATS of a shape: a line repeated by the dozen (a stack frame of every
        # failing test, a config file's "#" lines) is not each time the failure
        rated = rated[self._rated.seen(p.shape[rated]) < PRIOR_REPEATS]
        self._done = upto
        if self._tracer is not None:
            for i in rated.tolist():
                # (its scoring text, which its features were of: a line past max_line_bytes is capped)
                text = normalize_block(p.line(i), 1, self._max_line_bytes).text
                reasons = self._model.explain(text, self._slots[i + p.base - self._z_base])
                self._tracer.rated(p.base + i + 1, round(float(prob[i - lo]), 4), reasons)
        # the log-odds later lines look back at
        keep = max(0, upto - CONTEXT_REACH - self._z_base)
        self._z, self._z_base = self._z[keep:], self._z_base + keep
        if self._tracer is not None:
            self._slots = self._slots[keep:]
        if rated.shape[0]:
            hits.add_rated(rated + p.base)

    def _near_terms(self, p: PendingLines, lo: int, hi: int, start: int, terms: BoolArray) -> BoolArray:
        """Shape ``(hi - lo,)``: whether each of pending lines ``lo .. hi-1`` is within
        ``PRIOR_NEAR_LINES`` of a line that holds a query term; ``terms``: for pending lines
        ``start .. hi + PRIOR_NEAR_LINES - 1`` (fewer at the end), whether one does and is not weak
        (``PendingLines.term``, set as a line comes in, and ``weak_lines``: an over-long line is
        summarized, its window not kept for its terms). The last such line is remembered for the
        lines rated next, whose look back may reach a line let go since."""
        at = np.concatenate((self._term_before - p.base, np.flatnonzero(terms) + start))
        if at.shape[0]:
            self._term_before = at[-1:] + p.base
        # lines lo - PRIOR_NEAR_LINES .. hi + PRIOR_NEAR_LINES - 1, each line's term counted over the
        # 2 * PRIOR_NEAR_LINES + 1 lines around it
        marks = np.zeros(hi - lo + 2 * PRIOR_NEAR_LINES, dtype=np.int64)
        marks[at[at >= lo - PRIOR_NEAR_LINES] - lo + PRIOR_NEAR_LINES] = 1
        covered: BoolArray = np.convolve(marks, np.ones(2 * PRIOR_NEAR_LINES + 1, dtype=np.int64), "valid") > 0
        return covered

    def _failure_counts(self, p: PendingLines, lo: int, hi: int) -> Int64Array:
        """Of pending lines ``lo .. hi-1`` (rated now, each once), those that count failures among
        lines of their shape (``COUNT_REPEATS``), as indexes from ``lo``."""
        marked = np.flatnonzero(p.static[lo:hi, 3]) + lo
        if not marked.shape[0]:
            return marked
        shapes = p.shape[marked]
        ahead = ahead_counts(p.shape[lo : hi + REACH], hi - lo)[marked - lo]
        before = self._counted.seen(shapes)
        keep = (p.seen[marked] + ahead >= 2) & (before < COUNT_REPEATS)
        result: Int64Array = marked[keep] - lo
        return result

    def _first_stage(self, p: PendingLines, upto: int, final: bool) -> None:
        """The first stage's log-odds of the lines from where it stopped up to stream index ``upto``,
        added to ``_z`` (and their structure slots to ``_slots``, for explain)."""
        total = p.base + p.ends.shape[0]
        first = self._z_base + self._z.shape[0]
        if upto <= first:
            return
        if self._first_verdict < 0 and p.verdicts.shape[0]:
            self._first_verdict = int(p.verdicts[0])
        lo, hi = first - p.base, upto - p.base
        lines = np.arange(first, upto, dtype=np.int64)
        to_end = total - 1 - lines if final else np.full(hi - lo, REACH, dtype=np.int64)
        summaries = np.concatenate((self._summary_before, np.flatnonzero(p.static[:, 3]) + p.base))
        errors = np.concatenate((self._error_before, np.flatnonzero(p.static[:, 2]) + p.base))
        facts = StreamFacts(np.concatenate((self._verdict_before, p.verdicts)), summaries, self._first_verdict, errors)
        logits = _around(p.logit, lo, hi, self._logit_before)
        ahead = ahead_counts(p.shape[lo : hi + REACH], hi - lo)
        static = _around(p.static, lo, hi, self._static_before)
        slots = structure(lines, to_end, facts, p.seen[lo:hi], ahead, static, p.blank[lo:hi])
        self._z = np.concatenate((self._z, self._model.logit(logits, slots)))
        if self._tracer is not None:
            self._slots = np.concatenate((self._slots, slots))

    def _remember_best(self, lines: Int64Array, likely: Float64Array) -> None:
        """Merge the lines just rated into the stream's ``STREAM_TOP`` most probable."""
        if likely.shape[0] > STREAM_TOP:  # (the candidates: every line tied with the STREAM_TOP-th)
            at_least = np.partition(likely, likely.shape[0] - STREAM_TOP)[likely.shape[0] - STREAM_TOP]
            some = likely >= at_least
            lines, likely = lines[some], likely[some]
        some = likely > 0
        merged = np.concatenate((self._best_lines, lines[some]))
        prob = np.concatenate((self._best_prob, likely[some]))
        order = np.lexsort((merged, -prob))[:STREAM_TOP]
        self._best_lines, self._best_prob = merged[order], prob[order]

    def _ends_in_a_verdict(self, p: PendingLines, total: int) -> bool:
        """An exit verdict or a failure-summary line is among the stream's last ``REACH`` lines."""
        gone = np.concatenate((self._verdict_before, self._summary_before, p.verdicts[-1:]))
        return bool((gone >= total - REACH).any() or p.static[max(0, total - REACH - p.base) :, 3].any())

    def forget(self, p: PendingLines, n: int) -> None:
        """The first ``n`` pending lines are about to be trimmed: keep what the lines after them
        look back at (the last one's logits and static features, the last exit verdict, failure
        summary and error word among them)."""
        if n <= 0:
            return
        self._logit_before = p.logit[n - 1 : n].copy()
        self._static_before = p.static[n - 1 : n].copy()
        verdicts = p.verdicts[p.verdicts < p.base + n]
        if verdicts.shape[0]:
            self._verdict_before = verdicts[-1:].copy()
        summaries = np.flatnonzero(p.static[:n, 3])
        if summaries.shape[0]:
            self._summary_before = summaries[-1:] + p.base
        errors = np.flatnonzero(p.static[:n, 2])
        if errors.shape[0]:
            self._error_before = errors[-1:] + p.base


def _around(rows: npt.NDArray[_Row], lo: int, hi: int, before: npt.NDArray[_Row]) -> npt.NDArray[_Row]:
    """``rows[lo - 1 : hi + 1]``, with ``before`` (the row of the line before pending line 0) for
    row -1 and a row of zeros past the last row (no line after it yet)."""
    head = rows[lo - 1 : lo] if lo > 0 else before
    tail = rows[hi : hi + 1] if hi < rows.shape[0] else np.zeros((1, *rows.shape[1:]), dtype=rows.dtype)
    return np.concatenate((head, rows[lo:hi], tail))
