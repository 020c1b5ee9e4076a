"""The plain values that flow between the pipeline's stages.

source -> ``LineBlock`` -> windows (arrays inside the filter) -> ``Run`` -> sink; a stream's
totals in ``FilterStats``.
Every value is a frozen dataclass; batches of lines are numpy arrays, never one
Python object per line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ("FilterStats", "LineBlock", "Run", "WindowTrace")

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class LineBlock:
    """A batch of complete lines, exactly as they arrived.

    Attributes:
        data: the raw bytes of the lines, each line with its own terminator
            (``\\n``; a ``\\r`` before it stays in the bytes). Only the last line of
            the stream may lack a ``\\n``.
        first_line: 1-based number of the first line in ``data``.
        start_byte: stream offset (bytes) of ``data[0]``.
        ends: shape ``(n_lines,)``, int64: end offset of each line in ``data``
            (exclusive, so line ``i`` is ``data[ends[i-1]:ends[i]]``).
    """

    data: bytes
    first_line: int
    start_byte: int
    ends: Int64Array

    @property
    def n_lines(self) -> int:
        """Number of lines in the block."""
        return int(self.ends.shape[0])


@dataclass(frozen=True, slots=True)
class WindowTrace:
    """Why one window was kept or dropped (``--explain``).

    Attributes:
        first_line: 1-based first line of the window in the run (a window two runs share is in both).
        last_line: 1-based last line of the window (inclusive).
        score: BM25 score of the window against the query.
        cut: the score threshold in force for the window.
        reason: for KEEP: ``protected:<signature name>``, ``score`` (a query term
            and a score at or above the cut), ``novel`` (a score at or above the cut once
            weighed up for a novel line near the end or an exit verdict), ``head``, ``tail``,
            ``context`` (lines kept around a protected line) or ``short-gap`` (a DROP run too short
            to summarize); for DROP: ``seen`` (lines the last green run printed too, which the
            window or the tail would have kept without a baseline), ``seen-after-hit`` (lines a
            protected line keeps after it, its continuation or section, that the last green run
            printed too), ``below-cut`` (a query term, score below the
            cut), ``no-term`` (none of its lines here holds a query term, also the lines of a
            window kept for its score that no term line keeps), ``repeated-term`` (its query terms
            do not count: their lines' shape held one on ``TERM_REPEATS`` lines before),
            ``beside-prior`` (lines of a window the learned prior protects, outside the lines
            around its line that it keeps), ``weak-line`` (an over-long or carriage-return
            redrawn line in a kept window: such lines are kept only when protected
            themselves), ``duplicate`` (a failure line in it was not protected: its
            shape had been kept ``max_repeats`` times), or ``budget`` (kept on its own,
            but not chosen within ``--budget-tokens``).
        hit_line: for a protected window, 1-based number of its first protected line (after the
            run's last line when the run holds only lines leading up to it); else 0.
        prior: for a window protected by the learned prior (``protected:prior``), the probability
            it gave that line; else 0.
        features: for such a window, the words and word pairs of that line (numbers shown as
            ``<num>``, ids as ``<id>``) and the structure slots (``prior.STRUCTURE_NAMES``) that
            raised its probability most.
        novel: with a baseline (the last green run's line shapes), how many lines of the window
            it never saw; None without one.
    """

    first_line: int
    last_line: int
    score: float
    cut: float
    reason: str
    hit_line: int = 0
    prior: float = 0.0
    features: tuple[str, ...] = ()
    novel: int | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """A maximal range of consecutive lines with one decision.

    Attributes:
        decision: ``"keep"`` (written verbatim) or ``"drop"`` (summarized).
        first_line: 1-based first line (inclusive).
        last_line: 1-based last line (inclusive).
        start_byte: stream offset of the run's first byte.
        end_byte: stream offset one past the run's last byte.
        data: for KEEP runs the exact input bytes; empty for DROP runs.
        summary: for DROP runs the one-line summary (no newline); empty for KEEP.
        traces: per-window decision traces, filled only when explaining.
        traces_omitted: windows of the run left out of ``traces`` (a cap per run).
        checksum: for DROP runs, CRC-32 of the run's bytes as 8 hex digits (so a
            readback can tell whether the bytes it finds are still the same).
        rest: the run is the rest of a line a live stream let out before its end
            arrived (``StreamFilter.settle``): its one line was counted in an earlier run.
        rare_lines: for DROP runs whose summary's templates take in every line, the first line
            (1-based) of each template of at most ``summarize.ODD_LINES`` lines or 1 % of the
            run's (``summarize.RARE_SHARE``): its rare lines (``DropSummary.rendered``). Mined for
            them (``StreamFilter(mine_rare=True)``), also of a run whose summary's templates do
            not, when they are at most ``summarize.RARE_TEMPLATES`` and 1 % of its lines.

    A KEEP run that grows past the filter's ``max_keep_event_bytes`` is emitted
    as several consecutive KEEP runs, so no run holds unbounded memory.
    """

    decision: Literal["keep", "drop"]
    first_line: int
    last_line: int
    start_byte: int
    end_byte: int
    data: bytes = b""
    summary: str = ""
    traces: tuple[WindowTrace, ...] = field(default=())
    traces_omitted: int = 0
    checksum: str = ""
    rest: bool = False
    rare_lines: tuple[int, ...] = ()

    @property
    def lines(self) -> int:
        """Number of lines in the run."""
        return self.last_line - self.first_line + 1

    @property
    def n_bytes(self) -> int:
        """Number of input bytes the run covers."""
        return self.end_byte - self.start_byte


@dataclass(slots=True)
class FilterStats:
    """Totals so far: lines and bytes in, kept and dropped; runs emitted."""

    lines: int = 0
    bytes: int = 0
    kept_lines: int = 0
    kept_bytes: int = 0
    dropped_lines: int = 0
    dropped_bytes: int = 0
    keep_runs: int = 0
    drop_runs: int = 0
