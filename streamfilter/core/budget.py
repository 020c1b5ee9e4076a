"""The token budget (``--budget-tokens``): which kept lines fit, chosen by maximal marginal relevance.

A budget bounds the whole output, so it is decided over the whole input, in two
passes over the same bytes:

1. the filter runs as usual with traces on; ``UnitPool.add`` cuts its KEEP runs
   into *units* (a protected hit with the lines it extends over, a scored window,
   the head, the tail) and keeps the best of them in a bounded pool;
2. ``UnitPool.select`` chooses units greedily until the budget is spent, and the
   filter runs again with the chosen line ranges (``Selection``) as its decisions:
   every other line is in a DROP run and its summary, so accounting stays exact.

Order of choice: the last test result line kept that reports failed tests, else the last
(``results.RESULT_LINE``, ``results.reports_failure``: pytest's ``79 failed, 1 passed in 0.97s``,
cargo's ``test result:``, node's ``# fail 1``, not the ``# todo 0`` after it) first, alone,
whatever the budget (a run's verdict: the units of 79 failures had spent every budget before the
last lines' turn), its unit left to be
weighed like any other (counted as chosen, the unit of pytest's last ``FAILED`` lines took one of
their shape's ``MAX_PER_SHAPE`` and was never weighed again: a distinct failure's line in it was
dropped while 29 like ones were kept); with no such line, in a failed command's own output
(``own_end``), its last line kept that is not blank, when it fits with a summary either side (a
tool of its own's closing count, "fixtures: 1714 consistent, 286 drifted", was the first line a
budget spent on 286 failures left out); then
protected units (those of a line the user asked for, by
``--protect`` or an error code in the query, before the others), then scored windows, then the last lines,
then the head (on 119 corpus cases at 1000 tokens, mean recall 0.636 in this order,
0.612 with the last lines second, 0.406 with them first). Within each kind, the next
unit is the one of highest maximal marginal relevance (Carbonell & Goldstein 1998):
``λ·relevance − (1 − λ)·redundancy``, relevance being the unit's BM25 score over the
best one of its kind (for a protected unit ``PROTECTED_FLOOR`` plus the rest of 1 in
that proportion: 0.692 against 0.636 with 1 for all), redundancy the largest Jaccard
similarity between its set of line
shapes (``summarize.line_shapes``, blank lines left out) and a chosen unit's; ties go to the
earlier unit (the first failure is usually the one that matters). A protected unit followed,
touching, by another (pytest's ``E`` line, then its location lines, which often score higher)
gets the relevance of that one and comes before it (a tie goes to it; before, the higher
relevance of its own won the tie, the location lines came first and a tight budget had no room
left for the ``E`` line: with terse summaries, at 300 / 500 / 1000 / 2000 tokens 0.404 / 0.573 /
0.731 / 0.823 -> 0.429 / 0.595 / 0.727 / 0.817; "error failed" at 500 / 1000 / 2000 0.517 / 0.679
/ 0.796 -> 0.540 / 0.683 / 0.792), and of two such the one of higher relevance of its own comes
first (on the corpus at 500 / 1000 / 2000 tokens: mean recall 0.520 / 0.706 / 0.813 -> 0.528 /
0.721 / 0.814; with "error failed" 0.452 / 0.656 / 0.784 -> 0.474 / 0.662 / 0.780). Giving
every unit of a touching chain the best relevance of those after it measured higher on the
corpus (0.561 / 0.728 / 0.812; 0.527 / 0.693 / 0.785) but spent the budget of real pytest runs
on a failure's lead-in (its section header, library frames, docstrings): at 500 tokens no
``E`` line and no ``FAILED`` summary line of a run with 4 failures. At most ``MAX_PER_SHAPE``
units whose first line has the same shape are chosen (more only once every other unit
had its turn and the budget still has room); of such units the first gets
the best relevance among them. A protected unit starts at its failure line (the
window's lines before it go with the unit before). A protected unit that does not
fit whole gives its first lines that fit, the tail its last ones; other units are
taken whole or not at all, and a part of blank lines only is never taken. A protected unit whose
failure line alone (or the line its cut stops at) is over the whole budget (a 200 KB line) is
*named* instead, if room is left: that line is a DROP run of its own whose summary names its
first ``NAMED_CHARS`` characters (``Selection.named``): a KEEP run holds whole lines, verbatim. A
lifted unit that
heads a section (pytest's ``=== FAILURES ===``, the test's name and source under it) and does not
fit whole waits, with its own relevance, behind the unit that lifted it: cut to its first lines it
had left a 150-token budget no room for the ``E`` line (on the corpus at 300 / 500 / 1000 / 2000
tokens 0.4191 / 0.5958 / 0.7244 / 0.8168 -> 0.4190 / 0.5958 / 0.7248 / 0.8172; letting every
lifted unit wait: 0.3934 at 300, its first lines being the labelled ones there).

Cost of a choice: its estimated tokens (``estimate_tokens``), plus ``drop_tokens`` (a
summary line) for each DROP run it adds between chosen units, on the ``text`` format.
"""

from __future__ import annotations

import bisect
import itertools
import re
import zlib
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .normalize import strip_ansi
from .records import Run
from .results import reports_failure, result_lines
from .signatures import DEFAULT_SIGNATURES, LEAD_IN, LEAD_LINES
from .summarize import line_shapes

__all__ = (
    "ASKED_RELEVANCE",
    "BUDGET_SUMMARY_CHARS",
    "LAMBDA",
    "LIBRARY_PENALTY",
    "LINE_TOKENS",
    "MAX_CANDIDATES",
    "MAX_PER_SHAPE",
    "NAMED_CHARS",
    "PROTECTED_FLOOR",
    "REF_BYTES_PER_TOKEN",
    "REF_SOURCE_TOKENS",
    "SUMMARY_CHARS_PER_TOKEN",
    "Selection",
    "Unit",
    "UnitPool",
    "estimate_tokens",
    "token_prefix",
)

LAMBDA = 0.7  # MMR's weight of relevance against redundancy (0.5: 0.688, 0.9: 0.657 in the test above)
# relevance of a protected unit with no query term; BM25 ranks a verbose failure (pytest's) far over a
# terse one (a compiler's error line) and a later copy a little over the first: with 0.5, a C++
# build's first error was left out at 2000 tokens for two later ones. Corpus, mean recall at 300 /
# 500 / 1000 / 2000 tokens: 0.5: 0.404 / 0.572 / 0.730 / 0.820; 0.8: 0.404 / 0.573 / 0.731 / 0.823;
# 0.95: 0.404 / 0.572 / 0.729 / 0.821 ("error failed" at 500 / 1000 / 2000: 0.514 / 0.679 / 0.793
# with 0.5, 0.517 / 0.679 / 0.796 with 0.8)
PROTECTED_FLOOR = 0.8
ASKED_RELEVANCE = 2.0  # over any other unit's (at most 1), whatever the redundancy
# taken off the relevance of a protected unit whose failure line is located in a library (system
# headers, site-packages, node_modules, the Rust toolchain): g++ template errors inside <hashtable.h>
# had crowded out the user's own t.cpp errors at 300-2000 tokens (a fresh-user helper's find). On the
# corpus at 300 / 500 / 1000 / 2000 tokens 0.4199 / 0.5967 / 0.7259 / 0.8185 -> 0.4203 / 0.5978 /
# 0.7281 / 0.8190 (0.1: the same but 0.8189 at 2000); "error failed" at 500 / 1000 0.5266 / 0.6797 ->
# 0.5274 / 0.6812
LIBRARY_PENALTY = 0.2
MAX_PER_SHAPE = 3  # units chosen whose first lines share a shape
REF_BYTES_PER_TOKEN = 3  # bytes of a DROP summary's ref per token (corpus paths with offsets and CRC: about 3.4)
# a ref's source (a path) as a budget counts it, named once in a text output (its later refs are
# short, ``@START-END:CRC``): the same for any path, so that the same bytes give the same output
# wherever their file is (a run's output file has its time and pid in its name, and a state
# directory is anywhere: a path's length had moved the choice, helper-71); 120 bytes at
# REF_BYTES_PER_TOKEN, more than most (a longer path's output goes over by its extra bytes, once)
REF_SOURCE_TOKENS = 40.0
# the tokens of a line a budget makes room for between two summaries, whatever it is: a budget
# smaller than that room is raised to it, so that the likeliest line is shown, not summarized (at
# 80 tokens, a 300-byte summary of 301 lines had been all there was of "error: boom", helper-71)
LINE_TOKENS = 30.0
# a DROP summary's most characters before its ref when a budget chooses: its range and counts, and
# the count of failure lines it holds (room for little more): each piece kept apart costs a
# summary, and at 140 characters (the filter's default) fewer fit. Corpus, mean recall at 300 /
# 500 / 1000 / 2000 tokens: 140: 0.333 / 0.528 / 0.721 / 0.814; 64 (no room for the count of
# failure lines): 0.404 / 0.572 / 0.730 / 0.820; 100: 0.378 / 0.554 / 0.728 / 0.818 (the choice
# as it was then); 80, with the choice of 3e7af38: 0.417 / 0.594 / 0.722 / 0.814 (64: 0.429 /
# 0.595 / 0.727 / 0.817)
BUDGET_SUMMARY_CHARS = 80
SUMMARY_CHARS_PER_TOKEN = 2.5  # a DROP summary's text, per estimated token (2.8-3.0 on corpus outputs: room to spare)
# characters of a failure line over the whole budget named in the DROP summary of its own: a 200 KB
# "Error: unexpected token" line had been one of "1 failure line" among 228, its text nowhere
NAMED_CHARS = 100
PREFIX_CHUNK = 1 << 20  # bytes summed at once by ``prefixes_at``
MAX_CANDIDATES = 512  # units of one kind weighed by MMR (the likeliest, by kind, repeats, score, line)
_MAX_SHAPES_PER_UNIT = 64  # line shapes compared per unit (its first lines)
_SHAPE_BYTES, _UNIT_BYTES = 64, 512  # memory of a shape in a unit's set, and of a unit with its arrays' headers

# kinds of unit
PROTECTED, TAIL, SCORED, HEAD = 0, 1, 2, 3
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[0x20, 0x09, 0x0D, 0x0A]] = True

# The token estimate: o200k tokens (GPT-4o's encoding) per run of letters, of digits and of
# spaces or tabs, and per letter, digit, ASCII punctuation and ESC byte, fitted by least squares
# on the relative error against o200k counts of the text outputs of 300 corpus cases at
# --budget-tokens 1000; a control byte (a spinner's backspaces) and a character of 3 or 4 UTF-8
# bytes (CJK, symbols) are taken as one token and one of 2 bytes as half (as o200k counts them:
# the corpus holds too few to fit them). On 146 other cases at --budget-tokens 2000 the
# estimate / count - 1 ran from -5% to +8% (10th to 90th percentile), bytes/3 from -19% to +27%;
# ``benchmarks/budget.py --tokenizer`` measures it on the corpus.
_CLASS = np.zeros(256, dtype=np.uint8)  # 0: other, 1: letter, 2: digit, 3: space, 4: tab
_CLASS[np.r_[0x41:0x5B, 0x61:0x7B]] = 1
_CLASS[0x30:0x3A] = 2
_CLASS[0x20] = 3
_CLASS[0x09] = 4
_RUN_TOKENS = np.array([0.0, 0.63, 1.37, 0.225, 0.225])  # a run of each class starts
# a run of blanks right after one of the other blank (spaces and tabs in turn): o200k takes such
# a pair as a token (30,000 of them, as padding, 15,000 tokens; they had cost one run, helper-91)
_SWITCH_TOKENS = 0.24
_BYTE_TOKENS = np.zeros(256, dtype=np.float64)
_BYTE_TOKENS[_CLASS == 1] = 0.134
_BYTE_TOKENS[0x30:0x3A] = 0.335
# (0.288 as fitted; 0.31 since a repeat costs less, which the fit had averaged in: on 198 corpus
# outputs at --budget-tokens 1000, estimate / count - 1 at the median +0.004, 10th / 90th percentiles
# -0.052 / +0.055, against +0.005, -0.054 / +0.075 before both)
_BYTE_TOKENS[[b for b in range(0x21, 0x7F) if _CLASS[b] == 0]] = 0.31
_BYTE_TOKENS[0xC0:0xE0] = 0.5  # the first byte of a 2-byte character
_BYTE_TOKENS[0xE0:] = 1.0  # the first byte of a 3- or 4-byte character
_BYTE_TOKENS[[b for b in range(0x20) if b not in (0x09, 0x0A, 0x0D)] + [0x7F]] = 1.0  # a control byte
_BYTE_TOKENS[0x1B] = 1.43
# and a long run of blanks by its length: o200k takes up to 128 spaces or 16 tabs in one token (30,000
# spaces of a fixed-width row, 235 tokens, had cost 0.225, so a budget of 4000 printed 1.5 MB,
# helper-87)
_BYTE_TOKENS[0x20] = 1 / 128
_BYTE_TOKENS[0x09] = 1 / 16
# a punctuation byte that repeats the one before it: o200k takes up to 64 of "-", "=", ".", "_", "*",
# "#", "/" in one token, 32 of "~" and "+", 4 of "|" (a row padded with 30,000 dots is about 470
# tokens; at 0.288 a byte its failure line was taken for 8,640 and left out of a budget of 4000,
# helper-91)
_REPEAT_TOKENS = _BYTE_TOKENS.copy()
_REPEAT_TOKENS[[b for b in range(0x21, 0x7F) if _CLASS[b] == 0]] = 1 / 64
_REPEAT_TOKENS[[ord("~"), ord("+")]] = 1 / 32
_REPEAT_TOKENS[ord("|")] = 1 / 4
# a line end that starts its line (a blank line): o200k counts a run of N newlines as N / 16 tokens,
# of N CRLFs as N / 4 (counted with gpt-tokenizer); these had cost none, so 4 MB of blank lines
# "fit" a budget of 4000 tokens and came out whole (helper-70)
_LINE_START_TOKENS = np.zeros(256, dtype=np.float64)
_LINE_START_TOKENS[0x0A] = 1 / 16
_LINE_START_TOKENS[0x0D] = 1 / 4


def token_prefix(data: bytes) -> npt.NDArray[np.float64]:
    """Shape ``(len(data) + 1,)``: the estimated tokens of ``data[:i]`` for each ``i`` (see ``estimate_tokens``)."""
    return prefixes_at(data, np.arange(len(data) + 1, dtype=np.int64))[0]


def prefixes_at(data: bytes, offsets: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """The estimated tokens (``estimate_tokens``) of ``data[:i]``, and its bytes other than spaces,
    tabs, CR and LF, at each offset ``i`` of ``offsets`` (sorted, from 0 to ``len(data)``).

    Summed ``PREFIX_CHUNK`` bytes at a time: per-byte arrays of a whole 50 MB line took 1.5 GB
    (helper-67); the sums are the same, added in the same order.

    Returns:
        shapes ``(len(offsets),)``: float64 tokens, int64 bytes.
    """
    tokens = np.zeros(offsets.shape[0], dtype=np.float64)
    solid = np.zeros(offsets.shape[0], dtype=np.int64)
    n = len(data)
    carry, carry_solid, last = np.zeros(1), np.zeros(1, dtype=np.int64), 0x0A  # (as if a line ended before data)
    done = int(np.searchsorted(offsets, 0, side="right"))  # (offset 0: nothing before it)
    for start in range(0, n, PREFIX_CHUNK):
        arr = np.frombuffer(data, dtype=np.uint8, count=min(PREFIX_CHUNK, n - start), offset=start)
        prev = np.empty_like(arr)  # the byte before each
        prev[0] = last
        prev[1:] = arr[:-1]
        cls, prev_cls = _CLASS[arr], _CLASS[prev]
        starts = cls != prev_cls
        per_byte = (
            np.where(prev == arr, _REPEAT_TOKENS[arr], _BYTE_TOKENS[arr])
            + starts * (_RUN_TOKENS[cls] + ((cls >= 3) & (prev_cls >= 3)) * _SWITCH_TOKENS)
            + (prev == 0x0A) * _LINE_START_TOKENS[arr]
        )
        # (from the sum so far: the running sum adds each byte to it in turn, as one sum over all of data)
        sums = np.cumsum(np.concatenate((carry, per_byte)))
        counts = np.cumsum(np.concatenate((carry_solid, ~_SPACE[arr])))
        upto = int(np.searchsorted(offsets, start + arr.shape[0], side="right"))
        at = offsets[done:upto] - start
        tokens[done:upto], solid[done:upto] = sums[at], counts[at]
        carry, carry_solid, last, done = sums[-1:], counts[-1:], int(arr[-1]), upto
    return tokens, solid


def estimate_tokens(data: bytes) -> float:
    """Estimated o200k tokens of ``data`` (bytes of the ``text`` output), from its byte classes.

    A linear model (weights above): 0.63 tokens per run of letters plus 0.134 per letter,
    1.37 per run of digits plus 0.335 per digit, 0.31 per punctuation byte (1/64 for most that
    repeat the one before), 0.225 per run of spaces or of tabs (0.5 right after one of the other)
    plus 1/128 per space and 1/16 per tab, 1.43 per ESC, 1 per other control byte
    and per character of 3 or 4 UTF-8 bytes, 0.5 per one of 2; a blank line 1/16 (1/4 with a
    CR). A run never crosses a line end, so the estimate of a text is the sum of its lines'.
    Never raises.
    """
    return float(prefixes_at(data, np.asarray([len(data)], dtype=np.int64))[0][0])


@dataclass(frozen=True, slots=True)
class Unit:
    """A piece of one KEEP run that is chosen or left out whole (or cut, if it does not fit).

    Attributes:
        first_line: 1-based first line.
        n_bytes: its length in bytes (the pool holds its per-line arrays, not its bytes: ``held``).
        costs: shape ``(lines,)``, float64: the estimated tokens (``estimate_tokens``) of
            its lines up to the end of each.
        kind: ``PROTECTED``, ``TAIL``, ``SCORED`` or ``HEAD``.
        score: BM25 score of its best window (0 for a unit with no scored window).
        shapes: CRC-32s of the masked shapes of its first ``_MAX_SHAPES_PER_UNIT`` lines.
        key: CRC-32 of its first line's shape (the ``MAX_PER_SHAPE`` cap).
        solid: shape ``(lines,)``, bool: the line holds more than spaces, tabs and line ends.
        asked: a protected unit whose line the user asked for (``--protect``, an error code
            in the query): chosen before the other protected units.
        lead: lines of a compiler's lead-in (``signatures.LEAD_IN``) before its failure line,
            chosen only with the failure line.
        leads_in: shape ``(lines,)``, bool: the line is a lead-in line; a part of the unit
            never ends with one.
        heads: a protected unit whose failure line heads a section of reports (pytest's
            ``=== FAILURES ===``: ``Signature.section``), what it holds coming after it.
        library: a unit whose failure line names a place in a library (``_LIBRARY``: system
            headers, site-packages, node_modules, the Rust toolchain), not the user's code.
        prior: for a unit that starts at a line of the learned prior, that line's probability
            (its relevance when its windows hold no query term); else 0.
    """

    first_line: int
    n_bytes: int
    costs: npt.NDArray[np.float64]
    kind: int
    score: float
    shapes: frozenset[int]
    key: int
    solid: npt.NDArray[np.bool_]
    asked: bool
    lead: int
    leads_in: npt.NDArray[np.bool_]
    heads: bool = False
    library: bool = False
    prior: float = 0.0

    @property
    def last_line(self) -> int:
        """1-based last line (inclusive)."""
        return self.first_line + int(self.costs.shape[0]) - 1

    @property
    def held(self) -> int:
        """About how many bytes of memory the unit holds: its per-line arrays, its shapes and itself."""
        arrays = self.costs.nbytes + self.solid.nbytes + self.leads_in.nbytes
        return arrays + _SHAPE_BYTES * len(self.shapes) + _UNIT_BYTES


def _no_lines() -> npt.NDArray[np.int64]:
    return np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Selection:
    """The line ranges a budget chose: ``first[i] .. last[i]`` (1-based, inclusive, sorted, disjoint).

    ``named``: failure lines longer than the whole budget (1-based, sorted, outside the ranges):
    each is a DROP run of its own, whose summary names its first ``NAMED_CHARS`` characters.
    """

    first: npt.NDArray[np.int64]
    last: npt.NDArray[np.int64]
    named: npt.NDArray[np.int64] = field(default_factory=_no_lines)

    def mask(self, first_line: int, n: int) -> npt.NDArray[np.bool_]:
        """Shape ``(n,)``: whether each of lines ``first_line .. first_line + n - 1`` was chosen."""
        lines = np.arange(first_line, first_line + n, dtype=np.int64)
        if not self.first.shape[0]:
            return np.zeros(n, dtype=bool)
        at = np.searchsorted(self.first, lines, side="right") - 1
        chosen: npt.NDArray[np.bool_] = (at >= 0) & (lines <= self.last[np.maximum(at, 0)])
        return chosen


# signatures whose line belongs with the line above it (ruff's "  --> a.py:3:1" under its code)
_ABOVE = frozenset(s.name for s in DEFAULT_SIGNATURES if s.shape_above)
_SECTION = frozenset(s.name for s in DEFAULT_SIGNATURES if s.section)
_LIBRARY = re.compile(
    rb"/usr/(?:local/)?(?:include|lib|share)/|[/\\](?:site|dist)-packages[/\\]|node_modules[/\\]|/rustc/[0-9a-f]{8}|"
    rb"\.cargo[/\\]registry[/\\]|/lib/python3"
)


def _kind(reason: str) -> int | None:
    """The kind of unit a window with this reason starts (None: it continues the unit before it).
    A line of the learned prior is a likely failure line, not a known one: its unit is chosen with
    the scored windows, after the signatures'."""
    if reason == "protected:prior":
        return SCORED
    if reason.startswith("protected:"):
        return PROTECTED
    kinds = {"tail": TAIL, "result": TAIL, "score": SCORED, "novel": SCORED, "novel-line": SCORED, "head": HEAD}
    return kinds.get(reason)


class UnitPool:
    """The candidate units of one stream (pass 1), at most ``max_bytes`` of them.

    Memory is bounded: when the units held pass ``max_bytes`` (``Unit.held``: a unit holds
    about 17 bytes a line whatever the lines' length, so a 50 MB failure line is a unit like
    another; counted by its length, it was forgotten at once, helper-67), the least likely to be
    chosen are forgotten (by kind, then units beyond ``MAX_PER_SHAPE`` of one first-line
    shape, then lower score, then later line; the kinds ranked protected, tail, scored, head).

    Args:
        budget: the output budget, in estimated tokens (``estimate_tokens``).
        drop_tokens: the estimated tokens of one DROP run's summary line.
        max_bytes: most bytes of units held (default: 48 bytes per token of budget, at least 4 MiB).
        asked: regexes of the lines the user asked for (``filter.asked_patterns``): each such
            line starts a unit chosen before the other protected ones.
        own_end: the stream is a failed command's own output, whose last line is its own (a
            count, a verdict), not a CI runner's: with no test tool's verdict, that line is
            chosen first when it fits (``select``).
    """

    def __init__(
        self,
        budget: float,
        drop_tokens: float,
        max_bytes: int | None = None,
        asked: tuple[str, ...] = (),
        own_end: bool = False,
    ) -> None:
        self.budget = budget
        self.own_end = own_end
        self._asked = [re.compile(p.encode("utf-8", "surrogateescape")) for p in asked]
        self.drop_tokens = drop_tokens
        self.max_bytes = max_bytes if max_bytes is not None else max(int(48 * budget), 4 << 20)
        self.units: list[Unit] = []
        self._held = 0
        self.lines = 0  # lines of the stream seen
        self.verdict: int | None = None  # the last result line kept that reports failed tests, else the last (1-based)
        self._verdict_failed = False
        self.last_solid = 0  # the last line kept that holds more than blanks (1-based; 0: none)

    def add(self, runs: list[Run]) -> None:
        """Take the units of the KEEP runs among ``runs`` (made with ``FilterConfig.explain``)."""
        for run in runs:
            self.lines = max(self.lines, run.last_line)
            if run.decision == "keep" and not run.rest:
                self._cut(run)
        if self._held > self.max_bytes:
            self._prune()

    def _cut(self, run: Run) -> None:
        data = np.frombuffer(run.data, dtype=np.uint8)
        ends = np.flatnonzero(data == 0x0A).astype(np.int64) + 1
        if not ends.shape[0] or ends[-1] != data.shape[0]:
            ends = np.append(ends, np.int64(data.shape[0]))
        # before each line: its estimated tokens, and bytes other than spaces, tabs, CR and LF (a
        # line of none is blank)
        tokens_at, solid_at = prefixes_at(run.data, np.concatenate(([0], ends)))
        starts: list[tuple[int, int, float]] = []  # (first line, kind, score) of each unit
        asked: set[int] = set()  # first lines of the units the user asked for
        heads: set[int] = set()  # first lines of the units that head a section
        leads: dict[int, int] = {}  # a unit's first line -> lines of its lead-in
        likely: dict[int, float] = {}  # a unit's first line -> the probability of the prior's line there

        def line_of(number: int) -> bytes:
            at = number - run.first_line
            return run.data[int(ends[at - 1]) if at else 0 : int(ends[at])]

        # which lines lead in to a compiler's diagnostic (``LEAD_IN``), by index in the run
        leading = np.asarray(
            [LEAD_IN.match(strip_ansi(line_of(n))) is not None for n in range(run.first_line, run.last_line + 1)],
            dtype=bool,
        )

        for trace in run.traces:
            kind = _kind(trace.reason)
            first = max(trace.first_line, run.first_line)
            if first > run.last_line:  # a window of the next piece of a KEEP run split at its cap
                break
            if kind == PROTECTED and trace.hit_line > run.last_line:
                kind = None  # the window's failure line is in the next run: these lines lead up to it
            elif (
                trace.reason == "protected:prior"
                and run.first_line <= trace.hit_line <= run.last_line  # (its line may be in the next run)
                and leading[trace.hit_line - run.first_line]
            ):
                kind = None  # the prior's line leads in to a compiler's diagnostic: chosen only with it
            elif kind == PROTECTED and trace.hit_line:
                # the unit starts at the failure line: lines before it in its window go with the unit
                # before, but for its lead-in (where a compiler's diagnostic comes from): alone it was
                # chosen without the error line
                first = max(first, trace.hit_line)
                if first == trace.hit_line:  # (not a window after its failure line's)
                    name = trace.reason.removeprefix("protected:")
                    floor = max(run.first_line, starts[-1][0] + 1 if starts else 0)
                    if name in _ABOVE and first > floor:
                        first -= 1  # the finding's code and message, over its location line
                    head = first
                    floor = max(floor, trace.hit_line - LEAD_LINES)
                    while first > floor and leading[first - 1 - run.first_line]:
                        first -= 1
                    leads[first] = head - first
                    if name in _SECTION:
                        heads.add(first)
            if kind is None and starts:
                if trace.score > starts[-1][2]:
                    starts[-1] = (starts[-1][0], starts[-1][1], trace.score)
                continue
            if starts and starts[-1][0] == first:  # a window that begins in the unit before
                continue
            if kind == TAIL and starts and starts[-1][1] == TAIL:  # the last lines are one unit
                continue
            starts.append((first, SCORED if kind is None else kind, trace.score))
            if trace.reason == "protected:prior":
                likely[first] = trace.prior
        if not starts or starts[0][0] != run.first_line:
            starts.insert(0, (run.first_line, SCORED, 0.0))
        # a line asked for starts a unit, wherever in its window (whose first hit may be a built-in's)
        for number in range(run.first_line, run.last_line + 1) if self._asked else ():
            text = strip_ansi(line_of(number)).rstrip(b"\n").removesuffix(b"\r")
            if any(regex.search(text) for regex in self._asked):
                at = bisect.bisect_right([first for first, _, _ in starts], number) - 1
                unit_first = starts[at][0]
                if number - unit_first <= leads.get(unit_first, -1):  # its failure line, or a lead-in to it
                    asked.add(unit_first)
                    continue
                if unit_first in asked and leading[unit_first - run.first_line : number - run.first_line].all():
                    # the line an asked lead-in leads into (--protect '^a\.c' matches "a.c: In function"
                    # and the error under it): one unit, its lead-in chosen only with it
                    leads[unit_first] = number - unit_first
                    continue
                if unit_first != number:
                    starts.insert(at + 1, (number, PROTECTED, starts[at][2]))
                asked.add(number)
        # a unit's last lines that lead in to a diagnostic after it are a unit of their own (a
        # lead-in, chosen only with the unit after it)
        ends_at = [first for first, _, _ in starts[1:]] + [run.last_line + 1]
        for j in range(len(starts) - 1, -1, -1):
            cut = ends_at[j]
            # (never into the unit's own lead-in and failure line, which may read as a lead-in too:
            # g++'s "t.cpp:19:45:   required from here" asked for by -q t.cpp)
            floor = starts[j][0] + leads.get(starts[j][0], 0)
            while cut - 1 > floor and leading[cut - 1 - run.first_line]:
                cut -= 1
            if cut < ends_at[j]:
                starts.insert(j + 1, (cut, SCORED, 0.0))
        bounds = [first - run.first_line for first, _, _ in starts] + [run.lines]
        # blank lines alone (a stream's last line, say) join the unit before: alone they would be
        # left out, and cost a summary line where keeping them costs next to nothing
        own = [i == 0 or solid_at[bounds[i + 1]] > solid_at[bounds[i]] for i in range(len(starts))]
        starts = [start for start, keep in zip(starts, own, strict=True) if keep]
        bounds = [bound for bound, keep in zip(bounds, [*own, True], strict=True) if keep]
        for (first, kind, score), a, b in zip(starts, bounds, bounds[1:], strict=False):
            if b <= a:
                continue
            lo = int(ends[a - 1]) if a else 0
            text = strip_ansi(run.data[lo : int(ends[min(b, a + _MAX_SHAPES_PER_UNIT) - 1])])
            # (blank lines have no shape: they would make every two units with one alike)
            shapes = [zlib.crc32(shape) for shape in line_shapes(text) if shape.strip()]  # the same in every process
            solid = np.diff(solid_at[a : b + 1]) > 0
            costs = tokens_at[a + 1 : b + 1] - tokens_at[a]
            key = shapes[0] if shapes else 0
            n_bytes = int(ends[b - 1]) - lo
            found = np.flatnonzero(result_lines(run.data[lo : int(ends[b - 1])], ends[a:b] - lo))
            # the last that reports failed tests, else the last: node's counts end "# todo 0", a
            # go run's "ok pkg" comes after "FAIL pkg" (the verdict chosen alone said so, helper-41)
            begins = [int(ends[a + i - 1]) if a + i else 0 for i in found.tolist()]
            failing = [
                i for i, at in zip(found.tolist(), begins, strict=True) if reports_failure(run.data[at : ends[a + i]])
            ]
            if failing:
                self.verdict, self._verdict_failed = first + failing[-1], True
            elif found.shape[0] and not self._verdict_failed:
                self.verdict = first + int(found[-1])
            if solid.any():
                self.last_solid = first + int(np.flatnonzero(solid)[-1])
            unit = Unit(
                first,
                n_bytes,
                costs,
                kind,
                score,
                frozenset(shapes),
                key,
                solid,
                first in asked,
                leads.get(first, 0),
                leading[a:b],
                first in heads,
                _LIBRARY.search(strip_ansi(line_of(first + leads.get(first, 0)))) is not None,
                likely.get(first, 0.0),
            )
            self.units.append(unit)
            self._held += unit.held

    def _order(self) -> list[int]:
        """Indexes of the units, most likely to be chosen first."""
        seen: dict[int, int] = {}
        rank = []
        for i, u in enumerate(self.units):
            repeat = seen.get(u.key, 0)
            seen[u.key] = repeat + 1
            rank.append((u.kind, not u.asked, repeat >= MAX_PER_SHAPE, -u.score, u.first_line, i))
        return [r[-1] for r in sorted(rank)]

    def _prune(self) -> None:
        kept, held = [], 0
        for i in self._order():
            size = self.units[i].held
            if held + size > self.max_bytes // 2:
                continue
            kept.append(i)
            held += size
        self.units = [self.units[i] for i in sorted(kept)]
        self._held = held

    def select(self) -> Selection:
        """Choose units until the budget is spent (see the module docstring); all of them if they fit."""
        chosen = _Chosen(self.lines, self.drop_tokens)
        everything = _Chosen.whole(self.lines, self.drop_tokens, self.units)
        if everything.kept + self.drop_tokens * everything.gaps(everything.ranges) <= self.budget:
            return everything.selection()  # no pressure: the filter's own output fits
        # the test tool's verdict ("79 failed, 1 passed in 0.97s") first, whatever the budget: the
        # failures' own units had spent the budget and left the last lines out; with none, a failed
        # command's own last line kept when it fits with a summary either side (a fixture
        # checker's "fixtures: 1714 consistent, 286 drifted"; a CI log's last line is its runner's,
        # "Done. Your build exited with 1.": on the corpus at 1000 / 4000 tokens it took a case's
        # full recall each)
        # (pinned, not added: its unit is still weighed, its other lines may be a distinct failure's)
        verdict = self.verdict if self.verdict is not None else self.last_solid if self.own_end else 0
        for unit in self.units:
            at = verdict - unit.first_line
            if 0 <= at < len(unit.costs):
                tokens = float(unit.costs[at]) - (float(unit.costs[at - 1]) if at else 0.0)
                if self.verdict is not None or tokens + 2 * self.drop_tokens <= self.budget:
                    chosen.pin(verdict, tokens)
        order = self._order()
        for kind in (PROTECTED, SCORED, TAIL, HEAD):
            # the likeliest few: a budget holds few units, and each step compares with all left
            # lines kept only as the lead-in or context of others (a scored unit with no score, not
            # the prior's) come in the second round
            units = [
                u
                for u in (self.units[i] for i in order)
                if u.kind == kind and (kind != SCORED or u.score > 0 or u.prior > 0)
            ]
            self._choose(chosen, units[:MAX_CANDIDATES], kind)
        for kind in (PROTECTED, SCORED):  # room left: repeats of a shape beyond the cap, lead-ins
            units = [u for u in (self.units[i] for i in order) if u.kind == kind and u.first_line not in chosen.taken]
            if kind == SCORED:  # a lead-in only with the unit it leads into (not a failure's lead-in alone)
                units = [u for u in units if u.score > 0 or u.prior > 0 or u.last_line + 1 in chosen.taken]
            self._choose(chosen, units[:MAX_CANDIDATES], kind, capped=False)
        return chosen.selection()

    def _choose(self, chosen: _Chosen, units: list[Unit], kind: int, capped: bool = True) -> None:
        """Add units of one kind to ``chosen`` in MMR order while the budget has room (with
        ``capped``, at most ``MAX_PER_SHAPE`` units of one first-line shape)."""
        best = max((u.score for u in units), default=0.0)
        floor = PROTECTED_FLOOR if kind == PROTECTED else 0.0
        # (a unit of the prior's line: its probability, when its windows score less)
        relevance = [max(floor + (1 - floor) * (u.score / best if best > 0 else 0.0), u.prior) for u in units]
        relevance = [ASKED_RELEVANCE if u.asked else r for u, r in zip(units, relevance, strict=True)]
        # units whose first lines share a shape: the first of them gets the best relevance of all
        # (later copies score a little higher as the stream's statistics grow)
        best_of: dict[int, float] = {}
        first_of: dict[int, int] = {}
        by_line = sorted(range(len(units)), key=lambda j: units[j].first_line)
        for j in by_line:
            best_of[units[j].key] = max(best_of.get(units[j].key, 0.0), relevance[j])
            first_of.setdefault(units[j].key, j)
        for key, j in first_of.items():
            relevance[j] = best_of[key]
        # a failure reported inside a library comes after the user's own, lifted or not (below)
        discount = [LIBRARY_PENALTY if kind == PROTECTED and u.library and not u.asked else 0.0 for u in units]
        relevance = [r - d for r, d in zip(relevance, discount, strict=True)]
        own = list(relevance)
        lifted = [False] * len(units)
        if kind == PROTECTED:
            # a failure line whose next lines are another unit (a pytest "E" line, then its location
            # lines, which often score higher): it gets that unit's relevance, and comes first
            # (less its own library discount: a g++ error inside <stl_heap.h> lifted by the
            # "make: *** ... Error 1" line after it had come before the user's own error)
            for j, k in itertools.pairwise(by_line):
                lift = own[k] - discount[j]
                if units[k].first_line == units[j].last_line + 1 and lift >= relevance[j] and not units[k].asked:
                    relevance[j], lifted[j] = lift, True
        redundancy = [chosen.redundancy(u) for u in units]

        def mmr(j: int) -> tuple[float, bool, float, int]:
            # ties: a lifted failure line before the lines that lifted it, then by relevance of its own
            return LAMBDA * relevance[j] - (1 - LAMBDA) * redundancy[j], lifted[j], own[j], -units[j].first_line

        left = set(range(len(units)))
        while left and chosen.room(self.budget):
            i = max(left, key=mmr)
            left.discard(i)
            unit = units[i]
            if capped and chosen.per_key.get(unit.key, 0) >= MAX_PER_SHAPE:
                continue
            part = chosen.fit(unit, self.budget, kind)
            if part is None and kind == PROTECTED:
                chosen.name(unit, self.budget)  # a failure line over the whole budget: its start, in a summary
            if lifted[i] and unit.heads and part != (0, len(unit.costs)):
                # a lifted section header that does not fit whole waits, its own relevance back, for
                # the unit that lifted it: its first lines alone (pytest's "=== FAILURES ===", a
                # test's name, its source) tell less than the failure line after them
                relevance[i], lifted[i] = own[i], False
                left.add(i)
                continue
            if part is None:
                continue
            chosen.add(unit, *part)
            if kind == PROTECTED and part[1] < len(unit.costs):
                # the line its cut stopped at, when over the whole budget, is named (a traceback's
                # 100 KB message: its head was kept and the message folded into passing lines, helper-67)
                chosen.name(unit, self.budget, at=part[1])
            for j in left:
                redundancy[j] = max(redundancy[j], _jaccard(units[j].shapes, unit.shapes))


def _union(ranges: list[tuple[int, int]], more: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted line ranges ``ranges`` and ``more`` as sorted, disjoint ranges (touching ones merged)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges + more):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


class _Chosen:
    """The line ranges chosen so far and what they cost: their estimated tokens plus a summary per gap."""

    def __init__(self, n_lines: int, drop_tokens: float) -> None:
        self.n_lines = n_lines
        self.drop_tokens = drop_tokens
        self.ranges: list[tuple[int, int]] = []  # sorted, disjoint, 1-based inclusive
        self.kept = 0.0
        self.per_key: dict[int, int] = {}
        self.units: list[Unit] = []
        self.taken: set[int] = set()  # first lines of the units chosen (units never share lines)
        self.pinned: tuple[int, float] | None = None  # a line chosen alone (the verdict) and its tokens
        self.named: list[int] = []  # failure lines named in DROP summaries of their own (sorted)

    @classmethod
    def whole(cls, n_lines: int, drop_tokens: float, units: list[Unit]) -> _Chosen:
        """All of ``units`` (in line order) chosen."""
        chosen = cls(n_lines, drop_tokens)
        for unit in units:
            if chosen.ranges and unit.first_line <= chosen.ranges[-1][1] + 1:
                chosen.ranges[-1] = (chosen.ranges[-1][0], unit.last_line)
            else:
                chosen.ranges.append((unit.first_line, unit.last_line))
            chosen.kept += float(unit.costs[-1])
        return chosen

    def gaps(self, ranges: list[tuple[int, int]]) -> int:
        """DROP runs left between and around ``ranges`` (touching ranges leave none between them),
        the named lines each one of its own."""
        count, line = len(self.named), 1
        for a, b in _union(ranges, [(n, n) for n in self.named]) if self.named else ranges:
            count += a > line
            line = b + 1
        return count + (line <= self.n_lines)

    def cost(self, first: int, last: int, tokens: float) -> float:
        """The output's estimated tokens if lines ``first..last`` (``tokens`` of them new) were added."""
        merged = self._merged(first, last)
        return self.kept + tokens - self._pinned_in(first, last) + self.drop_tokens * self.gaps(merged)

    def _pinned_in(self, first: int, last: int) -> float:
        """The tokens of the pinned line if it is in ``first..last`` (counted already), else 0."""
        if self.pinned is not None and first <= self.pinned[0] <= last:
            return self.pinned[1]
        return 0.0

    def _merged(self, first: int, last: int) -> list[tuple[int, int]]:
        return _union(self.ranges, [(first, last)])

    def fit(self, unit: Unit, budget: float, kind: int) -> tuple[int, int] | None:
        """The unit's lines (0-based first, end) that fit in ``budget``: all of them; else, for a
        protected unit its first lines, with its lead-in if they reach past its failure line, else from
        its failure line on; for the tail its last ones (before its last line over the whole budget);
        None if no part fits or the part is only blank lines."""
        n = int(unit.costs.shape[0])
        total = float(unit.costs[-1])
        if self.cost(unit.first_line, unit.last_line, total) <= budget:
            return (0, n) if unit.solid.any() else None
        if kind == TAIL:
            # most lines k of the end that fit (a suffix's tokens shrink as k falls); after a line
            # over the whole budget (a state dump after the verdict), the lines before it
            over = np.flatnonzero(np.diff(unit.costs, prepend=0.0) > budget)
            end = int(over[-1]) if over.shape[0] else n
            for k in range(min(end, n - 1), 0, -1):
                start = float(unit.costs[end - k - 1]) if end > k else 0.0
                if (
                    self.cost(unit.first_line + end - k, unit.first_line + end - 1, float(unit.costs[end - 1]) - start)
                    <= budget
                ):
                    return (end - k, end) if unit.solid[end - k : end].any() else None
            return None
        if kind != PROTECTED:
            return None
        # its first lines with its lead-in (where the diagnostic comes from) if they reach past its
        # failure line, else from its failure line on
        for a, least in ((0, unit.lead + 1), (unit.lead, unit.lead + 1)):
            start = float(unit.costs[a - 1]) if a else 0.0
            room = budget - self.cost(unit.first_line + a, unit.first_line + a, 0)
            k = int(np.searchsorted(unit.costs, start + room, side="right"))
            while k > a + 1 and unit.leads_in[k - 1]:
                k -= 1  # a lead-in of the next diagnostic, without it
            if k >= least and unit.solid[a:k].any():
                return a, k
        return None

    def name(self, unit: Unit, budget: float, at: int | None = None) -> None:
        """Name ``unit``'s failure line (or its line ``at``, 0-based: the one a cut of it stopped
        at) in a DROP summary of its own (its start, ``NAMED_CHARS`` characters) if the line alone is
        over ``budget`` and the summaries it adds fit."""
        at = unit.lead if at is None else at
        line = unit.first_line + at
        if float(unit.costs[at]) - (float(unit.costs[at - 1]) if at else 0.0) <= budget:
            return  # (one that fits the budget is kept or left out whole, as any other)
        tokens = NAMED_CHARS / SUMMARY_CHARS_PER_TOKEN
        bisect.insort(self.named, line)
        if self.kept + tokens + self.drop_tokens * self.gaps(self.ranges) > budget:
            self.named.remove(line)
            return
        self.kept += tokens
        if unit.first_line not in self.taken:  # (a unit cut at the line: counted when its lines were)
            self.per_key[unit.key] = self.per_key.get(unit.key, 0) + 1
            self.taken.add(unit.first_line)

    def pin(self, line: int, tokens: float) -> None:
        """Choose line ``line`` (1-based) of ``tokens`` alone, its unit left to be weighed with the others."""
        self.kept += tokens
        self.ranges = self._merged(line, line)
        self.pinned = (line, tokens)

    def add(self, unit: Unit, a: int, b: int) -> None:
        """Choose lines ``a..b-1`` (0-based in ``unit``)."""
        start = float(unit.costs[a - 1]) if a else 0.0
        self.kept += float(unit.costs[b - 1]) - start - self._pinned_in(unit.first_line + a, unit.first_line + b - 1)
        self.ranges = self._merged(unit.first_line + a, unit.first_line + b - 1)
        self.per_key[unit.key] = self.per_key.get(unit.key, 0) + 1
        self.units.append(unit)
        self.taken.add(unit.first_line)

    def room(self, budget: float) -> bool:
        """Whether any of the budget is left (a unit next to a chosen one adds no summary)."""
        return budget - self.kept - self.drop_tokens * self.gaps(self.ranges) > 0

    def redundancy(self, unit: Unit) -> float:
        """Largest Jaccard similarity of ``unit``'s shapes to a chosen unit's."""
        return max((_jaccard(unit.shapes, u.shapes) for u in self.units), default=0.0)

    def selection(self) -> Selection:
        """The chosen ranges as a ``Selection``."""
        first = np.asarray([a for a, _ in self.ranges], dtype=np.int64)
        last = np.asarray([b for _, b in self.ranges], dtype=np.int64)
        return Selection(first, last, np.asarray(self.named, dtype=np.int64))
