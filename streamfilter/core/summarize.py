"""DROP runs -> one-line summaries (stage 6b): facts only, never a verdict.

A line's *shape* is its scoring text with the variable parts masked as ``<*>``:
URLs, paths, UUIDs, hex ids and hashes, timestamps, durations, percentages,
versions and numbers. Words stay, so two different events (``VM Started``,
``VM Paused``) never share a shape.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter

import numpy as np
import numpy.typing as npt

__all__ = ("DropSummary", "line_shapes", "mask_shapes", "shape_text", "warn_counts")

_MARK = 0x01  # one masked span, shown as "<*>"
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


def _mask(text: bytes, drop: npt.NDArray[np.bool_] | None = None) -> bytes:
    """Mask variable parts with one ``_MARK`` byte per span (vectorized over the text).

    Runs of spaces and tabs become one, carriage returns go. Masked: every run of
    digits, with the ``. : , _ -`` between two digits (numbers, versions, times,
    dates, durations); every chunk between delimiters (space, quotes, brackets,
    ``, ; = | :``) that contains a ``/`` (paths, URLs). ``drop``: shape ``(len(text),)``,
    bytes left out of the result as well.
    """
    arr = np.frombuffer(text, dtype=np.uint8)
    n = arr.shape[0]
    if n == 0:
        return text
    digit = (arr - np.uint8(48)) < 10
    masked = digit.copy()
    sep = ((arr - np.uint8(0x2C)) < 3) | (arr == 0x3A) | (arr == 0x5F)  # , - . (0x2C-0x2E) : _
    masked[1:-1] |= sep[1:-1] & digit[:-2] & digit[2:]  # between two digits
    if b"/" in text:
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
    if drop is not None:
        gone |= drop
    flag = masked.view(np.uint8)
    out = (arr & (flag - np.uint8(1))) | flag  # _MARK (1) where masked, elementwise (no scatter)
    return _delete(out, gone, text)


def mask_shapes(text: bytes) -> bytes:
    """Mask the variable parts of ``text`` (any number of lines) as ``<*>``."""
    return _mask(text).replace(bytes([_MARK]), b"<*>")


_MAX_SHAPES = 4096  # distinct shapes counted per run; later new shapes count as "other"
_MAX_SHAPE_CHARS = 60
_SHAPE_SOURCE_BYTES = 96  # bytes of a line that are masked into its shape
_MIN_SHAPE_ROOM = 24  # characters the most frequent shape needs to be named (cut with "…")


_CONTROLS = bytes(range(0x20)).replace(b"\t", b"") + b"\x7f"
_SHOW = bytes.maketrans(_CONTROLS, b"?" * len(_CONTROLS))


def _show(shape: bytes) -> str:
    """A shape as text: ``<*>`` for masked spans, ``?`` for control bytes, a cut character dropped."""
    text = shape.replace(bytes([_MARK]), b"<*>").translate(_SHOW).decode("utf-8", "replace")
    return text.rstrip("\ufffd")


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``1 progress line``, ``3 progress lines``)."""
    return f"{n} {noun}{'s' * (n != 1)}"


def _kib(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"


def _most_common(counts: Counter[bytes], n: int) -> list[tuple[bytes, int]]:
    """``counts.most_common(n)``, the same list (equal counts in insertion order), sooner.

    ``most_common`` ranks every distinct shape in Python (``heapq.nlargest`` with a key),
    and a DROP run of a build log holds thousands: here ``np.partition`` finds the n-th
    largest count and only the shapes that reach it are ranked (a stable sort, as
    ``nlargest`` is).
    """
    if not 0 < n < len(counts):
        return counts.most_common(n)
    values = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    least = np.partition(values, values.shape[0] - n)[values.shape[0] - n]
    shapes = list(counts)
    reaching = [(shapes[i], int(values[i])) for i in np.flatnonzero(values >= least).tolist()]
    return sorted(reaching, key=itemgetter(1), reverse=True)[:n]


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


def shape_text(text: bytes) -> bytes:
    """The shapes of the lines of ``text``, each followed by its line's ``\\n`` (a last line
    may lack one): ``b"\\n".join(line_shapes(text))`` (plus the last ``\\n``), one pass.

    A shape shows at most ``_MAX_SHAPE_CHARS``, so only the first ``_SHAPE_SOURCE_BYTES``
    of a line are masked: longer lines are cut first (with numpy, then masked as one text).
    """
    arr = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(arr == 0x0A)
    if not (text.endswith(b"\n") or not text):
        ends = np.append(ends, arr.shape[0])
    starts = np.zeros(ends.shape[0], dtype=np.int64)
    starts[1:] = ends[:-1] + 1
    long = np.flatnonzero(ends - starts > _SHAPE_SOURCE_BYTES)
    if not long.shape[0]:
        return _mask(text)  # masking keeps every line end
    # the bytes past a long line's head are left out by the masking itself; a line end put
    # where each head ends makes the masking see what it sees in the cut line (masking is local:
    # a byte's neighbours and its chunk between delimiters, and "\n" is a delimiter)
    cut = starts[long] + _SHAPE_SOURCE_BYTES
    marked = arr.copy()
    marked[cut] = 0x0A
    drop = _in_ranges(cut, ends[long], arr.shape[0])
    return _mask(marked.tobytes(), drop)


def line_shapes(text: bytes) -> list[bytes]:
    """The shape of each line of ``text`` (a last line may lack its ``\\n``; an empty one has none)."""
    n_lines = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    return shape_text(text).split(b"\n")[:n_lines]


class DropSummary:
    """Accumulates one DROP run, in pieces, and renders its summary line.

    Memory is bounded: at most ``_MAX_SHAPES`` distinct shapes are counted.

    Args:
        first_line: 1-based first line of the run.
        start_byte: stream offset of the run's first byte.
        top_shapes: K, most shapes named in the summary.
        max_chars: longest summary, in characters; its head (range, counts) and the count of
            failure lines left out by a budget are never cut, so a summary may be longer.
        green: the stream has a baseline (the last green run's line shapes): the summary says how
            many of its lines that run printed too (``seen_lines``).
    """

    def __init__(
        self, first_line: int, start_byte: int, top_shapes: int = 3, max_chars: int = 240, green: bool = False
    ) -> None:
        self.first_line = first_line
        self.last_line = first_line - 1
        self.start_byte = start_byte
        self.end_byte = start_byte
        self.top_shapes = top_shapes
        self.max_chars = max_chars
        self._shapes: Counter[bytes] = Counter()
        self._other = 0
        self.term_lines = 0
        self.repeated_failures = 0
        self.failure_lines = 0
        self.warning_lines = 0
        self.progress_lines = 0
        self.frames = 0
        self.long_lines = 0
        self.longest = 0  # bytes
        self.green = green
        self.seen_lines = 0

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
        if len(self._shapes) + len(lines) <= _MAX_SHAPES:  # room for every line's shape, new or not
            self._shapes.update(lines)
            return
        counts = Counter(lines)
        for shape, count in counts.items():
            if shape in self._shapes or len(self._shapes) < _MAX_SHAPES:
                self._shapes[shape] += count
            else:
                self._other += count

    @property
    def lines(self) -> int:
        """Lines in the run so far."""
        return self.last_line - self.first_line + 1

    def _range(self) -> str:
        if self.first_line == self.last_line:
            return f"line {self.first_line}"
        return f"lines {self.first_line}-{self.last_line}"

    def render(self) -> str:
        """The summary line (no newline); byte-identical for the same input lines."""
        head = (
            f"[streamfilter: dropped {self._range()} ({_count(self.lines, 'line')}, "
            f"{_kib(self.end_byte - self.start_byte)})"
        )
        facts = []
        if self.failure_lines:  # first: a terse summary (under a budget) has room for it
            facts.append(_count(self.failure_lines, "failure line"))
        if self.repeated_failures:
            facts.append(f"{_count(self.repeated_failures, 'more failure line')} like ones kept")
        terms = f"{_count(self.term_lines, 'line')} with query terms"
        if self.term_lines:
            facts.append(terms)
        if self.long_lines:
            if self.long_lines == self.lines:  # the run is those lines: their size is in the head
                size = ""
            elif self.long_lines == 1:
                size = f" ({_kib(self.longest)})"
            else:
                size = f", the longest {_kib(self.longest)}"
            facts.append(f"{_count(self.long_lines, 'over-long line')}{size}")
        warnings = _count(self.warning_lines, "warning mention")
        if self.warning_lines:
            facts.append(warnings)
        if self.progress_lines:
            # (the frames collapsed, not all frames: with the head it fits in a short summary)
            facts.append(
                f"{_count(self.progress_lines, 'progress line')}: {self.frames - self.progress_lines} frames collapsed"
            )
        # what the last green run printed too: that the run holds nothing new (a fact that never
        # gives way to a shape), or how much of it
        everything = self.seen_lines == self.lines
        green = f"{'all' if everything else self.seen_lines} in the last green run"
        if self.green:
            facts.append(green)
        # blank lines and bare "<*>" say little: counted among the other shapes, named only when
        # the run has no other shape to name ("95× <*>" for a run of numbers, "4975× blank")
        silent = (b"", bytes([_MARK]))
        common = _most_common(self._shapes, self.top_shapes + 4)
        ranked = [(shape, count) for shape, count in common if shape.strip() not in silent]
        if not ranked:
            ranked = [(shape.strip() or b"blank", count) for shape, count in common]
        # room for the count of the shapes not named (none needed when there is one shape)
        reserve = len(f"; +{len(self._shapes) + 1} more") if len(self._shapes) + bool(self._other) > 1 else 0
        # facts first, so a long shape list never pushes them out of the line; but the most
        # frequent shape gets room too: the count of lines the last green run printed, of
        # warning mentions, then that of lines with query terms (the least telling facts, a
        # shape telling more than a count, an error's words more than a warning's) give way to it
        room = self.max_chars - len(head) - len(": ]") - 2 - reserve  # for the facts and the shapes
        for fact in (green, warnings, terms) if not everything else (warnings, terms):
            if room - len("; ".join(facts)) < _MIN_SHAPE_ROOM and ranked and fact in facts:
                facts.remove(fact)
        facts_text = "; ".join(facts)
        budget = room - len(facts_text)
        parts: list[str] = []
        for shape, count in ranked[: self.top_shapes]:
            piece = f"{count}× {_show(shape.strip()[:_MAX_SHAPE_CHARS])}"
            if len(piece) + 2 > budget:
                if parts or budget < _MIN_SHAPE_ROOM:
                    break
                piece = piece[: budget - 3] + "…"  # the most frequent shape is always named
            parts.append(piece)
            budget -= len(piece) + 2
        others = len(self._shapes) - len(parts) + (1 if self._other else 0)
        if others > 0:  # with no room to name one, the count of shapes is still given
            parts.append(f"+{others} more" if parts else f"{others} shape{'s' * (others != 1)}")
        pieces = [p for p in (*facts, *parts) if p]
        text = f"{head}: {'; '.join(pieces)}]" if pieces else f"{head}]"
        # a short max_chars: whole facts give way, last first; the count of failure lines left out
        # by a budget never does (a reader must know an error is in there)
        while len(text) > self.max_chars and len(pieces) > bool(self.failure_lines):
            pieces.pop()
            text = f"{head}: {'; '.join(pieces)}]" if pieces else f"{head}]"
        return text  # (the head, with the range and the counts, is never cut)
