"""The pure, incremental filter: bytes in, KEEP/DROP runs out.

``StreamFilter.feed(bytes) -> list[Run]`` and ``flush() -> list[Run]`` chain the
stages: lines -> scoring text -> layout, terms, signatures -> windows -> BM25
scores -> cut -> per-line decisions -> runs (KEEP verbatim, DROP summarized).
No I/O, no event loop; the CLI and the daemon share it.

Decisions wait for a bounded look-ahead: a line is decided once its window's
group has a cut and ``lookahead_lines`` more lines have arrived (so the last
``tail_lines`` lines and the context after a protected hit are known). Every
decision depends only on the bytes, never on how they were chunked.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from ._heap import keep_block_buffers
from .budget import Selection
from .decide import CutTracker, RepeatGate, bridged_ends, protected_ranges
from .lines import LineSplitter, utf8_cut
from .normalize import strip_ansi
from .prepare import BlockFacts, Preparer
from .prior import END_REACH, NEIGHBOURS, PriorModel, ShapeCounter, context_features, default_model, to_verdict
from .records import LineBlock, Run, WindowTrace
from .score import BM25Scorer
from .segment import Segmenter, WindowAssignment
from .signatures import LEAD_IN, LEAD_LINES, SignatureSet
from .summarize import DropSummary
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

# the largest count (lines, bytes, tokens, windows) a setting may hold: the stages add counts in
# int64 arrays (a line index plus a reach, say), which a count near 2**63 would overflow
MAX_COUNT = 1 << 40
MIN_LINE_BYTES = 64  # the smallest max_line_bytes: a shorter cap would score next to nothing of a line

MAX_TRACES = 256  # window traces kept per run with explain; the rest are counted
# a line redrawn more often than this (carriage returns) is a progress display, not a message; CI
# logs put a few CRs in ordinary lines (Travis's "\r\x1b[0K" fold markers, testify's overwrites),
# labelled as needed in the corpus with up to 5 frames; progress bars redraw by the dozen
REDRAW_FRAMES = 9
# the stream's last lines, kept with a tail that ends at an earlier exit verdict: what came after a
# retried command's "exited with 1" may be the failure, and a CI runner's last line is its verdict
LAST_LINES = 2
# lines of one shape (``prior.shape_hashes``) the prior keeps per stream: out of fold on the corpus
# the cap of 5 left recall as it was and the prior's share of the output a fifth of what it was
PRIOR_REPEATS = 5
MAX_LONG_LINE_NOTICES = 5  # per stream; later long lines are counted in one notice at the end

Int64Array = npt.NDArray[np.int64]

# the words of a failure a user means by default; the learned prior (``prior``) keeps the lines of
# failures that say it otherwise ("exception", "panic", an assertion's expected/actual)
DEFAULT_QUERY = "error failed"


@dataclass(frozen=True, slots=True)
class FilterConfig:
    """Settings of one filter (units in the names; all counts are lines unless said).

    Attributes:
        query: the query text; split into terms by ``Query.parse``. A word with no
            letter or digit (``[-]``, ``=====``) is matched literally and keeps its lines;
            so is a word of letters and digits (an error code, ``F401``), as a whole word
            in any case, and its lines are never repeat-capped, as ``protect``'s.
        window_lines: N, most lines packed into a window.
        window_chars: M, most characters packed into a window.
        max_line_bytes: scoring cap per line in bytes (the line is still emitted whole).
        head_lines: H, first lines of the stream always kept.
        tail_lines: T, last lines of the stream always kept; when one of them reports a
            command's non-zero exit (``BlockFacts.verdicts``), the T lines up to the first such
            line instead: what a CI runner prints after it is its cleanup.
        found_tail_lines: the tail's T (at most ``tail_lines``) once a built-in failure signature
            that shows what failed (``Signature.found``) has protected a line of the stream: the
            tail is the safety net for failures no signature knows, and after a known one it need
            only show how the run ended.
        context_lines: C, lines kept before each protected hit (within its record).
        extend_lines: most lines a protected hit keeps after it, through its continuation lines.
        section_lines: lines kept after a signature that heads a section of failure
            reports (pytest's ``=== FAILURES ===``), whatever their indentation.
        min_score: floor of the BM25 cut.
        protect: extra signature regexes (Python syntax, matched anywhere in a line).
        k1, b, delta: BM25+ parameters (rank-bm25 defaults).
        group_windows: windows per cut group (decision look-ahead, in windows).
        top_shapes: K, shapes named in a DROP summary.
        summary_chars: longest DROP summary, in characters.
        max_keep_event_bytes: a KEEP run longer than this is emitted in pieces.
        min_drop_lines: a DROP run between two KEEP runs with fewer lines than this,
            and no more bytes than ``summary_chars``, is kept instead (its summary
            would cost as much as its lines).
        max_repeats: a failure signature protects the first this many lines of each
            line shape (numbers, paths masked); later repeats are left to BM25.
        explain: attach a ``WindowTrace`` per window to each run (at most
            ``MAX_TRACES`` per run; the rest are counted in ``Run.traces_omitted``).
        prior: the learned line prior (``streamfilter.core.prior``) keeps the lines it rates at or above
            its cut, as a failure signature keeps its hits (under the name ``prior``).
    """

    query: str = DEFAULT_QUERY
    window_lines: int = 8
    window_chars: int = 1200
    max_line_bytes: int = 1 << 20
    head_lines: int = 0
    tail_lines: int = 25
    found_tail_lines: int = 5
    context_lines: int = 1
    extend_lines: int = 150
    section_lines: int = 150
    min_score: float = 0.0
    protect: tuple[str, ...] = ()
    k1: float = 1.5
    b: float = 0.75
    delta: float = 1.0
    group_windows: int = 32
    top_shapes: int = 3
    summary_chars: int = 140
    max_keep_event_bytes: int = 1 << 20
    min_drop_lines: int = 2
    explain: bool = False
    max_repeats: int = 50
    prior: bool = True

    @property
    def lookahead_lines(self) -> int:
        """Lines that must follow a line before it is decided."""
        return max(self.tail_lines, self.context_lines + max(self.extend_lines, self.section_lines))


# letters or digits joined by . _ / \ - or :: (inside a word): a name, not words
_JOINED = re.compile(r"[^\W_](?:[._/\\-]|::)+[^\W_]|[^\W_]_|_[^\W_]")


def _is_code(word: str) -> bool:
    """A query word matched whole: an error code, letters and digits (``F401``, ``E0308``), whose
    terms would be a letter and a number, each found anywhere (``def f0``, ``E7``); or a name of
    parts joined by ``. _ / \\ -`` or ``::`` (``payment_service``, ``settings.yaml``, ``test_ok[17]``,
    ``tests::t07``),
    whose parts are never counted as terms inside such a name (``tokens.is_counted``)."""
    if word.isalnum():
        return any(c.isalpha() for c in word) and any(c.isdigit() for c in word)
    return _JOINED.search(word) is not None


def asked_patterns(config: FilterConfig) -> tuple[str, ...]:
    """The regexes of the lines the user asked for: ``config.protect``, then each error code or
    name of the query (``_is_code``) as a whole word in any case. They keep their lines, are never
    repeat-capped, and a token budget chooses them first (``budget.UnitPool``)."""
    codes = (rf"(?i)(?<!\w){re.escape(w)}(?!\w)" for w in config.query.split() if _is_code(w))
    return config.protect + tuple(codes)


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


@dataclass(frozen=True, slots=True)
class Notice:
    """Something about the input worth a warning (the edge logs it; the filter goes on).

    Attributes:
        event: ``input.invalid_utf8`` (first line with invalid UTF-8 in the stream)
            or ``input.long_line`` (a line over ``max_line_bytes``; the first
            ``MAX_LONG_LINE_NOTICES`` of a stream each, then one at the end of the
            stream that counts the rest and names the last).
        line: 1-based line number.
        n_bytes: the line's length in bytes.
        count: how many lines the notice stands for.
    """

    event: str
    line: int
    n_bytes: int
    count: int = 1


@dataclass(frozen=True, slots=True)
class _WindowFacts:
    """What one decision batch knew of its windows (index 0 = window ``w_lo - w_base``)."""

    w_lo: int
    cut: npt.NDArray[np.float64]
    window_keep: npt.NDArray[np.bool_]
    head: int  # pending lines below this are head lines
    tail: int  # pending lines from this on are tail lines...
    tail_end: int  # ...up to this one (the tail's first exit verdict, or all)
    last: int  # pending lines from this on are the stream's last lines (LAST_LINES), kept with the tail
    natural: npt.NDArray[np.bool_] | None  # with a selection: each pending line's own decision


@dataclass(slots=True)
class _Pending:
    """Per-line arrays of the lines not yet emitted (index 0 = stream line ``base``)."""

    base: int = 0
    ends: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    shape_ends: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    warnings: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    term: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    repeat: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    frames: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    window: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cont: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    record: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    forced: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    hit: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    tokens: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    tf: Int64Array = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    # the prior's inputs (empty without a prior): content logit, earlier lines of its shape, blank
    logit: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    seen: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    shape: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # prior.shape_hashes
    blank: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))


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
        self._prior = (prior_model or default_model()) if cfg.prior else None
        self._signatures = SignatureSet(extra=asked + symbols, first=len(asked), prior=self._prior is not None)
        self._splitter = LineSplitter(start_line, start_byte)
        self._segmenter = Segmenter(cfg.window_lines, cfg.window_chars, first_index=start_line - 1)
        self._scorer = BM25Scorer(len(self.query.terms), cfg.k1, cfg.b, cfg.delta)
        self._cuts = CutTracker(cfg.min_score, cfg.group_windows)
        self._prepare = Preparer(self.query, self._signatures, cfg.max_line_bytes, self._prior)
        # where the stateless stages run: here, or a worker that computes them ahead
        self.preparer: Callable[[LineBlock], BlockFacts] = self._prepare
        self._repeats = RepeatGate(cfg.max_repeats)
        self._last_shape = b""  # the shape of the stream's last line so far (with its line end)
        self._p = _Pending(base=start_line - 1, tf=np.zeros((0, len(self.query.terms)), dtype=np.int64))
        self._buf = bytearray()  # raw bytes of pending lines
        self._buf_start = start_byte  # stream offset of _buf[0]
        self._shapes = bytearray()  # line shapes of pending lines (for DROP summaries)
        self._shapes_start = 0  # offset of _shapes[0] in the stream's line shapes
        self._assigned = start_line - 1  # lines with a window
        self._hits = np.zeros(0, dtype=np.int64)  # protected lines not yet processed
        self._stops = np.zeros(0, dtype=np.int64)  # stream indexes of pending lines that end sections
        self._verdicts = np.zeros(0, dtype=np.int64)  # stream indexes of pending lines with an exit verdict
        self._hit_ids = np.zeros(0, dtype=np.int64)
        # per-window arrays, index 0 = window id _w_base
        self._w_base = 0
        self._w_score = np.zeros(0, dtype=np.float64)
        self._w_term = np.zeros(0, dtype=bool)
        self._w_prot = np.zeros(0, dtype=np.int64)
        self._w_hit = np.zeros(0, dtype=np.int64)  # 1-based line of each window's first hit (0: none)
        self._scored = 0  # windows 0.._scored-1 have a score
        self._segmenter_closed = 0  # windows 0.._segmenter_closed-1 are complete
        self._open: DropSummary | None = None
        self._keep: tuple[int, int, bytearray] | None = None  # first line, start byte, bytes
        self._gap: bytearray | None = None  # bytes of a short DROP run right after the open KEEP run
        self._drop_crc = 0  # CRC-32 of the open DROP run's bytes
        # explain: traces of the open KEEP and DROP runs, and how many were left out
        self._traces: dict[str, list[tuple[int, WindowTrace]]] = {"keep": [], "drop": []}
        self._omitted = {"keep": 0, "drop": 0}
        self._traced = {"keep": -1, "drop": -1}  # the window last traced for each open run
        self._why: _WindowFacts | None = None
        self._seen_invalid_utf8 = False
        self._long_lines = 0
        self._last_long: Notice | None = None
        # after settle(): continuation lines still to keep (the record that was kept goes on),
        # and the line that settle(partial=True) let out, whose rest is still to come
        self._carry = 0
        self._carry_bridged = False  # the carry crossed its one gap already
        # a section head applied at a settle before its end came in: its lines still to come
        # (at most this many) are kept up to a section stop (not the one at line _section_ignore)
        self._section_carry = 0
        self._section_ignore = -1
        self._last_keep = False
        self._rest: tuple[int, bool] | None = rest_of  # (line, kept)
        self._rest_held = b""  # the rest's last bytes, a character not yet whole (held for the next chunk)
        self._tail_now = cfg.tail_lines
        self._found = False  # a signature that shows what failed protected a line (found_tail_lines)
        self._done = False
        self._shape_counts = ShapeCounter()
        self._prior_repeats = ShapeCounter()  # lines the prior rated at its cut, by shape
        self._prior_done = start_line - 1  # stream index of the first line the prior has not rated
        self._logit_before = np.zeros(0, dtype=np.float64)  # the last logits of lines decided and gone
        self._prior_why: dict[int, tuple[float, tuple[str, ...]]] = {}  # explain: 1-based line -> rating

    @property
    def drop_open(self) -> bool:
        """Whether a DROP run is open (``settle(close_drop=False)`` left it so, or it waits for more lines)."""
        return self._open is not None

    @property
    def rest_of(self) -> tuple[int, bool] | None:
        """``(line, kept)`` of a line let out before its end (``settle(partial=True)``, or
        ``rest_of`` at the start): the next bytes up to a line end are its rest; else None."""
        return self._rest

    @property
    def rest_held(self) -> int:
        """Bytes of the rest of a line let out early, held for its end or a settle that lets them out."""
        return len(self._rest_held)

    @property
    def held_bytes(self) -> int:
        """Bytes of an unterminated last line held back (``settle(partial=True)`` lets them out)."""
        return self._splitter.pending_bytes + len(self._rest_held)

    # -- input ---------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> list[Run]:
        """Add the next bytes of the stream; return the runs decided so far."""
        if self._done:
            raise RuntimeError("feed() after flush()")
        runs: list[Run] = []
        if self._rest is not None:
            chunk = self._take_rest(self._rest_held + chunk, runs)
        block = self._splitter.feed(chunk)
        if block is not None:
            self._ingest(block)
        return runs + self._emit(final=False)

    def settle(
        self, partial: bool = False, hold_lines: int = 0, close_drop: bool = True, rest: bool = True
    ) -> list[Run]:
        """The stream went quiet: decide every complete line now, and close the open runs.

        The look-ahead is not waited for: the open window is closed (a line that
        continues its record later starts a new window), the open cut group gets the
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
        if not (partial and not hold_lines and self._splitter.pending_bytes > 0):
            return let_out + self._settle(False, hold_lines, close_drop)
        facts = self._facts_of(self._splitter.pending)
        if facts.hits.shape[0]:  # protected: kept
            return self._settle(True, hold_lines, close_drop)
        runs = self._settle(False, hold_lines, close_drop, close=False)
        # a query term in a line that continues (indented) a kept one: kept with its record
        if facts.tf.sum() and self._last_keep and int(facts.layout.indent[0]) > 0:
            return runs + self._settle(True, hold_lines, close_drop)
        self._close_runs(runs, close_drop)
        return runs

    def _settle(
        self, force: bool, hold_lines: int = 0, close_drop: bool = True, close: bool = True, whole: bool = False
    ) -> list[Run]:
        """``settle``, letting an unterminated last line out if ``force`` (without ``close``, the
        open runs stay open): up to its last whole UTF-8 character, unless ``whole`` (so a
        character is never split between the line and its rest)."""
        if self._done:
            return []
        forced = None
        pending = self._splitter.pending if force else b""
        cut = len(pending) if whole else utf8_cut(pending)
        if cut:  # (a line that is so far one unfinished character waits for it)
            self._rest_held = pending[cut:]
            forced = self._splitter.force(cut)
        if forced is not None:
            self._ingest(forced)
        self._assign(self._segmenter.close())
        self._score_windows(self._segmenter_closed)
        runs = self._emit(final=False, settle=True, hold=hold_lines)
        # a line let out unterminated: its run closes, its rest comes after it
        if close:
            self._close_runs(runs, close_drop or forced is not None)
        if forced is not None:
            self._rest = (forced.first_line, self._last_keep)
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
            self._take_rest(self._rest_held, runs, whole=whole, let_out=True)

    def _take_rest(self, chunk: bytes, runs: list[Run], whole: bool = False, let_out: bool = False) -> bytes:
        """Take the rest of the line that ``settle(partial=True)`` let out off ``chunk`` (the bytes
        held before it first); the rest of ``chunk`` is returned. Without a line end the bytes are
        held (``_rest_held``), unless ``let_out`` (then all but the last bytes of a character not yet
        whole are taken) or ``whole`` (all of them)."""
        assert self._rest is not None
        line, kept = self._rest
        nl = chunk.find(b"\n")
        rest = chunk if nl < 0 else chunk[: nl + 1]
        self._rest_held = b""
        if nl < 0 and not whole:
            cut = utf8_cut(rest) if let_out else 0
            rest, self._rest_held = rest[:cut], rest[cut:]
        if not rest:
            return chunk[len(self._rest_held) :]
        # the rest is judged too: "Running tests... " let out, then "FAILED" must not be summarized
        kept = kept or self._matters(rest)
        self._rest = None if nl >= 0 else (line, kept)
        start = self._buf_start
        self._splitter.skip(len(rest))
        self._buf_start += len(rest)
        self.stats.bytes += len(rest)
        if kept:
            self.stats.kept_bytes += len(rest)
            self.stats.keep_runs += 1
            runs.append(Run("keep", line, line, start, start + len(rest), rest, rest=True))
        else:
            self.stats.dropped_bytes += len(rest)
            self.stats.drop_runs += 1
            # only the line end of a dropped line: nothing to say in text (JSONL still has the bytes)
            summary = f"[streamfilter: dropped the rest of line {line} ({len(rest)} B)]" if rest.strip() else ""
            crc = f"{zlib.crc32(rest):08x}"
            runs.append(Run("drop", line, line, start, start + len(rest), summary=summary, checksum=crc, rest=True))
        return chunk[len(rest) + len(self._rest_held) :]

    def flush(self, tail_lines: int | None = None) -> list[Run]:
        """End of the stream: decide and return every remaining run.

        Args:
            tail_lines: the tail rule's T for this end, at most the configured one (e.g.
                fewer lines for a command that succeeded); default: the configured T.
        """
        if self._done:
            return []
        self._tail_now = self.config.tail_lines if tail_lines is None else min(tail_lines, self.config.tail_lines)
        if self._found:
            self._tail_now = min(self._tail_now, self.config.found_tail_lines)
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
        norm, tokens, tf, layout = facts.norm, facts.tokens, facts.tf, facts.layout
        for i in norm.capped:
            length = int(block.ends[i] - (block.ends[i - 1] if i else 0))
            self._long_lines += 1
            if self._long_lines <= MAX_LONG_LINE_NOTICES:
                self.notices.append(Notice("input.long_line", block.first_line + i, length))
            else:
                self._last_long = Notice("input.long_line", block.first_line + i, length)
        counted = self._signatures.limit(facts.hit_ids)
        hits, ids = facts.hits[counted], facts.hit_ids[counted]
        repeats = np.zeros(n, dtype=bool)  # failure lines past their shape's max_repeats
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
        first = block.first_line - 1
        p.ends = np.concatenate((p.ends, block.ends + block.start_byte))
        p.shape_ends = np.concatenate((p.shape_ends, facts.shape_ends + (self._shapes_start + len(self._shapes))))
        self._shapes += facts.shapes
        if n:
            self._last_shape = facts.last_shape
        p.warnings = np.concatenate((p.warnings, facts.warnings))
        p.term = np.concatenate((p.term, tf.sum(axis=1) > 0))
        p.repeat = np.concatenate((p.repeat, repeats))
        p.frames = np.concatenate((p.frames, norm.frames))
        p.window = np.concatenate((p.window, np.full(n, -1, dtype=np.int64)))
        p.cont = np.concatenate((p.cont, np.zeros(n, dtype=bool)))
        p.record = np.concatenate((p.record, np.full(n, -1, dtype=np.int64)))
        p.forced = np.concatenate((p.forced, np.zeros(n, dtype=bool)))
        p.hit = np.concatenate((p.hit, np.zeros(n, dtype=bool)))
        p.tokens = np.concatenate((p.tokens, tokens))
        p.tf = np.concatenate((p.tf, tf))
        if self._prior is not None:
            p.logit = np.concatenate((p.logit, facts.prior_logits))
            p.seen = np.concatenate((p.seen, self._shape_counts.seen(facts.shape_hashes)))
            p.shape = np.concatenate((p.shape, facts.shape_hashes))
            p.blank = np.concatenate((p.blank, layout.blank))
        self._buf += block.data
        self._hits = np.concatenate((self._hits, hits + first))
        self._stops = np.concatenate((self._stops, facts.section_stops + first))
        self._verdicts = np.concatenate((self._verdicts, facts.verdicts + first))
        self._hit_ids = np.concatenate((self._hit_ids, ids))
        self._assign(self._segmenter.feed(layout))
        self._score_windows(self._segmenter_closed)

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
            if self._section_carry:
                later = self._stops[(self._stops >= assignment.first_line) & (self._stops != self._section_ignore)]
                stop = int(later[0]) - assignment.first_line if later.shape[0] else k
                upto = min(k, stop, self._section_carry)
                p.forced[a : a + upto] = True
                self._section_carry = 0 if stop < k else self._section_carry - upto
            top = int(assignment.windows[-1]) + 1 - self._w_base
            grow = top - self._w_score.shape[0]
            if grow > 0:
                self._w_score = np.concatenate((self._w_score, np.zeros(grow)))
                self._w_term = np.concatenate((self._w_term, np.zeros(grow, dtype=bool)))
                self._w_prot = np.concatenate((self._w_prot, np.full(grow, -1, dtype=np.int64)))
                self._w_hit = np.concatenate((self._w_hit, np.zeros(grow, dtype=np.int64)))
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
        over = self._lengths(lo, end) > self.config.max_line_bytes
        if over.any():
            line_tf = np.where(over[:, None], 0, line_tf)
        tf = np.add.reduceat(line_tf, offsets, axis=0) if end > lo else p.tf[:0]
        scores = self._scorer.score(lengths, tf)
        has_term = tf.sum(axis=1) > 0
        rel = ids - self._w_base
        self._w_score[rel] = scores
        self._w_term[rel] = has_term
        self._cuts.add(scores, has_term)
        self._scored = closed

    # -- decisions -----------------------------------------------------------------------
    def _apply_hits(self, final: bool, upto: int = -1, settling: bool = False) -> None:
        """Protect around the hits whose reach is known (all if ``final``; all before line index ``upto``;
        ``settling``: a settle applies them, not the stream's end)."""
        cfg, p = self.config, self._p
        assigned = self._assigned - p.base
        reach = max(cfg.extend_lines, cfg.section_lines)
        ready = self._hits + reach < self._assigned if not final else np.ones_like(self._hits, dtype=bool)
        ready |= self._hits < upto
        ready &= self._hits < self._assigned
        if not ready.any():
            return
        hits = self._hits[ready] - p.base
        ids = self._hit_ids[ready]
        self._hits, self._hit_ids = self._hits[~ready], self._hit_ids[~ready]
        # a section ends before the next line that ends sections (``BlockFacts.section_stops``):
        # pytest's FAILURES at "short test summary info", cargo's failures at "test result:",
        # unittest's report at its closing rule (not at the rule right under its header); the
        # log's own lines after the tool's last line are not the section's
        stops = np.append(self._stops - p.base, assigned + 1)  # (a sentinel: none)
        nxt = np.minimum(np.searchsorted(stops, hits + 1, side="right"), stops.shape[0] - 1)
        section_end = stops[nxt] - 1
        section = self._signatures.section[ids]
        if settling:  # a section whose end has not come in goes on in the lines to come
            going = section & (nxt == stops.shape[0] - 1) & (hits + cfg.section_lines >= assigned)
            if going.any():
                head = int(hits[going].max())
                self._section_carry = max(self._section_carry, head + cfg.section_lines - assigned + 1)
                self._section_ignore = p.base + head + 1  # a rule right under the head
        first, last = protected_ranges(
            hits,
            p.cont[:assigned],
            cfg.context_lines,
            cfg.extend_lines,
            section,
            cfg.section_lines,
            p.record[:assigned],
            self._signatures.record[ids],
            section_end,
        )
        first = self._lead_ins(hits, first)
        marks = np.zeros(p.forced.shape[0] + 1, dtype=np.int64)
        np.add.at(marks, first, 1)
        np.add.at(marks, last + 1, -1)
        around = np.cumsum(marks[:-1]) > 0
        around[hits] = True
        p.forced |= around
        p.hit[hits] = True
        # a window is explained by its first hit (hits are in order, and an earlier one is never
        # applied after a later one), however the hits were batched
        wrel, first_hit = np.unique(p.window[hits] - self._w_base, return_index=True)
        unset = self._w_prot[wrel] < 0
        self._w_prot[wrel[unset]] = ids[first_hit[unset]]
        self._w_hit[wrel[unset]] = p.base + hits[first_hit[unset]] + 1

    def _emit(self, final: bool, settle: bool = False, hold: int = 0) -> list[Run]:
        cfg, p = self.config, self._p
        total = p.base + p.ends.shape[0]
        if self._prior is not None:
            self._rate_lines(total if final else total - hold if settle else total - END_REACH - NEIGHBOURS, final)
        self._apply_hits(final or (settle and not hold), upto=total - hold if settle else -1, settling=settle)
        assigned = self._assigned - p.base
        if final or settle:
            limit = total - hold
        else:
            by_cut = p.base + int(np.searchsorted(p.window[:assigned], self._cut_waits()))
            limit = min(self._assigned - cfg.lookahead_lines, by_cut)
            if self._prior is not None:  # a line the prior has not rated yet may be a hit
                limit = min(limit, self._prior_done - cfg.context_lines - LEAD_LINES)
        if self._hits.shape[0]:
            # a hit not yet applied (its reach is still to come, or held back by a settle) protects
            # its whole window and the context before it: lines it may protect wait for it
            rel = int(self._hits[0]) - p.base
            open_from = self._segmenter_closed if rel >= assigned else int(p.window[rel])
            start = int(np.searchsorted(p.window[:assigned], open_from))
            limit = min(limit, p.base + min(start, rel - cfg.context_lines - LEAD_LINES))
        n = limit - p.base
        if not (final or settle) and n > 0:  # whole windows only (a scored window is judged whole)
            n = int(np.searchsorted(p.window[:assigned], p.window[n])) if n < assigned else n
        runs: list[Run] = []
        if n <= 0:
            if final:  # everything was decided before (a settle that left a DROP run open)
                self._absorb_gap(runs)
                self._close_runs(runs)
            return runs
        wrel = p.window[:n] - self._w_base
        w_lo, w_hi = int(wrel[0]), int(wrel[-1]) + 1
        window_ids = np.arange(w_lo, w_hi, dtype=np.int64) + self._w_base
        cut = self._cuts.cuts_now(window_ids) if settle else self._cuts.cuts(window_ids, pending=np.inf)
        w_prot = self._w_prot[w_lo:w_hi] >= 0
        w_keep = w_prot | (self._w_term[w_lo:w_hi] & (self._w_score[w_lo:w_hi] >= cut))
        keep = self._window_lines(w_keep, w_prot, wrel - w_lo, n) | p.forced[:n]
        head = cfg.head_lines - p.base
        if head > 0:
            keep[:head] = True
        tail = tail_end = last = n
        if final and self._tail_now > 0:
            # the tail ends at the first exit verdict of the last tail_lines lines: what a CI runner
            # prints after a command failed is its cleanup (the lines a signature protects there are
            # kept all the same); its lines are the ones before it
            verdicts = self._verdicts[self._verdicts >= p.base + max(0, n - cfg.tail_lines)] - p.base
            tail_end = min(n, int(verdicts[0]) + 1) if verdicts.shape[0] else n
            tail = max(0, tail_end - self._tail_now)
            last = max(0, n - LAST_LINES)
            keep[last:n] = True  # a run's last words, even after such a verdict
        keep[tail:tail_end] = True
        # an over-long line, or a line redrawn by carriage returns with no query term (a progress bar), is
        # kept only when it is itself a protected hit; as a window's member, context, head or
        # tail it is summarized
        weak = self._weak(0, n)
        if weak.any():
            keep &= ~weak | p.hit[:n]
        natural = None
        if self._selection is not None:
            natural, keep = keep, self._selection.mask(p.base + 1, n)
        if cfg.explain:
            self._why = _WindowFacts(w_lo, cut, w_keep, max(0, head), tail, tail_end, last, natural)
        self._build_runs(keep, runs)
        self._last_keep = bool(keep[-1])
        if settle and not hold:
            self._carry = cfg.extend_lines if self._last_keep else 0
            self._carry_bridged = False
        if final:
            self._absorb_gap(runs)  # a short last DROP run
            self._close_runs(runs)
        self._trim(n)
        return runs

    def _rate_lines(self, upto: int, final: bool) -> None:
        """Rate the lines from ``_prior_done`` up to stream index ``upto`` with the prior, and add those
        at or above its cut to the hits.

        A line's context is its neighbours, the next exit verdict and how far the stream's end is,
        within ``END_REACH + NEIGHBOURS`` lines: ``_emit`` rates a line once they are in (so the
        rating does not depend on chunking), or at the stream's end; a settle rates the lines it
        decides with what has come in.
        """
        assert self._prior is not None
        cfg, p = self.config, self._p
        total = p.base + p.ends.shape[0]
        if upto <= self._prior_done:
            return
        lo, hi = self._prior_done - p.base, upto - p.base
        before = self._logit_before
        lines = np.arange(self._prior_done, upto, dtype=np.int64)
        to_end = total - 1 - lines if final else np.full(hi - lo, END_REACH, dtype=np.int64)
        context = context_features(
            np.concatenate((before, p.logit[: hi + NEIGHBOURS])),
            lo + before.shape[0],
            hi + before.shape[0],
            to_end,
            to_verdict(lines, self._verdicts),
            p.seen[lo:hi],
            p.blank[lo:hi],
        )
        prob = self._prior.probability(context)
        rated = np.flatnonzero(prob >= self._prior.cut) + lo
        # not a line that is a hit already, a blank line, an over-long line or a progress display
        weak = self._weak(lo, hi) | p.blank[lo:hi]
        fresh = ~p.hit[rated] & ~weak[rated - lo] & ~np.isin(rated + p.base, self._hits)
        rated = rated[fresh]
        # the first PRIOR_REPEATS of a shape: a line repeated by the dozen (a stack frame of every
        # failing test, a config file's "#" lines) is not each time the failure
        rated = rated[self._prior_repeats.seen(p.shape[rated]) < PRIOR_REPEATS]
        self._prior_done = upto
        if not rated.shape[0]:
            return
        if cfg.explain:
            for i in rated.tolist():
                a, b = self._line_start(i) - self._buf_start, int(p.ends[i]) - self._buf_start
                words = self._prior.explain_line(strip_ansi(bytes(self._buf[a:b])))
                self._prior_why[p.base + i + 1] = (round(float(prob[i - lo]), 4), words)
        hits = np.concatenate((self._hits, rated + p.base))
        ids = np.concatenate((self._hit_ids, np.full(rated.shape[0], self._signatures.prior_id, dtype=np.int64)))
        order = np.argsort(hits, kind="stable")
        self._hits, self._hit_ids = hits[order], ids[order]

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

    def _lead_ins(self, hits: Int64Array, first: Int64Array) -> Int64Array:
        """Each hit's first kept line (pending indexes, shape ``(h,)``), moved back over the lead-in
        lines right before it (``LEAD_IN``: where a compiler's diagnostic comes from), within the
        hit's record and at most ``LEAD_LINES`` before it."""
        records = self._p.record
        out = first.copy()
        for k, (hit, start) in enumerate(zip(hits.tolist(), first.tolist(), strict=True)):
            line = start - 1
            while line >= max(0, hit - LEAD_LINES) and records[line] == records[hit]:
                a, b = self._line_start(line) - self._buf_start, int(self._p.ends[line]) - self._buf_start
                if LEAD_IN.match(strip_ansi(bytes(self._buf[a:b]))) is None:
                    break
                line -= 1
            out[k] = line + 1
        return out

    def _cut_waits(self) -> int:
        """The first window whose decision waits for a cut not known yet: one with a query term
        and no signature (another is decided without a cut), or, explaining, any (its trace gives
        the cut); ``_scored`` when none of the scored windows waits."""
        first = self._cuts.known_groups * self.config.group_windows
        if self.config.explain:
            return first
        lo, hi = max(0, first - self._w_base), self._scored - self._w_base
        waits = np.flatnonzero(self._w_term[lo:hi] & (self._w_prot[lo:hi] < 0))
        return self._w_base + (lo + int(waits[0]) if waits.shape[0] else max(lo, hi))

    # -- runs ----------------------------------------------------------------------------
    def _build_runs(self, keep: npt.NDArray[np.bool_], runs: list[Run]) -> None:
        n = int(keep.shape[0])
        cuts = np.flatnonzero(keep[1:] != keep[:-1]) + 1
        bounds = [0, *cuts.tolist(), n]
        for a, b in itertools.pairwise(bounds):
            if keep[a]:
                self._add_keep(a, b, runs)  # traces each piece of the run (it may split at the cap)
            else:
                if self._why is not None:
                    self._trace(a, b, "drop")
                self._add_drop(a, b, runs)

    def _trace(self, a: int, b: int, decision: str) -> None:
        """Record the windows of lines ``a..b-1`` (pending indexes) for the open run."""
        p = self._p
        assert self._why is not None
        traces = self._traces[decision]
        for w in np.unique(p.window[a:b]).tolist():
            lines = np.flatnonzero(p.window[a:b] == w) + a  # its lines in this piece
            if self._traced[decision] == w:  # the same window, continued (a later batch, or past a short gap)
                # traces are added in line order, so a listed one is the last (an omitted one stays counted)
                if traces and traces[-1][0] == w:
                    last = traces[-1][1]
                    if last.reason == "short-gap":  # the gap's window goes on here: it has this window's reason
                        fresh = self._new_trace(w, a, b, lines, decision)
                        traces[-1] = (w, replace(fresh, first_line=last.first_line))
                    else:
                        traces[-1] = (w, replace(last, last_line=p.base + int(lines[-1]) + 1))
                continue
            self._traced[decision] = w
            if len(traces) >= MAX_TRACES:
                self._omitted[decision] += 1
                continue
            traces.append((w, self._new_trace(w, a, b, lines, decision)))

    def _new_trace(
        self,
        w: int,
        a: int,
        b: int,
        lines: npt.NDArray[np.int64],
        decision: str,
    ) -> WindowTrace:
        """The trace of window ``w`` in the open run: its ``lines`` there (pending indexes in ``a..b-1``)."""
        why, p, names = self._why, self._p, self._signatures.names
        assert why is not None
        rel = w - self._w_base
        prot = int(self._w_prot[rel])
        if decision == "keep":
            if prot >= 0:
                reason = f"protected:{names[prot]}"
            elif why.window_keep[rel - why.w_lo]:
                reason = "score"
            else:
                first = int(lines[0])  # in this run
                tail = why.tail <= first < why.tail_end or first >= why.last
                reason = "head" if first < why.head else "tail" if tail else "context"
        elif why.natural is not None and why.natural[a:b][p.window[a:b] == w].any():
            reason = "budget"  # kept on its own, not chosen within the token budget
        elif prot >= 0:
            reason = "weak-line"  # an over-long or redrawn line in a kept window
        elif why.window_keep[rel - why.w_lo]:  # kept for its score: these lines hold no query term
            reason = "weak-line" if p.term[lines].any() else "no-term"
        elif p.repeat[lines].any():
            reason = "duplicate"  # a failure line whose shape was protected max_repeats times already
        elif self._w_term[rel]:
            reason = "below-cut"
        else:  # its query terms, if any, are in over-long lines: they do not score
            reason = "weak-line" if p.term[lines].any() else "no-term"
        hit_line = int(self._w_hit[rel]) if prot >= 0 else 0
        prior, features = self._prior_why.get(hit_line, (0.0, ())) if prot == self._signatures.prior_id else (0.0, ())
        return WindowTrace(
            p.base + int(lines[0]) + 1,
            p.base + int(lines[-1]) + 1,
            round(float(self._w_score[rel]), 6),
            round(float(why.cut[rel - why.w_lo]), 6),
            reason,
            # its first failure line, also when it is past this run (a lead-up to it) or before it
            hit_line,
            prior,
            features,
        )

    def _weak(self, a: int, b: int) -> npt.NDArray[np.bool_]:
        """Shape ``(b - a,)``: which of pending lines ``a .. b-1`` are kept only as protected hits
        themselves: over-long lines, and lines redrawn by carriage returns with no query term."""
        p = self._p
        long = self._lengths(a, b) > self.config.max_line_bytes
        weak: npt.NDArray[np.bool_] = long | ((p.frames[a:b] > REDRAW_FRAMES) & ~p.term[a:b])
        return weak

    def _line_start(self, rel: int) -> int:
        return int(self._p.ends[rel - 1]) if rel > 0 else self._buf_start

    def _lengths(self, a: int, b: int) -> Int64Array:
        """Shape ``(b - a,)``: the raw length in bytes of pending lines ``a .. b-1``."""
        lengths: Int64Array = np.diff(self._p.ends[a:b], prepend=np.int64(self._line_start(a)))
        return lengths

    def _add_keep(self, a: int, b: int, runs: list[Run]) -> None:
        p, cap = self._p, self.config.max_keep_event_bytes
        if self._open is not None:
            if not self._absorb_gap(runs):
                runs.append(self._close_drop())
            self._gap = None
        while a < b:
            start = self._line_start(a)
            if self._keep is None:
                self._keep = (p.base + a + 1, start, bytearray())
            data = self._keep[2]
            room = cap - len(data)
            # the first line at which the run reaches the cap closes it (a deterministic split)
            stop = min(int(np.searchsorted(p.ends[a:b], start + room, side="left")) + a + 1, b)
            if self._why is not None:  # this piece's own lines: a window it shares with the next is in both
                self._trace(a, stop, "keep")
            data += self._buf[start - self._buf_start : int(p.ends[stop - 1]) - self._buf_start]
            a = stop
            if len(data) >= cap:
                runs.append(self._close_keep())

    def _add_drop(self, a: int, b: int, runs: list[Run]) -> None:
        p, cfg = self._p, self.config
        start, end = self._line_start(a), int(p.ends[b - 1])
        if self._open is None:
            self._open = DropSummary(p.base + a + 1, start, cfg.top_shapes, cfg.summary_chars)
            if self._keep is not None:
                self._gap = bytearray()
        first = (int(p.shape_ends[a - 1]) if a > 0 else self._shapes_start) - self._shapes_start
        shapes = bytes(self._shapes[first : int(p.shape_ends[b - 1]) - self._shapes_start])
        lengths = self._lengths(a, b)
        over = lengths[lengths > cfg.max_line_bytes]
        repeats, held = int(p.repeat[a:b].sum()), int(p.hit[a:b].sum())
        if self._selection is not None:  # the lines a repeat is "like" may be left out too
            repeats, held = 0, held + repeats
        self._open.add(
            end - start,
            shapes,
            b - a,
            int(p.term[a:b].sum()),
            int(p.warnings[a:b].sum()),
            p.frames[a:b],
            repeats,
            int(over.shape[0]),
            int(over.max()) if over.shape[0] else 0,
            held,  # (protected lines are dropped only by a budget's selection)
        )
        with memoryview(self._buf) as view:
            self._drop_crc = zlib.crc32(view[start - self._buf_start : end - self._buf_start], self._drop_crc)
        if self._gap is not None:
            self._gap += self._buf[start - self._buf_start : end - self._buf_start]
            if self._open.lines >= cfg.min_drop_lines or len(self._gap) > cfg.summary_chars:
                self._gap = None
        if self._gap is None and self._keep is not None:
            runs.append(self._close_keep())

    def _absorb_gap(self, runs: list[Run]) -> bool:
        """A short DROP run after a KEEP run (before the next, or at the end of the stream) joins it,
        its summary would save nothing; whether it did."""
        if self._gap is None or self._keep is None or self._open is None:
            return False
        first_line, traces = self._open.first_line, self._traces["drop"]
        self._open = None
        self._drop_crc = 0
        self._traces["drop"], self._omitted["drop"], self._traced["drop"] = [], 0, -1
        self._keep_gap(runs, first_line, traces)
        self._gap = None
        return True

    def _keep_gap(self, runs: list[Run], first_line: int, traces: list[tuple[int, WindowTrace]]) -> None:
        """The short gap's lines join the open KEEP run as kept lines do: the line that brings it
        to ``max_keep_event_bytes`` closes it (where a budget that keeps them would close it).

        Args:
            runs: where a piece closed at the cap goes.
            first_line: the gap's first line (1-based).
            traces: the gap's window traces (as a DROP run): each piece lists those of its lines.
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
            if len(self._keep[2]) >= self.config.max_keep_event_bytes:
                # the piece ends at this line: a window of the gap that goes on is in the next one too
                self._merge_gap(
                    [(w, replace(t, last_line=min(t.last_line, line))) for w, t in traces if t.first_line <= line]
                )
                traces = [
                    (w, replace(t, first_line=max(t.first_line, line + 1))) for w, t in traces if t.last_line > line
                ]
                runs.append(self._close_keep())
            line += 1
        self._merge_gap(traces)

    def _merge_gap(self, traces: list[tuple[int, WindowTrace]]) -> None:
        """Add a kept short gap's window traces (its lines in the open KEEP piece) to the piece's.

        The piece's last window, going on over the gap, reaches over it instead (or stays counted
        once when omitted); another is a ``short-gap`` window, within the piece's ``MAX_TRACES``
        (the KEEP lines after the gap give it their reason when it goes on there, see ``_trace``).
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

    def _close_keep(self) -> Run:
        assert self._keep is not None
        first_line, start_byte, data = self._keep
        self._keep = None
        n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        run = Run(
            "keep",
            first_line,
            first_line + n_lines - 1,
            start_byte,
            start_byte + len(data),
            bytes(data),
            traces=self._take_traces("keep"),
            traces_omitted=self._omitted["keep"],
        )
        self._omitted["keep"] = 0
        self.stats.kept_lines += run.lines
        self.stats.kept_bytes += run.n_bytes
        self.stats.keep_runs += 1
        return run

    def _close_drop(self) -> Run:
        assert self._open is not None
        s = self._open
        self._open = None
        checksum, self._drop_crc = f"{self._drop_crc:08x}", 0
        self.stats.dropped_lines += s.lines
        self.stats.dropped_bytes += s.end_byte - s.start_byte
        self.stats.drop_runs += 1
        run = Run(
            "drop",
            s.first_line,
            s.last_line,
            s.start_byte,
            s.end_byte,
            summary=s.render(),
            checksum=checksum,
            traces=self._take_traces("drop"),
            traces_omitted=self._omitted["drop"],
        )
        self._omitted["drop"] = 0
        return run

    def _take_traces(self, decision: str) -> tuple[WindowTrace, ...]:
        traces = tuple(sorted((t for _, t in self._traces[decision]), key=lambda t: t.first_line))
        self._traces[decision] = []
        self._traced[decision] = -1
        return traces

    def _close_runs(self, runs: list[Run], close_drop: bool = True) -> None:
        self._gap = None
        if self._keep is not None:
            runs.append(self._close_keep())
        if self._open is not None and close_drop:
            runs.append(self._close_drop())

    def _trim(self, n: int) -> None:
        """Forget the first ``n`` pending lines (decided and accounted for)."""
        p = self._p
        end = int(p.ends[n - 1])
        del self._buf[: end - self._buf_start]
        self._buf_start = end
        shapes_end = int(p.shape_ends[n - 1])
        del self._shapes[: shapes_end - self._shapes_start]
        self._shapes_start = shapes_end
        first_window = int(p.window[n]) if n < p.window.shape[0] and p.window[n] >= 0 else None
        if n == p.window.shape[0] and self._scored > int(p.window[n - 1]):
            first_window = self._scored  # all settled: no window of these lines is needed again
        p.base += n
        self._stops = self._stops[self._stops >= p.base]
        self._verdicts = self._verdicts[self._verdicts >= p.base]
        p.ends, p.shape_ends, p.term, p.frames = p.ends[n:], p.shape_ends[n:], p.term[n:], p.frames[n:]
        p.warnings = p.warnings[n:]
        p.repeat = p.repeat[n:]
        p.window, p.cont, p.record, p.forced = p.window[n:], p.cont[n:], p.record[n:], p.forced[n:]
        p.hit = p.hit[n:]
        p.tokens, p.tf = p.tokens[n:], p.tf[n:]
        if self._prior is not None:
            self._logit_before = np.concatenate((self._logit_before, p.logit[:n]))[-NEIGHBOURS:]
            p.logit, p.seen, p.shape, p.blank = p.logit[n:], p.seen[n:], p.shape[n:], p.blank[n:]
            # a window's trace looks up the rating of its first hit, at most a window's lines back (a
            # window holds up to 4 times window_lines with its continuation lines)
            for line in [k for k in self._prior_why if k <= p.base - 4 * self.config.window_lines]:
                del self._prior_why[line]
        if first_window is not None and first_window > self._w_base:
            k = first_window - self._w_base
            self._w_score, self._w_term, self._w_prot = self._w_score[k:], self._w_term[k:], self._w_prot[k:]
            self._w_hit = self._w_hit[k:]
            self._w_base = first_window
            self._cuts.forget_before(first_window)
