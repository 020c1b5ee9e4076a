"""A DROP run's line shapes -> templates, the lines a summary names (stage 6b).

The shapes of a run (``summarize.event_text``: ids masked, words and paths kept) differ where
an event's words differ: ``Compiling serde v<*>`` and ``Compiling libc v<*>`` are two shapes of
one template. Grouping is Drain's idea (He et al., 2017: lines of the same length in tokens
whose tokens mostly agree are one template, the tokens that differ its variables), done
top-down over the run's bounded table of distinct shapes when its summary is written, and only
as far as the summary names templates (``Miner``):

1. shapes group by their delimiters (quotes, brackets, ``, ; = | :``, blanks), then, for a
   group taken, by *skeleton*: the shape with each word (a run of bytes between delimiters, a
   lone ``<*>`` aside) replaced by a placeholder, so same punctuation, same number of words;
2. the group of most lines is taken first; the words at each position of its shapes are its
   columns. At most half the words of a template vary (Drain's similarity threshold, 0.5): a
   group where more vary is split by the values of its varying column with the fewest values
   (an event's kind: ``Compiling``/``Changes``) and its parts go back among the groups; a group
   where few vary is a template;
3. a varying column shows its values with their lines when it has few
   (``VM {Started ×39, Paused ×1 @L7}``, ``@L`` the first line of each value but the most
   frequent), else what they all begin and end with (``tests/test_<*>.py``), or ``<*>``.

Drain itself (``drain3``) parses each line into its prefix tree: 0.78 ms a line on the 200 MB
bench's lines with its defaults, a hundred times the filter's whole cost per line. Here the
work per line is the run's table of shapes (a ``Counter``, as before, and each new shape's first
line); per distinct shape, one ``bytes.translate`` and a hash when the summary is written; the
rest is bounded per run (``MAX_MEMBERS``, ``MAX_TAKEN``).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ("HIDDEN_CHARACTERS", "MAX_MINED", "MAX_TAKEN", "MAX_VALUES", "Miner", "Template", "delimiters", "show")

MAX_VALUES = 3  # values a column lists, all of them
_LIST_VALUES = 2  # values a column of more lists when they hold LISTED_SHARE of its lines ("+k more")
_LISTED_SHARE = 0.8
_COUNTED_VALUES = 16  # a column of more values is not counted value by value (shown by its affixes)
# most shapes of a run grouped (those of most lines; the lines of the others are among those a
# summary does not name), and most groups taken per run: what a summary costs stays bounded
MAX_MINED = 32
MAX_TAKEN = 8
_SPLIT_COLUMNS = 4  # varying columns weighed to split a group by (the first ones)

_MARK = 0x01  # a masked span (``summarize._MARK``)
_DELIMS = b" \t\r\"'()[]{}<>,;=|:"  # ``summarize._DELIM`` (a shape holds no line end: it joins shapes)
_NOT_DELIMS = bytes(b for b in range(256) if b not in _DELIMS + b"\n")  # deleted: a shape's delimiters are left
_DELIMS_TO_NL = bytes.maketrans(_DELIMS, b"\n" * len(_DELIMS))  # a shape's words, split at each delimiter
_CONTROLS = bytes(range(0x20)).replace(b"\t", b"") + b"\x7f"
_SHOW = bytes.maketrans(_CONTROLS, b"?" * len(_CONTROLS))
# the characters a terminal acts on or shows as nothing: C1 controls (U+009B is a CSI), the Arabic
# letter mark, zero-width space, direction marks, line and paragraph separators, bidirectional
# overrides and isolates, a byte-order mark, the tags (a summary is the filter's own line: U+202E had
# reversed the rest of it, its ref too, helper-98)
HIDDEN_CHARACTERS = (
    *range(0x80, 0xA0),
    0x61C,
    0x200B,
    0x200E,
    0x200F,
    *range(0x2028, 0x202F),
    *range(0x2066, 0x206A),
    0xFEFF,
    *range(0xE0000, 0xE0080),
)
# (but the line breaks, which a summary writes as \uNNNN: ``summarize._LINE_BREAKS``)
_SHOW_TEXT = dict.fromkeys((c for c in HIDDEN_CHARACTERS if c not in (0x85, 0x2028, 0x2029)), "?")


def delimiters(shape: bytes) -> bytes:
    """A shape's delimiters, in order: what shapes are first grouped by (``Miner``, step 1)."""
    return shape.translate(None, _NOT_DELIMS)


def show(text: bytes) -> str:
    """Shape bytes as text: ``<*>`` for masked spans, ``?`` for control bytes and characters (C1,
    bidirectional and invisible ones: ``_SHOW_TEXT``), ``\\xNN`` for bytes that
    are not UTF-8 (as a terminal is shown them, output.md; U+FFFD had stood for bytes the log does not
    hold, helper-80), a character cut at a shape's end too: its bytes are the log's, and Latin-1's
    ``caf\\xe9`` ends as one does (dropping them had shown ``caf``, helper-81)."""
    shown = text.replace(bytes([_MARK]), b"<*>").translate(_SHOW).decode("utf-8", "backslashreplace")
    return shown.translate(_SHOW_TEXT)


@dataclass(frozen=True, slots=True)
class Template:
    """Shapes of a run taken as one, as a summary names them.

    Attributes:
        lines: how many lines of the run have one of its shapes.
        parts: its text in order: literal bytes of the shapes (``bytes``), and a varying
            column's values as shown (``str``, ``{a ×3, b ×1 @L7}``, ``src/<*>.c``).
        silent: a template that says little: blank lines, or a lone masked span (only
            named when a run has nothing else).
        first: 1-based first line of its lines.
        delimiters: its shapes' delimiters (``delimiters``).
    """

    lines: int
    parts: tuple[bytes | str, ...]
    silent: bool
    first: int
    delimiters: bytes

    def text(self) -> str:
        """The template as one string (leading and trailing blanks off)."""
        return "".join(show(p) if isinstance(p, bytes) else p for p in self.parts).strip()


class Miner:
    """The templates of a run's shapes, those of most lines first, found as they are asked for.

    Args:
        shapes: the run's distinct shapes (no ``\\n`` in them), in the order they first came.
        counts: shape ``(len(shapes),)``: lines of each.
        firsts: shape ``(len(shapes),)``: 1-based first line of each.
        mined: most shapes grouped.
        taken: most groups taken (a group split counts as one).

    Only the ``mined`` shapes of most lines are grouped (ties: those that came first; the
    lines of the others are among those a summary does not name), and at most ``taken``
    groups are taken per run: what a summary costs is bounded whatever its run (a few regular
    expressions over a few kilobytes), with ``MAX_MINED`` and ``MAX_TAKEN``. Every shape and
    ``2 * len(shapes)`` groups give every template (each group taken is a template or splits in
    two or more). The same shapes in the same order give the same templates, those of most lines
    first (a group's parts have fewer lines than it).
    """

    def __init__(
        self,
        shapes: Sequence[bytes],
        counts: npt.NDArray[np.int64],
        firsts: Sequence[int],
        mined: int = MAX_MINED,
        taken: int = MAX_TAKEN,
    ) -> None:
        pool = _top(counts, mined).tolist()
        self.shapes = [shapes[i] for i in pool]
        self.counts: list[int] = counts[pool].tolist()
        self.firsts = [firsts[i] for i in pool]
        # a shape's delimiters, in order: all at once (bytes methods, no regular expression: on a
        # few kilobytes of shapes, ``re`` took ten times as long)
        keys = delimiters(b"\n".join(self.shapes)).split(b"\n")
        groups: dict[bytes, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(key, []).append(i)
        self._keys = keys
        self._heap = [(-self._lines(group), group[0], group) for group in groups.values()]
        heapq.heapify(self._heap)  # (a group's first shape tells it apart: no two groups share one)
        self._taken = 0
        self._most = taken

    def _lines(self, members: list[int]) -> int:
        return sum(self.counts[i] for i in members)

    def next(self) -> Template | None:
        """The template of most lines not yet given; None when none is left, or when ``taken``
        groups were taken."""
        while self._heap and self._taken < self._most:
            self._taken += 1
            lines, _, members = heapq.heappop(self._heap)
            shape = self.shapes[members[0]]
            if len(members) == 1:
                silent = shape.strip() in (b"", bytes([_MARK]))
                return Template(-lines, (shape,), silent, self.firsts[members[0]], self._keys[members[0]])
            # the words between the delimiters (b"" where two meet), a column a place
            columns = list(zip(*(self.shapes[i].translate(_DELIMS_TO_NL).split(b"\n") for i in members), strict=True))
            values = [len(set(column)) for column in columns]
            varying = [j for j, n in enumerate(values) if n > 1]
            # a place with a word in some lines and none in others ("[INFO] ", "[INFO] ---") is two
            # events: split by that; so is more than half the words varying: by the column of fewest values
            hollow = [j for j in varying if not all(columns[j])]
            if hollow or 2 * len(varying) > sum(map(any, columns)):
                if hollow:
                    by: Sequence[bytes] = [b"w" if value else b"" for value in columns[hollow[0]]]
                else:
                    by = columns[min(varying[:_SPLIT_COLUMNS], key=values.__getitem__)]
                parts: dict[bytes, list[int]] = {}
                for value, i in zip(by, members, strict=True):
                    parts.setdefault(value, []).append(i)
                for part in parts.values():
                    heapq.heappush(self._heap, (-self._lines(part), part[0], part))
                continue
            counts = [self.counts[i] for i in members]
            firsts = [self.firsts[i] for i in members]
            shown: list[bytes | str] = []
            for j, column in enumerate(columns):
                shown.append(column[0] if values[j] == 1 else _values(list(column), counts, firsts))
                shown.append(self._keys[members[0]][j : j + 1])  # (the delimiter after it; none after the last)
            return Template(-lines, tuple(shown), False, min(firsts), self._keys[members[0]])
        return None


def _top(counts: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.int64]:
    """Indexes of the ``k`` largest of ``counts`` (ties: the first), in order.

    A stable sort of all: ``np.partition`` took 30 times as long on a run's counts, mostly ones
    (a selection among equal values is its worst case).
    """
    if counts.shape[0] <= k:
        return np.arange(counts.shape[0], dtype=np.int64)
    return np.sort(np.argsort(-counts, kind="stable")[:k])


def _values(column: list[bytes], counts: list[int], firsts: list[int]) -> str:
    """A varying column as shown: its values with their lines (and the first line of each but
    the most frequent) when few and none masked, else what they all begin and end with around ``<*>``."""
    values = set(column)
    # a column masked in some lines holds ids (a hex id of letters only, "req-eadf", is a word to
    # the masks): not an event's words, never listed
    if len(values) <= _COUNTED_VALUES and not any(bytes([_MARK]) in value for value in values):
        lines: dict[bytes, int] = dict.fromkeys(values, 0)
        first: dict[bytes, int] = {}
        for value, count, line in zip(column, counts, firsts, strict=True):
            lines[value] += count
            first[value] = min(first.get(value, line), line)
        ranked = sorted(values, key=lambda v: (-lines[v], first[v]))
        listed = ranked if len(ranked) <= MAX_VALUES else ranked[:_LIST_VALUES]
        if len(listed) == len(ranked) or sum(lines[v] for v in listed) >= _LISTED_SHARE * sum(lines.values()):
            items = [f"{show(v)} ×{lines[v]}" + (f" @L{first[v]}" if k else "") for k, v in enumerate(listed)]
            if len(listed) < len(ranked):
                items.append(f"+{len(ranked) - len(listed)} more")
            return "{" + ", ".join(items) + "}"
    return _affixes(column)


# bytes an affix is not cut after: letters, digits, and those of a character of several bytes
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + bytes(range(0x80, 0x100)))


def _head(values: list[bytes]) -> bytes:
    """What all ``values`` begin with (that of the least and the greatest)."""
    low, high = min(values), max(values)
    size = next((i for i, (a, b) in enumerate(zip(low, high, strict=False)) if a != b), len(low))
    return low[:size]


def _affixes(column: list[bytes]) -> str:
    """``<*>`` between what all of ``column`` begins with and ends with, each cut at a byte that
    is not a letter or digit (``tests/test_<*>.py``, not ``tests/test_a<*>.py``)."""
    head = _head(column)
    if len(head) < min(map(len, column)):  # (a value that is all head: nothing to cut back)
        while head and head[-1] in _WORD_BYTES:
            head = head[:-1]
    tails = [v[len(head) :][::-1] for v in column]
    tail = _head(tails)
    if len(tail) < min(map(len, tails)):
        while tail and tail[-1] in _WORD_BYTES:
            tail = tail[:-1]
    # a masked span beside the "<*>" is part of what varies ("sha=<*>", not "sha=<*><*>")
    mark = bytes([_MARK])
    return show(head.rstrip(mark)) + "<*>" + show(tail.rstrip(mark)[::-1])
