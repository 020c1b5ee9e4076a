"""Decided lines -> runs (stage 6): KEEP runs verbatim, DROP runs summarized.

``StreamFilter`` hands a ``RunBuilder`` each batch of decided lines as a keep mask over the
pending lines (``pending.PendingLines``, their bytes included); the builder adds them to the open
KEEP run or the open DROP run and returns the runs that close. Runs come out in order and cover
every line once: a KEEP run holds the exact input bytes (in pieces of at most
``max_keep_event_bytes``); a DROP run holds a one-line summary (``summarize.DropSummary``) and the
CRC-32 of its bytes. A DROP run too short to be worth its summary, between two KEEP runs or at
the stream's end, is kept instead (the *short gap*); with a baseline, also one at the stream's
start, and one of any number of lines that is no longer than a summary.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import numpy.typing as npt

from .baseline import Novelty
from .explain import Tracer
from .pending import PendingLines
from .records import FilterStats, Run
from .summarize import ODD_LINES, DropSummary

__all__ = ("RunBuilder",)


class RunBuilder:
    """The open KEEP run and the open DROP run of one stream, and the runs that close.

    Every method that closes runs appends them to its ``runs`` argument, in stream order, and adds
    them to ``stats`` (``kept_*``, ``dropped_*``, ``keep_runs``, ``drop_runs``).

    Args:
        stats: the stream's totals.
        max_keep_event_bytes: a KEEP run longer than this is emitted in pieces; the line that
            brings a piece to it ends the piece.
        top_shapes: K, shapes named in a DROP summary.
        summary_chars: longest DROP summary, in characters.
        min_drop_lines: a DROP run right after a KEEP run with fewer lines than this, and no more
            bytes than ``summary_chars``, is kept (when the next KEEP run or the stream's end comes).
        max_line_bytes: a line longer than this is counted as over-long in its summary.
        budgeted: the lines were chosen by a token budget (``budget.Selection``): a DROP summary
            counts its repeated failure lines as held, not as repeats.
        tracer: with explain, the window traces of each run.
        novelty: with a baseline, the lines the last green run printed too: a summary counts them,
            and a gap is any DROP run no longer than a summary (the seen lines dropped inside kept
            stretches are often a blank line or a rule, cheaper than their summary), the stream's
            first run too (a seen line before the failure).
        named: shape ``(k,)``, 1-based lines (sorted) each dropped in a run of its own whose
            summary names its first ``named_chars`` characters (``budget.Selection.named``).
        named_chars: characters of a named line shown in its summary.
        mine_rare: each DROP run is mined for its rare lines (``DropSummary(mine_rare=True)``).
    """

    def __init__(
        self,
        stats: FilterStats,
        *,
        max_keep_event_bytes: int,
        top_shapes: int,
        summary_chars: int,
        min_drop_lines: int,
        max_line_bytes: int,
        budgeted: bool,
        tracer: Tracer | None,
        novelty: Novelty | None = None,
        named: npt.NDArray[np.int64] | None = None,
        named_chars: int = 0,
        mine_rare: bool = False,
    ) -> None:
        self._stats = stats
        self._cap = max_keep_event_bytes
        self._top_shapes = top_shapes
        self._summary_chars = summary_chars
        self._min_drop_lines = min_drop_lines
        self._max_line_bytes = max_line_bytes
        self._budgeted = budgeted
        self._tracer = tracer
        self._novelty = novelty
        # (a green run of more distinct lines than its baseline keeps: its counts are "at least")
        self._green_sampled = novelty is not None and novelty.baseline.sampled
        self._named = named if named is not None else np.zeros(0, dtype=np.int64)
        self._named_chars = named_chars
        self._mine_rare = mine_rare
        self._open: DropSummary | None = None
        self._keep: tuple[int, int, bytearray] | None = None  # first line, start byte, bytes
        self._gap: bytearray | None = None  # bytes of a short DROP run right after the open KEEP run
        self._drop_crc = 0  # CRC-32 of the open DROP run's bytes

    @property
    def drop_open(self) -> bool:
        """Whether a DROP run is open."""
        return self._open is not None

    def add(self, p: PendingLines, keep: npt.NDArray[np.bool_], runs: list[Run]) -> None:
        """Add the decided pending lines ``0 .. n-1`` to the open runs.

        Args:
            p: the pending lines (with their bytes and shapes).
            keep: shape ``(n,)``, whether each line is kept; n >= 1.
            runs: where the runs that close go.
        """
        n = int(keep.shape[0])
        cuts = np.flatnonzero(keep[1:] != keep[:-1]) + 1
        bounds = [0, *cuts.tolist(), n]
        for a, b in itertools.pairwise(bounds):
            if keep[a]:
                self._add_keep(p, a, b, runs)  # traces each piece of the run (it may split at the cap)
            else:
                self._add_drops(p, a, b, runs)

    def finish(self, runs: list[Run]) -> None:
        """The stream ended: a short last DROP run joins the KEEP run before it; close both runs."""
        self._absorb_gap(runs)
        self.close(runs)

    def close(self, runs: list[Run], close_drop: bool = True) -> None:
        """Close the open KEEP run, and the open DROP run if ``close_drop``. A short DROP run after the
        KEEP run is no gap it can take in any more: it is summarized, closed now or later."""
        self._gap = None
        if self._keep is not None:
            runs.append(self._close_keep())
        if self._open is not None and close_drop:
            runs.append(self._close_drop())

    def close_drop(self, runs: list[Run]) -> None:
        """Close the open DROP run before its end if its summary line, with a ref, is at most half
        the bytes it stands for; unless it may still be a short gap (then a KEEP run that comes
        takes it in, as it would have without this call). No KEEP run is open beside it then: it
        closed once the DROP run grew past a gap.

        The summaries closed early so take at most half of what they replace: a slow printer (an
        ``ok`` every 0.25 s) gets one when its lines have paid for it, not a longer line a second."""
        s = self._open
        if s is None or self._gap is not None:
            return
        line = f"{s.render()}; ref @{s.start_byte}-{s.end_byte}:00000000\n"  # (a short ref, as text output has)
        if 2 * len(line.encode("utf-8", "surrogateescape")) <= s.end_byte - s.start_byte:
            runs.append(self._close_drop())

    def _add_keep(self, p: PendingLines, a: int, b: int, runs: list[Run]) -> None:
        if self._open is not None:
            if not self._absorb_gap(runs):
                runs.append(self._close_drop())
            self._gap = None
        while a < b:
            start = p.line_start(a)
            if self._keep is None:
                self._keep = (p.base + a + 1, start, bytearray())
            data = self._keep[2]
            room = self._cap - len(data)
            # the first line at which the run reaches the cap closes it (a deterministic split)
            stop = min(int(np.searchsorted(p.ends[a:b], start + room, side="left")) + a + 1, b)
            if self._tracer is not None:  # this piece's own lines: a window it shares with the next is in both
                self._tracer.trace(p, a, stop, "keep")
            data += p.buf[start - p.buf_start : int(p.ends[stop - 1]) - p.buf_start]
            a = stop
            if len(data) >= self._cap:
                runs.append(self._close_keep())

    def _add_drops(self, p: PendingLines, a: int, b: int, runs: list[Run]) -> None:
        """Drop pending lines ``a .. b-1``: a named line among them is a DROP run of its own."""
        lo, hi = np.searchsorted(self._named, [p.base + a + 1, p.base + b + 1])
        for at in [*(self._named[lo:hi] - p.base - 1).tolist(), b]:
            if at > a:
                if self._tracer is not None:
                    self._tracer.trace(p, a, at, "drop")
                self._add_drop(p, a, at, runs)
            if at == b:
                break
            if self._open is not None and not self._absorb_gap(runs):
                runs.append(self._close_drop())
            if self._tracer is not None:
                self._tracer.trace(p, at, at + 1, "drop")
            self._add_drop(p, at, at + 1, runs)
            assert self._open is not None
            self._open.name(p.line(at), self._named_chars)
            self._gap = None  # (never a gap a KEEP run takes in: it stands for a failure line)
            if self._keep is not None:
                runs.append(self._close_keep())
            runs.append(self._close_drop())
            a = at + 1

    def _add_drop(self, p: PendingLines, a: int, b: int, runs: list[Run]) -> None:
        start, end = p.line_start(a), int(p.ends[b - 1])
        if self._open is None:
            green = self._novelty is not None
            odd = 0 if self._budgeted else ODD_LINES  # (a budget's summaries must fit their tokens)
            self._open = DropSummary(
                p.base + a + 1,
                start,
                self._top_shapes,
                self._summary_chars,
                green,
                odd,
                self._mine_rare,
                green_sampled=self._green_sampled,
            )
            first_run = green and not self._stats.keep_runs + self._stats.drop_runs
            if self._keep is not None or first_run:
                self._gap = bytearray()
        shapes = p.line_shapes(a, b)
        lengths = p.lengths(a, b)
        over = lengths[lengths > self._max_line_bytes]
        repeats, held = int(p.repeat[a:b].sum()), int(p.hit[a:b].sum())
        if self._budgeted:  # the lines a repeat is "like" may be left out too
            repeats, held = 0, held + repeats
        self._open.add(
            end - start,
            shapes,
            b - a,
            int((p.term[a:b] | p.uncounted[a:b]).sum()),  # (a repeat's terms do not score, but it holds them)
            int(p.warnings[a:b].sum()),
            p.frames[a:b],
            repeats,
            int(over.shape[0]),
            int(over.max()) if over.shape[0] else 0,
            held,  # (protected lines are dropped only by a budget's selection)
            int(self._novelty.seen(p.base + a, b - a).sum()) if self._novelty is not None else 0,
            line=lambda i, n: _head(p, a + i, n),
        )
        with memoryview(p.buf) as view:
            self._drop_crc = zlib.crc32(view[start - p.buf_start : end - p.buf_start], self._drop_crc)
        if self._gap is not None:
            self._gap += p.buf[start - p.buf_start : end - p.buf_start]
            lines = self._open.lines >= self._min_drop_lines and self._novelty is None
            if lines or len(self._gap) > self._summary_chars:
                self._gap = None
        if self._gap is None and self._keep is not None:
            runs.append(self._close_keep())

    def _absorb_gap(self, runs: list[Run]) -> bool:
        """A short DROP run after a KEEP run (before the next, or at the end of the stream) joins it,
        its summary would save nothing; whether it did."""
        if self._gap is None or self._open is None:
            return False
        if self._keep is None:  # the stream's first run, with a baseline: the KEEP run starts with it
            self._keep = (self._open.first_line, self._open.start_byte, bytearray())
        first_line = self._open.first_line
        self._open = None
        self._drop_crc = 0
        if self._tracer is not None:
            self._tracer.gap_joins()
        self._keep_gap(runs, first_line)
        self._gap = None
        return True

    def _keep_gap(self, runs: list[Run], first_line: int) -> None:
        """The short gap's lines join the open KEEP run as kept lines do: the line that brings it
        to ``max_keep_event_bytes`` closes it (where a budget that keeps them would close it).

        Args:
            runs: where a piece closed at the cap goes.
            first_line: the gap's first line (1-based).
        """
        assert self._gap is not None and self._keep is not None
        gap, start, line = self._gap, 0, first_line
        while start < len(gap):  # its whole lines, one by one
            end = gap.find(b"\n", start) + 1 or len(gap)
            if self._keep is None:  # closed at the cap: the next line starts the next piece
                last = runs[-1]
                self._keep = (last.last_line + 1, last.end_byte, bytearray())
            self._keep[2].extend(gap[start:end])
            start = end
            if len(self._keep[2]) >= self._cap:
                if self._tracer is not None:  # each piece lists the gap's windows of its lines
                    self._tracer.gap_piece_ends(line)
                runs.append(self._close_keep())
            line += 1
        if self._tracer is not None:
            self._tracer.gap_joined()

    def _close_keep(self) -> Run:
        assert self._keep is not None
        first_line, start_byte, data = self._keep
        self._keep = None
        n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        traces, omitted = self._tracer.take("keep") if self._tracer is not None else ((), 0)
        run = Run(
            "keep",
            first_line,
            first_line + n_lines - 1,
            start_byte,
            start_byte + len(data),
            bytes(data),
            traces=traces,
            traces_omitted=omitted,
        )
        self._stats.kept_lines += run.lines
        self._stats.kept_bytes += run.n_bytes
        self._stats.keep_runs += 1
        return run

    def _close_drop(self) -> Run:
        assert self._open is not None
        s = self._open
        self._open = None
        checksum, self._drop_crc = f"{self._drop_crc:08x}", 0
        traces, omitted = self._tracer.take("drop") if self._tracer is not None else ((), 0)
        self._stats.dropped_lines += s.lines
        self._stats.dropped_bytes += s.end_byte - s.start_byte
        self._stats.drop_runs += 1
        summary, rare = s.rendered()
        return Run(
            "drop",
            s.first_line,
            s.last_line,
            s.start_byte,
            s.end_byte,
            summary=summary,
            checksum=checksum,
            traces=traces,
            traces_omitted=omitted,
            rare_lines=rare,
        )


def _head(p: PendingLines, i: int, n: int) -> bytes:
    """The first ``n`` raw bytes (at most) of pending line ``i``."""
    start = p.line_start(i) - p.buf_start
    return bytes(p.buf[start : min(int(p.ends[i]) - p.buf_start, start + n)])
