"""One live stream: a ``StreamFilter`` between a source and its sinks, with idle settling.

The source calls ``feed`` with bytes as they arrive, ``tick`` when its wait for more times out
at ``due()``, and ``end`` at the end of the stream. A stream quiet for ``idle_seconds`` is
settled: its pending lines are decided and written, an unterminated last line too if it holds a
signature or a query term (bytes that complete it later are written as its rest), so a final error
is shown without waiting for a successor that may never come. A stream that never pauses is
settled (complete lines only) once its oldest undecided bytes have waited ``max_delay_seconds``,
so output keeps pace with input. An open DROP run is summarized once it is ``DROP_SUMMARY_SECONDS``
old, at a pause or at the next feed, if its summary is at most half its bytes, else when more
lines make it so or the stream has been quiet ``QUIET_SUMMARY_SECONDS`` (``StreamFilter.close_drop``:
which lines are kept does not change, only where summaries split).

A settle writes what it keeps at once; the lines it would drop after the last kept one stay
undecided (``StreamFilter.settle``'s ``decide_before``) until a later settle keeps a line after
them, their look-ahead comes, the stream ends (the tail rule) or they were fed ``HOLD_SECONDS``
ago: a pause does not cost them the look-ahead ``filter`` decides them with. Those a kept line
releases that the tail rule would keep if the stream ended now are kept.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

import anyio

from ..core.baseline import Baseline
from ..core.filter import FilterConfig, StreamFilter
from ..core.output import end_event, marker_event, render
from ..core.records import Run
from ._logging import log_notices
from .config import SourceConfig, Timing
from .expand import Archive, archive_refs, escaped_source
from .sinks import Sink
from .totals import COUNTS, Totals

__all__ = ("ArchivedStream", "LiveStream", "archived_stream")

RefMaker = Callable[[Run], str]

# an open DROP run is summarized at a pause once it is this old: a stream that trickles (a line
# every 70 ms, each after a pause) gets about a summary a second, not one per line; and so is one
# that never pauses, of the lines decided so far (it showed nothing until its first pause)
DROP_SUMMARY_SECONDS = 1.0
# the totals counted as they are read; the others (kept, dropped, runs) once the sinks took the runs:
# a NATS stream whose lease lapsed writes nothing, and another worker (or this one) reads it again
_READ = ("lines", "bytes")
# an open DROP run too short for its summary to come early (``StreamFilter.close_drop``) comes out
# once the stream is quiet this long: a slow printer (a line every 0.25 s) waits for lines that pay
# for its summary, a stream that stopped shows what it dropped
QUIET_SUMMARY_SECONDS = 3.0
# the rest of a line let out early comes out at most this often until its end (a line written a
# byte at a time is a few runs, not one a byte)
REST_SECONDS = 1.0
# a line a settle would drop waits this long at most for what comes after it (the look-ahead that
# ``filter`` decides it with: a later failure line's context, its window, the tail at the end),
# then it is decided with what came; a kept line is never held back by it
HOLD_SECONDS = 3.0


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
        extra: fields added to every JSONL object of the stream (e.g. a run id).
        hold_tail: a command's run: settling leaves the last lines the tail rule may still keep
            undecided (``StreamFilter.tail_hold``), so the tail rule at its end (faithful on
            failure) still has them (see ``release_after``).
        baseline: the line shapes of the command's last green run (``StreamFilter``).

    Attributes:
        emitted_line, emitted_byte: the stream position just past the last run written
            (what a checkpoint may record).
        on_written: called after each batch of runs is written to every sink (a checkpoint
            saved there leaves the least to repeat after a crash).
        on_green: called when the stream, a command's run, ended and the command exited 0 (its
            baseline is stored there).
        release_after: with ``hold_tail``, once the stream has been quiet this many seconds, the held
            lines up to the last one a settle keeps are decided and written (an error before a hang
            is shown; those the tail rule would keep if the stream ended now are kept); the lines
            after it stay for the tail rule at the end. None (the default): held to the end.
        pause_shows_tail: at that release, the lines the tail rule would keep if the stream ended
            now are written too, an unterminated last line with them: a command quiet that long
            may wait for its user (a prompt, "Continue? [y/N]").

    In ``text`` sinks, which streams may share, a stream that ends (or writes a marker) after
    an unterminated line gets a newline first, so the next output starts a line of its own; so
    does another stream's line let out at a pause before this stream's output (its rest then
    starts a line of its own).
    Input warnings of the filter (``input.invalid_utf8``, ``input.long_line``) are logged.
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
        extra: dict[str, object] | None = None,
        hold_tail: bool = False,
        rest_of: tuple[int, bool] | None = None,
        baseline: Baseline | None = None,
    ) -> None:
        self.source = source
        self.filter = StreamFilter(config, source, start_line, start_byte, rest_of=rest_of, baseline=baseline)
        self.timing = timing
        self.sinks = sinks
        self.refs = refs or (lambda run: "")
        self.emitted_line = start_line
        self.emitted_byte = start_byte
        self._last = time.monotonic()
        self._unsettled = False  # bytes fed since the last settle
        self._since = self._last  # when the first of them came
        self._partial_out = False  # the held partial line was settled already (let out, or kept waiting)
        self._ended = False
        self._totals = totals
        self._totals_key = totals_key or source
        self._counted = (0,) * len(COUNTS)
        self._fed_byte = start_byte  # stream offset just past the last byte fed
        self._arrived: deque[tuple[int, float]] = deque()  # (end offset, time) of chunks not yet all written
        self.extra = extra
        self._hold_tail = hold_tail
        self.on_written: Callable[[], None] | None = None
        self.on_green: Callable[[], None] | None = None
        self.release_after: float | None = None
        self.pause_shows_tail = False
        self._released = False  # the held lines were let out at this quiet (``release_after``)
        self._fed_ends_line = True  # the last byte fed is a line end (or nothing was fed)
        self._last_kept = False  # the last run written was KEEP
        self._drop_since: float | None = None  # when the open DROP run was first seen open
        self._drop_waits = False  # it was old at a pause, too short for its summary: it waits for input or quiet
        self._rest_out = 0.0  # when a line, or a piece of its rest, was last let out early
        # (stream index one past the last complete line fed, time) of recent feeds, oldest first:
        # the lines fed HOLD_SECONDS ago are decided at the next settle
        self._fed_lines: deque[tuple[int, float]] = deque()
        self._start_line = start_line
        self._lines_fed = start_line - 1
        self._decide_before = start_line - 1  # lines before this stream index are decided at a settle

    async def feed(self, chunk: bytes) -> None:
        """The next bytes; writes the runs they decide (waits while a sink is full)."""
        if not chunk:
            return
        self._last = time.monotonic()
        self._released = False
        self._drop_waits = False
        if not self._unsettled:
            self._unsettled, self._since = True, self._last
        if b"\n" in chunk:
            self._partial_out = False
        self._fed_ends_line = chunk.endswith(b"\n")
        self._fed_byte += len(chunk)
        if self._totals is not None:
            self._arrived.append((self._fed_byte, self._last))
        self._lines_fed += chunk.count(b"\n")
        if self._fed_lines and self._last - self._fed_lines[-1][1] < HOLD_SECONDS / 100:
            self._fed_lines[-1] = (self._lines_fed, self._fed_lines[-1][1])  # (a few entries a hold)
        else:
            self._fed_lines.append((self._lines_fed, self._last))
        await self._write(self.filter.feed(chunk))
        if self._drop_since is not None and self._last >= self._drop_since + DROP_SUMMARY_SECONDS:
            # a stream that never pauses gets the summary of what it dropped so far, as a pause would
            await self._write(self.filter.close_drop())
        if self._last >= self._since + self.timing.max_delay_seconds:
            self._unsettled = False
            before = self._held_before(self._last)
            await self._write(self.filter.settle(hold_lines=self._held(), close_drop=False, decide_before=before))

    def _held(self) -> int:
        """The last lines a settle leaves undecided: a command's run holds those its end's tail
        rule may still keep (``StreamFilter.tail_hold``: 3 once a failure was found, not 25, so a
        slow suite's first failure shows as it goes on, helper-41)."""
        return self.filter.tail_hold if self._hold_tail else 0

    def _held_before(self, now: float) -> int:
        """Stream index before which every line is decided at a settle now: those fed
        ``HOLD_SECONDS`` ago or more."""
        while self._fed_lines and self._fed_lines[0][1] <= now - HOLD_SECONDS:
            self._decide_before = self._fed_lines.popleft()[0]
        return self._decide_before

    def _held_due(self) -> float | None:
        """When the oldest line a settle left undecided is to be decided, or None when none is."""
        if self.filter.undecided_lines <= self._held():
            return None
        decided = self._start_line - 1 + self.filter.stats.lines - self.filter.undecided_lines  # (lines before it)
        for lines, at in self._fed_lines:
            if lines > decided:
                return at + HOLD_SECONDS
        return None

    def _release_due(self) -> float | None:
        """When the held lines are let out (``release_after``), or None."""
        if self.release_after is None or not self._hold_tail or self._released:
            return None
        if not (self.filter.undecided_lines or self.filter.held_bytes):
            return None
        return self._last + self.release_after

    def due(self) -> float | None:
        """``time.monotonic()`` at which ``tick`` has work to do, or None while nothing waits."""
        if self._ended:
            return None
        quiet = self._last + self.timing.idle_seconds
        if self._unsettled or (self.filter.held_bytes and not self._partial_out):
            return quiet
        drop = None  # only an open DROP run waits: for its age (then, too short for its summary, for quiet)
        if self._drop_since is not None:
            drop = max(quiet, self._drop_since + DROP_SUMMARY_SECONDS)
            if self._drop_waits:
                drop = max(drop, self._last + QUIET_SUMMARY_SECONDS)
        waits = [
            # (a settle that holds lines lets no rest out: waiting on it had spun the loop while a
            # line let out at 8 MiB went on, a command's run at 100 % CPU, a NATS partition stopped)
            max(quiet, self._rest_out + REST_SECONDS) if self.filter.rest_held and not self._held() else None,
            drop,  # and lines a settle left undecided wait for theirs
            self._held_due(),
            self._release_due(),
        ]
        due = [t for t in waits if t is not None]
        return min(due) if due else None

    async def tick(self) -> None:
        """Settle the stream if it has been quiet for ``idle_seconds``, closing an open DROP run
        only once it is ``DROP_SUMMARY_SECONDS`` old (see the module docstring)."""
        due = self.due()
        now = time.monotonic()
        if due is None or now < due:
            return
        self._unsettled = False
        self._partial_out = self.filter.held_bytes > 0
        old = self._drop_since is not None and now >= self._drop_since + DROP_SUMMARY_SECONDS
        # (closed whatever its size: no more lines came to pay for its summary)
        stopped = old and now >= self._last + QUIET_SUMMARY_SECONDS
        rest = now >= self._rest_out + REST_SECONDS
        release = self._release_due()
        if release is not None and now >= release:
            # quiet long enough: the lines up to the last kept one go (decide_before 0: none for their
            # age), those after it wait for the tail rule
            self._released = True
            runs = self.filter.settle(
                partial=True, close_drop=stopped, rest=rest, decide_before=0, tail_now=self.pause_shows_tail
            )
        else:
            before = self._held_before(now)
            runs = self.filter.settle(
                partial=True, hold_lines=self._held(), close_drop=stopped, rest=rest, decide_before=before
            )
        if old:
            runs += self.filter.close_drop()
            self._drop_waits = self.filter.drop_open
        if self.filter.rest_of is not None and runs and runs[-1].last_line == self.filter.rest_of[0]:
            self._rest_out = now  # a line, or its rest, let out
        await self._write(runs)

    @property
    def written_inside_line(self) -> tuple[int, bool] | None:
        """``(line, kept)`` when what was written ends inside a line (let out at a pause, or
        ended by ``end`` without its line end): what comes after it is that line's rest."""
        if self.filter.rest_of is not None:
            return self.filter.rest_of
        if self._ended and not self._fed_ends_line:
            return self.emitted_line - 1, self._last_kept
        return None

    async def end_line(self) -> None:
        """End an unterminated last line here; the stream goes on (``StreamFilter.end_line``).

        A text sink gets a line end after a kept unterminated line, so it does not run into
        the next file's first line (JSONL runs are apart already)."""
        await self._write(self.filter.end_line())
        self._fed_ends_line = True  # ended here: what comes next starts a line
        await self._end_open_line()

    async def marker(self, text: str, event: str = "marker", **facts: object) -> None:
        """Write a visible note to every sink (JSONL: an object with ``event``); an ``exit`` note
        (a command's run ended, its ``status`` in ``facts``) is counted in the totals."""
        if event == "exit" and self._totals is not None:
            status = facts.get("status")
            self._totals.run_ended(self._totals_key, status if isinstance(status, int) else None)
        for sink in self.sinks:
            # any stream's unterminated line, this one's too, is ended before the note
            line_end = b"\n" if sink.open_line is not None else b""
            sink.open_line = None
            note = marker_event(sink.format, self.source, text, event, **(self.extra or {}), **facts)
            await sink.send_from(self, line_end + self._label(sink) + note, f"{event}@{self.emitted_byte}")

    async def end(self, tail_lines: int | None = None, passed: bool = False) -> None:
        """End of the stream: decide and write everything, then the JSONL end event.

        ``tail_lines``, ``passed``: the tail rule's T for this end, and whether the command it
        came from passed (see ``StreamFilter.flush``).
        """
        if self._ended:
            return
        self._ended = True
        await self._write(self.filter.flush(tail_lines, passed))
        await self._end_open_line()
        for sink in self.sinks:
            if sink.format == "jsonl":
                await sink.send_from(self, end_event(self.filter.stats, self.source, self.extra), "end")

    async def release_tail(self) -> None:
        """Decide and write now every complete line a command's run holds, as a source that holds
        none decides them at a pause: for a source whose input waits on this output (a NATS
        partition whose messages in flight all hold such lines). The tail rule at the run's end
        then covers the lines that came since; keeping the tail as if the run ended at each such
        moment kept 63 % of a noisy partition's lines (helper-47)."""
        await self._write(self.filter.settle(decide_before=self._lines_fed))

    async def release_line(self) -> None:
        """Decide and write now the unterminated line held, whatever it holds (``StreamFilter.settle``'s
        ``force``), its rest to come as a run of its own: for a source whose input waits on this
        output (a NATS partition whose messages in flight are all one long line's: a 20 MB line
        stopped its partition for good, helper-72)."""
        await self._write(self.filter.settle(partial=True, decide_before=self._lines_fed, force=True))

    async def summarize_dropped(self) -> None:
        """Write the open DROP run's summary now if it is at most half the bytes it stands for
        (``StreamFilter.close_drop``), not when it is ``DROP_SUMMARY_SECONDS`` old: for a source
        whose input waits on this output (a NATS partition's unacked messages)."""
        await self._write(self.filter.close_drop())

    async def settle(self) -> None:
        """Decide and write the complete lines held, as a pause would, the stream going on
        elsewhere (a NATS stream handed to another worker): its open DROP run is closed, its
        unterminated last line (and a run's last ``tail_lines``) left undecided."""
        # (all of a run's tail_lines: the next owner's filter has not seen the failure found here)
        await self._write(self.filter.settle(hold_lines=self.filter.config.tail_lines if self._hold_tail else 0))

    def position(self) -> dict[str, str]:
        """Where the written output ends, for a reader to go on from: ``next-byte``, ``next-line``
        and, when it ends inside a line, ``rest-line`` and ``rest-kept`` (``1`` or ``0``)."""
        out = {"next-byte": str(self.emitted_byte), "next-line": str(self.emitted_line)}
        inside = self.written_inside_line
        if inside is not None:
            out["rest-line"], out["rest-kept"] = str(inside[0]), str(int(inside[1]))
        return out

    async def _end_open_line(self) -> None:
        for sink in self.sinks:
            if sink.open_line is self:
                sink.open_line = None
                await sink.send_from(self, b"\n", f"line-end@{self.emitted_byte}")

    def _ref(self, sink: Sink, run: Run) -> tuple[str, Mapping[str, object] | None, str]:
        """The ref of ``run`` as ``sink`` writes it (``Sink.text_refs``), this stream's extra fields,
        and the note before the ref (``TextRefs.note``): ``render``'s arguments after the source."""
        ref = self.refs(run)
        # (a dropped line end alone writes nothing in text: its ref named its source to no reader, and
        # the first summary after a restart inside a line had a short ref, helper-85)
        if sink.text_refs is None or sink.format != "text" or not run.summary:
            return ref, self.extra, ""
        ref = sink.text_refs(ref)
        return ref, self.extra, sink.text_refs.note(ref)

    def _line_start(self, sink: Sink) -> bytes:
        """What goes before this stream's output in text ``sink``: a line end when another
        stream's unterminated line is the last thing there (which then has none open), so the
        two never share a line; then ``_label``."""
        line_end = b""
        if sink.open_line is not None and sink.open_line is not self:
            sink.open_line = None
            line_end = b"\n"
        return line_end + self._label(sink)

    def _label(self, sink: Sink) -> bytes:
        """``==> NAME <==`` and a line end when ``sink`` is a shared text sink that another
        stream (or none yet) wrote to last, as ``tail`` labels several files (a blank line
        before it unless the sink is ``fresh``); else nothing."""
        if sink.format != "text" or not sink.shared or sink.last_stream == self.source:
            return b""
        gap = b"" if sink.fresh else b"\n"
        sink.last_stream, sink.fresh = self.source, False
        return gap + f"==> {escaped_source(self.source)} <==\n".encode()  # (a name's newline: one line)

    def _count_read(self) -> tuple[int, ...] | None:
        """Add the lines and bytes read since the last count to the totals (they count as they
        come, also while a DROP run stays open); return the filter's counts now (``COUNTS``
        order), None without totals."""
        if self._totals is None:
            return None
        stats = self.filter.stats
        now = tuple(getattr(stats, name) for name in COUNTS)
        read = [a - b if name in _READ else 0 for name, a, b in zip(COUNTS, now, self._counted, strict=True)]
        self._totals.add(self._totals_key, read)
        self._counted = tuple(a if name in _READ else b for name, a, b in zip(COUNTS, now, self._counted, strict=True))
        return now

    async def _write(self, runs: list[Run]) -> None:
        log_notices(self.filter.notices, self.source)
        if not self.filter.drop_open:
            self._drop_since = None
        elif self._drop_since is None:
            self._drop_since = time.monotonic()
        counts = self._count_read()
        if not runs:
            return
        # the position moves before the sinks are written: a sink that records it (nats) writes
        # the position its output reaches; a write that fails moves it back, so no checkpoint
        # passes what a sink did not take (a full disk at a stop)
        before = (self.emitted_line, self.emitted_byte, self._last_kept)
        self.emitted_line = runs[-1].last_line + 1
        self.emitted_byte = runs[-1].end_byte
        self._last_kept = runs[-1].decision == "keep"
        key = f"{runs[0].start_byte}-{runs[-1].end_byte}"
        rendered: dict[str, bytes] = {}
        # shielded: a stop arriving mid-write must not leave one sink with runs another lacks
        with anyio.CancelScope(shield=True):
            for sink in self.sinks:
                data = rendered.get(sink.format)
                if data is None:
                    data = b"".join(render(run, sink.format, self.source, *self._ref(sink, run)) for run in runs)
                    if sink.format != "text" or sink.text_refs is None:  # (abbreviated refs are a sink's own)
                        rendered[sink.format] = data
                if sink.format == "text":
                    data = self._line_start(sink) + data
                    sink.open_line = self if not data.endswith(b"\n") else None
                try:
                    await sink.send_from(self, data, key)
                except BaseException:
                    self.emitted_line, self.emitted_byte, self._last_kept = before
                    raise
        if counts is not None and self._totals is not None:  # kept and dropped: once the sinks took them
            self._totals.add(self._totals_key, [a - b for a, b in zip(counts, self._counted, strict=True)])
            self._counted = counts
        if self._totals is not None:
            done = time.monotonic()
            while self._arrived and self._arrived[0][0] <= self.emitted_byte:
                self._totals.decided(self._totals_key, done - self._arrived.popleft()[1])
        if self.on_written is not None:
            self.on_written()


class ArchivedStream(LiveStream):
    """A live stream whose bytes are copied to an archive as they come, so its refs can be expanded."""

    archive: Archive | None = None

    async def feed(self, chunk: bytes) -> None:
        if self.archive is not None:
            self.archive.write(chunk)
        await super().feed(chunk)

    async def end(self, tail_lines: int | None = None, passed: bool = False) -> None:
        if self.archive is not None:
            self.archive.close()
        await super().end(tail_lines, passed)


def archived_stream(
    source: SourceConfig,
    sinks: Sequence[Sink],
    name: str,
    totals: Totals | None,
    extra: dict[str, object] | None = None,
    hold_tail: bool = False,
    baseline: Baseline | None = None,
) -> LiveStream:
    """A live stream of ``source`` named ``name`` whose bytes are archived for its refs (``baseline``:
    see ``LiveStream``)."""
    archive, refs = archive_refs(name)
    stream = ArchivedStream(
        name,
        source.filter,
        source.timing,
        sinks,
        refs,
        totals=totals,
        totals_key=source.name,
        extra=extra,
        hold_tail=hold_tail,
        baseline=baseline,
    )
    stream.archive = archive
    return stream
