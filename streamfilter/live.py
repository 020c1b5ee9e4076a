"""One live stream: a ``StreamFilter`` between a source and its sinks, with idle settling.

The source calls ``feed`` with bytes as they arrive, ``tick`` when its wait for more times out
at ``due()``, and ``end`` at the end of the stream. A stream quiet for ``idle_seconds`` is
settled: its pending lines are decided and written, an unterminated last line too (bytes that
complete it later are written as its rest), so a final error is shown without waiting for a
successor that may never come. A stream that never pauses is settled (complete lines only) once
its oldest undecided bytes have waited ``max_delay_seconds``, so output keeps pace with input.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

import anyio

from .config import Timing
from .filter import FilterConfig, StreamFilter
from .output import end_event, render
from .records import Run
from .sinks import Sink

__all__ = ("LiveStream", "Totals", "marker_event")

RefMaker = Callable[[Run], str]


class Totals:
    """Lines in, kept and dropped per source, over all its streams (for ``STATUS=`` and logs)."""

    def __init__(self) -> None:
        self.by_source: dict[str, list[int]] = {}

    def add(self, source: str, lines: int, kept: int, dropped: int) -> None:
        """Add counts (in lines) to ``source``'s totals."""
        row = self.by_source.setdefault(source, [0, 0, 0])
        row[0] += lines
        row[1] += kept
        row[2] += dropped

    def describe(self) -> str:
        """One line: ``NAME: N lines in, K kept, D dropped; ...``."""
        return "; ".join(f"{name}: {n} lines in, {k} kept, {d} dropped" for name, (n, k, d) in self.by_source.items())


def marker_event(fmt: str, source: str, text: str, **facts: object) -> bytes:
    """A visible note in the output (a truncated file, a new generation): a text line or a JSONL event."""
    if fmt == "jsonl":
        return json.dumps({"event": "marker", "source": source, "text": text, **facts}).encode() + b"\n"
    return f"[streamfilter: {text}]\n".encode()


class LiveStream:
    """A stream's filter and sinks.

    Args:
        source: the stream's name in JSONL events.
        config: the filter's settings.
        timing: idle times (seconds).
        sinks: where runs go, each in its own format.
        refs: gives a DROP run its ref (``""`` for none).
        start_line, start_byte: where the stream resumes (see ``StreamFilter``).
        totals: where the stream's counts are added, under ``totals_key``.

    Attributes:
        emitted_line, emitted_byte: the stream position just past the last run written
            (what a checkpoint may record).
    """

    def __init__(
        self,
        source: str,
        config: FilterConfig,
        timing: Timing,
        sinks: Sequence[Sink],
        refs: RefMaker | None = None,
        start_line: int = 1,
        start_byte: int = 0,
        totals: Totals | None = None,
        totals_key: str = "",
    ) -> None:
        self.source = source
        self.filter = StreamFilter(config, source, start_line, start_byte)
        self.timing = timing
        self.sinks = sinks
        self.refs = refs or (lambda run: "")
        self.emitted_line = start_line
        self.emitted_byte = start_byte
        self._last = time.monotonic()
        self._unsettled = False  # bytes fed since the last settle
        self._since = self._last  # when the first of them came
        self._partial_out = False  # the held partial line was let out already
        self._ended = False
        self._totals = totals
        self._totals_key = totals_key or source
        self._counted = (0, 0, 0)

    async def feed(self, chunk: bytes) -> None:
        """The next bytes; writes the runs they decide (waits while a sink is full)."""
        if not chunk:
            return
        self._last = time.monotonic()
        if not self._unsettled:
            self._unsettled, self._since = True, self._last
        if b"\n" in chunk:
            self._partial_out = False
        await self._write(self.filter.feed(chunk))
        if self._last >= self._since + self.timing.max_delay_seconds:
            self._unsettled = False
            await self._write(self.filter.settle())

    def due(self) -> float | None:
        """``time.monotonic()`` at which ``tick`` has work to do, or None while nothing waits."""
        if self._ended or not (self._unsettled or (self.filter.held_bytes and not self._partial_out)):
            return None
        return self._last + self.timing.idle_seconds

    async def tick(self) -> None:
        """Settle the stream if it has been quiet for ``idle_seconds`` (see the module docstring)."""
        due = self.due()
        if due is None or time.monotonic() < due:
            return
        self._unsettled = False
        self._partial_out = self.filter.held_bytes > 0
        await self._write(self.filter.settle(partial=True))

    async def end_line(self) -> None:
        """End an unterminated last line here; the stream goes on (``StreamFilter.end_line``)."""
        await self._write(self.filter.end_line())

    async def marker(self, text: str, **facts: object) -> None:
        """Write a visible note to every sink."""
        for sink in self.sinks:
            await sink.send(marker_event(sink.format, self.source, text, **facts))

    async def end(self) -> None:
        """End of the stream: decide and write everything, then the JSONL end event."""
        if self._ended:
            return
        self._ended = True
        await self._write(self.filter.flush())
        for sink in self.sinks:
            if sink.format == "jsonl":
                await sink.send(end_event(self.filter.stats, self.source))

    async def _write(self, runs: list[Run]) -> None:
        if not runs:
            return
        rendered: dict[str, bytes] = {}
        # shielded: a stop arriving mid-write must not leave one sink with runs another lacks
        with anyio.CancelScope(shield=True):
            for sink in self.sinks:
                data = rendered.get(sink.format)
                if data is None:
                    data = rendered[sink.format] = b"".join(
                        render(run, sink.format, self.source, self.refs(run)) for run in runs
                    )
                await sink.send(data)
        self.emitted_line = runs[-1].last_line + 1
        self.emitted_byte = runs[-1].end_byte
        if self._totals is not None:
            stats = self.filter.stats
            now = (stats.lines, stats.kept_lines, stats.dropped_lines)
            self._totals.add(self._totals_key, *(a - b for a, b in zip(now, self._counted, strict=True)))
            self._counted = now
