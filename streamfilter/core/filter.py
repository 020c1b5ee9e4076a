"""The pure, incremental filter: bytes in, KEEP/DROP runs out.

``StreamFilter.feed(bytes) -> list[Run]`` and ``flush() -> list[Run]`` chain the
stages: lines -> scoring text -> layout, terms, signatures -> windows -> BM25
scores -> cut -> per-line decisions -> runs (KEEP verbatim, DROP summarized).
No I/O, no event loop; the CLI and the daemon share it.

This module ingests blocks (``prepare``), assigns their lines to windows (``segment``), scores
the windows (``score``, ``decide``) and decides which lines to keep (``StreamFilter._emit``). The
lines it holds (``pending``) it hands to the stages around the decision: ``hits`` (the lines
failure signatures and the learned prior protect, and what each keeps around it), ``runs`` (the
decided lines as KEEP runs and DROP summaries) and ``explain`` (``--explain``'s window traces).

Decisions wait for a bounded look-ahead: a line is decided once its window's
group has a cut and ``lookahead_lines`` more lines have arrived (so the last
``tail_lines`` lines and the context after a protected hit are known). Every
decision depends only on the bytes, never on how they were chunked.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from . import lines
from ._heap import keep_block_buffers
from .baseline import NEAR_LINES, Baseline, Novelty, ShapeCollector, line_hashes, text_hashes
from .budget import NAMED_CHARS, Selection
from .decide import CutTracker, RepeatGate, bridged_ends
from .explain import MAX_TRACES, BatchFacts, Tracer
from .hits import PRIOR_BEFORE, PRIOR_HEAD, Hits, PriorRater, weak_lines
from .lines import LineSplitter, bounded, utf8_cut
from .pending import PendingLines, WindowTable
from .prepare import BlockFacts, Preparer
from .prior import CONTEXT_REACH, REACH, PriorModel, default_model
from .records import FilterStats, LineBlock, Run
from .results import result_lines
from .runs import RunBuilder
from .score import BM25Scorer
from .segment import Segmenter, WindowAssignment
from .settings import DEFAULT_QUERY, MAX_COUNT, MIN_LINE_BYTES, FilterConfig
from .signatures import DEFAULT_SIGNATURES, LEAD_LINES, SignatureSet
from .tokens import Query

__all__ = (
    "DEFAULT_QUERY",
    "MAX_COUNT",
    "MAX_TRACES",
    "MIN_LINE_BYTES",
    "FilterConfig",
    "FilterStats",
    "Notice",
    "StreamFilter",
    "asked_patterns",
)


# the stream's last lines, kept with a tail that ends at an earlier exit verdict: what came after a
# retried command's "exited with 1" may be the failure, and a CI runner's last line is its verdict
LAST_LINES = 2
MAX_LONG_LINE_NOTICES = 5  # per stream; later long lines are counted in one notice at the end
# a query term counts on the first this many lines of each line shape: a warning printed after every
# download is kept for BM25 the first times, and its later copies are counted in summaries
TERM_REPEATS = 3

Int64Array = npt.NDArray[np.int64]

# letters or digits joined by . _ / \ - or :: (inside a word): a name, not words
_JOINED = re.compile(r"[^\W_](?:[._/\\-]|::)+[^\W_]|[^\W_]_|_[^\W_]")


def _is_code(word: str) -> bool:
    """A query word matched whole: an error code, letters and digits (``F401``, ``E0308``), whose
    terms would be a letter and a number, each found anywhere (``def f0``, ``E7``); a number of 2
    digits or more (a port, a ticket, a status: ``8080``, ``777``; as a term alone, a window of
    like lines held it: ``-q 'item 777'`` kept no line for it, helper-41); or a name of parts
    joined by ``. _ / \\ -`` or ``::`` (``payment_service``, ``settings.yaml``, ``test_ok[17]``,
    ``tests::t07``), whose parts are never counted as terms inside such a name (``tokens.is_counted``)."""
    if word.isascii() and word.isdigit():
        return len(word) >= 2
    if word.isalnum():
        return any(c.isalpha() for c in word) and any(c.isdigit() for c in word)
    return _JOINED.search(word) is not None


def asked_patterns(config: FilterConfig) -> tuple[str, ...]:
    """The regexes of the lines the user asked for: ``config.protect``, then each error code or
    name of the query (``_is_code``) as a whole word in any case. They keep their lines, are never
    repeat-capped, and a token budget chooses them first (``budget.UnitPool``)."""
    codes = (rf"(?i)(?<!\w){re.escape(w)}(?!\w)" for w in config.query.split() if _is_code(w))
    return config.protect + tuple(codes)


@dataclass(frozen=True, slots=True)
class Notice:
    """Something about the input worth a warning (the edge logs it; the filter goes on).

    Attributes:
        event: ``input.invalid_utf8`` (first line with invalid UTF-8 in the stream)
            or ``input.long_line`` (a line over ``max_line_bytes``; the first
            ``MAX_LONG_LINE_NOTICES`` of a stream each, then one at the end of the
            stream that counts the rest and names the last).
        line: 1-based line number.
        n_bytes: the line's length in bytes; with ``rest_follows``, of its first piece.
        count: how many lines the notice stands for.
        rest_follows: the line reached ``lines.HELD_LINE_BYTES`` without its line end: it was let out
            there, and its rest follows in pieces (``StreamFilter.feed``).
    """

    event: str
    line: int
    n_bytes: int
    count: int = 1
    rest_follows: bool = False


class StreamFilter:
    """One stream through every stage: ``feed(bytes) -> list[Run]``, ``flush() -> list[Run]``.

    Runs come out in order and cover every line exactly once; KEEP runs carry
    the exact input bytes. Memory is bounded by the look-ahead (lines and
    windows), one KEEP run of at most ``max_keep_event_bytes`` plus its last
    line, the longest line, and a bounded shape table per DROP run.

    A live stream that goes quiet calls ``settle`` to decide what it holds
    without waiting for the look-ahead (see there).

    Args:
        config: the filter's settings.
        source: a name for the stream (used by sinks only).
        start_line: 1-based number of the first line fed (a stream resumed from a
            checkpoint; the head rule applies only to a stream's true first lines).
        start_byte: stream offset of the first byte fed.
        selection: the lines to keep, chosen by a token budget over a first pass
            (``budget.UnitPool.select``); every other line is dropped. Windows, scores and
            traces are as without it; a window kept on its own but not chosen is traced
            with the reason ``budget``.
        rest_of: ``(line, kept)``: the first bytes fed, up to a line end, are the rest of
            line ``line`` (numbered ``start_line - 1``), written before its end came and
            kept or not (a stream resumed from a checkpoint taken inside a line).
        prior_model: the prior's weights when ``config.prior`` (default: the shipped ones,
            ``prior.default_model``); an evaluation passes a model fitted on other logs.
        baseline: the line shapes of the last green run of the same command: the lines it saw
            weigh less, the others more (``streamfilter.core.baseline``); None: as without.
        prior_seeds: 1-based numbers of lines the prior keeps whatever their probability (of a
            failed command's output read again: its most probable lines, ``likeliest``, and its
            rare lines, ``Run.rare_lines``, that an earlier pass over the same bytes left out); a
            weak line, or one of a shape the prior kept ``PRIOR_REPEATS`` times, is not kept for it.
        mine_rare: find each DROP run's rare lines (``Run.rare_lines``) also when its summary's
            templates do not take in every line, mining all its templates (a failed command's
            output, to be read again for them): more work per run, the same output.

    Attributes:
        collector: when set, the shape hashes of every line go to it too (a run whose baseline
            is stored if it passes).

    Raises:
        UsageError: a ``protect`` pattern that is not a valid regex.
        OSError, ValueError: the shipped prior weights cannot be read (a broken install).
    """

    def __init__(
        self,
        config: FilterConfig | None = None,
        source: str = "-",
        start_line: int = 1,
        start_byte: int = 0,
        selection: Selection | None = None,
        rest_of: tuple[int, bool] | None = None,
        prior_model: PriorModel | None = None,
        baseline: Baseline | None = None,
        prior_seeds: Sequence[int] = (),
        mine_rare: bool = False,
    ) -> None:
        self.config = cfg = config or FilterConfig()
        keep_block_buffers()  # the stages' block-sized buffers reuse heap pages (see _heap)
        self.source = source
        self._selection = selection
        words = cfg.query.split()
        codes = [w for w in words if _is_code(w)]
        self.query = Query.parse(" ".join(w for w in words if w not in codes))
        self.stats = FilterStats()
        self.notices: list[Notice] = []
        # a query word with no letters or digits ("[-]", "=====") cannot be a BM25 term: such
        # words are matched literally and keep their lines, like --protect patterns
        symbols = tuple(re.escape(word) for word in words if not any(ch.isalnum() for ch in word))
        asked = asked_patterns(cfg)
        # --protect patterns and error codes take their lines from the built-ins (never repeat-capped);
        # query symbols do not (a "=====" word must not take pytest's section header from its signature)
        prior = (prior_model or default_model()) if cfg.prior else None
        self._signatures = SignatureSet(
            DEFAULT_SIGNATURES if cfg.signatures else (), asked + symbols, first=len(asked), prior=prior is not None
        )
        self._splitter = LineSplitter(start_line, start_byte)
        self._segmenter = Segmenter(cfg.window_lines, cfg.window_chars, first_index=start_line - 1)
        self._scorer = BM25Scorer(len(self.query.terms), cfg.k1, cfg.b, cfg.delta)
        self._cuts = CutTracker(cfg.min_score, cfg.group_windows)
        self._prepare = Preparer(self.query, self._signatures, cfg.max_line_bytes, prior)
        # where the stateless stages run: here, or a worker that computes them ahead
        self.preparer: Callable[[LineBlock], BlockFacts] = self._prepare
        self._p = PendingLines(
            base=start_line - 1, tf=np.zeros((0, len(self.query.terms)), dtype=np.int64), buf_start=start_byte
        )
        self._assigned = start_line - 1  # lines with a window
        self._term_repeats = RepeatGate(TERM_REPEATS)
        self._hits = Hits(
            self._signatures,
            context_lines=cfg.context_lines,
            extend_lines=cfg.extend_lines,
            section_lines=cfg.section_lines,
            max_repeats=cfg.max_repeats,
        )
        self._windows = WindowTable()  # the windows of pending lines
        self._scored = 0  # windows 0.._scored-1 have a score
        self._segmenter_closed = 0  # windows 0.._segmenter_closed-1 are complete
        sigs = self._signatures
        self._tracer = Tracer(sigs.names, sigs.prior_id, cfg.window_lines) if cfg.explain else None
        seeds = np.unique(np.asarray(prior_seeds, dtype=np.int64)) - 1  # (stream indexes)
        self._rater = (
            PriorRater(prior, start_line - 1, cfg.max_line_bytes, self._tracer, seeds) if prior is not None else None
        )
        self._passed = cfg.results  # the command the stream came from passed (``flush`` may say so)
        # lines a hit may keep before it, which wait for it (``Hits.apply``)
        prior_before = max(PRIOR_BEFORE, PRIOR_HEAD) if prior is not None else 0
        self._before_hit = max(cfg.context_lines, prior_before) + LEAD_LINES
        self._novelty = Novelty(baseline, start_line - 1) if baseline is not None else None
        self.collector: ShapeCollector | None = None
        self._runs = RunBuilder(
            self.stats,
            max_keep_event_bytes=cfg.max_keep_event_bytes,
            top_shapes=cfg.top_shapes,
            summary_chars=cfg.summary_chars,
            min_drop_lines=cfg.min_drop_lines,
            max_line_bytes=cfg.max_line_bytes,
            budgeted=selection is not None,
            tracer=self._tracer,
            novelty=self._novelty,
            named=selection.named if selection is not None else None,
            named_chars=NAMED_CHARS,
            mine_rare=mine_rare,
        )
        self._seen_invalid_utf8 = False
        self._long_lines = 0
        self._last_long: Notice | None = None
        # after settle(): continuation lines still to keep (the record that was kept goes on),
        # and the line that settle(partial=True) let out, whose rest is still to come
        self._carry = 0
        self._carry_bridged = False  # the carry crossed its one gap already
        self._last_keep = False
        # (line, kept, and whether it was let out at the cap: its pieces take its decision)
        self._rest: tuple[int, bool, bool] | None = (*rest_of, False) if rest_of is not None else None
        # the rest's last bytes, with no line end, held for the next chunk
        self._rest_held = bytearray()
        self._held_cap = max(lines.HELD_LINE_BYTES, cfg.max_line_bytes)
        self._letting_out = False  # a line that reached the cap is being let out (its notice says so)
        self._tail_now = cfg.tail_lines
        self._tail_reach = cfg.tail_lines  # the tail's T before a found failure shortens it (with a baseline)
        self._done = False

    @property
    def drop_open(self) -> bool:
        """Whether a DROP run is open (``settle(close_drop=False)`` left it so, or it waits for more lines)."""
        return self._runs.drop_open

    @property
    def undecided_lines(self) -> int:
        """Complete lines fed and not decided yet: waiting for their look-ahead, held back by
        ``settle(hold_lines=...)``, or dropped lines a ``settle(decide_before=...)`` left revisable."""
        return int(self._p.ends.shape[0])

    @property
    def rest_of(self) -> tuple[int, bool] | None:
        """``(line, kept)`` of a line let out before its end (``settle(partial=True)``, or
        ``rest_of`` at the start): the next bytes up to a line end are its rest; else None."""
        return self._rest[:2] if self._rest is not None else None

    @property
    def rest_held(self) -> int:
        """Bytes of the rest of a line let out early, held for its end or a settle that lets them out."""
        return len(self._rest_held)

    @property
    def held_bytes(self) -> int:
        """Bytes of an unterminated last line held back (``settle(partial=True)`` lets them out)."""
        return self._splitter.pending_bytes + len(self._rest_held)

    def likeliest(self) -> list[tuple[int, float]]:
        """The stream's ``hits.STREAM_TOP`` most probable lines by the prior so far, most probable
        first: ``(1-based line number, probability)``; none without a prior."""
        if self._rater is None:
            return []
        lines, prob = self._rater.likeliest()
        return [(line + 1, p) for line, p in zip(lines.tolist(), prob.tolist(), strict=True)]

    # -- input ---------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> list[Run]:
        """Add the next bytes of the stream; return the runs decided so far."""
        if self._done:
            raise RuntimeError("feed() after flush()")
        runs: list[Run] = []
        while True:
            if self._rest is not None and b"\n" not in chunk and len(self._rest_held) + len(chunk) < self._held_cap:
                self._rest_held += chunk  # (no line end, short of the cap: held, not copied and searched again)
                chunk = b""
            elif self._rest is not None:
                chunk = self._take_rest(bytes(self._rest_held) + chunk, runs)
                if self._rest is not None and chunk:  # (a piece of the rest let out: more may follow)
                    continue
            at = self._held_line_end(chunk)
            if at < 0:
                break
            # the line reaches the cap without its line end: its bytes so far are a line of their own,
            # decided with every line before it as at a pause (at the same byte however chunked)
            self._feed(chunk[:at], runs)
            self._letting_out = True
            runs += self._settle(force=True)
            self._letting_out = False
            assert self._rest is not None
            self._rest = (*self._rest[:2], True)  # (its pieces take its decision)
            chunk = chunk[at:]
        self._feed(chunk, runs)
        return runs

    def _feed(self, chunk: bytes, runs: list[Run]) -> None:
        """Split ``chunk`` into lines and add the runs they decide to ``runs``."""
        parts = bounded(self._splitter.feed(chunk))
        for block in parts[:-1]:
            self._ingest(block)
            runs += self._emit(final=False)  # (each part's lines decided before the next's arrays are made)
        if parts:
            self._ingest(parts[-1])
        runs += self._emit(final=False)

    def _held_line_end(self, chunk: bytes) -> int:
        """The offset in ``chunk`` at which a line, with the unterminated bytes held before it, reaches
        ``_held_cap`` bytes without its line end, or -1 (one backward search per cap's bytes, not one per line)."""
        cap = self._held_cap
        pos, open_bytes = 0, self._splitter.pending_bytes
        while len(chunk) - pos >= cap - open_bytes:
            nl = chunk.rfind(b"\n", pos, pos + cap - open_bytes)
            if nl < 0:
                return pos + cap - open_bytes
            pos, open_bytes = nl + 1, 0
        return -1

    def settle(
        self,
        partial: bool = False,
        hold_lines: int = 0,
        close_drop: bool = True,
        rest: bool = True,
        decide_before: int | None = None,
        tail_now: bool = False,
        force: bool = False,
    ) -> list[Run]:
        """The stream went quiet: decide every complete line now, and close the open runs.

        The look-ahead is not waited for: the open window is closed (a line that
        continues its record later starts a new window) unless the ``hold_lines`` take it in
        (then the windows fall where ``feed`` alone puts them), the open cut group gets the
        cut it would get now, and protected hits extend through the lines known. The
        tail rule is not applied (the stream has not ended). If the last line was
        kept, continuation lines that arrive later are kept too (up to
        ``extend_lines``): the kept record goes on, it is not re-scored as a new one.

        With ``partial``, an unterminated last line that is kept as it is (it has a signature,
        or a query term and it continues, indented, a kept line) is decided too, as a line of
        its own (another waits for its end, where it is judged whole); bytes that
        arrive later up to its ``\\n`` are the rest of that line, a run of their own with
        ``Run.rest`` set (same line number, next bytes): KEEP if the line was kept or the
        rest has a signature or a query term, else DROP. The rest's bytes wait for the line's end
        or a settle with ``partial`` and ``rest`` (one that lets them out; a caller paces them so,
        and a line written a byte at a time is not a run a byte).

        With ``hold_lines``, the last that many lines stay undecided (and ``partial`` is
        ignored): a stream whose end applies the tail rule (a command's run) keeps them
        for it. Without ``close_drop``, an open DROP run stays open (a stream that keeps
        flowing gets one summary per stretch of dropped lines, not one per settle), unless
        ``partial`` lets a line out.

        With ``decide_before`` (a stream line index, 0-based), a settle decides the lines up to the
        last one it keeps and those before ``decide_before``; the lines after the last kept one
        that it would drop stay undecided, revisable: a later settle decides them with the lines
        that came since (a failure line's context, a window's other lines), ``feed`` once the
        look-ahead has come after them (as ``filter`` decides them), ``flush`` with the tail rule.
        A kept line is never held back by them: it and the lines before it are decided together, and
        those of them the tail rule would keep if the stream ended now are kept (they cannot wait for
        its end): the T lines up to the first exit verdict of the last ``tail_lines``, or up to the
        last line when none is (``found_tail_lines`` once a failure was found: ``_found``).

        With ``partial`` and ``force`` (no ``hold_lines``), the unterminated last line is let out
        whatever it holds, decided now as a line of its own (kept as any line is, else summarized),
        its rest to come as above: for a source whose input waits on this output, and cannot come
        while the line is held (a NATS partition whose messages in flight are all one long line's).

        With ``tail_now`` (and ``decide_before``, no ``hold_lines``, a tail), the stream may be
        waiting for its reader (a prompt): the lines the tail rule keeps at an end are kept as if
        the stream ended here (and its last ``LAST_LINES``), every line is decided, and an
        unterminated last line is let out with them (kept unless it is weak: ``hits.weak_lines``).

        Decisions then depend on when the stream paused, not only on its bytes;
        ``feed`` and ``flush`` alone never call this.

        Returns:
            The runs decided, open runs closed.
        """
        # an unterminated line is let out only if it is kept as it is: one that is not waits for its
        # end, where it is judged whole (a failure written in two parts keeps its start, a
        # signature split by the pause is still found, and a line written piece by piece gets one
        # summary, not one per piece)
        let_out: list[Run] = []
        if partial and rest and not hold_lines:
            self._let_rest_out(let_out, whole=False)
        before = decide_before
        # (with no tail, nothing keeps the last line: it waits, as without tail_now)
        tail = tail_now and not hold_lines and before is not None and self.config.tail_lines > 0
        if not (partial and not hold_lines and self._splitter.pending_bytes > 0):
            return let_out + self._settle(False, hold_lines, close_drop, before=before, tail=tail)
        facts = self._facts_of(self._splitter.pending)
        if facts.hits.shape[0] or tail or force:  # protected, or a tail line: kept; forced: decided
            return self._settle(True, hold_lines, close_drop, before=before, tail=tail)
        runs = self._settle(False, hold_lines, close_drop, close=False, before=before)
        # a query term in a line that continues (indented) a kept one: kept with its record
        if facts.tf.sum() and self._last_keep and int(facts.layout.indent[0]) > 0:
            return runs + self._settle(True, hold_lines, close_drop, before=before)
        self._runs.close(runs, close_drop)
        return runs

    def _settle(
        self,
        force: bool,
        hold_lines: int = 0,
        close_drop: bool = True,
        close: bool = True,
        whole: bool = False,
        before: int | None = None,
        tail: bool = False,
    ) -> list[Run]:
        """``settle``, letting an unterminated last line out if ``force`` (without ``close``, the
        open runs stay open): up to its last whole UTF-8 character, unless ``whole`` (so a
        character is never split between the line and its rest); ``tail``: ``settle``'s ``tail_now``."""
        if self._done:
            return []
        forced = None
        pending = self._splitter.pending if force else b""
        cut = len(pending) if whole else utf8_cut(pending)
        if cut:  # (a line that is so far one unfinished character waits for it)
            self._rest_held = bytearray(pending[cut:])
            forced = self._splitter.force(cut)
        if forced is not None:
            self._ingest(forced)
            if before is not None:
                # the line let out is decided now, with every line before it, so that its rest comes
                # right after it: a signature's repeat is dropped, and a settle that left it undecided
                # wrote its rest first, at the offset of the first undecided line (helper-67)
                before = max(before, forced.first_line)
        # the open window is closed only when its lines are to be decided now: a window the held
        # lines take in stays open, so a pause does not shift where the windows after it fall (a
        # failure's window, kept whole, held other lines for each pause before it, helper-77)
        p = self._p
        open_from = p.base + int(np.searchsorted(p.window[: self._assigned - p.base], self._segmenter_closed))
        if forced is not None or open_from < p.base + p.ends.shape[0] - hold_lines:
            self._assign(self._segmenter.close())
        self._score_windows(self._segmenter_closed)
        runs = self._emit(final=False, settle=True, hold=hold_lines, before=before, tail_now=tail)
        # a line let out unterminated: its run closes, its rest comes after it
        if close:
            self._runs.close(runs, close_drop or forced is not None)
        if forced is not None:
            self._rest = (forced.first_line, self._last_keep, False)
        return runs

    def close_drop(self) -> list[Run]:
        """Close the open DROP run, of the lines decided so far, if its summary line (with a ref) is
        at most half the bytes it stands for, and it may no longer be a short gap a KEEP run takes
        in: its summary comes out now, and the DROP lines decided after it start another run. Which
        lines are kept does not change, only where the summaries split (a live stream that prints
        steadily gets its summaries as it goes, not at its next pause; one that prints slowly gets
        no summary longer than what it stands for).

        Returns:
            The DROP run closed, or no run.
        """
        runs: list[Run] = []
        self._runs.close_drop(runs)
        return runs

    def drop_partial(self, n_bytes: int) -> bool:
        """Forget the unterminated last line if it is exactly ``n_bytes`` long and none of it was let
        out (a ``send`` client filters it whole itself once a stopping daemon replied that it read
        up to its start); whether it was forgotten."""
        if self._rest is not None or self._splitter.pending_bytes != n_bytes or not n_bytes:
            return False
        self._splitter.discard()
        return True

    def end_line(self) -> list[Run]:
        """A boundary in the stream (a rotated file's end): settle, and end an unterminated last line here.

        The last line does not run into the next file's first, and no run spans the boundary
        (each DROP run lies in one file, so its ref can point into it). Records go on.
        """
        runs: list[Run] = []
        self._let_rest_out(runs, whole=True)
        runs += self._settle(force=True, whole=True)
        self._rest = None
        return runs

    def _facts_of(self, text: bytes) -> BlockFacts:
        """The facts of ``text`` (part of one line) as a line of its own."""
        line = text if text.endswith(b"\n") else text + b"\n"
        return self._prepare(LineBlock(line, 1, 0, np.asarray([len(line)], dtype=np.int64)))

    def _matters(self, text: bytes) -> bool:
        """Whether ``text`` (part of one line) has a signature or a query term."""
        facts = self._facts_of(text)
        return bool(facts.hits.shape[0] or facts.tf.sum())

    def _let_rest_out(self, runs: list[Run], whole: bool) -> None:
        """Let the held bytes of a line's rest out into ``runs``: all of them if ``whole``, else up to
        their last whole character."""
        if self._rest is not None and self._rest_held:
            self._take_rest(bytes(self._rest_held), runs, whole=whole, let_out=True)

    def _take_rest(self, chunk: bytes, runs: list[Run], whole: bool = False, let_out: bool = False) -> bytes:
        """Take the rest of the line that ``settle(partial=True)`` let out off ``chunk`` (the bytes
        held before it first); the rest of ``chunk`` is returned. Without a line end the bytes are
        held (``_rest_held``), unless ``let_out`` (then all but the last bytes of a character not yet
        whole are taken) or ``whole`` (all of them)."""
        assert self._rest is not None
        line, kept, held = self._rest
        cap = self._held_cap
        nl = chunk.find(b"\n", 0, cap)
        rest = chunk if nl < 0 else chunk[: nl + 1]
        self._rest_held = bytearray()
        if nl < 0 and len(chunk) >= cap:  # a piece of the cap's bytes (its last character whole) goes out
            rest = chunk[: utf8_cut(chunk[:cap])]
        elif nl < 0 and not whole:
            cut = utf8_cut(rest) if let_out else 0
            rest, self._rest_held = rest[:cut], bytearray(rest[cut:])
        if not rest:
            return chunk[len(self._rest_held) :]
        # the rest is judged too: "Running tests... " let out, then "FAILED" must not be summarized;
        # not a line let out at the cap, judged on its first bytes as any line (whose pieces with a
        # query term had printed a 24 MB progress bar whole under a budget, helper-81)
        kept = kept or (not held and self._matters(rest))
        self._rest = None if nl >= 0 else (line, kept, held)
        # but its last frame, what a terminal shows when the line ends, is judged on its own words: a
        # progress bar's "\rerror: checksum mismatch" was summarized with the bar (helper-89)
        frame = rest.rstrip(b"\r\n").rfind(b"\r") if held and not kept and nl >= 0 else -1
        if frame >= 0 and not self._matters(rest[frame:]):
            frame = -1
        start = self._p.buf_start
        self._splitter.skip(len(rest))
        self._p.buf_start += len(rest)
        self.stats.bytes += len(rest)
        if frame > 0:
            self._rest_run(line, start, rest[:frame], False, runs)
        if frame >= 0:
            self._rest_run(line, start + frame, rest[frame:], True, runs)
        else:
            self._rest_run(line, start, rest, kept, runs)
        return chunk[len(rest) + len(self._rest_held) :]

    def _rest_run(self, line: int, start: int, piece: bytes, kept: bool, runs: list[Run]) -> None:
        """The run of ``piece``, part of line ``line``'s rest from the byte offset ``start``, into ``runs``."""
        if kept:
            self.stats.kept_bytes += len(piece)
            self.stats.keep_runs += 1
            runs.append(Run("keep", line, line, start, start + len(piece), piece, rest=True))
        else:
            self.stats.dropped_bytes += len(piece)
            self.stats.drop_runs += 1
            # only the line end of a dropped line: nothing to say in text (JSONL still has the bytes)
            summary = f"[streamfilter: dropped the rest of line {line} ({len(piece)} B)]" if piece.strip() else ""
            crc = f"{zlib.crc32(piece):08x}"
            runs.append(Run("drop", line, line, start, start + len(piece), summary=summary, checksum=crc, rest=True))

    def flush(self, tail_lines: int | None = None, passed: bool = False) -> list[Run]:
        """End of the stream: decide and return every remaining run.

        Args:
            tail_lines: the tail rule's T for this end, at most the configured one (e.g.
                fewer lines for a command that succeeded); default: the configured T.
            passed: the command the stream came from passed (as ``FilterConfig.results`` says
                before): the prior looks for no failure at its end (``PriorRater``).
        """
        if self._done:
            return []
        self._passed = self._passed or passed
        self._tail_now = self.config.tail_lines if tail_lines is None else min(tail_lines, self.config.tail_lines)
        self._tail_reach = self._tail_now
        held: list[Run] = []
        self._let_rest_out(held, whole=True)  # (a character the stream ended inside, say)
        block = self._splitter.flush()
        if block is not None:
            self._ingest(block)
        self._assign(self._segmenter.flush())
        self._score_windows(self._segmenter_closed)
        self._cuts.flush()
        self._done = True
        if self._last_long is not None:
            more = self._long_lines - MAX_LONG_LINE_NOTICES
            self.notices.append(replace(self._last_long, count=more))
        return held + self._emit(final=True)

    def _ingest(self, block: LineBlock) -> None:
        p = self._p
        n = block.n_lines
        self.stats.lines += n
        self.stats.bytes += len(block.data)
        self._check_text(block)
        facts = self.preparer(block)
        if not facts.matches(block):  # a worker that ran ahead on other bytes: do it here
            facts = self._prepare(block)
        norm, tokens, layout = facts.norm, facts.tokens, facts.layout
        for i in norm.capped:
            length = int(block.ends[i] - (block.ends[i - 1] if i else 0))
            self._long_lines += 1
            notice = Notice(
                "input.long_line", block.first_line + i, length, rest_follows=self._letting_out and i == n - 1
            )
            if self._long_lines <= MAX_LONG_LINE_NOTICES:
                self.notices.append(notice)
            else:
                self._last_long = notice
        repeats = self._hits.admit(facts)  # failure lines past their shape's max_repeats
        first = block.first_line - 1
        p.ends = np.concatenate((p.ends, block.ends + block.start_byte))
        p.shape_ends = np.concatenate((p.shape_ends, facts.shape_ends + (p.shapes_start + len(p.shapes))))
        p.shapes += facts.shapes
        if self._novelty is not None or self.collector is not None:
            hashes, texts = line_hashes(facts.shapes, n), text_hashes(block.data, n)
            if self._novelty is not None:
                self._novelty.add_lines(hashes, texts)
            if self.collector is not None:
                self.collector.add(hashes, texts)
        p.warnings = np.concatenate((p.warnings, facts.warnings))
        tf = self._uncount_repeats(facts)
        p.term = np.concatenate((p.term, tf.sum(axis=1) > 0))
        p.uncounted = np.concatenate((p.uncounted, (facts.tf.sum(axis=1) > 0) & (tf.sum(axis=1) == 0)))
        p.repeat = np.concatenate((p.repeat, repeats))
        p.frames = np.concatenate((p.frames, norm.frames))
        p.window = np.concatenate((p.window, np.full(n, -1, dtype=np.int64)))
        p.cont = np.concatenate((p.cont, np.zeros(n, dtype=bool)))
        p.record = np.concatenate((p.record, np.full(n, -1, dtype=np.int64)))
        p.forced = np.concatenate((p.forced, np.zeros(n, dtype=bool)))
        p.hit = np.concatenate((p.hit, np.zeros(n, dtype=bool)))
        p.lead = np.concatenate((p.lead, np.zeros(n, dtype=bool)))
        p.tokens = np.concatenate((p.tokens, tokens))
        p.tf = np.concatenate((p.tf, tf))
        if self._rater is not None:
            p.logit = np.concatenate((p.logit, facts.prior_logits))
            p.static = np.concatenate((p.static, facts.prior_static))
            p.seen = np.concatenate((p.seen, self._rater.seen(facts.shape_hashes)))
            p.shape = np.concatenate((p.shape, facts.shape_hashes))
            p.blank = np.concatenate((p.blank, layout.blank))
        p.buf += block.data
        p.stops = np.concatenate((p.stops, facts.section_stops + first))
        p.verdicts = np.concatenate((p.verdicts, facts.verdicts + first))
        self._assign(self._segmenter.feed(layout))
        self._score_windows(self._segmenter_closed)

    def _uncount_repeats(self, facts: BlockFacts) -> Int64Array:
        """``facts.tf`` without the terms of a line whose shape (``BlockFacts.shapes``) held a query
        term on ``TERM_REPEATS`` lines before: the same message printed by the dozen is one finding,
        which the first lines show and the DROP summary counts."""
        tf = facts.tf
        lines = np.flatnonzero(tf.any(axis=1))
        if not lines.shape[0]:
            return tf
        ends = facts.shape_ends.tolist()
        shapes = [facts.shapes[(ends[i - 1] if i else 0) : ends[i]] for i in lines.tolist()]
        fresh = self._term_repeats.admit(shapes)
        if fresh.all():
            return tf
        tf = tf.copy()
        tf[lines[~fresh]] = 0
        return tf

    def _check_text(self, block: LineBlock) -> None:
        if self._seen_invalid_utf8:
            return
        try:
            block.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._seen_invalid_utf8 = True
            i = int(np.searchsorted(block.ends, exc.start, side="right"))
            length = int(block.ends[i] - (block.ends[i - 1] if i else 0))
            self.notices.append(Notice("input.invalid_utf8", block.first_line + i, length))

    def _assign(self, assignment: WindowAssignment) -> None:
        p = self._p
        a = assignment.first_line - p.base
        k = int(assignment.windows.shape[0])
        if k:
            p.window[a : a + k] = assignment.windows
            p.cont[a : a + k] = assignment.cont
            p.record[a : a + k] = assignment.records
            self._assigned = assignment.first_line + k
            if self._carry:
                # the kept record goes on after a settle: its continuation lines are kept, and
                # once over a short gap, as ``protected_ranges`` does (here only when the gap and
                # what follows it came in together)
                breaks = np.append(np.flatnonzero(~assignment.cont), k)
                end = int(breaks[0])
                if not self._carry_bridged:
                    bridged = int(bridged_ends(assignment.cont, breaks, breaks[:1])[0])
                    self._carry_bridged, end = bridged > end, bridged
                upto = min(end, self._carry)
                p.forced[a : a + upto] = True
                self._carry = 0 if upto < k else self._carry - upto
            self._hits.carry_section(p, assignment.first_line, k)
            self._windows.grow(int(assignment.windows[-1]) + 1)
        self._segmenter_closed = assignment.closed

    def _score_windows(self, closed: int) -> None:
        """Score windows ``_scored .. closed-1`` (all their lines are assigned)."""
        if closed <= self._scored:
            return
        p = self._p
        assigned = self._assigned - p.base
        wins = p.window[:assigned]
        ids = np.arange(self._scored, closed, dtype=np.int64)
        first = np.searchsorted(wins, ids)
        end = int(np.searchsorted(wins, closed))
        lo = int(first[0])
        offsets = first - lo
        lengths = np.add.reduceat(p.tokens[lo:end], offsets) if end > lo else np.zeros(0, dtype=np.int64)
        line_tf = p.tf[lo:end]
        # an over-long line is never kept as a window's member (the weak-line rule), so its terms
        # do not make its window's score either: the window is judged on the lines it would show
        over = p.lengths(lo, end) > self.config.max_line_bytes
        if over.any():
            line_tf = np.where(over[:, None], 0, line_tf)
        tf = np.add.reduceat(line_tf, offsets, axis=0) if end > lo else p.tf[:0]
        scores = self._scorer.score(lengths, tf)
        has_term = tf.sum(axis=1) > 0
        rel = ids - self._windows.base
        self._windows.score[rel] = scores
        self._windows.term[rel] = has_term
        self._cuts.add(scores, has_term)
        if self._novelty is not None:
            self._novelty.add_windows(self._scored, p.base + lo + offsets, p.base + end)
        self._scored = closed

    # -- decisions -----------------------------------------------------------------------
    def _emit(
        self, final: bool, settle: bool = False, hold: int = 0, before: int | None = None, tail_now: bool = False
    ) -> list[Run]:
        """Decide the pending lines whose look-ahead has come (all at the stream's end, ``final``; all
        complete ones but the last ``hold`` at a ``settle``, the dropped ones after the last kept one
        and from stream index ``before`` on left undecided when it is given, unless ``tail_now``:
        ``settle``'s) and return the runs that close."""
        cfg, p = self.config, self._p
        total = p.base + p.ends.shape[0]
        if self._rater is not None:
            # (a line's probability waits for the log-odds of the CONTEXT_REACH lines after it)
            upto = total if final else total - hold if settle else total - REACH - 1 - CONTEXT_REACH
            self._rater.rate(p, upto, final, self._hits, self._passed)
        if final and self._found():  # (every line is rated now)
            self._tail_now = min(self._tail_now, cfg.found_tail_lines)
        apply_all = final or (settle and not hold)
        self._hits.apply(p, self._windows, self._assigned, apply_all, total - hold if settle else -1, settling=settle)
        assigned = self._assigned - p.base
        if final or settle:
            limit = total - hold
        else:
            by_cut = p.base + int(np.searchsorted(p.window[:assigned], self._cut_waits()))
            limit = min(self._assigned - cfg.lookahead_lines, by_cut)
            if self._rater is not None:  # a line the prior has not rated yet may be a hit
                limit = min(limit, self._rater.done - self._before_hit)
        if self._hits.queued.shape[0]:
            # a hit not yet applied (its reach is still to come, or held back by a settle) protects
            # its whole window and the context before it: lines it may protect wait for it
            rel = int(self._hits.queued[0]) - p.base
            open_from = self._segmenter_closed if rel >= assigned else int(p.window[rel])
            start = int(np.searchsorted(p.window[:assigned], open_from))
            limit = min(limit, p.base + min(start, rel - self._before_hit))
        n = limit - p.base
        if not (final or settle) and n > 0:  # whole windows only (a scored window is judged whole)
            n = int(np.searchsorted(p.window[:assigned], p.window[n])) if n < assigned else n
        runs: list[Run] = []
        if n <= 0:
            if final:  # everything was decided before (a settle that left a DROP run open)
                self._runs.finish(runs)
            return runs
        wrel = p.window[:n] - self._windows.base
        w_lo, w_hi = int(wrel[0]), int(wrel[-1]) + 1
        window_ids = np.arange(w_lo, w_hi, dtype=np.int64) + self._windows.base
        cut = self._cuts.cuts_now(window_ids) if settle else self._cuts.cuts(window_ids, pending=np.inf)
        prot = self._windows.prot[w_lo:w_hi]
        # a window of the prior's alone keeps the lines around its line (``Hits.apply``), not all
        # its lines as a signature's does: a likely failure line, not a known one
        w_prot = (prot >= 0) & (prot != self._signatures.prior_id)
        scored = self._windows.term[w_lo:w_hi] & (self._windows.score[w_lo:w_hi] >= cut)
        weighed = seen = novel = lone = None
        if self._novelty is not None:  # the last green run's lines re-weigh the scored windows
            near = min(NEAR_LINES, cfg.lookahead_lines)  # (known before a line is decided)
            terms, scores = self._windows.term[w_lo:w_hi], self._windows.score[w_lo:w_hi]
            end = total if final else None
            scored, weighed = self._novelty.scored(window_ids, terms, scores, cut, end, p.verdicts, near)
            seen, novel = self._novelty.seen(p.base, n), self._novelty.novel(p.base, n)
            lone = self._novelty.lone(p.base, n, near)
        w_keep = w_prot | scored
        keep = self._window_lines(w_keep, w_prot, wrel - w_lo, n)
        forced, after_seen = p.forced[:n], None
        if seen is not None:
            # a line the last green run printed too is not kept for its window's sake, nor as what
            # follows a hit (its continuation lines, its section); a hit and the lines before it
            # (its context, lead-in) are kept as without a baseline
            keep &= ~seen
            after_seen = forced & seen & ~p.hit[:n] & ~p.lead[:n]
            forced = forced & ~after_seen
        if lone is not None:  # among lines the green run printed, one of a shape it never did
            keep |= lone
        keep |= forced
        head = cfg.head_lines - p.base
        if head > 0:
            keep[:head] = True
        tail = tail_end = last = n
        if final and self._tail_now > 0:
            # the tail ends at the first exit verdict of the last tail_lines lines: what a CI runner
            # prints after a command failed is its cleanup (the lines a signature protects there are
            # kept all the same); its lines are the ones before it
            tail_end = self._tail_end(n)
            tail = max(0, tail_end - self._tail_now)
            last = max(0, n - LAST_LINES)
            keep[last:n] = True  # a run's last words, even after such a verdict
        reach = tail
        if seen is not None and tail < tail_end:
            # with a baseline, the tail reaches as far as before a failure was found for the lines
            # of a shape the last green run never printed; the stream's last lines are kept all the same
            reach = max(0, tail_end - self._tail_reach)
        _mark_tail(keep, seen, novel, reach, tail, tail_end)
        tail = reach
        results = None
        if cfg.results:
            results = result_lines(p.buf, p.ends[:n] - p.buf_start)
            keep |= results
        if before is not None and not final:
            tail, tail_end = self._live_tail(keep, seen, novel, total, tail_now)
        # an over-long line, or a line redrawn by carriage returns with no query term (a progress bar), is
        # kept only when it is itself a protected hit; as a window's member, context, head or
        # tail it is summarized
        weak = weak_lines(p, 0, n, cfg.max_line_bytes)
        if weak.any():
            keep &= ~weak | p.hit[:n]
        last_keep, held = bool(keep[-1]), False
        if before is not None and self._tracer is None and not tail_now:
            # the lines a settle would drop after the last one it keeps wait for what comes after
            # them (explaining, a batch is traced whole: all are decided)
            kept = np.flatnonzero(keep)
            m = max(int(kept[-1]) + 1 if kept.shape[0] else 0, min(n, before - p.base))
            if m < n:
                self._carry, self._last_keep = 0, False
                if m <= 0:
                    return runs
                n, keep, last_keep, held = m, keep[:m], False, True
        natural = None
        if self._selection is not None:
            natural, keep = keep, self._selection.mask(p.base + 1, n)
        if self._tracer is not None:
            w = self._windows
            self._tracer.begin(
                BatchFacts(
                    w.base + w_lo,
                    w.score[w_lo:w_hi],
                    w.term[w_lo:w_hi],
                    w.prot[w_lo:w_hi],
                    w.hit[w_lo:w_hi],
                    cut,
                    w_keep,
                    max(0, head),
                    tail,
                    tail_end,
                    last,
                    natural,
                    weighed,
                    self._novelty.novel_lines_of(window_ids) if self._novelty is not None else None,
                    seen,
                    after_seen,
                    lone,
                    results,
                    weak,
                )
            )
        self._runs.add(p, keep, runs)
        self._last_keep = last_keep
        if settle and not hold and not held:
            self._carry = cfg.extend_lines if self._last_keep else 0
            self._carry_bridged = False
        if final:
            self._runs.finish(runs)  # (a short last DROP run joins the KEEP run before it)
        self._trim(n)
        return runs

    def _live_tail(
        self,
        keep: npt.NDArray[np.bool_],
        seen: npt.NDArray[np.bool_] | None,
        novel: npt.NDArray[np.bool_] | None,
        total: int,
        now: bool,
    ) -> tuple[int, int]:
        """At a live settle (``decide_before``), keep in ``keep`` (shape ``(n,)``: the lines decided
        now) the lines the tail rule would keep if the stream ended now, of those before the last
        line kept now: they cannot wait for the stream's end as the lines after it do. The T lines
        (``tail_lines``, or ``found_tail_lines`` once a failure was found: ``_found``) up to the
        first exit verdict of the last ``tail_lines`` lines, or up to the last line when none is;
        with a baseline, those the green run did not print, and the novel lines of the whole reach
        (``_mark_tail``); ``now``: as if the stream ended now (``settle``'s ``tail_now``), the tail
        and the last ``LAST_LINES`` lines whatever is kept. Returns the tail's ``(first, end)`` among
        the pending lines, ``(n, n)`` for none (``BatchFacts.tail``)."""
        cfg, p = self.config, self._p
        n, pending = int(keep.shape[0]), total - p.base
        if now:  # (as at the stream's end: its last words, and the tail)
            keep[max(0, n - LAST_LINES) :] = True
        kept = np.flatnonzero(keep)
        if not kept.shape[0] or cfg.tail_lines <= 0:
            return n, n
        end = self._tail_end(pending)
        reach = max(0, end - cfg.tail_lines)
        tail = max(0, end - min(cfg.tail_lines, cfg.found_tail_lines)) if self._found() else reach
        tail_end = end if now else min(end, int(kept[-1]))  # (else the lines after it wait)
        if seen is None:
            reach = tail
        if reach >= tail_end:
            return n, n
        _mark_tail(keep, seen, novel, reach, min(tail, tail_end), tail_end)
        return reach, tail_end

    @property
    def tail_hold(self) -> int:
        """The last pending lines a stream whose end applies the tail rule (a command's run) leaves
        undecided at a settle (``settle``'s ``hold_lines``): those the tail rule may still keep.
        ``tail_lines``; once a failure was found (``_found``: the tail is then at most
        ``found_tail_lines``), with no baseline (whose tail reaches ``tail_lines`` back for the lines
        the green run never printed), the lines from ``found_tail_lines`` before the first exit
        verdict among the last ``tail_lines`` (a later end's tail ends at that verdict or after
        it), and at least the last ``LAST_LINES``."""
        cfg = self.config
        if self._novelty is not None or not self._found():
            return cfg.tail_lines
        pending = int(self._p.ends.shape[0])
        held = pending - self._tail_end(pending) + min(cfg.tail_lines, cfg.found_tail_lines)
        return min(cfg.tail_lines, max(held, LAST_LINES))

    def _found(self) -> bool:
        """A signature that shows what failed protected a line, or the prior rated one at
        ``PRIOR_SURE``: the tail need only show how the run ended (``found_tail_lines``)."""
        return self._hits.found or (self._rater is not None and self._rater.sure)

    def _tail_end(self, pending: int) -> int:
        """Pending index one past the tail of a stream whose last of ``pending`` pending lines is the
        last line so far: just past the first exit verdict among the last ``tail_lines`` lines (what
        a CI runner prints after it is its cleanup), else ``pending``."""
        p = self._p
        verdicts = p.verdicts[p.verdicts >= p.base + max(0, pending - self.config.tail_lines)]
        return min(pending, int(verdicts[0]) - p.base + 1) if verdicts.shape[0] else pending

    def _window_lines(
        self, w_keep: npt.NDArray[np.bool_], w_prot: npt.NDArray[np.bool_], wrel: Int64Array, n: int
    ) -> npt.NDArray[np.bool_]:
        """Shape ``(n,)``: the pending lines ``0..n-1`` their windows keep (``w_keep``, ``w_prot``: per
        window, whether kept and whether for a signature; ``wrel``: each line's index into them;
        a batch holds whole windows, ``_emit``).

        A window with a failure signature keeps all its lines. One kept for its score alone keeps
        each line in it that holds a query term with the line it continues and that line's
        continuation lines (a message with its wrapped lines, a trace's header with its frames,
        within the window): its other lines only made its score, and showing them would cost
        more than the summary that counts them.
        """
        p = self._p
        keep = w_keep[wrel]
        scored = keep & ~w_prot[wrel]
        if scored.any():
            window = p.window[:n]
            starts = ~p.cont[:n]
            starts[0] = True
            starts[1:] |= window[1:] != window[:-1]
            group = np.cumsum(starts) - 1
            has_term = np.bincount(group, weights=p.term[:n], minlength=int(group[-1]) + 1) > 0
            keep &= ~scored | has_term[group]
        return keep

    def _cut_waits(self) -> int:
        """The first window whose decision waits for a cut not known yet: one with a query term
        and no signature (another is decided without a cut), or, explaining, any (its trace gives
        the cut); ``_scored`` when none of the scored windows waits."""
        first = self._cuts.known_groups * self.config.group_windows
        if self.config.explain:
            return first
        lo, hi = max(0, first - self._windows.base), self._scored - self._windows.base
        waits = np.flatnonzero(self._windows.term[lo:hi] & (self._windows.prot[lo:hi] < 0))
        return self._windows.base + (lo + int(waits[0]) if waits.shape[0] else max(lo, hi))

    def _trim(self, n: int) -> None:
        """Forget the first ``n`` pending lines (decided and accounted for)."""
        p = self._p
        first_window = int(p.window[n]) if n < p.window.shape[0] and p.window[n] >= 0 else None
        if n == p.window.shape[0] and self._scored > int(p.window[n - 1]):
            first_window = self._scored  # all settled: no window of these lines is needed again
        if self._rater is not None:
            self._rater.forget(p, n)
        p.trim(n)
        if self._novelty is not None:
            self._novelty.forget(p.base, first_window)
        if self._tracer is not None:
            self._tracer.forget_ratings(p.base)
        if first_window is not None and first_window > self._windows.base:
            self._windows.forget_before(first_window)
            self._cuts.forget_before(first_window)


def _mark_tail(
    keep: npt.NDArray[np.bool_],
    seen: npt.NDArray[np.bool_] | None,
    novel: npt.NDArray[np.bool_] | None,
    reach: int,
    tail: int,
    tail_end: int,
) -> None:
    """Keep the tail's lines ``tail .. tail_end - 1`` in ``keep`` (in place): all of them, or with a
    baseline (``seen``, ``novel``: shape as ``keep``) those the last green run did not print, and
    from ``reach`` (at most ``tail``) on the lines of a shape it never printed (a changed line,
    a count or a timing that moved, is kept where it would be without a baseline, not farther)."""
    if seen is None or novel is None:
        keep[tail:tail_end] = True
    else:
        keep[tail:tail_end] |= ~seen[tail:tail_end]
        keep[reach:tail] |= novel[reach:tail]
