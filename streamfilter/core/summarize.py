"""DROP runs -> one-line summaries (stage 6b): facts only, never a verdict.

Two kinds of line *shape*, each a line with its variable parts masked as ``<*>``:

- the repeat gate's and the token budget's (``mask_shapes``, ``shape_text``, ``line_shapes``):
  numbers, versions, dates, durations and whole paths masked;
- a DROP summary's (``event_text``): numbers and *ids* masked (hex runs, UUIDs, tokens of
  letters and digits such as ``req-3eb6``), so one event is one shape whatever its ids;
  paths and words stay.

Words stay in both, so two different events (``VM Started``, ``VM Paused``) never share a
shape. A summary then names *templates*: the shapes of its run grouped by their words and
punctuation (``DropSummary.render``), a word that varies shown as its values when it has few
(``VM {Started ×39, Paused ×1 @L7}``), as what they share when many (``src/<*>.c``), else ``<*>``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .normalize import strip_ansi
from .templates import MAX_MINED, Miner, Template, delimiters, show
from .words import counted

__all__ = (
    "ODD_LINES",
    "DropSummary",
    "event_text",
    "line_blocks",
    "line_shapes",
    "mask_shapes",
    "shape_text",
    "unshown_summary",
    "warn_counts",
)

_MARK = 0x01  # one masked span, shown as "<*>"
# what a reader's splitlines() takes for a line break besides \n and \r, escaped in a summary: a
# dropped line's U+2028 put "[streamfilter: all tests passed" at a line's start (helper-62)
_LINE_BREAKS = {c: f"\\u{c:04x}" for c in (0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}
_DELIM = np.zeros(256, dtype=bool)
for _b in b" \t\r\n\"'()[]{}<>,;=|:":
    _DELIM[_b] = True


def _in_ranges(first: npt.NDArray[np.int64], end: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.bool_]:
    """Shape ``(n,)``: whether each index is in one of the half-open ranges ``[first[i], end[i])`` (disjoint, sorted).

    Built as alternating runs with ``np.repeat`` (no index per byte, no cumulative sum).
    """
    bounds = np.empty(2 * first.shape[0] + 2, dtype=np.int64)
    bounds[0], bounds[-1] = 0, n
    bounds[1:-1:2] = first
    bounds[2:-1:2] = end
    values = np.zeros(bounds.shape[0] - 1, dtype=bool)
    values[1::2] = True
    inside: npt.NDArray[np.bool_] = np.repeat(values, np.diff(bounds))
    return inside


def line_blocks(lines: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The blocks of ``lines`` (line numbers, shape ``(n,)``, ascending, distinct): each block's first
    and last line (shapes ``(b,)``), a block being lines one right after the other (a failure's
    header and its details among lines of another kind)."""
    start = np.ones(lines.shape[0], dtype=bool)
    start[1:] = lines[1:] != lines[:-1] + 1
    last = np.append(lines[np.flatnonzero(start)[1:] - 1], lines[-1:])
    return lines[start], last


_DELIM_TABLE = _DELIM.astype(np.uint8).tobytes()  # bytes.translate table: 1 for a delimiter
# byte values that may stand for "delete this byte" when the text lacks them (never _MARK); scoring
# text never holds ESC (normalize removes every one), so the first is nearly always free
_SENTINELS = bytes([0x1B, 0x00, *range(0x02, 0x09), 0x0B, 0x0C, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])


def _delete(out: npt.NDArray[np.uint8], drop: npt.NDArray[np.bool_], text: bytes) -> bytes:
    """``out``'s bytes without those where ``drop``; ``out`` holds only bytes of ``text`` and ``_MARK``.

    The dropped bytes are overwritten with a value ``text`` lacks and deleted by
    ``bytes.translate``: about 1.4 ms per MB, where ``np.compress`` on scattered
    deletions takes about 2. A text holding every such value takes ``np.compress``.
    """
    for value in _SENTINELS:
        if value not in text:
            ones = np.uint8(0) - drop.view(np.uint8)  # 0xFF where dropped (elementwise, no scatter)
            out &= ~ones
            out |= ones & np.uint8(value)
            return out.tobytes().translate(None, bytes((value,)))
    return np.compress(~drop, out).tobytes()


# bytes.translate table of byte classes for the ids of a summary's shapes: 1 a digit, 2 a hex
# letter, 3 another ASCII letter, 0 anything else (which ends a run of letters and digits)
_CLASS_TABLE = bytes(
    1 if chr(b).isdigit() and b < 0x80 else 2 if chr(b) in "abcdefABCDEF" else 3 if chr(b).isalpha() and b < 0x80 else 0
    for b in range(256)
)
# a UUID's hex digits, as offsets from its first dash (8-4-4-4-12)
_UUID_HEX = np.array([*range(-8, 0), *range(1, 5), *range(6, 10), *range(11, 15), *range(16, 28)], dtype=np.int64)


def _ids(arr: npt.NDArray[np.uint8], digit: npt.NDArray[np.bool_], text: bytes) -> npt.NDArray[np.bool_] | None:
    """Shape ``(n,)``: the bytes of ids in ``text`` (``arr`` its bytes, ``digit`` its digits), or None.

    An id: a run of letters and digits in which a digit comes before a letter (``3eb6`` of
    ``req-3eb6``, ``4f592bfd``, ``a1b2c3``; not ``Step060`` nor ``v1``, whose digits alone are
    masked), and a UUID whole (8-4-4-4-12 hex digits, a group of letters only too). Found from
    the few places where a digit meets a letter and a dash stands 5 bytes before the next, so a
    text without ids costs a few comparisons per byte. (A hex id whose digits all follow its
    letters, ``ab12``, keeps its letters: checking every such run for letters past ``f`` doubled
    this function's cost, and a summary shows such a word's values by what they share, as ids.)
    """
    n = arr.shape[0]
    cls = np.frombuffer(text.translate(_CLASS_TABLE), dtype=np.uint8)
    turn = np.flatnonzero(digit[:-1] & (cls[1:] > 1))  # a digit, then a letter
    dash = np.flatnonzero(arr[8 : n - 27] == 0x2D) + 8 if n >= 36 else np.zeros(0, dtype=np.int64)
    if dash.shape[0]:
        dash = dash[(arr[dash + 5] == 0x2D) & (arr[dash + 10] == 0x2D) & (arr[dash + 15] == 0x2D)]
    if dash.shape[0]:  # (a dash in each place: now its hex digits)
        dash = dash[((cls[dash[:, None] + _UUID_HEX] - np.uint8(1)) < 2).all(axis=1)]
    if not (turn.shape[0] or dash.shape[0]):
        return None
    ids = np.zeros(n, dtype=bool)
    if turn.shape[0]:
        ends = np.concatenate(([-1], np.flatnonzero(cls == 0), [n]))  # bytes that end runs
        at = np.searchsorted(ends, turn)
        first, end = ends[at - 1] + 1, ends[at]
        new = np.ones(first.shape[0], dtype=bool)
        new[1:] = first[1:] != first[:-1]  # one run's turns are adjacent
        ids |= _in_ranges(first[new], end[new], n)
    if dash.shape[0]:  # (two UUIDs never overlap: the next one's dashes would fall on hex digits)
        ids |= _in_ranges(dash - 8, dash + 28, n)
    return ids


def _mask(text: bytes, ids: bool = False) -> bytes:
    """Mask variable parts with one ``_MARK`` byte per span (vectorized over the text).

    Runs of spaces and tabs become one, carriage returns go. Masked: every run of
    digits, with the ``. : , _ -`` between two digits (numbers, versions, times,
    dates, durations); every chunk between delimiters (space, quotes, brackets,
    ``, ; = | :``) that contains a ``/`` (paths, URLs).

    ``ids``: the masks of a summary's shapes instead: digits and ids (``_ids``), with the
    ``. : , _ -`` between two masked bytes (``4f59-3eb6``), and no path masked whole (its
    parts that vary are found among the lines of a run, ``DropSummary.render``).
    """
    arr = np.frombuffer(text, dtype=np.uint8)
    n = arr.shape[0]
    if n == 0:
        return text
    digit = (arr - np.uint8(48)) < 10
    masked = digit.copy()
    sep = ((arr - np.uint8(0x2C)) < 3) | (arr == 0x3A) | (arr == 0x5F)  # , - . (0x2C-0x2E) : _
    if ids:
        found = _ids(arr, digit, text)
        if found is not None:
            masked |= found
        masked[1:-1] |= sep[1:-1] & masked[:-2] & masked[2:]  # between two masked bytes
    else:
        masked[1:-1] |= sep[1:-1] & digit[:-2] & digit[2:]  # between two digits
    if b"/" in text and not ids:
        # the chunk around each slash: from after the delimiter before it to the one after it
        delims = np.concatenate(([-1], np.flatnonzero(np.frombuffer(text.translate(_DELIM_TABLE), dtype=bool)), [n]))
        at = np.searchsorted(delims, np.flatnonzero(arr == 0x2F))
        first, end = delims[at - 1] + 1, delims[at]
        new = np.ones(first.shape[0], dtype=bool)
        new[1:] = first[1:] != first[:-1]  # slashes are in order, so one chunk's repeats are adjacent
        masked |= _in_ranges(first[new], end[new], n)
    space = (arr == 0x20) | (arr == 0x09)
    gone = np.empty(n, dtype=bool)
    gone[0] = False
    # one mark per masked span, one space per run of spaces and tabs, no carriage return
    np.logical_or(masked[1:] & masked[:-1], space[1:] & space[:-1], out=gone[1:])
    gone |= arr == 0x0D
    flag = masked.view(np.uint8)
    out = (arr & (flag - np.uint8(1))) | flag  # _MARK (1) where masked, elementwise (no scatter)
    return _delete(out, gone, text)


def mask_shapes(text: bytes) -> bytes:
    """Mask the variable parts of ``text`` (any number of lines) as ``<*>``."""
    return _mask(text).replace(bytes([_MARK]), b"<*>")


_MAX_SHAPES = 4096  # distinct shapes counted per run; later new shapes count as "other"
_MAX_SHAPE_CHARS = 56
_SHAPE_SOURCE_BYTES = 96  # bytes of a line that are masked into its shape
# bytes of a shape's first line kept to name a template of that one line: enough for _MAX_SHAPE_CHARS
# characters and the escape sequences of a coloured line; ``DropSummary`` holds MAX_MINED of them
_HEAD_BYTES = 4 * _MAX_SHAPE_CHARS + 64
# ... into a summary's shape: ids shrink to one mark, and an event's words often come after a
# timestamp, a level, a logger and two ids (a compute service's "VM Paused" at byte 140)
_EVENT_SOURCE_BYTES = 160
_CONTEXT_CHARS = 12  # most characters shown before a value list when a template is cut to show the list
_MIN_SHAPE_ROOM = 24  # characters the most frequent shape needs to be named (cut with "…")
_MIN_CUT_CHARS = 16  # least of a template's text shown, cut, after the first
# a run's templates left unnamed are named past the summary's length when at most ODD_TEMPLATES of
# them name every line left and one names at most ODD_LINES lines: the one odd line among thousands
# of passing ones is most often the failure ("5977× reconcile row <*> ok; +1 other line" hid "ledger
# drift detected at row 4411")
ODD_LINES = 3
RARE_SHARE = 100  # a template of at most 1 % of a run's lines (or ODD_LINES) holds its rare lines
ODD_TEMPLATES = 3  # templates of more lines named past the length to reach them: fewer than this
# a run mined for its rare lines (``DropSummary(mine_rare=True)``) with more blocks of them than this
# (RARE_BLOCK), or than 1 % of its lines (RARE_SHARE), has none: a long tail of lines (ids the masks
# keep, all-unique lines), or a short run, every template of which is of few lines; not a few odd ones
RARE_TEMPLATES = 5
# rare lines one right after the other are one block of a run's rare lines (a failure's header and
# its details), of at most this many lines; a longer one is a run of all-unique lines, not an event
RARE_BLOCK = 10
# shapes past a full table whose delimiters none in it has, kept for its rare lines; past this,
# the run has none (its templates would not take in every line)
_MAX_NEW_SHAPES = 256


def _loud(miner: Miner, silent: list[Template]) -> Template | None:
    """The next template of ``miner`` that is not silent (those on the way go to ``silent``)."""
    while (template := miner.next()) is not None:
        if not template.silent:
            return template
        silent.append(template)
    return None


def _fit(template: Template, limit: int) -> str:
    """``template``'s text in at most ``limit`` characters, cut with ``…``: at its end, or, when
    that would cut its first value list (``VM {Started ×39, Paused ×1 @L7}``), from that list on,
    after the word before it when short (``…VM {Started ×39, Paused ×1 @L7} (Lifecycle…``)."""
    text = template.text()
    if len(text) <= limit:
        return text
    shown = [show(p) if isinstance(p, bytes) else p for p in template.parts]
    lists = [k for k, part in enumerate(template.parts) if isinstance(part, str) and part.startswith("{")]
    if lists and len("".join(shown[: lists[0] + 1]).lstrip()) >= limit:  # the cut would fall in or before it
        start = lists[0]  # and what comes before it up to the word before it, when short and plain
        while start and len("".join(shown[start - 1 : lists[0]])) <= _CONTEXT_CHARS and "<*>" not in shown[start - 1]:
            start -= 1
            if start % 2 == 0 and shown[start]:  # (parts alternate: words at even places, delimiters between)
                break
        text = "…" + "".join(shown[start:]).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kib(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"


def _dropped_head(first_line: int, last_line: int, n_bytes: int) -> str:
    """A summary line's head: its range and counts (``[streamfilter: dropped lines 3-9 (7 lines, 412 B)``)."""
    where = f"line {first_line}" if first_line == last_line else f"lines {first_line}-{last_line}"
    return f"[streamfilter: dropped {where} ({counted(last_line - first_line + 1, 'line')}, {_kib(n_bytes)})"


def unshown_summary(first_line: int, last_line: int, n_bytes: int, why: str) -> str:
    """The summary line (no newline) of lines ``first_line .. last_line`` (1-based, inclusive;
    ``n_bytes`` bytes) left out whole, not summarized by their shapes, and ``why``: with a DROP run's
    head (``DropSummary.render``), so a reader counts them as it counts any."""
    return f"{_dropped_head(first_line, last_line, n_bytes)}: {why}]"


def warn_counts(text: bytes, ends: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Shape ``(n_lines,)``: ``line.lower().count(b"warn")`` of each line of ``text``.

    Args:
        text: whole lines (scoring text).
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.

    Elementwise comparisons over the text (``b | 0x20`` folds only ``W A R N`` onto
    ``w a r n``; the word cannot overlap itself, nor span a line end).
    """
    n_lines = int(ends.shape[0])
    folded = np.frombuffer(text, dtype=np.uint8) | np.uint8(0x20)
    if folded.shape[0] < 4:
        return np.zeros(n_lines, dtype=np.int64)
    found = (folded[:-3] == 0x77) & (folded[1:-2] == 0x61) & (folded[2:-1] == 0x72) & (folded[3:] == 0x6E)
    at = np.searchsorted(ends, np.flatnonzero(found), side="right")
    return np.bincount(at, minlength=n_lines)[:n_lines].astype(np.int64)


def shape_text(text: bytes, ids: bool = False) -> bytes:
    """The shapes of the lines of ``text``, each followed by its line's ``\\n`` (a last line
    may lack one): ``b"\\n".join(line_shapes(text))`` (plus the last ``\\n``), one pass.

    A shape shows at most ``_MAX_SHAPE_CHARS``, so only the first ``_SHAPE_SOURCE_BYTES``
    of a line are masked: longer lines are cut first (with numpy, then masked as one text).
    ``ids``: a summary's shapes (``event_text``), of the first ``_EVENT_SOURCE_BYTES``.
    """
    source = _EVENT_SOURCE_BYTES if ids else _SHAPE_SOURCE_BYTES
    arr = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(arr == 0x0A)
    if not (text.endswith(b"\n") or not text):
        ends = np.append(ends, arr.shape[0])
    starts = np.zeros(ends.shape[0], dtype=np.int64)
    starts[1:] = ends[:-1] + 1
    long = np.flatnonzero(ends - starts > source)
    if not long.shape[0]:
        return _mask(text, ids=ids)  # masking keeps every line end
    # the heads alone are masked (masking is local: a byte's neighbours, its run of letters and
    # digits, a UUID's 36 bytes and its chunk between delimiters, and "\n" and the text's end end
    # each); masking the whole text with the tails left out took 13 times its bytes (a 50 MB line,
    # 650 MB, helper-67)
    heads = _in_ranges(starts[long] + source, ends[long], arr.shape[0])
    np.logical_not(heads, out=heads)  # (in place: one mask of the text's length)
    return _mask(arr[heads].tobytes(), ids=ids)


def event_text(text: bytes) -> bytes:
    """A DROP summary's shapes of the lines of ``text`` (ids masked, paths kept), each followed
    by its line's ``\\n`` (a last line may lack one); ``shape_text`` masks them for the repeat gate."""
    return shape_text(text, ids=True)


def line_shapes(text: bytes) -> list[bytes]:
    """The shape of each line of ``text`` (a last line may lack its ``\\n``; an empty one has none)."""
    n_lines = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    return shape_text(text).split(b"\n")[:n_lines]


class DropSummary:
    """Accumulates one DROP run, in pieces, and renders its summary line.

    Memory is bounded: at most ``_MAX_SHAPES`` distinct shapes are counted, with the first
    line of each; the templates a summary names are found among them when it is rendered
    (``templates.mine``), so a value list is bounded too.

    Args:
        first_line: 1-based first line of the run.
        start_byte: stream offset of the run's first byte.
        top_shapes: K, most shapes named in the summary.
        max_chars: longest summary, in characters; its head (range, counts) and the count of
            failure lines left out by a budget are never cut, so a summary may be longer.
        green: the stream has a baseline (the last green run's line shapes): the summary says how
            many of its lines that run printed too (``seen_lines``), and names no shape when that
            run printed them all.
        green_sampled: that run printed more distinct lines than its baseline keeps (a sample):
            a line not found may have been printed, so the count is "at least".
        odd_lines: when the shapes named leave at most this many lines, those lines' shapes are
            named too, past ``max_chars`` (0 under a token budget, whose summaries must fit).
        mine_rare: find the run's rare lines also when the summary's templates do not take in every
            line (``rendered``): every shape is mined, and past the table of shapes those whose
            delimiters are new are kept too (at most ``_MAX_NEW_SHAPES``), the others counted by
            their delimiters. A failed command's output read again; else the summary's work only.
    """

    def __init__(
        self,
        first_line: int,
        start_byte: int,
        top_shapes: int = 3,
        max_chars: int = 240,
        green: bool = False,
        odd_lines: int = ODD_LINES,
        mine_rare: bool = False,
        green_sampled: bool = False,
    ) -> None:
        self.first_line = first_line
        self.last_line = first_line - 1
        self.start_byte = start_byte
        self.end_byte = start_byte
        self.top_shapes = top_shapes
        self.max_chars = max_chars
        self.odd_lines = odd_lines
        self._shapes: Counter[bytes] = Counter()  # (in the order the shapes first came)
        self._firsts: list[int] = []  # the first line of each of _shapes
        self._other = 0
        self.mine_rare = mine_rare
        # with mine_rare: the lines past the table, by their shape's delimiters when one in it has them;
        # the shapes past it with new delimiters and their first lines; the lines of neither
        self._past: Counter[bytes] = Counter()
        self._new: Counter[bytes] = Counter()
        self._new_firsts: list[int] = []
        self._lost = 0
        self._known: set[bytes] = set()  # the table's delimiters, once it is full
        self.term_lines = 0
        self.repeated_failures = 0
        self.failure_lines = 0
        self.warning_lines = 0
        self.progress_lines = 0
        self.frames = 0
        self.long_lines = 0
        self.longest = 0  # bytes
        self.green = green
        self.green_sampled = green_sampled
        self.seen_lines = 0
        self.named = ""  # the start of the run's one line, named (``name``)
        # the start (raw bytes, at most _HEAD_BYTES) of the first line of each of the first MAX_MINED
        # shapes, by its line (1-based): a template of one line is named by the line, not its shape
        # (``add``'s ``line``); a shape that came later is never mined for a template of one line
        # (``Miner`` takes the MAX_MINED of most lines, the first of equals)
        self._heads: dict[int, bytes] = {}

    def add(
        self,
        n_bytes: int,
        shapes: bytes,
        n_lines: int,
        term_lines: int,
        warnings: int,
        frames: npt.NDArray[np.int32],
        repeated_failures: int = 0,
        long_lines: int = 0,
        longest: int = 0,
        failure_lines: int = 0,
        seen_lines: int = 0,
        line: Callable[[int, int], bytes] | None = None,
    ) -> None:
        """Add the next ``n_lines`` lines of the run.

        Args:
            n_bytes: their length in the input, in bytes.
            shapes: ``shape_text`` of their scoring text (``normalize.scoring_text`` of
                their bytes, or the filter's ``NormalizedBlock`` text for them).
            n_lines: how many lines they are.
            term_lines: how many of them contain a query term.
            warnings: ``warn_counts`` of their scoring text, summed.
            frames: shape ``(n_lines,)``: CR frames per line (0 = no redraw).
            repeated_failures: how many of them carry a failure signature but were
                not protected, their shape having been kept ``max_repeats`` times.
            long_lines: how many of them are over the scoring cap (``max_line_bytes``).
            longest: the longest of those, in bytes.
            failure_lines: how many of them carry a failure signature, left out by a token
                budget (``--budget-tokens``): protected ones and repeats alike, since the
                lines a repeat is like may be left out too.
            seen_lines: how many of them the last green run printed too (with ``green``).
            line: when known, ``line(i, n)`` gives the first ``n`` raw bytes of the ``i``-th of
                them (0-based): a template of one line is then named by the line itself, not its
                masked shape (``gzip: log150.txt.gz: not in gzip format``, not ``log<*>.txt.gz``).
        """
        self.repeated_failures += repeated_failures
        self.failure_lines += failure_lines
        self.seen_lines += seen_lines
        self.long_lines += long_lines
        self.longest = max(self.longest, longest)
        self.last_line += n_lines
        self.end_byte += n_bytes
        self.term_lines += term_lines
        redraws = frames[frames > 0]
        self.progress_lines += int(redraws.shape[0])
        self.frames += int(redraws.sum())
        self.warning_lines += warnings
        lines = shapes.split(b"\n")[:n_lines]
        table, before = self._shapes, len(self._shapes)
        if before + len(lines) <= _MAX_SHAPES:  # room for every line's shape, new or not
            table.update(lines)
        else:
            base = self.last_line - n_lines + 1
            for shape, count in Counter(lines).items():
                if shape in table or len(table) < _MAX_SHAPES:
                    table[shape] += count
                else:
                    self._other += count
                    if self.mine_rare:
                        self._count_past(shape, count, lines, base)
        if len(table) > before:  # new shapes, in the order they first came: their first lines
            # (found by scanning on from the last one: the table holds the very object of a shape's
            # first line, which list.index meets first by identity; a dict of first lines per line
            # took twice as long)
            at, base, index = 0, self.last_line - n_lines + 1, lines.index
            for shape in itertools.islice(table, before, None):
                at = index(shape, at)
                self._firsts.append(base + at)
                if line is not None and len(self._firsts) <= MAX_MINED:
                    self._heads[base + at] = line(at, _HEAD_BYTES)

    def _count_past(self, shape: bytes, count: int, lines: list[bytes], base: int) -> None:
        """Count ``count`` lines of ``shape``, which the full table lacks, for the rare lines
        (``mine_rare``); ``lines``: the shapes of the piece added, whose first line is ``base``."""
        if not self._known:  # (the table is full: it holds no new shape from now on)
            self._known = set(delimiters(b"\n".join(self._shapes)).split(b"\n"))
        key = delimiters(shape)
        if key in self._known:
            self._past[key] += count
        elif shape in self._new or len(self._new) < _MAX_NEW_SHAPES:
            if shape not in self._new:
                self._new_firsts.append(base + lines.index(shape))
            self._new[shape] += count
        else:
            self._lost += count

    def _own_line(self, template: Template) -> str | None:
        """For a template of one line whose start is known, that line (escape sequences removed,
        control bytes as ``?``); None for others, and for a progress display, whose shape is of its
        last frame."""
        head = self._heads.get(template.first) if template.lines == 1 else None
        whole = head.rstrip(b"\r\n") if head is not None else b"\r"
        if b"\r" in whole:
            return None
        shown = show(strip_ansi(whole).replace(bytes([_MARK]), b"?")).strip()
        cut = head is not None and len(head) == _HEAD_BYTES and not head.endswith(b"\n")
        return shown + "…" if cut else shown

    def _text(self, template: Template) -> str:
        """What names ``template``: its one line (``_own_line``), or its text."""
        own = self._own_line(template)
        return template.text() if own is None else own

    def _fit_text(self, template: Template, limit: int) -> str:
        """``_text`` in at most ``limit`` characters, cut with ``…`` (a template's by ``_fit``)."""
        own = self._own_line(template)
        if own is None:
            return _fit(template, limit)
        return own if len(own) <= limit else own[: limit - 1] + "…"

    def name(self, line: bytes, chars: int) -> None:
        """Name the start of the run's one ``line`` (raw bytes): at most ``chars`` characters of it
        (escape sequences removed, control bytes as ``?``), cut with ``…``; never cut from the summary."""
        whole = line.rstrip(b"\r\n")
        head = whole[: 4 * chars + 64]  # (enough bytes for the characters shown, escape sequences aside)
        shown = show(strip_ansi(head).replace(bytes([_MARK]), b"?"))
        if len(shown) > chars or len(head) < len(whole):
            shown = shown[: chars - 1] + "…"
        self.named = shown

    @property
    def lines(self) -> int:
        """Lines in the run so far."""
        return self.last_line - self.first_line + 1

    def render(self) -> str:
        """The summary line (no newline); byte-identical for the same input lines."""
        return self.rendered()[0]

    def rendered(self) -> tuple[str, tuple[int, ...]]:
        """The summary line (``render``), and when the templates it finds take in every line of the
        run (blank lines counted), the first line (1-based) of each of them of at most
        ``odd_lines`` lines or 1 % of the run's (``RARE_SHARE``; ``Run.rare_lines``), in the run's
        order; else ``()``."""
        head = _dropped_head(self.first_line, self.last_line, self.end_byte - self.start_byte)
        facts = []
        if self.failure_lines:  # first: a terse summary (under a budget) has room for it
            # (what a signature or the learned prior protected: like a failure, not known to be one)
            facts.append(counted(self.failure_lines, "failure-like line"))
        if self.named:
            return self._fit(head, facts, [f"it starts: {self.named}"]), ()
        if self.repeated_failures:
            facts.append(f"{counted(self.repeated_failures, 'more failure line')} like ones kept")
        terms = f"{counted(self.term_lines, 'line')} with query terms"
        if self.term_lines:
            facts.append(terms)
        if self.long_lines:
            if self.long_lines == self.lines:  # the run is those lines: their size is in the head
                size = ""
            elif self.long_lines == 1:
                size = f" of {_kib(self.longest)}"
            else:
                size = f", the longest {_kib(self.longest)}"
            facts.append(f"{counted(self.long_lines, 'over-long line')}{size}")
        warnings = counted(self.warning_lines, "warning mention")
        if self.warning_lines:
            facts.append(warnings)
        # (the frames collapsed, not all frames: with the head it fits in a short summary)
        collapsed = self.frames - self.progress_lines
        progress = f"{counted(self.progress_lines, 'progress line')}, {counted(collapsed, 'frame')} collapsed"
        if self.progress_lines:
            facts.append(progress)
        # what the last green run printed too: that the run holds nothing new (a fact that never
        # gives way to a shape), or how much of it
        everything = self.seen_lines == self.lines
        found = f"{'at least ' if self.green_sampled else ''}{self.seen_lines}"
        green = f"{'all' if everything else found} in the last green run"
        if self.green and self.seen_lines:  # (no "0 in the last green run": a clause that says nothing)
            facts.append(green)
        if self.green and everything:
            # lines the last green run printed, all of them: that says what they are, and their
            # shapes would name the passing run's lines (``expand`` shows them); none is named
            return self._fit(head, facts, []), ()
        # blank lines and bare "<*>" say little: counted among the other shapes, named only when
        # the run has no other shape to name ("95× <*>" for a run of numbers, "4975× blank")
        counts = np.fromiter(self._shapes.values(), dtype=np.int64, count=len(self._shapes))
        miner = Miner(list(self._shapes), counts, self._firsts)
        silent: list[Template] = []
        top = _loud(miner, silent) or (silent.pop(0) if silent else None)
        # room for the count of the lines not named (none needed when one names every line)
        reserve = len(f"; +{self.lines} other lines") if top is None or top.lines < self.lines else 0
        # facts first, so a long shape list never pushes them out of the line; but the most
        # frequent shape gets room too: the count of lines the last green run printed (but not
        # "all": that the run holds nothing new), of warning mentions, then that of progress lines
        # when they are few of the run's (a run of a few redraws among a build's lines said only
        # that, "1 progress line, 3 frames collapsed"), then that of lines with query terms (the
        # least telling facts, an error's words telling more than a warning's) give way to it
        room = self.max_chars - len(head) - len(": ]") - 2 - reserve  # for the facts and the shapes
        minor = (progress,) if 2 * self.progress_lines < self.lines else ()
        for fact in ((green,) if not everything else ()) + (warnings, *minor, terms):
            if room - len("; ".join(facts)) < _MIN_SHAPE_ROOM and top is not None and fact in facts:
                facts.remove(fact)
        if progress in facts and room - len("; ".join(facts)) < _MIN_SHAPE_ROOM and top is not None:
            # a run of progress lines says so in fewer words (the head counts its lines), to name
            # its templates: the one download of 300 whose last frame is its failure
            facts[facts.index(progress)] = f"{counted(collapsed, 'progress frame')} collapsed"
        facts_text = "; ".join(facts)
        budget = room - len(facts_text)
        parts: list[str] = []
        taken: list[Template] = []  # (those of parts)
        named = 0  # lines
        template = top
        while template is not None:
            count = f"{template.lines}× "
            text = self._text(template) or "blank"
            limit = min(_MAX_SHAPE_CHARS, budget - 2 - len(count))
            if len(text) > limit:
                if (parts and limit < _MIN_CUT_CHARS) or budget < _MIN_SHAPE_ROOM:
                    break
                text = self._fit_text(template, limit)  # the most frequent shape is always named
            parts.append(count + text)
            taken.append(template)
            named += template.lines
            budget -= len(parts[-1]) + 2
            # (another is looked for only while one could fit)
            template = _loud(miner, silent) if len(parts) < self.top_shapes and budget >= _MIN_SHAPE_ROOM else None
        # blank lines: a template of their own that says little, but counted, in few characters
        blank = sum(self._shapes.get(shape, 0) for shape in (b"", b" ", b"\t"))
        # (blank lines not named yet: none when the most frequent template is theirs)
        unnamed_blank = blank if top is None or top.text() else 0
        if parts and unnamed_blank and budget >= len(f"{blank} blank lines") + 2:
            parts.append(counted(blank, "blank line"))
            named += blank
            unnamed_blank = 0
        # past the length: the templates left, when at most ODD_TEMPLATES - 1 of many lines and
        # odd_lines of few (the odd lines among thousands: "+1 other line" before) name every line
        # left but blank ones, which are counted (more templates only add to either count)
        left = self.lines - named - unnamed_blank
        rest: list[Template] = [template] if parts and template is not None else []
        while parts and self.odd_lines and len(rest) < ODD_TEMPLATES - 1 + self.odd_lines:
            if sum(t.lines for t in rest) >= left or (more := _loud(miner, silent)) is None:
                break
            rest.append(more)
        odd: list[str] = []
        small = sum(t.lines <= self.odd_lines for t in rest)
        if sum(t.lines for t in rest) == left and 0 < small <= self.odd_lines and len(rest) - small < ODD_TEMPLATES:
            odd = [f"{t.lines}× {self._fit_text(t, _MAX_SHAPE_CHARS)}" for t in rest]
            if unnamed_blank:
                odd.append(counted(unnamed_blank, "blank line"))
            named = self.lines
        if parts and named < self.lines:  # (in words: "+8 more" read as 8 more lines, and meant shapes)
            parts.append(f"+{counted(self.lines - named, 'other line')}")
        elif not parts and self._shapes:  # with no room to name one, the count of shapes is still given
            parts.append(counted(len(self._shapes) + bool(self._other), "shape"))
        text = self._fit(head, facts, parts)
        # the rare lines: when the templates found take in every line, those of few lines
        rare = max(self.odd_lines, self.lines // RARE_SHARE) if self.odd_lines else 0  # (none under a budget)
        few = [t for t in (taken + rest if odd else taken) if t.lines <= rare]
        if named == self.lines:
            firsts = tuple(sorted(t.first for t in few))
        else:
            firsts = self._rare_lines(rare) if self.mine_rare and rare else ()
        return (f"{text[:-1]}; {'; '.join(odd)}]".translate(_LINE_BREAKS) if odd else text), firsts

    def _rare_lines(self, rare: int) -> tuple[int, ...]:
        """The first line of each block of rare lines among all the run's templates, in the run's
        order: a rare line is the first of a template of at most ``rare`` lines, a block is rare
        lines one right after the other (a failure's header and its details, each its own template),
        of at most ``RARE_BLOCK`` lines. They count when their blocks are at most ``RARE_TEMPLATES``
        and 1 % of the run's lines (``RARE_SHARE``; one in a shorter run); else ``()``.

        Every shape of the table, and those past it with new delimiters, is mined; a line past it
        whose delimiters are those of a shape in it is a variant of a known event (an id the masks
        keep, another word in a column): it is counted against each template with those
        delimiters, so a template taken as rare has at most ``rare`` lines whatever they are.
        Silent templates (blank lines, a lone masked span) hold no rare line.
        """
        if self._lost or self.lines < RARE_SHARE:  # (lines of no template found; none is 1 % of the run)
            return ()
        shapes = [*self._shapes, *self._new]
        counts = np.fromiter(itertools.chain(self._shapes.values(), self._new.values()), np.int64, len(shapes))
        miner = Miner(shapes, counts, self._firsts + self._new_firsts, len(shapes), 2 * len(shapes))
        found: list[int] = []
        while (template := miner.next()) is not None:
            if template.silent or template.lines + self._past[template.delimiters] > rare:
                continue
            found.append(template.first)
            if len(found) > RARE_TEMPLATES * RARE_BLOCK:  # (more blocks or longer ones than counted)
                return ()
        firsts, lasts = line_blocks(np.sort(np.asarray(found, dtype=np.int64)))
        if firsts.shape[0] > min(RARE_TEMPLATES, max(1, self.lines // RARE_SHARE)):
            return ()
        if (lasts - firsts >= RARE_BLOCK).any():
            return ()
        return tuple(firsts.tolist())

    def _fit(self, head: str, facts: list[str], parts: list[str]) -> str:
        """The summary line of ``head``, ``facts`` (in its parentheses, after the counts: what some
        of the lines are) and ``parts`` (after a colon: what the lines are, each line in one of
        them, so their counts add up to the run's; helper-89 read "1 over-long line; 1× before
        line; 1× xxxx…" as three of two lines), within ``max_chars``: on a short ``max_chars``
        whole parts, then facts give way, last first; the count of failure lines left out by a
        budget never does (a reader must know an error is in there), nor what the line it names
        starts with, nor the head, with the range and the counts."""
        facts = [p.translate(_LINE_BREAKS) for p in facts if p]
        parts = [p.translate(_LINE_BREAKS) for p in parts if p]

        def line() -> str:
            opened = f"{head[:-1]}; {'; '.join(facts)})" if facts else head
            return f"{opened}: {'; '.join(parts)}]" if parts else f"{opened}]"

        text = line()
        while len(text) > self.max_chars:
            if len(parts) > bool(self.named):
                parts.pop()
            elif len(facts) > bool(self.failure_lines):
                facts.pop()
            else:
                break
            text = line()
        return text
