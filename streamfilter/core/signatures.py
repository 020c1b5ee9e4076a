"""Failure signatures: lines that are kept whatever the query says.

A signature is a named regular expression over one line of scoring text (escapes
removed, case kept). The built-in ones are the table in ``signature_table`` (one record
each, with its family and an example line); users add their own with ``--protect REGEX``.
Evidence that shares no word with a query (jest's ``●``, pytest's ``E   `` lines, a
compiler's caret line, ``exit code 1``) is found here, not by BM25.

Matching is done on a whole block at once: the signatures without ``find`` are one
alternation anchored at a line start (``\\n`` literal prefix, which ``re`` scans
for quickly), plus a few unanchored literals searched with ``bytes.find``.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .normalize import gather_lines
from .settings import check_pattern
from .signature_table import EXIT_VERDICTS, TABLE
from .tokens import KeySet, TokenTable, token_key

__all__ = (
    "DEFAULT_SIGNATURES",
    "EXIT_VERDICTS",
    "LEAD_IN",
    "LEAD_LINES",
    "Signature",
    "SignatureSet",
    "first_bytes",
    "required_literal",
)


@dataclass(frozen=True, slots=True)
class Signature:
    """One named failure signature.

    Attributes:
        name: short name shown in decision traces (``protected:<name>``).
        pattern: a regex (bytes) matched at the start of a line, after any
            indentation. It must begin with a literal byte, so that ``re`` skips a
            line at its first byte; or, with ``find``, it only confirms a hit.
        find: regexes searched anywhere in the text, each beginning with a literal
            (which ``re`` scans for quickly). A line with a match is a hit; when
            ``pattern`` is also given, the line must match it too.
        max_hits: most lines of the stream this signature protects (the first
            ones); None for no limit. For signatures that can repeat by the
            hundred (compiler warnings), so the first ones are kept.
        section: the line heads a section of failure reports (pytest's
            ``=== FAILURES ===``, cargo's ``failures:``): the lines after it are
            kept whatever their indentation, up to the filter's ``section_lines``.
        record: the line heads a report that ends with its record (at a blank line):
            the rest of the record is kept whatever its indentation, up to the
            filter's ``section_lines``.
        anywhere: the ``find`` regexes are searched in every line, not only in the
            lines the trigger prefilter lets through: for a signature with no trigger
            word whose finders share a literal rare enough to rule out most blocks
            at once (``.py:``).
        shape_above: its repeats (``FilterConfig.max_repeats``) are told apart by the
            shape of the line above it too: for a location line under its finding
            (ruff's ``  --> a.py:3:1``), whose own shape is the same for every finding.
        found: a hit is a failure found, after which the tail can be short
            (``FilterConfig.found_tail_lines``). False for a line that says only that a command or
            a run failed (``exit code 1``, make's ``*** [all] Error 1``, ``BUILD FAILED``, a run's
            failed counts), that warns, or that a script may well get past (a missing file, git's
            ``fatal:`` from a probe such as ``git describe``), and for ``--protect`` patterns.
    """

    name: str
    pattern: bytes = b""
    find: tuple[bytes, ...] = ()
    max_hits: int | None = None
    section: bool = False
    record: bool = False
    anywhere: bool = False
    shape_above: bool = False
    found: bool = True


# the table's text regexes as the bytes the matching runs on; an entry's id is its index
DEFAULT_SIGNATURES: tuple[Signature, ...] = tuple(
    Signature(
        name=e.name,
        pattern=e.pattern.encode(),
        find=tuple(f.encode() for f in e.find),
        max_hits=e.max_hits,
        section=e.section,
        record=e.record,
        anywhere=e.anywhere,
        shape_above=e.shape_above,
        found=e.found,
    )
    for e in TABLE
)

# The lines a compiler prints before a diagnostic to say where it comes from, matched at a line's
# start (escapes removed): gcc's and clang's "In file included from a.h:3," and its indented
# "from b.cpp:1:" lines, "a.cpp: In function 'int f()':", "a.h:5:7: In instantiation of '...':" and
# its "required from ..." chain down to "t.cpp:8:9:   required from here"; and TAP's plan and counts
# before its "# fail 2" (node --test's "1..62", "# tests 62", "# pass 60"). A protected line keeps
# those right before it, at most LEAD_LINES, as it keeps its frames after it.
LEAD_LINES = 20
LEAD_IN = re.compile(
    rb"[ \t]*(?:In file included from \S|from \S+:\d+[,:][ \t\r]*$"
    rb"|\S+: (?:In (?:(?:static )?member )?function|In constructor|In destructor|In instantiation of"
    rb"|In lambda function|In substitution of|At global scope|At top level)\b"
    rb"|\S+:\d+:\d+:[ \t]+required (?:from|by)\b"
    rb"|(?:---|\+\+\+) \S+\t"  # diff -u's file lines, over its first hunk
    rb"|\[warn\] \S+[ \t\r]*$"  # prettier's files, before "[warn] Code style issues found in 2 files."
    rb"|1\.\.\d+[ \t\r]*$|(?:#|\xe2\x84\xb9) (?:tests|suites|pass|cancelled|skipped|todo) \d+[ \t\r]*$)"  # TAP's
)

# Every built-in signature holds one of these tokens (after tokenizing, lowercased)...
TRIGGER_WORDS = (
    "error errors err errored fail fails failed failure failures failing fatal exception exceptions "
    "traceback panic panicked assert assertion asserts expected received undefined returned collect "
    "segmentation dumped such found timed timeout exceeded killed exit exited offenses warning warnings sanitizer "
    "caused wrong make gmake ninja cmake go rspec denied abort aborted recent ts tsx severity issues not "
    "cannot unable terminate curl memory unhandled executed standard semicolons invalid uninitialised "
    "conditional mismatched unbound terminated can died illegal executing rated stop space refused "
    "econnrefused enotfound resolve resolution unreachable certificate rejected reformat kt kts crash pull "
    "mix diff critical severe conflict awk mawk gawk expecting unterminated unexpected "
    "400 401 403 404 405 408 410 429 500 502 503 504"
).split()
_TRIGGERS = KeySet.of(token_key(w.encode()) for w in TRIGGER_WORDS)


def _symbol_lines(text: bytes, ends: npt.NDArray[np.int64], first: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """...or starts, after its indentation, with a symbol: ``^ = > ● ✕ ✗ ×``, ``E `` (pytest),
    ``[-`` (Pester), or a number and ``)`` (numbered failure lists). ``first``: each
    line's first non-blank byte (``LineLayout.first``)."""
    arr = np.frombuffer(text, dtype=np.uint8)
    n = arr.shape[0]
    if ends.shape[0] == 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    # the bytes at first .. first+3, 0 past the end of the text
    b0, b1, b2, b3 = (np.where(first + k < n, arr[np.minimum(first + k, n - 1)], 0) for k in range(4))
    digit0 = (b0 - np.uint8(48)) < 10
    symbol = (
        (b0 == ord("^"))
        | (b0 == ord("="))
        | (b0 == ord(">"))
        | (b0 == 0xE2)
        | (b0 == 0xC3)
        | ((b0 == ord("E")) & (b1 == ord(" ")))
        | ((b0 == ord("[")) & (b1 == ord("-")))
        | (digit0 & ((b1 == ord(")")) | (b2 == ord(")")) | (b3 == ord(")"))))
    )
    return np.flatnonzero(symbol & (first < ends)).astype(np.int64)


_META = frozenset(b".^$*+?{}[]()|\\")


def _skip_class(pattern: bytes, i: int) -> int:
    """Offset just past the character class that starts at ``pattern[i]`` (``[``)."""
    i += 1
    if i < len(pattern) and pattern[i] == ord("^"):
        i += 1
    if i < len(pattern) and pattern[i] == ord("]"):
        i += 1  # a "]" first in the class is a literal
    while i < len(pattern) and pattern[i] != ord("]"):
        i += 2 if pattern[i] == ord("\\") else 1
    return i + 1


def _skip_group(pattern: bytes, i: int) -> int:
    """Offset just past the group that starts at ``pattern[i]`` (``(``)."""
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if c == ord("\\"):
            i += 2
            continue
        if c == ord("["):
            i = _skip_class(pattern, i)
            continue
        depth += (c == ord("(")) - (c == ord(")"))
        i += 1
        if depth == 0:
            break
    return i


def first_bytes(pattern: bytes) -> frozenset[int] | None:
    """The bytes a match of ``pattern`` can start with, or None when any could (or it is not known).

    Read from ``re``'s own parse of the pattern: literals, classes of literals and ranges,
    alternatives, groups and repeats (a repeat that may be empty lets the next item start
    the match too). Anything else (categories such as ``\\S``, look-arounds, flags) gives None.
    """
    parser = importlib.import_module("re._parser")
    try:
        items = list(parser.parse(pattern))
    except re.error:
        return None
    first, empty = _first_of(items)
    return None if first is None or empty else frozenset(first)


def _first_of(items: list[tuple[Any, Any]]) -> tuple[set[int] | None, bool]:
    """First bytes of a sequence of parsed items, and whether it can match the empty string."""
    constants = importlib.import_module("re._constants")
    out: set[int] = set()
    for op, arg in items:
        first: set[int] | None
        if op is constants.LITERAL:
            first, empty = {arg}, False
        elif op is constants.IN:
            first, empty = _class_bytes(arg, constants), False
        elif op is constants.BRANCH:
            union: set[int] = set()
            empty = False
            for branch in arg[1]:
                sub, sub_empty = _first_of(list(branch))
                if sub is None:
                    return None, False
                union |= sub
                empty = empty or sub_empty
            first = union
        elif op is constants.SUBPATTERN and not arg[1] and not arg[2]:  # a group without flags
            first, empty = _first_of(list(arg[3]))
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
            first, empty = _first_of(list(arg[2]))
            empty = empty or arg[0] == 0
        elif op is constants.AT:  # an anchor takes no byte
            first, empty = set(), True
        else:
            return None, False
        if first is None:
            return None, False
        out |= first
        if not empty:
            return out, False
    return out, True


def _class_bytes(items: list[tuple[Any, Any]], constants: Any) -> set[int] | None:
    """The bytes a parsed character class matches (literals and ranges only)."""
    out: set[int] = set()
    for op, arg in items:
        if op is constants.LITERAL:
            out.add(arg)
        elif op is constants.RANGE:
            out.update(range(arg[0], arg[1] + 1))
        else:  # a negation or a category: not worth spelling out
            return None
    return out


def required_literal(pattern: bytes) -> bytes:
    """The longest run of literal bytes that every match of ``pattern`` contains, or ``b""``.

    Conservative: only bytes outside any group, class or alternative count, a byte
    followed by a quantifier does not, and a pattern with a top-level ``|``, an
    inline flag (``(?i)``) or a look-around gives ``b""``. So, for a pattern compiled
    without IGNORECASE, ``needle not in text`` proves that it cannot match ``text``.
    """
    best = b""
    run = bytearray()
    i = 0
    while i < len(pattern):
        c = pattern[i]
        literal: int | None = None
        if c == ord("\\") and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            literal = None if chr(nxt).isalnum() or nxt >= 0x80 else nxt  # \d \b \n ...: not one byte
            i += 2
        elif c == ord("("):
            if pattern.startswith(b"(?", i) and not pattern.startswith(b"(?:", i):
                return b""  # an inline flag or a look-around
            i = _skip_group(pattern, i)
        elif c == ord("["):
            i = _skip_class(pattern, i)
        elif c == ord("|"):
            return b""
        elif c == ord("{"):
            i = pattern.find(b"}", i) + 1 or len(pattern)
        elif c in _META:
            i += 1
        else:
            literal = c
            i += 1
        if i < len(pattern) and pattern[i] in b"*?+{":
            literal = None  # quantified: it may be absent
        if literal is None:
            if len(run) > len(best):
                best = bytes(run)
            run.clear()
        else:
            run.append(literal)
    return best if len(best) >= len(run) else bytes(run)


_GRAM_BITS = 16  # hashed trigram table: 64 Ki entries (small enough to stay in cache)


def _grams(data: bytes) -> npt.NDArray[np.uint32]:
    """The hashed trigrams of ``data`` (``_GRAM_BITS`` bits each; empty below 3 bytes)."""
    arr = np.frombuffer(data, dtype=np.uint8).astype(np.uint32)
    if arr.shape[0] < 3:
        return arr[:0]
    codes = arr[:-2] | (arr[1:-1] << np.uint32(8)) | (arr[2:] << np.uint32(16))
    hashed: npt.NDArray[np.uint32] = (codes * np.uint32(0x9E3779B1)) >> np.uint32(32 - _GRAM_BITS)
    return hashed


def _text_grams(text: bytes) -> npt.NDArray[np.bool_]:
    """Which hashed trigrams occur in ``text``: a needle with one that does not cannot be in it."""
    seen = np.zeros(1 << _GRAM_BITS, dtype=bool)
    seen[_grams(text)] = True
    return seen


@dataclass(frozen=True, slots=True)
class _Finder:
    """One ``Signature.find`` regex, with a literal that all its matches contain (``b""``: none
    known) and that literal's hashed trigrams."""

    regex: re.Pattern[bytes]
    needle: bytes
    grams: npt.NDArray[np.uint32]

    @classmethod
    def of(cls, pattern: bytes, builtin: bool) -> _Finder:
        needle = required_literal(pattern) if builtin else b""
        return cls(re.compile(pattern, re.MULTILINE), needle, _grams(needle))

    def may_match(self, text: bytes, grams: npt.NDArray[np.bool_] | None) -> bool:
        """False when ``text`` cannot hold a match (its trigrams or its needle are missing)."""
        if grams is not None and self.grams.shape[0] and not grams[self.grams].all():
            return False
        return not self.needle or self.needle in text


_Found = tuple[int, list[_Finder], re.Pattern[bytes] | None]  # signature index, finders, line regex


# Compiled once per process: a filter is made per stream (and twice for a token budget), and
# compiling the table's regexes took about 70 ms each time. Bounded by the distinct patterns seen.
@functools.lru_cache(maxsize=1024)
def _finder(pattern: bytes, builtin: bool) -> _Finder:
    return _Finder.of(pattern, builtin)


@functools.lru_cache(maxsize=1024)
def _line_regex(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(b"[ \t]*(?:" + pattern + b")", re.MULTILINE)


@functools.lru_cache(maxsize=16)
def _anchored_regex(anchored: tuple[tuple[int, bytes], ...]) -> re.Pattern[bytes] | None:
    """The line-start signatures ``(id, pattern)`` as one alternation, each a named group ``g<id>``."""
    if not anchored:  # an empty alternation would match at every line start
        return None
    alternation = b"|".join(b"(?P<g%d>%s)" % (i, pattern) for i, pattern in anchored)
    # "\n" first gives re a literal prefix to scan for; text is prefixed with "\n". A lookahead
    # for the bytes the signatures can start with rejects most lines before the alternation
    starts = [first_bytes(pattern) for _, pattern in anchored]
    known = [b for b in starts if b is not None]
    lead = sorted(set().union(*known))
    ahead = b"(?=[%s])" % b"".join(b"\\x%02x" % c for c in lead) if known and len(known) == len(starts) else b""
    return re.compile(b"\n[ \t]*" + ahead + b"(?:" + alternation + b")", re.MULTILINE)


class SignatureSet:
    """A compiled set of signatures, matched over whole blocks of lines.

    Stateful only in counting hits of signatures with ``max_hits`` (in stream
    order), so feed it one stream's blocks in order.

    Args:
        signatures: the built-in signatures (ids ``0 .. len-1``).
        extra: user regexes, matched anywhere in a line (ids after the built-ins).
        first: a line matching one of the first ``first`` extra patterns gets that
            pattern's id even when a built-in signature matches it too. They are named
            ``user1``, ... (the patterns asked for); the later extras ``query1``, ...
        prior: one more id, ``prior_id``, named ``prior``, that no text matches: the learned line
            prior's lines (``streamfilter.core.prior``), which the filter protects as hits.

    Raises:
        UsageError: a user pattern that is not a valid regular expression.
    """

    def __init__(
        self,
        signatures: Sequence[Signature] = DEFAULT_SIGNATURES,
        extra: Iterable[str] = (),
        first: int = 0,
        prior: bool = False,
    ) -> None:
        sigs = list(signatures)
        for i, pattern in enumerate(extra):
            check_pattern(pattern)
            # the first ``first`` are the ones asked for (user1, ...), the rest a query's symbols (query1, ...)
            name = f"user{i + 1}" if i < first else f"query{i - first + 1}"
            # a pattern asked for is what a user wants kept, not a failure found
            sigs.append(Signature(name, find=(pattern.encode("utf-8", "surrogateescape"),), found=False))
        # the learned prior's lines are hits too (the filter adds them), under the last id
        named = [*sigs, Signature("prior", found=False)] if prior else sigs
        self.prior_id = len(sigs) if prior else -1
        self.names: tuple[str, ...] = tuple(s.name for s in named)
        self._first = first
        self.section = np.asarray([s.section for s in named], dtype=bool)
        self.record = np.asarray([s.record for s in named], dtype=bool)
        self.shape_above = np.asarray([s.shape_above for s in named], dtype=bool)
        self.found = np.asarray([s.found for s in named], dtype=bool)
        anchored = [(i, s) for i, s in enumerate(sigs) if not s.find]
        self._anchored = _anchored_regex(tuple((i, s.pattern) for i, s in anchored))
        # user patterns (ids from here on) have no trigger words: they see every line
        self.builtin = builtin = len(signatures)
        found: list[_Found] = [
            (
                i,
                # a built-in finder is only run on text that holds its required literal
                [_finder(f, i < builtin) for f in s.find],
                _line_regex(s.pattern) if s.pattern else None,
            )
            for i, s in enumerate(sigs)
            if s.find
        ]
        self._found = [f for f in found if f[0] < builtin and not sigs[f[0]].anywhere]
        self._anywhere = [f for f in found if f[0] < builtin and sigs[f[0]].anywhere]
        self._user = [f for f in found if f[0] >= builtin]
        self._left = {i: s.max_hits for i, s in enumerate(sigs) if s.max_hits is not None}

    def find(
        self,
        text: bytes,
        ends: npt.NDArray[np.int64],
        table: TokenTable | None = None,
        first: npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Find the lines of a block that carry a signature.

        Args:
            text: scoring text of whole lines.
            ends: shape ``(n_lines,)``: end offset of each line in ``text``.
            table: the block's ``TokenTable``. With ``first``, the built-in
                signatures are only tried on lines that hold a trigger token
                (``TRIGGER_WORDS``) or start with one of the symbols some signatures
                start with; every built-in signature needs one of the two (an
                ``anywhere`` one is searched in every line).
            first: shape ``(n_lines,)``: offset of each line's first non-blank byte
                (``LineLayout.first``).

        Returns:
            ``(lines, ids)``: 0-based line indexes (sorted, unique) and, for each,
            the index in ``names`` of the signature that matched it: one of the first
            ``first`` extra patterns if any did, else the first in table order.
        """
        lines, sig = self.find_all(text, ends, table, first)
        keep = self.limit(sig)
        return lines[keep], sig[keep]

    def find_all(
        self,
        text: bytes,
        ends: npt.NDArray[np.int64],
        table: TokenTable | None = None,
        first: npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``find`` without the ``max_hits`` limits: a pure function of the block (no state)."""
        starts: list[int] = []
        ids: list[int] = []
        if table is None or first is None:
            self._scan(text, ends, None, self._anchored, self._found + self._anywhere, starts, ids)
        else:
            marks = np.zeros(ends.shape[0], dtype=bool)
            marks[table.lines_with(_TRIGGERS)] = True
            marks[_symbol_lines(text, ends, first)] = True
            lines = np.flatnonzero(marks).astype(np.int64)
            if lines.shape[0] * 3 > ends.shape[0]:
                # most lines are candidates: scanning the whole text is quicker, and its hits on the
                # other lines go (a line's hit must not depend on the block it came in)
                self._scan(text, ends, None, self._anchored, self._found, starts, ids)
                on = marks[np.asarray(starts, dtype=np.int64)].tolist() if starts else []
                starts[:] = [line for line, ok in zip(starts, on, strict=True) if ok]
                ids[:] = [i for i, ok in zip(ids, on, strict=True) if ok]
            elif lines.shape[0]:
                sub, sub_ends = gather_lines(text, ends, lines)
                self._scan(sub, sub_ends, lines, self._anchored, self._found, starts, ids)
            if self._anywhere:  # their literals rule a block out quicker than its trigrams would
                self._scan(text, ends, None, None, self._anywhere, starts, ids, trigrams=False)
        if self._user:
            self._user_lines(text, int(ends.shape[0]), starts, ids)
        if not starts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        lines = np.asarray(starts, dtype=np.int64)
        sig = np.asarray(ids, dtype=np.int64)
        # per line, the id of one of the first ``first`` extra patterns (--protect: its lines are
        # exempt from the repeat gate) before any other; else the first signature's in order
        preferred = (sig >= self.builtin) & (sig < self.builtin + self._first)
        order = np.lexsort((np.where(preferred, sig - (1 << 40), sig), lines))
        lines, sig = lines[order], sig[order]
        first = np.ones(lines.shape[0], dtype=bool)
        first[1:] = lines[1:] != lines[:-1]
        return lines[first].astype(np.int64), sig[first]

    def limit(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Apply the ``max_hits`` limits to the next hits of the stream (``find_all``'s ids, in order).

        Returns:
            shape ``(h,)``: which hits still count; the limits are used up by them.
        """
        keep = np.ones(ids.shape[0], dtype=bool)
        for i, left in self._left.items():
            at = np.flatnonzero(ids == i)
            keep[at[left:]] = False
            self._left[i] = max(0, left - at.shape[0])
        return keep

    def _user_lines(self, text: bytes, n_lines: int, out_lines: list[int], out_ids: list[int]) -> None:
        """``--protect`` patterns: searched in each line on its own (no line end), so ``^``, ``\\A``
        and ``$`` mean the line's start and end, and a match never spans lines or depends on blocks."""
        for index, line in enumerate(text.split(b"\n")[:n_lines]):
            for i, finders, _ in self._user:
                if finders[0].regex.search(line.removesuffix(b"\r")) is not None:
                    out_lines.append(index)
                    out_ids.append(i)
                    break

    @staticmethod
    def _scan(
        text: bytes,
        ends: npt.NDArray[np.int64],
        line_map: npt.NDArray[np.int64] | None,
        anchored: re.Pattern[bytes] | None,
        found: list[_Found],
        out_lines: list[int],
        out_ids: list[int],
        *,
        trigrams: bool = True,
    ) -> None:
        """Append (line, signature) hits in ``text`` to the lists; ``line_map`` maps its lines to the block's.

        ``trigrams``: rule out finders by the text's trigrams before their literals.
        """
        hit_starts: list[int] = []
        if anchored is not None:
            padded = b"\n" + text
            pos = 0
            while pos >= 0:
                m = anchored.search(padded, pos)
                if m is None:
                    break
                hit_starts.append(m.start())  # the "\n" before the line = the line's offset in text
                out_ids.append(int(m.lastgroup[1:]) if m.lastgroup else 0)
                pos = padded.find(b"\n", m.start() + 1)  # one anchored signature per line is enough
        grams = _text_grams(text) if trigrams and found and len(text) >= 3 else None
        for i, finders, confirm in found:
            positions = [m.start() for f in finders if f.may_match(text, grams) for m in f.regex.finditer(text)]
            if not positions:
                continue
            line_of = np.sort(np.searchsorted(ends, np.asarray(positions, dtype=np.int64), side="right"))
            distinct = np.ones(line_of.shape[0], dtype=bool)
            distinct[1:] = line_of[1:] != line_of[:-1]
            for line in line_of[distinct].tolist():
                start = int(ends[line - 1]) if line else 0
                if confirm is None or confirm.match(text, start) is not None:
                    hit_starts.append(start)
                    out_ids.append(i)
        if hit_starts:
            lines = np.searchsorted(ends, np.asarray(hit_starts, dtype=np.int64), side="right")
            out_lines.extend((line_map[lines] if line_map is not None else lines).tolist())
