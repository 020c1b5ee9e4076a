"""Lines -> records -> windows (stage 3), incrementally and independent of chunking.

Rules, in order of strength:

* A record is a run of lines that belong together. A blank line ends it, unless
  the next non-blank line is indented deeper than the record's first line or
  continues an exception chain (``Caused by:``, ``During handling of the above
  exception``, nose's ``>> end captured stdout <<``, Go's ``goroutine 7 [running]:``); such blank lines stay
  inside the record. Blank lines that end a record are held and start the next
  window, so they never ride along with a kept record.
* A line indented deeper than its record's first line continues it (stack
  frames, ``  File ...``, ``\\tat ...``, `` --> ``, ``= note:``), and so does a
  column-0 line of a trace (``ValueError: ...``, ``Caused by: ...``, ``... 12
  more``, Ruby's ``app/x.rb:12:in `f'`` frames and ``Did you mean?``, Pester's
  ``Expected:``, ``Actual  :`` and ``at f, a.ps1:16``, node's ``+ actual - expected`` and the
  ``+``/``-`` lines of its diff, Go's frames (``pkg.(*T).F(0x0)``, ``created by ...``),
  gcc's and clang's ``a.c:3:1: note: ...``
  and ``a.cpp:9:8:   required from here``) right after such lines or
  after another trace line; Pester's ``[-] test`` line starts a trace. Right-aligned status lines
  (cargo's ``   Compiling x``: a capitalised word, its other letters lower case, ending at column
  12; not behave's ``      ASSERT FAILED``) and a test's line in a verbose list
  (jest's and mocha's ``    ✓ adds (2 ms)``, ``    ✕ throws``, dotnet test's ``  Passed T.Adds [< 1 ms]``,
  behave's ``  Scenario: add item``)
  count as column 0.
  Indentation after a level tag (sbt's ``[info] ``, Maven's ``[ERROR] ``) is counted
  from the tag's end.
  A line indented less than the record's first line starts a new record.
* Windows pack a record's lines greedily: at most ``window_lines`` lines and
  ``window_chars`` characters, except that a continuation line stays with the
  window it continues up to ``hard_cap_lines``.

A window's boundary depends only on the lines before it and on the next
non-blank line, so every chunking of the same bytes gives the same windows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .normalize import gather_lines
from .tokens import KeySet, TokenTable, token_key

__all__ = ("LineLayout", "Segmenter", "WindowAssignment", "line_layout")

Int64Array = npt.NDArray[np.int64]

_NOT_CONT_BYTE = np.ones(256, dtype=bool)
_NOT_CONT_BYTE[0x80:0xC0] = False

# column-0 lines that belong to a trace when they follow deeper lines
_EXC_LINE = re.compile(
    rb"\n(?:(?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Throwable)\b"
    rb"|\.\.\. \d+ (?:more|common frames omitted)"
    rb"|Suppressed: |goroutine \d+ \[|but was:|but was <"  # JUnit's "expected:<x> but was:<y>" wraps
    rb"|Did you mean\?"  # Ruby's suggestion after a NameError
    rb"|\[SQL: |\[parameters: |\(Background on this error at: )",  # SQLAlchemy's, under its exception
    re.MULTILINE,
)
# more column-0 trace lines, each looked for only in blocks that hold one of its marks:
# Ruby's backtrace frames (``app/models/x.rb:12:in `save'``, ``bin/rails:4:in '<main>'``);
# Pester's failed test (``[-] adds numbers 10ms``), its ``Expected: ...`` and ``Actual  : ...``
# lines and its frames (``at <ScriptBlock>, /src/a.Tests.ps1:16``).
# A mark is a regex with a literal prefix found anywhere (``re`` scans for one about twice as fast
# as ``bytes.__contains__`` does, and one regex covers both quotes), or a line head (a line that
# starts with ``at ``, read off the lines' first bytes, no scan)
_COLUMN0_TRACES = (
    ((re.compile(rb":in [`']"),), (), re.compile(rb"\n\S+:\d+:in [`']")),
    (
        (re.compile(rb"\[-\] "),),
        (b"at ", b"Expected", b"Actual"),  # every line the regex takes holds a mark or starts with a head
        re.compile(rb"\n(?:\[-\] |(?:Expected|Actual) *: |at [^,\n]{1,200}, [^\n]*:\d+\r*$)", re.MULTILINE),
    ),
    # node's assert diff: "+ actual - expected", then "+ got" / "- wanted" lines before the frames
    (
        (re.compile(rb"\+ actual - expected"),),
        (),
        re.compile(rb"\n(?:\+ actual - expected|[+-] )"),
    ),
    # Tcl's errorInfo: each command it was executing, in quotes at column 0, between the
    # indented "    while executing" / "    invoked from within" and "    (procedure ...)" lines
    (
        (),
        (b"    while e", b"    while c", b"    invoked "),  # read off the lines' first bytes: no scan
        re.compile(rb'\n"[^\n]*"\r*$', re.MULTILINE),
    ),
    # rustc's sub-diagnostics at column 0 ("help: use `Option::map_or` ...", "note: method defined
    # here", each with its "  --> " and "   |" lines) go on with the error or warning before them
    ((), (b"help: ", b"note: "), re.compile(rb"\n(?:help|note): ")),
    # Go's frames: each function at column 0 ("pkg/orders.(*Ledger).Refund(0x0, {0xc0001a2b40, 0x8})",
    # "testing.tRunner.func1()", "created by testing.(*T).Run in goroutine 1"), its place indented
    # under it ("\t/src/a.go:57 +0x3d"); the mark is in the frame's own line, so no chunking hides it
    # (one regex that starts with a literal: an alternation of three scans ten times slower)
    (
        (re.compile(rb"\((?:0x|\{0x|\.\.\.\)|\)\r*$)", re.MULTILINE),),
        (b"created by ",),
        re.compile(
            rb"\n(?:created by |panic\(|[\w\-/]*\.[\w.\-/]*(?:\(\*?[\w.\-\[\]]+\)\.[\w.\-\[\]]+)?"
            rb"\((?:0x|\{0x|\.\.\.\)|\)\r*$))",
            re.MULTILINE,
        ),
    ),
    # gcc's and clang's notes on a diagnostic (``a.cpp:3:17: note: candidate: ...``) and the
    # template instantiation lines after it (``a.cpp:9:8:   required from here``)
    (
        (re.compile(rb": (?:note: |  required from )"),),
        (),
        re.compile(rb"\n[^\s:]+:\d+(?::\d+)?: (?:note: |  required from )"),
    ),
)
# rustc's (and clang's) source excerpt: a line number at column 0, then the gutter ("70 |     code")
_GUTTER_LINE = re.compile(rb"\n\d{1,7} +\| ")
# lines that continue a trace even after a blank line
_CHAIN_LINE = re.compile(
    rb"\n(?:Caused by:|During handling of the above exception|The above exception was the direct cause"
    rb"|Traceback \(most recent call last\)"
    rb"|goroutine \d+ \["  # Go's stack of each goroutine, after a blank line under "panic: ..."
    rb"|-+ >> (?:begin|end) captured \w+ << -+)"  # nose's captured output after a failure
)

JOIN_NONE, JOIN_TRACE, JOIN_CHAIN = 0, 1, 2

# every line _EXC_LINE matches holds one of these as a token (the exception-name suffixes start a
# token: a case change, a digit or a separator comes before them) or starts with "..."
_TRACE_WORDS = KeySet.of(
    token_key(w)
    for w in (
        b"error exception exit interrupt warning failure throwable suppressed goroutine but rb mean sql parameters"
    ).split()
)
# every line _CHAIN_LINE matches starts with one of these
_CHAIN_PREFIXES = (b"Caus", b"Duri", b"The ", b"Trac", b"----", b"goro")


@dataclass(frozen=True, slots=True)
class LineLayout:
    """What segmentation needs to know of each line of a block (all shape ``(n_lines,)``).

    Attributes:
        blank: bool, the line has only whitespace (``\\r\\n`` is blank).
        indent: int64, leading spaces and tabs (a tab counts 1); 0 for a status line.
        chars: int64, characters of scoring text (UTF-8 continuation bytes not counted).
        join: int8, ``JOIN_TRACE`` for a column-0 trace line, ``JOIN_CHAIN`` for an
            exception-chain line, else ``JOIN_NONE``.
        first: int64, offset in the text of the line's first non-blank byte (for a
            blank line, some offset at or past its end).
    """

    blank: npt.NDArray[np.bool_]
    indent: Int64Array
    chars: Int64Array
    join: npt.NDArray[np.int8]
    first: Int64Array


def _line_starts_at(padded: bytes, regex: re.Pattern[bytes], ends: Int64Array) -> Int64Array:
    found = [m.start() for m in regex.finditer(padded)]
    if not found:
        return np.zeros(0, dtype=np.int64)
    return np.searchsorted(ends, np.asarray(found, dtype=np.int64), side="right").astype(np.int64)


_SCAN = 8  # leading bytes looked at per indented line at once (most indents are shorter)
_SCAN_COLUMNS = np.arange(_SCAN)
_STATUS_WIDTH = 12  # cargo right-aligns its status words to end at this column
# a status word's bytes after its capital: cargo's are title case ("Compiling", "Doc-tests"); a
# word in capitals ending there is not one ("      ASSERT FAILED: ...", behave's, under its step)
_WORD_BYTE = np.zeros(256, dtype=bool)
_WORD_BYTE[ord("a") : ord("z") + 1] = True
_WORD_BYTE[ord("-")] = True


def _status_lines(arr: npt.NDArray[np.uint8], starts: Int64Array, first: Int64Array, indent: Int64Array) -> Int64Array:
    """Lines that are right-aligned status lines: spaces, then a capitalised word (its other letters
    lower case) ending at column 12, a space."""
    n = arr.shape[0]
    maybe = np.flatnonzero((indent >= 1) & (indent < _STATUS_WIDTH) & (starts + _STATUS_WIDTH < n))
    if maybe.shape[0] == 0:
        return maybe.astype(np.int64)
    maybe = maybe[(arr[first[maybe]] - np.uint8(65)) < 26]  # the word starts with a capital
    columns = np.arange(_STATUS_WIDTH)
    grid = arr[starts[maybe, None] + columns]  # the first 12 bytes of each line
    in_word = columns[None, :] > indent[maybe, None]  # (after its capital)
    wordy = (~in_word | _WORD_BYTE[grid]).all(axis=1)
    status: Int64Array = maybe[wordy & (arr[starts[maybe] + _STATUS_WIDTH] == 0x20)].astype(np.int64)
    return status


# a test's mark, first in its line: jest's and mocha's "    ✓ adds (2 ms)" ("✔"; jest's "√" on Windows), and a
# failed test's "✕" or "✗"
_TEST_MARKS = tuple(np.frombuffer(mark.encode(), dtype=np.uint8) for mark in ("✓", "✔", "√", "✕", "✗"))


def _test_lines(arr: npt.NDArray[np.uint8], first: Int64Array, indent: Int64Array) -> Int64Array:
    """Indented lines whose first non-blank character is a test's mark (``_TEST_MARKS``)."""
    n = arr.shape[0]
    maybe = np.flatnonzero((indent > 0) & (first + 2 < n))
    maybe = maybe[arr[first[maybe]] == 0xE2]  # the marks' first UTF-8 byte
    if maybe.shape[0] == 0:
        none: Int64Array = maybe.astype(np.int64)
        return none
    grid = arr[first[maybe, None] + np.arange(3)]
    found = np.zeros(maybe.shape[0], dtype=bool)
    for mark in _TEST_MARKS:
        found |= (grid == mark).all(axis=1)
    marked: Int64Array = maybe[found].astype(np.int64)
    return marked


# dotnet test's verbose list: "  Passed Shop.Tests.CartTests.Adds_1 [< 1 ms]", "  Failed ... [12 ms]";
# and a scenario of behave's (and other Gherkin runners') report: "  Scenario: add item 32  # a.feature:163"
_LISTED_REPORT = re.compile(
    rb"(?:(?:Passed|Failed|Skipped) \S[^\n]* \[[^\]\n]*\][ \t\r]*|Scenario(?: Outline)?: [^\n]*)\n?"
)


def _listed_reports(
    text: bytes, arr: npt.NDArray[np.uint8], first: Int64Array, ends: Int64Array, indent: Int64Array
) -> Int64Array:
    """Indented lines of a test result in dotnet test's verbose list, or a Gherkin scenario's first line
    (``_LISTED_REPORT``)."""
    n = arr.shape[0]
    maybe = np.flatnonzero((indent > 0) & (first + 8 < n))
    if maybe.shape[0] == 0:
        return maybe.astype(np.int64)
    head, second = arr[first[maybe]], arr[first[maybe] + 1]
    pa_fa = ((head == 0x50) | (head == 0x46)) & (second == 0x61)
    sk_sc = (head == 0x53) & ((second == 0x6B) | (second == 0x63))
    maybe = maybe[pa_fa | sk_sc]
    found = [
        i
        for i, a, e in zip(maybe.tolist(), first[maybe].tolist(), ends[maybe].tolist(), strict=True)
        if _LISTED_REPORT.fullmatch(text, a, e)
    ]
    return np.asarray(found, dtype=np.int64)


def _blank_byte(b: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """Elementwise: space, tab, CR, VT or FF (comparisons: cheaper than a table lookup)."""
    blank: npt.NDArray[np.bool_] = (b == 0x20) | (b == 0x09) | ((b - np.uint8(0x0B)) < 3)
    return blank


def _first_non_blank(arr: npt.NDArray[np.uint8], starts: Int64Array, line_ends: Int64Array) -> Int64Array:
    """Offset of each line's first byte that is not a space, tab, CR, VT or FF (its end if none).

    Most lines start with text; only the indented ones are looked at, ``_SCAN`` bytes at a time.
    """
    first = starts.copy()
    n = arr.shape[0]
    if n == 0:
        return np.minimum(first, line_ends)
    pending = np.flatnonzero((starts < line_ends) & _blank_byte(arr[np.minimum(starts, n - 1)]))
    offset = 0
    while pending.shape[0]:
        at = starts[pending] + offset
        solid = ~_blank_byte(arr[np.minimum(at[:, None] + _SCAN_COLUMNS, n - 1)])
        found = solid.any(axis=1)
        first[pending] = np.minimum(at + np.where(found, np.argmax(solid, axis=1), _SCAN), line_ends[pending])
        pending = pending[~found & (first[pending] < line_ends[pending])]
        offset += _SCAN
    return np.minimum(first, line_ends)


# sbt and Maven put a level tag before each message ("[info]   at x.Foo(Foo.scala:9)"): such a
# line's indentation is counted after its tag
_LEVEL_TAGS = tuple(
    np.frombuffer(tag, dtype=np.uint8)
    for tag in (b"[info] ", b"[warn] ", b"[error] ", b"[debug] ", b"[INFO] ", b"[WARN] ", b"[WARNING] ", b"[ERROR] ")
)
_TAG_COLUMNS = np.arange(max(t.shape[0] for t in _LEVEL_TAGS))


def _level_tags(arr: npt.NDArray[np.uint8], starts: Int64Array, line_ends: Int64Array) -> Int64Array:
    """Shape ``(n_lines,)``: the length of each line's level tag (``_LEVEL_TAGS``), 0 if it has none."""
    tags = np.zeros(starts.shape[0], dtype=np.int64)
    n = arr.shape[0]
    if n == 0:
        return tags
    lines = np.flatnonzero((starts < line_ends) & (arr[np.minimum(starts, n - 1)] == 0x5B))  # "["
    if not lines.shape[0]:
        return tags
    grid = arr[np.minimum(starts[lines, None] + _TAG_COLUMNS, n - 1)]
    for tag in _LEVEL_TAGS:
        k = tag.shape[0]
        hit = (grid[:, :k] == tag).all(axis=1) & (starts[lines] + k <= line_ends[lines])
        tags[lines[hit]] = k
    return tags


def _lines_matching(text: bytes, ends: Int64Array, lines: Int64Array, regex: re.Pattern[bytes]) -> Int64Array:
    """Which of ``lines`` (sorted indexes) ``regex`` finds a match in, scanning only those lines."""
    if lines.shape[0] == 0:
        return lines
    sub, sub_ends = gather_lines(text, ends, lines)
    return lines[_line_starts_at(b"\n" + sub, regex, sub_ends)]


def _starting_with(
    arr: npt.NDArray[np.uint8],
    starts: Int64Array,
    prefixes: tuple[bytes, ...],
    column: dict[int, npt.NDArray[np.uint8]] | None = None,
) -> Int64Array:
    """Lines whose first bytes (at column 0) are one of ``prefixes`` (non-empty). ``column``:
    byte k of every line (0 past the end) by k, as far as known, shared by calls on one block."""
    n = arr.shape[0]
    if n == 0 or not prefixes:  # no bytes (a block of empty lines): no line starts with a prefix
        return np.zeros(0, dtype=np.int64)
    found = []
    column = {} if column is None else column
    for prefix in prefixes:
        # one byte of every line, the prefix's first that is not a blank (most lines start with
        # one), then the others over the few lines still matching
        columns = sorted(range(len(prefix)), key=lambda k: prefix[k] in b" \t")
        k = columns[0]
        if k not in column:
            column[k] = np.where(starts + k < n, arr[np.minimum(starts + k, n - 1)], 0)
        lines = np.flatnonzero(column[k] == prefix[k])
        for k in columns[1:]:
            at = starts[lines] + k
            lines = lines[(at < n) & (arr[np.minimum(at, n - 1)] == prefix[k])]
        found.append(lines)
    return np.unique(np.concatenate(found)).astype(np.int64)


def _join(text: bytes, ends: Int64Array, starts: Int64Array, table: TokenTable | None) -> npt.NDArray[np.int8]:
    """``LineLayout.join`` of each line; with the block's ``TokenTable``, the regexes see candidate lines only."""
    n_lines = int(ends.shape[0])
    join = np.zeros(n_lines, dtype=np.int8)
    padded = b""  # the block after a "\n", made once if a regex needs it
    arr = np.frombuffer(text, dtype=np.uint8)
    column: dict[int, npt.NDArray[np.uint8]] = {}  # the lines' bytes read by _starting_with
    for marks, heads, regex in _COLUMN0_TRACES:
        # a head is looked for at every line's start, the block's first line's too (a trace line
        # that opens a block is found as it is in the middle of one)
        if any(mark.search(text) for mark in marks) or _starting_with(arr, starts, heads, column).shape[0]:
            padded = padded or b"\n" + text
            join[_line_starts_at(padded, regex, ends)] = JOIN_TRACE
    if table is None or n_lines == 0 or not text:
        padded = padded or b"\n" + text
        join[_line_starts_at(padded, _EXC_LINE, ends)] = JOIN_TRACE
        join[_line_starts_at(padded, _GUTTER_LINE, ends)] = JOIN_TRACE
        join[_line_starts_at(padded, _CHAIN_LINE, ends)] = JOIN_CHAIN
        return join
    # a trace line holds one of _TRACE_WORDS as a token, or starts with "...", or holds a byte
    # >= 0x80 (a letter to the tokenizer, not to the regex's \b)
    maybe = np.zeros(n_lines, dtype=bool)
    maybe[table.lines_with(_TRACE_WORDS)] = True
    maybe |= (arr[np.minimum(starts, arr.shape[0] - 1)] == 0x2E) & (starts < ends)
    high = np.flatnonzero(arr >= 0x80)
    if high.shape[0]:
        maybe[np.searchsorted(ends, high, side="right")] = True
    join[_lines_matching(text, ends, np.flatnonzero(maybe).astype(np.int64), _EXC_LINE)] = JOIN_TRACE
    digit_first = np.flatnonzero(((arr[np.minimum(starts, arr.shape[0] - 1)] - np.uint8(48)) < 10) & (starts < ends))
    join[_lines_matching(text, ends, digit_first.astype(np.int64), _GUTTER_LINE)] = JOIN_TRACE
    chain = _starting_with(arr, starts, _CHAIN_PREFIXES, column)
    join[_lines_matching(text, ends, chain, _CHAIN_LINE)] = JOIN_CHAIN
    return join


def line_layout(text: bytes, ends: Int64Array, table: TokenTable | None = None) -> LineLayout:
    """Compute the ``LineLayout`` of a block of scoring text (vectorized over the block).

    Args:
        text: scoring text of whole lines.
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
        table: the block's ``TokenTable``, when made: the trace-line regex then only
            looks at lines that hold one of its words (the same result, sooner).
    """
    n_lines = int(ends.shape[0])
    starts = np.zeros(n_lines, dtype=np.int64)
    starts[1:] = ends[:-1]
    arr = np.frombuffer(text, dtype=np.uint8)
    # a last line can be empty in scoring text (it held only an escape sequence, no newline)
    has_newline = (ends > starts) & (arr[np.maximum(ends - 1, 0)] == 10) if arr.shape[0] else ends < 0
    newline_free_end = ends - has_newline
    first = _first_non_blank(arr, starts, newline_free_end)
    blank = first >= newline_free_end
    indent = np.where(blank, 0, first - starts).astype(np.int64)
    chars = (newline_free_end - starts).astype(np.int64)
    if arr.shape[0] and int(arr.max()) >= 0x80:
        cont = np.flatnonzero(~_NOT_CONT_BYTE[arr])
        chars -= np.bincount(np.searchsorted(ends, cont, side="right"), minlength=n_lines)[:n_lines]
    indent[_status_lines(arr, starts, first, indent)] = 0
    # a test in a verbose list is a report of its own, not part of the failure that heads its file
    indent[_test_lines(arr, first, indent)] = 0
    indent[_listed_reports(text, arr, first, ends, indent)] = 0
    tags = _level_tags(arr, starts, newline_free_end)
    tagged = np.flatnonzero(tags)
    if tagged.shape[0]:
        after = starts[tagged] + tags[tagged]
        solid = _first_non_blank(arr, after, newline_free_end[tagged])
        indent[tagged] = np.where(solid < newline_free_end[tagged], solid - after, 0)
    join = _join(text, ends, starts, table)
    return LineLayout(blank=blank, indent=indent, chars=chars, join=join, first=first.astype(np.int64))


@dataclass(frozen=True, slots=True)
class WindowAssignment:
    """Windows assigned to a contiguous range of lines by one ``Segmenter`` call.

    Attributes:
        first_line: 0-based stream index of the first assigned line.
        windows: shape ``(n,)``, int64: window id of each assigned line; ids count
            from 0 in stream order and a window is a contiguous range of lines.
        records: shape ``(n,)``, int64: record id of each assigned line.
        cont: shape ``(n,)``, bool: the line continues the line before it (deeper
            indentation, a trace's column-0 line, or a blank line inside a record).
        closed: every window with an id below this is complete.
    """

    first_line: int
    windows: Int64Array
    records: Int64Array
    cont: npt.NDArray[np.bool_]
    closed: int


def _count_starts(starts: list[int], first: int, k: int) -> Int64Array:
    """For lines ``first .. first+k-1``: how many of ``starts`` (distinct stream indexes) are at or before each."""
    marks = np.zeros(k, dtype=np.int64)
    if starts:
        marks[np.asarray(starts, dtype=np.int64) - first] = 1
    return np.cumsum(marks)


def _spans(begin: list[int], end: list[int], first: int, k: int) -> npt.NDArray[np.bool_]:
    """For lines ``first .. first+k-1``: whether each is inside one of the disjoint ``[begin, end)``."""
    marks = np.zeros(k + 1, dtype=np.int64)
    if begin:
        marks[np.asarray(begin, dtype=np.int64) - first] += 1
        marks[np.asarray(end, dtype=np.int64) - first] -= 1
    inside: npt.NDArray[np.bool_] = np.cumsum(marks[:k]) > 0
    return inside


class Segmenter:
    """Incremental segmenter: ``feed(LineLayout) -> WindowAssignment``, ``flush()``.

    Args:
        window_lines: N, most lines in a window packed from a record (>= 1).
        window_chars: M, most characters in a packed window (>= 1).
        hard_cap_lines: most lines a window takes through continuation lines
            (default ``4 * window_lines``), so an endless indented stream still windows.
        first_index: 0-based stream index of the first line (a resumed stream).

    State is bounded: a few counters and at most ``hard_cap_lines`` held blank lines.
    """

    def __init__(
        self, window_lines: int = 8, window_chars: int = 1200, hard_cap_lines: int | None = None, first_index: int = 0
    ) -> None:
        self.window_lines = window_lines
        self.window_chars = window_chars
        self.hard_cap = hard_cap_lines or 4 * window_lines
        self._next_line = first_index  # stream index of the next line to be fed
        self._assigned = first_index  # lines with a window so far
        self._window = -1
        self._record = -1
        self._wlines = 0
        self._wchars = 0
        self._base = 0
        self._in_trace = False
        self._blanks = 0  # held blank lines (stream indexes _assigned .. _assigned+_blanks-1)

    def feed(self, layout: LineLayout) -> WindowAssignment:
        """Segment the next block's lines; return the windows of every line settled so far."""
        assignment = self._feed_arrays(layout)
        return assignment if assignment is not None else self._feed_lines(layout)

    def _feed_arrays(self, layout: LineLayout) -> WindowAssignment | None:
        """``feed`` with numpy, or None where it does not apply (then ``_feed_lines`` does it).

        It applies once the stream has a window, when no line of the block is indented less
        than the record's first line (so no line changes the record's indent, ``base``) and no
        run of blank lines reaches ``hard_cap``. Then a line's continuation and record start
        depend only on itself, the blank lines before it and the line before those, and only
        the packing is sequential: from each line a window could start at, the line the next
        one would start at is found for all lines at once (prefix sums and searches), and the
        windows are read off by following those links, one step per window.
        """
        blank = layout.blank
        solid = np.flatnonzero(~blank)
        base = self._base
        if self._window < 0 or solid.shape[0] == 0:
            return None
        indent, join = layout.indent[solid], layout.join[solid]
        held = np.diff(solid, prepend=-1) - 1  # blank lines held before each non-blank line
        held[0] += self._blanks
        trailing = int(blank.shape[0]) - 1 - int(solid[-1])
        if int(indent.min()) < base or max(int(held.max()), trailing) >= self.hard_cap:
            return None
        n_cap, m_cap, hard = self.window_lines, self.window_chars, self.hard_cap
        deeper = indent > base
        traced = deeper | (join != JOIN_NONE)  # in_trace after each line
        after_trace = np.empty_like(traced)
        after_trace[0] = self._in_trace
        after_trace[1:] = traced[:-1]
        cont = np.where(held > 0, deeper | (join == JOIN_CHAIN), deeper | ((join != JOIN_NONE) & after_trace))
        record = (held > 0) & ~cont  # (indent == base here)
        k = int(solid.shape[0])
        # lines (with their held blanks) and characters before each non-blank line, within the block
        lines_before = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(held + 1, out=lines_before[1:])
        chars_before = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(layout.chars[solid], out=chars_before[1:])
        # the first line at or after each index that is a record start / continuation / plain line
        index = np.arange(k + 1, dtype=np.int64)
        next_record, next_cont, next_plain = (
            np.minimum.accumulate(np.where(np.append(kind, True), index, k)[::-1])[::-1]
            for kind in (record, cont, ~cont & ~record)
        )

        def next_start(after: Int64Array, lines0: Int64Array, chars0: Int64Array) -> Int64Array:
            """The first line from ``after`` on that opens a new window, for a window whose lines
            and characters before it are counted from ``lines0`` and ``chars0``."""
            over_hard = np.searchsorted(lines_before[1:], lines0 + hard, side="right")  # a continuation there
            over_lines = np.searchsorted(lines_before[:k], lines0 + n_cap, side="left")  # a plain line there
            over_chars = np.searchsorted(chars_before[1:], chars0 + m_cap, side="right")
            found: Int64Array = np.minimum(
                next_record[np.minimum(after, k)],
                np.minimum(
                    next_cont[np.maximum(over_hard, after)],
                    next_plain[np.maximum(np.minimum(over_lines, over_chars), after)],
                ),
            )
            return found

        # the open window goes on until its first break (the close() of a live stream breaks at once)
        open_lines = np.asarray([-self._wlines], dtype=np.int64)
        open_chars = np.asarray([-self._wchars], dtype=np.int64)
        first_break = int(next_start(np.zeros(1, dtype=np.int64), open_lines, open_chars)[0])
        links = next_start(index[1:], lines_before[:k], chars_before[:k]).tolist()
        starts: list[int] = []
        at = first_break
        while at < k:  # one step per window
            starts.append(at)
            at = links[at]
        opened = np.asarray(starts, dtype=np.int64)
        # stream indexes: a line starts (its window, record, continuation) with the blank lines before it
        stream_first = self._next_line + solid - held
        first = self._assigned
        assigned = self._next_line + int(solid[-1]) + 1
        n = assigned - first
        window_marks = np.zeros(n, dtype=np.int64)
        window_marks[stream_first[opened] - first] = 1
        record_marks = np.zeros(n, dtype=np.int64)
        record_marks[stream_first[record] - first] = 1
        cont_marks = np.zeros(n + 1, dtype=np.int64)
        cont_marks[stream_first[cont] - first] += 1  # the spans are disjoint: each index once per side
        cont_marks[self._next_line + solid[cont] + 1 - first] -= 1
        last = opened[-1] if starts else 0
        self._wlines = int(lines_before[k] - lines_before[last]) + (0 if starts else self._wlines)
        self._wchars = int(chars_before[k] - chars_before[last]) + (0 if starts else self._wchars)
        self._in_trace = bool(traced[-1])
        self._blanks = trailing
        self._next_line += int(blank.shape[0])
        self._assigned = assigned
        first_window, self._window = self._window, self._window + len(starts)
        first_record, self._record = self._record, self._record + int(np.count_nonzero(record))
        return WindowAssignment(
            first_line=first,
            windows=first_window + np.cumsum(window_marks),
            records=first_record + np.cumsum(record_marks),
            cont=np.cumsum(cont_marks[:n]) > 0,
            closed=self._window,
        )

    def _feed_lines(self, layout: LineLayout) -> WindowAssignment:
        """``feed``, one line at a time (any state, any block)."""
        first = self._assigned
        at = self._next_line  # stream index of layout's line 0
        blank = layout.blank.tolist()
        indent = layout.indent.tolist()
        chars = layout.chars.tolist()
        join = layout.join.tolist()
        n_cap, m_cap, hard = self.window_lines, self.window_chars, self.hard_cap
        win, rec, wl, wc, base, in_trace, blanks = (
            self._window,
            self._record,
            self._wlines,
            self._wchars,
            self._base,
            self._in_trace,
            self._blanks,
        )
        # only changes are recorded (stream indexes): where a window or a record starts, and the
        # [start, end) spans of continuation lines; arrays are built from them at the end
        window_starts: list[int] = []
        record_starts: list[int] = []
        cont_from: list[int] = []
        cont_to: list[int] = []
        assigned = first
        for i in range(len(blank)):
            if blank[i]:
                blanks += 1
                if blanks < hard:
                    continue
                # an endless run of blank lines: they form a window and a record of their own
                start = at + i - blanks + 1
                window_starts.append(start)
                record_starts.append(start)
                win += 1
                rec += 1
                wl, wc, blanks, base, in_trace = blanks, 0, 0, 0, False
                assigned = at + i + 1
                continue
            d, c, j = indent[i], chars[i], join[i]
            start = at + i - blanks  # this line and the blank lines held before it
            cont = False
            if win < 0:
                record_starts.append(start)
                rec += 1
                wl, wc, base, in_trace = 0, 0, d, False
                new = True
            elif blanks:
                cont = d > base or j == JOIN_CHAIN
                if cont:
                    new = wl + blanks + 1 > hard
                else:
                    record_starts.append(start)
                    rec += 1
                    base = d
                    new = True
            elif d < base:
                record_starts.append(start)
                rec += 1
                base = d
                new = True
            elif d > base or (j != JOIN_NONE and in_trace):
                cont = True
                new = wl + 1 > hard
            else:
                new = wl + 1 > n_cap or wc + c > m_cap
            if new:
                window_starts.append(start)
                win += 1
                wl = wc = 0
            if cont:
                cont_from.append(start)
                cont_to.append(at + i + 1)
            wl += blanks + 1
            wc += c
            blanks = 0
            in_trace = d > base or j != JOIN_NONE
            assigned = at + i + 1
        first_window = self._window
        first_record = self._record
        self._window, self._record, self._wlines, self._wchars, self._base, self._in_trace, self._blanks = (
            win,
            rec,
            wl,
            wc,
            base,
            in_trace,
            blanks,
        )
        self._next_line += len(blank)
        self._assigned = assigned
        k = assigned - first
        return WindowAssignment(
            first_line=first,
            windows=first_window + _count_starts(window_starts, first, k),
            records=first_record + _count_starts(record_starts, first, k),
            cont=_spans(cont_from, cont_to, first, k),
            closed=max(win, 0),
        )

    def flush(self) -> WindowAssignment:
        """End of input: settle held blank lines and close the last window."""
        first = self._assigned
        n = self._blanks
        if n:
            self._window += 1
            self._record += 1
        windows = np.full(n, self._window, dtype=np.int64)
        records = np.full(n, self._record, dtype=np.int64)
        self._assigned += n
        self._blanks = 0
        return WindowAssignment(
            first_line=first, windows=windows, records=records, cont=np.zeros(n, dtype=bool), closed=self._window + 1
        )

    def close(self) -> WindowAssignment:
        """A live stream went quiet: settle held blank lines and close the open window.

        The record stays open: a line that continues it later (a stack frame written
        after the pause) is still a continuation line, in a new window.
        """
        assignment = self.flush()
        self._wlines = max(self.hard_cap, self.window_lines)  # the next line opens a window
        return assignment
