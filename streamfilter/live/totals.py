"""The daemon's counts: what came in and went out per source, how long decisions took, how often
reading paused, and what a NATS source sees of its consumers (for ``STATUS=``, logs and metrics).

Plain numbers, updated where things happen at the cost of an addition; ``metrics`` reads them
when Prometheus scrapes, so a daemon without ``[metrics]`` pays nothing more.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from ..core.words import counted

__all__ = ("COUNTS", "LATENCY_BUCKETS", "Totals")

# what ``Totals.by_source`` holds per source, in this order
COUNTS = ("lines", "kept_lines", "dropped_lines", "bytes", "kept_bytes", "dropped_bytes", "keep_runs", "drop_runs")
# upper bounds of the decision latency histogram, in seconds (Prometheus' ``le``; +Inf after them)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Totals:
    """Counts per source, over all its streams and over the daemon's reloads.

    Attributes:
        by_source: source -> counts in ``COUNTS`` order (lines and bytes in, kept and dropped;
            KEEP and DROP runs written).
        latency: source -> ``[count per bucket of LATENCY_BUCKETS and one for +Inf, sum of
            seconds]``: from a chunk's arrival to the decision on its last byte being written.
        command_runs: ``(source, outcome)`` -> runs ended (``success``, ``failure``, ``unknown``).
        pauses: ``(where, reason)`` -> times reading waited for a sink or a stream's queue.
        paused_seconds: ``(where, reason)`` -> seconds spent waiting so.
        redeliveries: source -> messages delivered again by NATS (their bytes, seen already, skipped).
        lag: ``(source, partition)`` -> messages of the partition's consumer not yet delivered.
        unacked: ``(source, partition)`` -> messages delivered to it and not yet acked.
        moved: source -> streams resumed here from another worker's last output.
    """

    def __init__(self) -> None:
        self.by_source: dict[str, list[int]] = {}
        self.latency: dict[str, list[float]] = {}
        self.command_runs: dict[tuple[str, str], int] = {}
        self.pauses: dict[tuple[str, str], int] = {}
        self.paused_seconds: dict[tuple[str, str], float] = {}
        self.redeliveries: dict[str, int] = {}
        self.lag: dict[tuple[str, str], int] = {}
        self.unacked: dict[tuple[str, str], int] = {}
        self.moved: dict[str, int] = {}

    def add(self, source: str, counts: Sequence[int]) -> None:
        """Add ``counts`` (in ``COUNTS`` order, as many as given) to ``source``'s totals."""
        row = self.by_source.setdefault(source, [0] * len(COUNTS))
        for i, n in enumerate(counts):
            row[i] += n

    def decided(self, source: str, seconds: float) -> None:
        """A chunk of ``source`` fully decided and written ``seconds`` after it arrived."""
        row = self.latency.get(source)
        if row is None:
            row = self.latency[source] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        row[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        row[-1] += seconds

    def run_ended(self, source: str, status: int | None) -> None:
        """A command's run of ``source`` ended with ``status`` (None: without one)."""
        outcome = "unknown" if status is None else "success" if status == 0 else "failure"
        self.command_runs[source, outcome] = self.command_runs.get((source, outcome), 0) + 1

    def paused(self, where: str, reason: str, seconds: float) -> None:
        """Reading waited ``seconds`` at ``where`` (a sink's or source's name) for ``reason``."""
        self.pauses[where, reason] = self.pauses.get((where, reason), 0) + 1
        self.paused_seconds[where, reason] = self.paused_seconds.get((where, reason), 0.0) + seconds

    def describe(self) -> str:
        """One line: ``NAME: N lines in, K kept, D dropped; ...``, or ``no input yet``."""
        return (
            "; ".join(
                f"{name}: {counted(n, 'line')} in, {k} kept, {d} dropped"
                for name, (n, k, d, *_) in self.by_source.items()
            )
            or "no input yet"
        )
