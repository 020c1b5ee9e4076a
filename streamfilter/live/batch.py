"""Filter one whole input once, a file or stdin, to a binary output, optionally within a token budget.

Shared by ``streamfilter filter``, ``run --budget-tokens`` (the command's output, decided when it
ends) and the MCP server's tools. ``filter_input`` reads the input in chunks of ``READ_BYTES``
through one ``StreamFilter``, writing runs as they are decided (or, within a budget, at the end),
each DROP run with a ref that ``expand`` reads back: the file itself, or the archive's copy of
stdin.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import astuple, replace
from pathlib import Path
from typing import IO, BinaryIO

import numpy as np

from ..core.baseline import Baseline, ShapeCollector
from ..core.budget import (
    BUDGET_SUMMARY_CHARS,
    LINE_TOKENS,
    REF_BYTES_PER_TOKEN,
    REF_SOURCE_TOKENS,
    SUMMARY_CHARS_PER_TOKEN,
    Selection,
    UnitPool,
    estimate_tokens,
)
from ..core.filter import FilterConfig, FilterStats, StreamFilter, asked_patterns
from ..core.hits import PRIOR_FLOOR
from ..core.output import end_event, marker_event, render
from ..core.records import Run
from ..core.summarize import unshown_summary
from ..core.words import counted
from ..core.worker import FactsWorker, worth_a_worker
from ._logging import log_notices
from .checkpoint import PSEUDO_FILES, ReadPosition
from .expand import REF_NOTE, Archive, TextRefs, archive_refs, escaped_source, ref_of, short_ref
from .outcome import Filtered, InputChanged
from .stops import StopSignals
from .writes import flush_out, write_all

__all__ = ("READ_BYTES", "LetGoFilter", "StopSignals", "filter_input")

READ_BYTES = 1 << 20  # bytes read per call from a file or stdin


def filter_input(
    name: str,
    config: FilterConfig,
    fmt: str,
    out: BinaryIO,
    signals: StopSignals | None = None,
    budget_tokens: int | None = None,
    header: bytes = b"",
    baseline: Baseline | None = None,
    collector: ShapeCollector | None = None,
    with_refs: bool = True,
    failed: bool = False,
    before: FilterStats | None = None,
    label: str | None = None,
) -> Filtered:
    """Filter the input ``name`` (a file path, or ``-`` for stdin) to ``out`` in format ``fmt``.

    Without a budget, runs are written as they are decided, after ``header``; also after a stop
    signal or a change of the file, what was read is decided and written. Within ``budget_tokens``
    (estimated tokens of the text output), see ``_budgeted``. ``baseline``: the line shapes of the
    last green run (``StreamFilter``); ``collector``: gets the shape hashes of every line read.
    Without ``with_refs``, DROP runs get none (an input that is not kept: ``run``'s output held in memory).
    ``failed``: the input is the output of a command that failed (within a budget, see ``_budgeted``).
    ``before``: the counts of the lines before the input in the stream it is the end of (``run``'s
    output held in memory, whose first lines were let go and filtered apart: ``LetGoFilter``): its
    lines are numbered after them, and a JSONL end event counts them too. ``label``: the source its
    JSONL events and notes name (default ``name``: a file the input is copied to is not it).

    Raises:
        StreamfilterError: the output cannot be written, or the stdin archive cannot be made.
        OSError: the input cannot be opened.
    """
    refs = _Refs(name) if with_refs else _Refs.none()
    if budget_tokens is not None:
        try:
            last, stats = _budgeted(
                config, name, fmt, budget_tokens, out, refs, signals, header, baseline, collector, failed, before, label
            )
        except InputChanged as exc:
            return Filtered(b"", FilterStats(), exc)
        return Filtered(last, stats)
    write_all(out, header)
    writer = _Writer(out, fmt, label or name, refs, before=before)
    begin = _begin(before)
    sf = StreamFilter(config, source=name, start_line=begin[0], start_byte=begin[1], baseline=baseline)
    sf.collector = collector
    changed = None
    with _open(name) as handle:
        try:
            _feed(sf, handle, writer, signals, copies=refs.copies)
        except InputChanged as exc:
            changed = exc
        stopped = signals is not None and signals.received is not None and not _read_to_end(handle)
    refs.close()
    writer(sf.flush())
    if stopped:
        assert signals is not None and signals.received is not None
        # (an interrupted filter's output had ended as a whole one does, helper-105)
        what = "standard input" if name == "-" else escaped_source(label or name)
        text = f"filtering stopped by {signal.Signals(signals.received).name} after line {sf.stats.lines} of {what}"
        note = marker_event(fmt, name, f"{text}: the rest is not shown")
        write_all(out, note)
        writer.last = note[-1:]
    writer.end(sf)
    return Filtered(writer.last or header[-1:], sf.stats, changed)


def _read_to_end(handle: BinaryIO) -> bool:
    """Whether ``handle`` (a regular file) was read to its end; False for a pipe, a FIFO, a device."""
    try:
        info = os.fstat(handle.fileno())
        return stat.S_ISREG(info.st_mode) and handle.tell() >= info.st_size
    except (OSError, ValueError):
        return False


HELD_BYTES = 1 << 20  # most bytes of a line being read held back for a stop (a longer one is fed as it comes)
BUFFER_BYTES = 8 << 20  # output held in memory while a budget is decided; a temporary file past this
# a pipe's bytes held for a budget's second reading in memory, a temporary file past this: a smaller
# input needs no disk (one that could not take the file, a full one or `ulimit -f`, had given no
# output at all, helper-91)
SPOOL_BYTES = 64 << 20
# a failed command's output is read again to keep what its first reading left out that may be the
# failure in words no signature or query knows, in the middle of a long output: at most MISSED_TOP
# of its STREAM_TOP most probable lines (by the prior), and the first RARE_SEEDS rare lines of its
# DROP runs (``Run.rare_lines``: a template of at most 3 lines or 1 % of its run's, as one line
# among thousands of one or two templates; all its templates mined when its summary's do not take in
# every line, session 35). Out of fold on the corpus (benchmarks/quality.md,
# session 34), signatures off: 0.877 / 0.940 / 0.0941 as it streams; read again for the most
# probable lines 0.877 / 0.940 / 0.0942; and the rare lines, 1 / 3 / 5 of them: 0.886 / 0.942 /
# 0.0964, 0.886 / 0.942 / 0.0963, 0.887 / 0.942 / 0.0964; signatures on, 0.955 / 0.981 / 0.0950
# -> 0.960 / 0.981 / 0.0955 (3 or 5). The most probable lines only at ``hits.PRIOR_FLOOR`` or more:
# rows at 0.06 had been read again for and outranked the one rare line, a failure in its own
# words, at 300 tokens (helper-74); through `run --budget-tokens 1000` on the corpus, mean recall /
# full-recall share / median out_ratio 0.6887 / 0.5697 / 0.0283 before and after
MISSED_TOP = 2
RARE_SEEDS = 5


def _budgeted(
    config: FilterConfig,
    name: str,
    fmt: str,
    tokens: int,
    out: BinaryIO,
    refs: _Refs,
    signals: StopSignals | None,
    header: bytes = b"",
    baseline: Baseline | None = None,
    collector: ShapeCollector | None = None,
    failed: bool = False,
    before: FilterStats | None = None,
    label: str | None = None,
) -> tuple[bytes, FilterStats]:
    """Filter one input within a token budget; return the last byte written and the counts of the
    filter whose output it is. ``before``, ``label``: the lines before the input, and the source
    its events name (``filter_input``).

    A first pass runs the filter as usual, collecting the units it keeps
    (``budget.UnitPool``) and its own output while that stays within the budget (at least the
    room for a line between two summaries, ``budget.LINE_TOKENS``: a summary alone is what no
    budget can beat, and one line beside it shows more than it). When the whole input is within the
    budget (``budget.estimate_tokens``) and is not of a run known to have passed
    (``FilterConfig.results``: terse), every line is kept (the input itself in text, its KEEP runs
    in JSONL): a budget with room for all of it leaves nothing out. When the input is a failed
    command's output (``failed``) and the first pass left out some of its
    ``hits.STREAM_TOP`` most probable lines by the prior (``StreamFilter.likeliest``),
    or its DROP runs have rare lines (``Run.rare_lines``, each run mined for them:
    ``StreamFilter(mine_rare=True)``), it runs again over the
    same bytes with the first ``MISSED_TOP`` of those and the first ``RARE_SEEDS`` of
    these as the prior's lines (``StreamFilter(prior_seeds=...)``), and that pass is the first. If
    its output is within the budget, it is written: the budget changes nothing. Else a
    second pass over the same bytes keeps the chosen units. Passes after the first
    read the same open file (a file renamed or replaced meanwhile is still the one
    read), or a spool of what the first pass read (stdin, a pipe, a FIFO; in memory up to
    ``SPOOL_BYTES``, then a temporary file). The output
    is held until the bytes are known to be the same (CRC-32), then written after
    ``header``.

    Raises:
        InputChanged: the file changed under the first pass (truncated or rewritten), or
            between passes: nothing is written for it, not even ``header``.
    """
    begin, label = _begin(before), label or name
    # a summary line: its text, then "; ref ", the short ref (two offsets, a CRC) and a newline; the
    # ref by its length (its offsets and CRC, unknown yet, would move an estimate of its tokens)
    ref = f"; ref @{10**9}-{10**9}:{0xFFFFFFFF:08x}]\n"
    # the chosen output's summaries are short: each piece kept apart costs one
    terse = replace(config, summary_chars=min(config.summary_chars, BUDGET_SUMMARY_CHARS))
    drop_tokens = terse.summary_chars / SUMMARY_CHARS_PER_TOKEN + len(ref.encode()) / REF_BYTES_PER_TOKEN
    # the output's first ref says how to use one (TextRefs.note) and names its source, once: taken
    # off the units' budget (the source as REF_SOURCE_TOKENS, whatever its path)
    note_tokens = estimate_tokens(f"; {REF_NOTE}".encode()) + REF_SOURCE_TOKENS
    # no less than a line between two summaries: a smaller budget is raised to it (LINE_TOKENS)
    room = max(float(tokens), note_tokens + 2 * drop_tokens + LINE_TOKENS)
    with contextlib.ExitStack() as stack:
        held = stack.enter_context(tempfile.SpooledTemporaryFile(BUFFER_BYTES))
        handle = stack.enter_context(_open(name))
        # (a /proc file reads otherwise a second time: spooled, as a pipe is)
        regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode) and not _pseudo(name)
        start = handle.tell() if regular else 0  # stdin redirected from a file may not start at 0
        spool = None if regular else stack.enter_context(tempfile.SpooledTemporaryFile(SPOOL_BYTES))
        again = spool if spool is not None else handle
        origin = start if spool is None else 0
        checksum = _Checksum()
        fits = _Fits(tokens)
        copies: list[Callable[[bytes], object]] = [*refs.copies, fits]
        if spool is not None:
            copies.append(spool.write)

        def first_pass(seeds: Sequence[int] = ()) -> tuple[StreamFilter, UnitPool, _Writer, int, list[int]]:
            """A pass of the filter with the units it keeps, its own output (in ``held``), the bytes
            it read and the lines to read it again for (of a failed command's output)."""
            pool = UnitPool(room - note_tokens, drop_tokens, asked=asked_patterns(config), own_end=failed)
            held.seek(0)
            held.truncate()
            own = _Writer(held, fmt, label, refs, limit=room, before=before)
            sf = StreamFilter(
                replace(config, explain=True),
                source=name,
                start_line=begin[0],
                start_byte=begin[1],
                baseline=baseline,
                prior_seeds=seeds,
                mine_rare=failed and not seeds,  # (the rare lines of the first reading are read again for)
            )
            kept: set[int] = set()  # of the most probable lines so far, those kept (each is decided once)
            rare: list[int] = []

            def take(runs: list[Run]) -> None:
                pool.add(runs)
                if own.within_limit():  # past it, the filter's own output is not wanted
                    # the traces are for the pool; the output has them only with --explain
                    own(runs if config.explain else [replace(r, traces=(), traces_omitted=0) for r in runs])
                if failed:  # (a line left the most probable ones for good: it is forgotten)
                    likely = {line for line, _ in sf.likeliest()}
                    kept.intersection_update(likely)
                    kept.update(
                        n for r in runs if r.decision == "keep" for n in likely if r.first_line <= n <= r.last_line
                    )
                    for r in runs:
                        rare.extend(r.rare_lines[: RARE_SEEDS - len(rare)])

            if seeds:
                read = _read_again(sf, again, origin, take, checksum)
            else:
                sf.collector = collector  # (the first pass reads every line)
                try:
                    # (the bytes fed, which a stop leaves at a line end, are what later passes read)
                    read = _feed(sf, handle, take, signals, copies=copies, fed=checksum)
                except InputChanged as exc:
                    raise InputChanged(f"{exc}; nothing written for it") from None
                refs.close()
            take(sf.flush())
            if seeds:
                sf.notices.clear()  # the first pass logged them
            else:
                log_notices(sf.notices, name)  # the flush's own (the count of long lines past the first)
            likely = [line for line, p in sf.likeliest() if line not in kept and p >= PRIOR_FLOOR] if failed else []
            missed = likely[:MISSED_TOP]
            return sf, pool, own, read, missed + rare

        first, pool, own, read, seeds = first_pass()
        # the whole input within the budget: all of it (not of a run known to have passed, which
        # is terse: its passing tests are not what an agent reads it for); in JSONL as its KEEP
        # runs (they were the unbudgeted filter's, and its DROP runs, helper-60)
        whole = fits.within and not config.results
        if whole and fmt == "text":
            return _not_longer(held, out, header, fmt, (again, origin, read), first.stats, whole=True)
        if seeds and not whole and (signals is None or signals.received is None):  # (a stop: what was read, once)
            first, pool, own, read, _ = first_pass(seeds)
        if own.within_limit() and not whole:
            own.end(first)
            return _not_longer(held, out, header, fmt, (again, origin, read), first.stats)
        firsts = np.full(1, begin[0], dtype=np.int64)
        lasts = firsts + max(1, first.stats.lines) - 1
        selection = Selection(firsts, lasts) if whole else pool.select()  # (whole: every line)
        second = StreamFilter(
            terse, source=name, start_line=begin[0], start_byte=begin[1], selection=selection, baseline=baseline
        )
        held.seek(0)
        held.truncate()
        chosen = _Writer(held, fmt, label, refs, before=before)
        _read_again(second, again, origin, chosen, checksum)
        chosen(second.flush())
        second.notices.clear()  # the first pass logged them
        chosen.end(second)
        return _not_longer(held, out, header, fmt, (again, origin, read), second.stats)


def _read_again(
    sf: StreamFilter, handle: IO[bytes], origin: int, emit: Callable[[list[Run]], None], first: _Checksum
) -> int:
    """Feed the bytes the first pass fed (``first``: their length and CRC-32) from ``handle`` at
    ``origin`` through ``sf`` again (a file that grew since is read as far as it was); return the
    bytes read.

    Raises:
        InputChanged: they are not the same bytes (the file was truncated or rewritten).
    """
    handle.seek(origin)
    check = _Checksum()
    read = 0
    with contextlib.suppress(InputChanged):  # a truncation: the checksums below differ, and say so
        read = _feed(sf, handle, emit, None, copies=(check,), limit=first.total, notify=False)
    if check.total != first.total or check.crc != first.crc:
        raise InputChanged(
            f"{sf.source} changed while --budget-tokens read it again (truncated or rewritten); nothing written for it"
        )
    return read


class _Fits:
    """Whether the chunks it is called with, in order, are within ``tokens`` estimated tokens
    (``estimate_tokens`` of each chunk, summed; a run of letters cut between two chunks counts
    twice, a fraction of a token; past ``tokens`` it stops counting)."""

    def __init__(self, tokens: int) -> None:
        self._tokens = tokens
        self._total = 0.0

    def __call__(self, chunk: bytes) -> None:
        if self._total <= self._tokens:
            self._total += estimate_tokens(chunk)

    @property
    def within(self) -> bool:
        """The chunks so far are within the budget."""
        return self._total <= self._tokens


class _Checksum:
    """CRC-32 and length of the chunks it is called with."""

    def __init__(self) -> None:
        self.crc = 0
        self.total = 0

    def __call__(self, chunk: bytes) -> None:
        self.crc = zlib.crc32(chunk, self.crc)
        self.total += len(chunk)


def _not_longer(
    held: IO[bytes],
    out: BinaryIO,
    header: bytes,
    fmt: str,
    source: tuple[IO[bytes], int, int],
    stats: FilterStats,
    whole: bool = False,
) -> tuple[bytes, FilterStats]:
    """Write ``header``, then the filtered output in ``held`` (written up to its position), to
    ``out``; or in text, when that output is not shorter than the input (``source``: the file it
    can be read again from, its offset and length in bytes) or the input is within the budget
    (``whole``), the input itself, every line kept. Return the last byte written and the counts of
    what was written."""
    handle, origin, size = source
    if fmt != "text" or (held.tell() < size and not whole):
        return _copy(held, out, header), stats
    handle.seek(origin)
    every = FilterStats(stats.lines, stats.bytes, stats.lines, stats.bytes, keep_runs=min(1, stats.lines))
    return _copy(handle, out, header, size), every


def _copy(held: IO[bytes], out: BinaryIO, header: bytes, size: int = -1) -> bytes:
    """Write ``header``, then everything in ``held`` from its start (or from where it is, its next
    ``size`` bytes), to ``out``; return the last byte written."""
    write_all(out, header)
    last = header[-1:]
    if size < 0:
        held.seek(0)
    while size and (chunk := held.read(READ_BYTES if size < 0 else min(READ_BYTES, size))):
        write_all(out, chunk)
        last = chunk[-1:]
        size -= len(chunk) if size > 0 else 0
    flush_out(out)
    return last


class _Refs:
    """Gives each DROP run of one input a ref: the file itself, or the archive's copy of stdin
    (or of a FIFO, a device: what cannot be read again).

    Attributes:
        source: what the refs name (the file's absolute path, or the archive's name).
        copies: where each chunk read must also go (the archive, for stdin).
    """

    def __init__(self, name: str) -> None:
        self.archive: Archive | None = None
        self.copies: tuple[Callable[[bytes], object], ...] = ()
        # a FIFO or a device cannot be read again, nor a /proc file the same twice: archived
        if name == "-" or not os.path.isfile(name) or _pseudo(name):
            self.archive, self.of = archive_refs(name)
            self.source = self.archive.source if self.archive is not None else ""
            self.copies = (self.archive.write,) if self.archive is not None else ()
        else:
            self.source = path = str(Path(name).resolve())
            self.of = lambda run: ref_of(path, run)

    @classmethod
    def none(cls) -> _Refs:
        """No refs (and no archive)."""
        refs = cls.__new__(cls)
        refs.archive, refs.copies, refs.source = None, (), ""
        refs.of = lambda run: ""
        return refs

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


@contextlib.contextmanager
def _open(name: str) -> Iterator[BinaryIO]:
    """The input named ``name``: a file, or stdin for ``-`` (left open after)."""
    if name == "-":
        yield sys.stdin.buffer
        return
    with open(name, "rb") as handle:
        yield handle


class _Writer:
    """Writes runs of one input to ``out`` in format ``fmt``, each DROP run with its ref.

    ``limit``: once the runs given would take more than this many estimated tokens
    (``budget.estimate_tokens``) in the ``text`` format (what a budget counts, whatever ``fmt``: its
    refs short, the source named once as ``budget.REF_SOURCE_TOKENS``), nothing more is written
    (``within_limit`` then says so).
    """

    def __init__(
        self,
        out: IO[bytes],
        fmt: str,
        name: str,
        refs: _Refs,
        limit: float | None = None,
        before: FilterStats | None = None,
    ) -> None:
        self.out, self.fmt, self.name, self.refs = out, fmt, name, refs
        self.before = before  # the counts of the lines before the input, for its end event
        self.text_refs = TextRefs()  # (JSONL's refs are whole; a budget counts the text's)
        self.live = False  # flush after each batch (the input is a pipe or terminal)
        self.limit = limit
        self.written = 0.0
        self.last = b""  # the last byte written

    def __call__(self, runs: list[Run]) -> None:
        for run in runs:
            if not self.within_limit():
                return
            ref = self.refs.of(run)
            # (a dropped line end alone writes nothing in text: no source is named by it)
            text_ref = self.text_refs(ref) if run.summary else ref
            note = self.text_refs.note(text_ref) if run.summary else ""
            data = render(run, self.fmt, self.name, *((text_ref, None, note) if self.fmt == "text" else (ref,)))
            if self.limit is not None:
                # counted with its ref short and its source, when named, as REF_SOURCE_TOKENS: the same
                # for any path (the text's refs are short once a source is named)
                text = render(run, "text", "", short_ref(ref), note=note)
                self.written += estimate_tokens(text) + (REF_SOURCE_TOKENS if note else 0.0)
                if not self.within_limit():
                    return
            write_all(self.out, data)
            self.last = data[-1:] or self.last
        if self.live and runs:
            flush_out(self.out)

    def within_limit(self) -> bool:
        """Whether everything given so far was written."""
        return self.limit is None or self.written <= self.limit

    def end(self, sf: StreamFilter) -> None:
        """Write the end of the input: notices to the log, the JSONL end event; flush."""
        log_notices(sf.notices, self.name)
        if self.fmt == "jsonl":
            stats = sf.stats if self.before is None else _plus(self.before, sf.stats)
            write_all(self.out, end_event(stats, self.name))
        flush_out(self.out)


def _begin(before: FilterStats | None) -> tuple[int, int]:
    """The first line number (1-based) and byte offset of an input after the lines ``before``."""
    return (before.lines + 1, before.bytes) if before is not None else (1, 0)


def _plus(a: FilterStats, b: FilterStats) -> FilterStats:
    """The counts of ``a``'s lines and runs, then ``b``'s."""
    return FilterStats(*(x + y for x, y in zip(astuple(a), astuple(b), strict=True)))


class LetGoFilter:
    """The first part of an output kept only in part (``run.OutputCopy`` in memory, which holds its
    end), filtered as it is let go: each chunk once, in order, its runs without refs (its bytes are
    kept nowhere to be read back). What it writes is held: runs up to ``shown_bytes``, then one
    summary line that counts the lines after them (those the filter kept too), so memory does not
    grow with the output. Without it the lines let go had not been filtered at all, and a failure
    among them was not shown (helper-109: an ERROR 111 MB into 223 MB under ``--budget-tokens``).

    Args:
        config, fmt, name: the filter's settings, the output's format and the source it names.
        shown_bytes: most bytes of the runs held to be written.
    """

    def __init__(self, config: FilterConfig, fmt: str, name: str, shown_bytes: int) -> None:
        self._sf = StreamFilter(config, source=name)
        self._fmt, self._name = fmt, name
        self._shown = shown_bytes
        self._held: list[bytes] = []
        self._held_bytes = 0
        # past shown_bytes: the first run not shown, the last, and the lines kept among them
        self._unshown: tuple[Run, Run] | None = None
        self._unshown_kept = 0
        self._pending: list[bytes] = []  # bytes let go not fed yet (less than READ_BYTES)
        self._pending_bytes = 0

    @property
    def stats(self) -> FilterStats:
        """The lines and bytes fed so far, kept and dropped."""
        return self._sf.stats

    def feed(self, data: bytes) -> None:
        """The output's next bytes let go: filtered as a file is read, ``READ_BYTES`` at a time (a
        pipe's reads, 64 KiB each, fed one by one took 3 times a live run's time on the same bytes;
        a copy that could not be written lets go tens of MB at once)."""
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= READ_BYTES:
            self._feed_pending()

    def _feed_pending(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        for at in range(0, len(data), READ_BYTES):
            self._take(self._sf.feed(data[at : at + READ_BYTES]))

    def finish(self) -> bytes:
        """The end of the part let go (at a line end, or the output's end): what it writes."""
        self._feed_pending()
        self._take(self._sf.flush())
        out = b"".join(self._held)
        if self._unshown is not None:
            a, b = self._unshown
            why = (
                f"{counted(self._unshown_kept, 'line')} among them the filter kept; not shown: past the "
                f"{counted(self._shown, 'byte')} shown of the output's first part, which was not kept"
            )
            summary = unshown_summary(a.first_line, b.last_line, b.end_byte - a.start_byte, why)
            run = Run("drop", a.first_line, b.last_line, a.start_byte, b.end_byte, summary=summary)
            out += render(run, self._fmt, self._name)
        return out

    def _take(self, runs: list[Run]) -> None:
        for run in runs:
            if self._unshown is None:
                data = render(run, self._fmt, self._name)
                if self._held_bytes + len(data) <= self._shown:
                    self._held.append(data)
                    self._held_bytes += len(data)
                    continue
            self._unshown = (self._unshown[0] if self._unshown is not None else run, run)
            self._unshown_kept += run.lines if run.decision == "keep" and not run.rest else 0


def _feed(
    sf: StreamFilter,
    handle: IO[bytes],
    emit: Callable[[list[Run]], None],
    signals: StopSignals | None,
    copies: Sequence[Callable[[bytes], object]] = (),
    limit: int = -1,
    notify: bool = True,
    fed: Callable[[bytes], object] | None = None,
) -> int:
    """Feed ``handle`` through ``sf``, giving runs to ``emit`` as they are decided and each chunk
    to ``copies`` (an archive, a spool); return the bytes read.

    ``signals``: stop reading when a stop signal comes, after the last whole line read (the
    bytes returned are those fed). ``limit``: most bytes to read (-1: all).
    ``notify``: log the filter's input warnings (a second pass over the same bytes does not).
    ``fed``: called with the bytes fed, in order (not those of the line a stop left out).
    """
    name = sf.source
    # a large regular file: a second process computes the stateless stages ahead
    worker = FactsWorker(name, sf.preparer, READ_BYTES) if name != "-" and worth_a_worker(name) else None
    if worker is not None:
        sf.preparer = worker
    fd = handle.fileno()
    # a regular file is watched for truncation or a rewrite in place, as follow does; a pipe or
    # terminal is written through as it comes, a file at the end; so is a /proc or /sys file, whose
    # size reads 0 whatever it holds (it was said to be "truncated while it was read", helper-50)
    regular = stat.S_ISREG(os.fstat(fd).st_mode) and not _pseudo(name)
    pos = ReadPosition.at(fd, handle.tell()) if regular else None
    if isinstance(emit, _Writer):
        emit.live = pos is None
    read = 0
    # (with stop signals, the bytes after a chunk's last line end wait for the next chunk: a stop
    # leaves the line being read out whole, never cut, up to HELD_BYTES of it)
    held = b""
    stopped = False
    try:
        while limit < 0 or read < limit:
            size = READ_BYTES if limit < 0 else min(READ_BYTES, limit - read)
            chunk = signals.read(handle, size) if signals is not None else handle.read(size)
            if pos is not None:  # checked after the read (and at the end): a new file's bytes are not fed
                pos.advance(chunk)
                change = pos.change(fd)
                if change is not None:
                    raise InputChanged(f"{name} was {change[1]} while it was read: stopped reading it there")
            if not chunk:
                stopped = signals is not None and signals.received is not None
                break
            read += len(chunk)
            for copy in copies:
                copy(chunk)
            if signals is not None:
                data = held + chunk if held else chunk
                cut = data.rfind(b"\n") + 1
                if len(data) - cut > HELD_BYTES:  # (a longer line is fed as it comes)
                    cut = len(data)
                chunk, held = data[:cut], data[cut:]
            if fed is not None:
                fed(chunk)
            emit(sf.feed(chunk))
            if notify:
                log_notices(sf.notices, name)
            else:
                sf.notices.clear()
        if held and not stopped:  # (a stop: the line it was in is in the whole output only)
            if fed is not None:
                fed(held)
            emit(sf.feed(held))
            held = b""
    finally:
        if worker is not None:
            worker.close()
    return read - len(held)


def _pseudo(name: str) -> bool:
    """Whether the input ``name`` (``-``: stdin) is a /proc or /sys file (``checkpoint.PSEUDO_FILES``)."""
    return name != "-" and os.path.realpath(name).startswith(PSEUDO_FILES)
