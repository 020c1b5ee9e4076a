"""Novelty against a baseline: the lines of the last green run, and what they say of a failing one.

A *baseline* is what a passing run of a command printed, as two bounded sets of hashes
(``Baseline``, built by ``ShapeCollector``): the exact text of its lines (64-bit hashes) and
their masked shapes (``summarize.event_text``, the shapes DROP summaries count; 32-bit hashes).
A later run of the same command reads it through ``Novelty``: each of its lines is *seen* (the
green run printed the same text), *novel* (it printed no line of its shape) or neither: a
*changed* line (its shape was printed, with other numbers or words: ``3 mismatch(es)`` where the
green run printed ``0 mismatch(es)``), or one past a full set's limit. A changed or unknown line
is filtered as without a baseline: never dropped for being seen, nor kept or weighed up for being
novel. The filter then

- keeps a line the baseline saw neither for its window's sake alone (the other lines of a window
  kept for a failure signature, the prior or its BM25 score) nor for its place in the tail alone
  (the stream's last ``LAST_LINES`` are kept all the same): the green run printed it too, so it
  is not what broke; nor as what follows a hit, its continuation lines and its section (there,
  what the green run printed too is a passing test's line, a rule, a blank line); a signature's
  or the prior's line itself and the context before it (what ran right before the failure) are
  kept as without a baseline;
- does not keep a window all of whose lines the baseline saw for its score;
- weighs a window with a novel line near the stream's end or before an exit verdict more
  (``NOVEL_WEIGHT`` times its score against the cut);
- keeps a *lone* novel line: one with at most ``LONE_MAX`` blocks of novel lines (novel lines one
  right after the other; its own too) within ``NEAR_LINES`` lines either side, its own of at most
  ``LONE_BLOCK`` lines: among lines the green run printed, the few it never did are what changed
  (a failure's header and its details); a dense stretch of novel lines is left to the other rules.

Pure: no I/O. Storing baselines is ``streamfilter.live.baselines``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .normalize import normalize_block
from .records import LineBlock
from .summarize import event_text, line_blocks

__all__ = (
    "LONE_BLOCK",
    "LONE_MAX",
    "MAX_SHAPES",
    "NEAR_LINES",
    "NOVEL_WEIGHT",
    "Baseline",
    "Novelty",
    "ShapeCollector",
    "line_hashes",
    "text_hashes",
)

Int64Array = npt.NDArray[np.int64]
UInt32Array = npt.NDArray[np.uint32]
UInt64Array = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]

# hashes kept per set of a baseline (shapes 4 bytes each, texts 8: 384 KiB in all): a verbose green
# run of a few thousand tests prints a few thousand lines; past the cap the smallest hashes are
# kept (a bottom-k sample), so what is kept does not depend on the order the lines came in
MAX_SHAPES = 1 << 15
_FULL = (1 << 32) - 1  # the limit of a shape set that is not full: every hash is at or below it
# a novel line this close to the stream's end, or this many lines or fewer before an exit verdict,
# makes its window weigh more (within the tail's default reach: what a failing run prints last)
NEAR_LINES = 25
NOVEL_WEIGHT = 2.0  # the score of such a window is multiplied by this against the cut
# most blocks of novel lines (lines one right after the other) within NEAR_LINES either side of a
# novel line that is kept for itself, and most lines of its own block (a window's, by default): a
# failure's header and its details among lines the green run printed (a fresh user's harness: 6
# novel lines in a row, lost when each counted); a longer stretch is left to the other rules
LONE_MAX = 3
LONE_BLOCK = 8


def line_hashes(shapes: bytes, n_lines: int) -> UInt32Array:
    """Shape ``(n_lines,)``: the CRC-32 of each line's shape in ``shapes`` (``BlockFacts.shapes``:
    each line's shape followed by its ``\\n``, the last one maybe without)."""
    parts = shapes.split(b"\n", n_lines)[:n_lines]
    return np.fromiter(map(zlib.crc32, parts), dtype=np.uint32, count=n_lines)


def text_hashes(data: bytes, n_lines: int) -> UInt64Array:
    """Shape ``(n_lines,)``: a 64-bit hash of each line's exact bytes in ``data`` (``LineBlock.data``:
    each line followed by its ``\n``, the last one maybe without): its Adler-32 in the high half,
    its CRC-32 in the low one (two checksums of different kinds: 64 bits make a false match
    unlikely among a full set's 32768 lines, about 2e-15 a line, where 32 would give 8e-6)."""
    parts = data.split(b"\n", n_lines)[:n_lines]
    crc = np.fromiter(map(zlib.crc32, parts), dtype=np.uint64, count=n_lines)
    adler = np.fromiter(map(zlib.adler32, parts), dtype=np.uint64, count=n_lines)
    hashes: UInt64Array = (adler << np.uint64(32)) | crc
    return hashes


@dataclass(frozen=True, slots=True)
class Baseline:
    """The lines a green run printed: their exact texts and their shapes, as bounded sets of hashes.

    Attributes:
        hashes: the sorted distinct CRC-32 hashes of its line shapes, as little-endian uint32
            bytes (at most ``MAX_SHAPES`` of them).
        limit: the greatest shape hash the set can tell about: a full set kept only the smallest
            hashes, so a hash above it is unknown (``2**32 - 1`` when the set is not full).
        lines: how many lines it was built from.
        texts: the sorted distinct hashes of its lines' exact bytes (``text_hashes``), as
            little-endian uint64 bytes (at most ``MAX_SHAPES``; a full set kept the smallest, so a
            line whose hash is not among them counts as not printed).
    """

    hashes: bytes
    limit: int
    lines: int
    texts: bytes = b""

    @property
    def sampled(self) -> bool:
        """The green run printed more distinct lines than ``texts`` keeps: a line not found in it
        may have been printed (its hash above those kept)."""
        return len(self.texts) // 8 >= MAX_SHAPES

    @property
    def size(self) -> int:
        """How many hashes the set holds."""
        return len(self.hashes) // 4

    def array(self) -> UInt32Array:
        """The hashes as a read-only uint32 array (no copy)."""
        return np.frombuffer(self.hashes, dtype="<u4").astype(np.uint32, copy=False)

    def lookup(self, shapes: UInt32Array, texts: UInt64Array) -> tuple[BoolArray, BoolArray]:
        """``(seen, novel)``, shape ``(n,)`` each, for lines of these shape and text hashes: which
        the green run printed (their text is in the set), and which have a shape it did not print
        while the set can tell (at or below ``limit``); a line that is neither is changed or unknown."""
        seen = _holds(np.frombuffer(self.texts, dtype="<u8").astype(np.uint64, copy=False), texts)
        novel: BoolArray = ~_holds(self.array(), shapes) & (shapes <= self.limit) & ~seen
        return seen, novel


def _holds(table: npt.NDArray[np.unsignedinteger], hashes: npt.NDArray[np.unsignedinteger]) -> BoolArray:
    """Shape ``(n,)``: which of ``hashes`` the sorted ``table`` holds."""
    if table.shape[0] == 0:
        return np.zeros(hashes.shape[0], dtype=bool)
    at = np.minimum(np.searchsorted(table, hashes), table.shape[0] - 1)
    held: BoolArray = table[at] == hashes
    return held


class _BottomK:
    """The smallest ``k`` distinct hashes of those added, and the limit past which it cannot tell."""

    def __init__(self, k: int, dtype: type[np.unsignedinteger], full: int) -> None:
        self.k, self.dtype = k, dtype
        self.limit = full
        self.kept = np.zeros(0, dtype=dtype)  # sorted, distinct, all at or below limit
        self._new: list[npt.NDArray[np.unsignedinteger]] = []
        self._held = 0  # hashes in _new

    def add(self, hashes: npt.NDArray[np.unsignedinteger]) -> None:
        fresh = hashes[hashes <= self.limit]
        if fresh.shape[0]:
            self._new.append(fresh)
            self._held += int(fresh.shape[0])
            if self._held > self.k:
                self.merge()

    def merge(self) -> None:
        # sorted, then the first of each run of equal hashes: np.unique's result without the numpy.ma
        # it imports on its first call (about 8 ms of import in a short run that stores its baseline)
        merged = np.sort(np.concatenate((self.kept, *self._new)))
        distinct = np.ones(merged.shape[0], dtype=bool)
        distinct[1:] = merged[1:] != merged[:-1]
        merged = merged[distinct]
        if merged.shape[0] > self.k:
            merged = merged[: self.k]
            self.limit = int(merged[-1])
        self.kept, self._new, self._held = merged, [], 0


class ShapeCollector:
    """Builds a ``Baseline`` from the lines of one or more streams, in bounded memory.

    Holds at most ``2 * max_shapes`` hashes of each kind: when more come, the smallest
    ``max_shapes`` distinct ones are kept (the shapes' limit then drops to the greatest of them),
    so the result is the same whatever the order and chunking of the lines.

    Args:
        max_shapes: most hashes in each of the baseline's sets.
    """

    def __init__(self, max_shapes: int = MAX_SHAPES) -> None:
        self.max_shapes = max_shapes
        self.lines = 0
        self._shapes = _BottomK(max_shapes, np.uint32, _FULL)
        self._texts = _BottomK(max_shapes, np.uint64, (1 << 64) - 1)

    def add(self, shapes: UInt32Array, texts: UInt64Array) -> None:
        """Add the next lines: their shape hashes (``line_hashes``) and text hashes (``text_hashes``)."""
        self.lines += int(shapes.shape[0])
        self._shapes.add(shapes)
        self._texts.add(texts)

    def add_block(self, block: LineBlock, max_line_bytes: int) -> None:
        """Add the lines of ``block``, shaped as the filter shapes them with this ``max_line_bytes``
        (``FilterConfig.max_line_bytes``): a baseline built from a file (``filter --baseline``)."""
        norm = normalize_block(block.data, block.n_lines, max_line_bytes, block.ends)
        self.add(line_hashes(event_text(norm.text), block.n_lines), text_hashes(block.data, block.n_lines))

    def baseline(self) -> Baseline:
        """The baseline of the lines added so far."""
        self._shapes.merge()
        self._texts.merge()
        shapes, texts = self._shapes.kept.astype("<u4").tobytes(), self._texts.kept.astype("<u8").tobytes()
        return Baseline(shapes, self._shapes.limit, self.lines, texts)


class Novelty:
    """One stream's lines and windows against a baseline (``StreamFilter`` keeps one per stream).

    Lines are added in stream order (``add_lines``), windows once all their lines are in
    (``add_windows``); both are forgotten once decided (``forget``), so memory follows the
    filter's look-ahead. Stream indexes are 0-based line numbers.

    Args:
        baseline: the shapes of the last green run.
        first_line: the stream index of the first line to come.
    """

    def __init__(self, baseline: Baseline, first_line: int = 0) -> None:
        self.baseline = baseline
        self._base = first_line  # stream index of _seen[0]
        self._seen = np.zeros(0, dtype=bool)  # per line: its text is in the baseline
        self._novel = np.zeros(0, dtype=bool)  # per line: its shape is not, and the baseline can tell
        self._before = np.zeros(0, dtype=np.int64)  # stream indexes of the novel lines forgotten, the last NEAR_LINES
        self._w_base = 0  # window id of the per-window arrays' first entry
        self._w_novel = np.zeros(0, dtype=np.int64)  # per window: its novel lines
        self._w_seen = np.zeros(0, dtype=bool)  # per window: every line of it seen
        self._w_last = np.zeros(0, dtype=np.int64)  # per window: stream index of its last novel line (-1: none)

    def add_lines(self, shapes: UInt32Array, texts: UInt64Array) -> None:
        """The next lines' shape hashes (``line_hashes``) and text hashes (``text_hashes``)."""
        seen, novel = self.baseline.lookup(shapes, texts)
        self._seen = np.concatenate((self._seen, seen))
        self._novel = np.concatenate((self._novel, novel))

    def add_windows(self, first: int, starts: Int64Array, end: int) -> None:
        """Windows ``first, first + 1, ...`` are complete: window k holds the lines from stream
        index ``starts[k]`` up to the next one's start (the last one's up to ``end``, exclusive).
        The first of them must follow the last window added (or be the first)."""
        if not self._w_novel.shape[0]:
            self._w_base = first
        bounds = np.append(starts, end) - self._base
        novel_before = np.concatenate(([0], np.cumsum(self._novel, dtype=np.int64)))
        seen_before = np.concatenate(([0], np.cumsum(self._seen, dtype=np.int64)))
        sizes = np.diff(bounds)
        novel = novel_before[bounds[1:]] - novel_before[bounds[:-1]]
        seen = (seen_before[bounds[1:]] - seen_before[bounds[:-1]]) == sizes
        # the last novel line before each window's end, if it is in the window
        index = np.where(self._novel, np.arange(self._seen.shape[0], dtype=np.int64), -1)
        last_novel = np.maximum.accumulate(index) if index.shape[0] else index
        last = np.where(novel > 0, last_novel[np.maximum(bounds[1:] - 1, 0)] + self._base, -1)
        self._w_novel = np.concatenate((self._w_novel, novel))
        self._w_seen = np.concatenate((self._w_seen, seen))
        self._w_last = np.concatenate((self._w_last, last.astype(np.int64)))

    def scored(
        self,
        windows: Int64Array,
        terms: BoolArray,
        scores: npt.NDArray[np.float64],
        cuts: npt.NDArray[np.float64],
        end: int | None,
        verdicts: Int64Array,
        near_lines: int,
    ) -> tuple[BoolArray, BoolArray]:
        """Which of ``windows`` (ids, added) a score keeps: ``(kept, weighed)``, shape ``(w,)``.

        As without a baseline, a window needs a query term (``terms``) and a score (``scores``) at
        or above its cut (``cuts``); but one all of whose lines the baseline saw is not kept for its
        score, and one with a novel
        line at most ``near_lines`` before the stream's ``end`` (its line count, None while it
        goes on) or before one of ``verdicts`` (stream indexes of exit verdicts) is kept when
        ``NOVEL_WEIGHT`` times its score reaches its cut (``weighed``: kept so, not otherwise).
        """
        rel = windows - self._w_base
        last = self._w_last[rel]
        near = last >= 0
        if end is None:
            near_end = np.zeros(rel.shape[0], dtype=bool)
        else:
            near_end = end - 1 - last < near_lines
        # the first verdict at or after the window's last novel line, within near_lines of it
        at = np.searchsorted(verdicts, last)
        after = np.append(verdicts, np.iinfo(np.int64).max)[at]
        near &= near_end | (after - last <= near_lines)
        by_score = scores >= cuts
        kept: BoolArray = terms & (by_score | (near & (scores * NOVEL_WEIGHT >= cuts))) & ~self._w_seen[rel]
        return kept, kept & ~by_score

    def seen(self, first: int, n: int) -> BoolArray:
        """Shape ``(n,)``: which of the lines from stream index ``first`` on the baseline saw."""
        a = first - self._base
        seen: BoolArray = self._seen[a : a + n]
        return seen

    def novel(self, first: int, n: int) -> BoolArray:
        """Shape ``(n,)``: which of the lines from stream index ``first`` on have a shape the baseline
        never saw (and it can tell)."""
        a = first - self._base
        novel: BoolArray = self._novel[a : a + n]
        return novel

    def lone(self, first: int, n: int, near_lines: int) -> BoolArray:
        """Shape ``(n,)``: which of the lines from stream index ``first`` on are novel with at most
        ``LONE_MAX`` blocks of novel lines (their own too) within ``near_lines`` (at most
        ``NEAR_LINES``) lines either side, their own of at most ``LONE_BLOCK`` lines. The lines up
        to ``near_lines`` after the last one must have been added (the filter's look-ahead is
        longer), or they count as not novel."""
        novel = self.novel(first, n)
        if not novel.any():
            return novel
        at = np.concatenate((self._before, np.flatnonzero(self._novel) + self._base))
        starts, ends = line_blocks(at)  # (a failure's header and its details: one block)
        lines = np.arange(first, first + n, dtype=np.int64)
        # the blocks that reach within near_lines either side, and the length of the line's own
        near = np.searchsorted(starts, lines + near_lines, side="right") - np.searchsorted(ends, lines - near_lines)
        own = np.maximum(np.searchsorted(starts, lines, side="right") - 1, 0)
        length = ends[own] - starts[own] + 1
        lone: BoolArray = novel & (near <= LONE_MAX) & (length <= LONE_BLOCK)
        return lone

    def novel_lines_of(self, windows: Int64Array) -> Int64Array:
        """Shape ``(w,)``: how many lines of each of ``windows`` (ids, added) are novel."""
        novel: Int64Array = self._w_novel[windows - self._w_base]
        return novel

    def forget(self, line: int, window: int | None) -> None:
        """Lines before stream index ``line`` and windows before ``window`` are decided."""
        k = line - self._base
        if k > 0:
            gone = np.flatnonzero(self._novel[:k]) + self._base
            before = np.concatenate((self._before, gone))
            self._before = before[before >= line - NEAR_LINES]
            self._seen, self._novel = self._seen[k:], self._novel[k:]
            self._base = line
        if window is not None and window > self._w_base:
            k = window - self._w_base
            self._w_novel, self._w_seen, self._w_last = self._w_novel[k:], self._w_seen[k:], self._w_last[k:]
            self._w_base = window
