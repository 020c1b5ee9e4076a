"""The learned line prior: how likely a line is part of the failure a developer must see.

Format-agnostic, so that it keeps failures of tools no signature knows. One logistic model (Cox
1958; fitted by ``streamfilter.train_prior``) over hashed features of a line, its neighbours and
where it stands, after the reference prior in ``../shared/reference/prior`` (its features, made
streaming: nothing looks further ahead than ``REACH`` lines, nor at the stream's length):

- **words** (``content_features``, pure per line, ``FEATURE_BITS`` bits): each word and each pair
  of adjacent words of the line's scoring text (``_words``: a whole identifier, ``AssertionError``
  or ``test_parse``; a path, ``<path>.py``; the punctuation between two words, ``:`` or ``->``),
  with numbers and the letters stuck to them masked (``3eb6`` is an id, not a word); its first and
  last word; its first and last non-blank byte when punctuation (``>``, ``:``, ``^``); whether it
  names a ``path.ext:line``. The first ``NEAR_TOKENS`` words of the line before and of the line
  after, each with weights of their own.
- **where it stands** (``structure``, one-hot groups): lines to the stream's end; lines to the next
  and since the last exit verdict and failure-summary line (``BUILD FAILED``, ``3 failed``),
  signed lines to the stream's first exit verdict; lines to the next and since the last error word
  past its neighbours (the block it is in); how many earlier lines had its shape (its masked
  tokens, a hash, an id or a path one token: ``_id_shapes``, ``_path_runs``); its
  indentation and the change from the line above, its length, blankness; an error word on it and
  on its neighbours, crossed with the lines to the end and with its shape's repeats.

A second logistic model (``context_features``) turns those log-odds into the probability: a line's
own, and its own less the largest within 3, 10 and 30 lines either side (a failure is a block: a
line near a likely one is likelier). It is fitted on out-of-fold log-odds of the first.

``PriorModel.line_logits`` sums a block's word weights per line once (the line's own, and what it
adds to the line after and to the line before); ``PriorModel.logit`` adds the neighbours' sums and
the structure weights when the line's reach has come in; ``PriorModel.probability`` is the second
stage, once ``CONTEXT_REACH`` lines either side are rated. Only hashed ids and weights
ship (``prior.npz``), never a word list. Word features a training set saw in fewer than
``train_prior.MIN_REPOS`` repositories get no weight, so the model learns no one project's names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import re2

from .segment import LineLayout
from .tokens import TokenTable, token_table

__all__ = (
    "ABSENT",
    "CONTEXT_NAMES",
    "CONTEXT_REACH",
    "FEATURE_BITS",
    "NEAR_TOKENS",
    "N_FEATURES",
    "REACH",
    "SEEN_CAP",
    "STRUCTURE_GROUPS",
    "STRUCTURE_NAMES",
    "LineFeatures",
    "PriorModel",
    "ShapeCounter",
    "StreamFacts",
    "ahead_counts",
    "content_features",
    "context_features",
    "default_model",
    "shape_hashes",
    "structure",
)

FEATURE_BITS = 20
N_FEATURES = 1 << FEATURE_BITS
# lines after a line that its features look at: the stream's end, the next exit verdict and
# failure-summary line within this many lines (the filter's look-ahead is longer, so streaming knows them)
REACH = 128
NEAR_TOKENS = 20  # words of each neighbouring line that count

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

# feature kinds, mixed into the hash so that the same token is another feature in each role
_UNIGRAM, _BIGRAM, _FIRST, _FIRST_BYTE, _LAST_BYTE, _PATH_LINE, _LAST = range(1, 8)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xC2B2AE3D27D4EB4F)
_NUM_KEY = np.uint64(0x6D756E3C)  # any number (a token of digits)
_ID_KEY = np.uint64(0x64693C)  # a short run of letters stuck to digits: part of an id
_RUN_KEY = np.uint64(0x6E75723C)  # a run of those and numbers, touching (a hash, an id): one in a shape
_PATH_KEY = np.uint64(0x6874613C)  # a path (tokens joined by "/" or "\\" and ".", "-", "_"): one in a shape
# bytes that join the tokens of a path, in gaps of up to PATH_GAP bytes ("/_", "/../")
PATH_GAP = 4
_PUNCT_KEY = np.uint64(0x7470753C << 24)  # punctuation between two words (its bytes below)
_SOLID = np.arange(256, dtype=np.uint8)  # a byte, but 0 for a space or a tab
_SOLID[[9, 32]] = 0
_PATH_JOIN = np.zeros(256, dtype=bool)
_PATH_JOIN[np.frombuffer(b"/\\.-_", dtype=np.uint8)] = True
_LENGTH_MIX = np.arange(17, dtype=np.uint64) << np.uint64(56)  # a token's length (up to 16) in its key's top byte
_LOW56 = np.uint64((1 << 56) - 1)  # a masked key without the length _masked_keys mixes in
_NUM_KEY_L, _ID_KEY_L = int(_NUM_KEY), int(_ID_KEY)
SCALE_FEATURES = 24  # a line of more word features than this has its sum scaled down


def _line_regex(pattern: bytes) -> re2._Regexp:
    """``pattern`` and the rest of its line, compiled by RE2 over bytes (Latin-1: any byte is one
    character, as for ``re``): one match a line at most, so ``_marked`` makes few match objects."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.never_capture = True
    return re2.compile(b"(?:" + pattern + b")[^\\n]*", options)


# a word that names a failure, anywhere in a line (lower-cased): "AssertionError", "FAILED", "panicked"
_ERROR_WORD = _line_regex(
    rb"error|fail|exception|traceback|fatal|panic|assert|denied|timed? ?out|expected|cannot|can't|undefined"
    rb"|abort|refused|not found|no such|missing|invalid|unable"
)
# a line that sums a failure up: "BUILD FAILED", "Tests failed", "3 failed", "Failures: 2", "errors=1"
_FAILURE_SUMMARY = _line_regex(
    rb"build fail|finished: fail|\b(?:tests?|build|job|step|task|command|check|suite)s? (?:have |has )?failed"
    rb"|\b[1-9]\d* (?:failed|failures?|errors?|failing|broken)\b|\b(?:failures|errors|failed)[:=] ?[1-9]"
)
_BROKEN = _line_regex(rb"broken")  # (one literal: RE2 skips to its first byte, ``_summary_candidates``)


@dataclass(frozen=True, slots=True)
class LineFeatures:
    """A block's lines as the prior sees them (``content_features``); lines are 0-based in the block.

    Attributes:
        lines, ids: the line's own word features as ``(line, feature)`` pairs, in parts of one kind
            each (int64 arrays, ids in ``0 .. N_FEATURES - 1``; joining them costs more than using them).
        counts: shape ``(n_lines,)`` int64: the word features of each line (its pairs in ``lines``).
        near_lines, near_ids: shape ``(m,)`` int64: the unigram features of each line's first
            ``NEAR_TOKENS`` tokens, which its neighbours see.
        shapes: shape ``(n_lines,)`` int64: each line's ``shape_hashes``.
        static: shape ``(n_lines, 4)`` int64: per line its indentation bin (0-6, a tab counts 1
            space), length bin (log2 of its characters, 0-10), an error word on it (0/1) and
            whether it sums a failure up (0/1).
    """

    lines: list[Int64Array]
    ids: list[Int64Array]
    counts: Int64Array
    near_lines: Int64Array
    near_ids: Int64Array
    shapes: Int64Array
    static: Int64Array


def _hash(kind: int, a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64] | None = None) -> Int64Array:
    """Feature ids in ``0 .. N_FEATURES-1`` of values ``a`` (and ``b``) of a kind (multiplicative hashing)."""
    # (uint64 arithmetic wraps around, as hashing wants; numpy does not warn of it for arrays)
    h = a ^ np.uint64(kind * int(_MIX2) % (1 << 64))  # (kinds apart even for small values: a byte)
    h *= _MIX  # (in place: these arrays have a few hundred thousand tokens)
    if b is not None:
        h += b * _MIX2  # the top bits of both products mix a pair (multiplicative hashing)
    h >>= np.uint64(64 - FEATURE_BITS)
    ids: Int64Array = h.view(np.int64)  # (below 2**FEATURE_BITS: the same values)
    return ids


def _masked_keys(
    table: TokenTable, gaps: _Gaps
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Each token's key, numbers and the short letter runs stuck to them (``3eb6``, ``E0308``) masked;
    which tokens are numbers, and which go on a run of masked tokens that touch each other
    (``4164d839``: ``d`` and ``839``; shape ``(n_tokens,)`` bool each). ``gaps``: the tokens' (``_gaps``)."""
    keys = table.keys.copy()
    n = keys.shape[0]
    # a key's low byte is its token's first byte (lower-cased: digits are as they were)
    digit = (keys.astype(np.uint8) - np.uint8(48)) < 10
    if n == 0:
        return keys, digit, digit
    np.copyto(keys, _NUM_KEY, where=digit)
    # a token that touches a number token (no separator between them; a line's first touches none)
    adjacent = gaps.gap[1:] == 0
    touches = np.zeros(n, dtype=bool)
    touches[1:] = digit[:-1] & adjacent
    touches[:-1] |= digit[1:] & adjacent
    short = ~digit & touches & (table.lengths <= 4)
    np.copyto(keys, _ID_KEY, where=short)
    masked = digit | short
    go_on = np.zeros(n, dtype=bool)
    go_on[1:] = masked[1:] & masked[:-1] & adjacent
    # a key of a token longer than 8 bytes also carries its length (``_hash`` mixes it)
    keys ^= _LENGTH_MIX[np.minimum(table.lengths, 16)]
    return keys, digit, go_on


def content_features(text: bytes, ends: Int64Array, table: TokenTable, layout: LineLayout) -> LineFeatures:
    """The hashed features of a block's lines (``LineFeatures``).

    Args:
        text: scoring text of whole lines (``NormalizedBlock.text``).
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
        table: the block's tokens.
        layout: the block's layout (indentation, characters, first non-blank byte, blank lines).
    """
    n_lines = int(ends.shape[0])
    arr = np.frombuffer(text, dtype=np.uint8)
    per_tok = table.per_line
    has_tokens = per_tok > 0
    starts = np.cumsum(per_tok) - per_tok
    first = starts[has_tokens]  # (each line's first token, of the lines with tokens)
    line_first = np.repeat(starts, per_tok)  # (each token's line's first token)
    rank = np.arange(table.keys.shape[0], dtype=np.int64) - line_first  # (in its line)
    line_start = np.zeros(table.keys.shape[0], dtype=bool)
    line_start[first] = True
    words = _block_words(arr, table, line_start, np.repeat(np.arange(n_lines, dtype=np.int64), per_tok), n_lines)
    shapes = _id_shapes(words.path_keys, words.go_on | words.on, rank, line_first, first, has_tokens)
    wkeys, per_line, digit = words.keys, words.per_line, words.digit
    word_line = np.repeat(np.arange(n_lines, dtype=np.int64), per_line)
    uni = _hash(_UNIGRAM, wkeys)
    parts_l = [word_line]
    parts_f = [uni]
    has_words = per_line > 0
    wstarts = np.cumsum(per_line) - per_line
    wfirst = wstarts[has_words]
    if wkeys.shape[0] > 1:
        pairs = np.ones(wkeys.shape[0] - 1, dtype=bool)  # adjacent words of one line: not before a line's first
        pairs[wfirst[1:] - 1] = False
        parts_l.append(word_line[:-1][pairs])
        parts_f.append(_hash(_BIGRAM, wkeys[:-1], wkeys[1:])[pairs])
    if has_words.any():
        with_words = np.flatnonzero(has_words).astype(np.int64)
        parts_l += [with_words, with_words]
        parts_f += [
            _hash(_FIRST, wkeys[wfirst]),
            _hash(_LAST, wkeys[wfirst + per_line[has_words] - 1]),
        ]
    token_parts = len(parts_l)  # (each line's count of these follows from its words)
    lines = np.arange(n_lines, dtype=np.int64)
    solid = ~layout.blank
    if arr.shape[0] and solid.any():
        at = np.minimum(layout.first[solid], arr.shape[0] - 1)
        fb = arr[at]
        # the last non-blank byte: before the line end and any trailing spaces or \r
        last = _last_solid(arr, ends[solid])
        lb = arr[last]
        punct_f = ~(((fb | 0x20) - np.uint8(97) < 26) | (fb - np.uint8(48) < 10) | (fb >= 0x80))
        punct_l = ~(((lb | 0x20) - np.uint8(97) < 26) | (lb - np.uint8(48) < 10) | (lb >= 0x80))
        solid_lines = lines[solid]
        parts_l += [solid_lines[punct_f], solid_lines[punct_l]]
        parts_f += [
            _hash(_FIRST_BYTE, fb[punct_f].astype(np.uint64)),
            _hash(_LAST_BYTE, lb[punct_l].astype(np.uint64)),
        ]
    found = _path_lines(arr, np.compress(digit, table.starts))
    if found.shape[0]:
        pl = np.unique(np.searchsorted(ends, found, side="right"))
        parts_l.append(pl.astype(np.int64))
        parts_f.append(_hash(_PATH_LINE, np.zeros(pl.shape[0], dtype=np.uint64)))
    wrank = np.arange(wkeys.shape[0], dtype=np.int64) - np.repeat(wstarts, per_line)
    near = wrank < NEAR_TOKENS
    static = np.empty((n_lines, 4), dtype=np.int64)
    static[:, 0] = np.minimum((layout.indent + 1) // 2, 6)
    static[:, 1] = _BIT_LENGTH[np.minimum(layout.chars + 1, 1 << 10)] - 1  # floor(log2(chars + 1)), at most 10
    static[:, 2] = _marked(_ERROR_WORD, table.lower, ends)
    static[:, 3] = _marked(_FAILURE_SUMMARY, table.lower, ends, _summary_candidates(table.lower, ends, static[:, 2]))
    # unigrams, the pairs within a line, its first and last word; then the few others
    counts = per_line + np.maximum(per_line - 1, 0) + 2 * has_words
    for part in parts_l[token_parts:]:
        counts += np.bincount(part, minlength=n_lines)
    return LineFeatures(parts_l, parts_f, counts, word_line[near], uni[near], shapes, static)


@dataclass(frozen=True, slots=True)
class _Gaps:
    """Per token of a block (shape ``(n_tokens,)``): the bytes between it and the token before
    (``PATH_GAP + 1`` for a line's first token), the byte right before it, and whether it is its
    line's first."""

    gap: Int64Array
    before: npt.NDArray[np.uint8]
    line_start: npt.NDArray[np.bool_]


def _gaps(arr: npt.NDArray[np.uint8], table: TokenTable, line_start: npt.NDArray[np.bool_]) -> _Gaps:
    """The ``_Gaps`` of a block's tokens (``line_start``: each line's first token)."""
    starts = table.starts
    gap = np.full(starts.shape[0], PATH_GAP + 1, dtype=np.int64)
    np.subtract(starts[1:], starts[:-1], out=gap[1:])
    gap[1:] -= table.lengths[:-1]
    gap[line_start] = PATH_GAP + 1
    return _Gaps(gap, arr[np.maximum(starts - 1, 0)], line_start)


@dataclass(frozen=True, slots=True)
class _Words:
    """A block's tokens made the prior's words (``_block_words``).

    Attributes:
        keys, per_line: the words' keys and the words of each line (``_words``).
        digit, go_on: per token, a number, and on a run of masked tokens (``_masked_keys``).
        path_keys, on: per token, its key with each path's first ``_PATH_KEY``, and on a path (``_path_runs``).
        gaps, parts: the tokens' gaps (``_gaps``), and where the words are (``_word_parts``).
    """

    keys: npt.NDArray[np.uint64]
    per_line: Int64Array
    digit: npt.NDArray[np.bool_]
    go_on: npt.NDArray[np.bool_]
    path_keys: npt.NDArray[np.uint64]
    on: npt.NDArray[np.bool_]
    gaps: _Gaps
    parts: tuple[Int64Array, Int64Array, Int64Array, npt.NDArray[np.uint8], npt.NDArray[np.uint8]]


def _block_words(
    arr: npt.NDArray[np.uint8], table: TokenTable, line_start: npt.NDArray[np.bool_], tok_line: Int64Array, n_lines: int
) -> _Words:
    """The prior's words of a block (``arr``, its bytes; ``line_start``, each line's first token;
    ``tok_line``, each token's line), and what they are made from (``_Words``)."""
    gaps = _gaps(arr, table, line_start)
    keys, digit, go_on = _masked_keys(table, gaps)
    path_keys, on = _path_runs(arr, table, keys, gaps)
    parts = _word_parts(arr, table, on, gaps)
    wkeys, per_line = _words(keys, path_keys, parts, gaps.before, tok_line, n_lines)
    return _Words(wkeys, per_line, digit, go_on, path_keys, on, gaps, parts)


def _path_runs(
    arr: npt.NDArray[np.uint8], table: TokenTable, keys: npt.NDArray[np.uint64], gaps: _Gaps
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """``keys`` with each path's first token ``_PATH_KEY``, and which tokens go on a path (shape
    ``(n_tokens,)``): a path is tokens that touch or are up to ``PATH_GAP`` ``_PATH_JOIN`` bytes
    apart (``gaps``), with a ``/`` or ``\\`` among those bytes
    (``lib/Mojo/Base.pm``, ``src\\app.c``). A file list (``cp a/b.pm blib/a/b.pm``, a compiler's
    ``CC src/x.o``) is then one shape whatever its paths."""
    n = keys.shape[0]
    gap, before = gaps.gap, gaps.before
    slash = np.flatnonzero((before == 47) | (before == 92))
    slash = slash[gap[slash] <= PATH_GAP]
    if slash.shape[0] == 0:
        return keys, np.zeros(n, dtype=bool)
    link = (gap == 0) | ((gap <= PATH_GAP) & _PATH_JOIN[before])
    longer = np.flatnonzero(link & (gap >= 2))  # (few: "/_", "/../"): their other bytes
    for k in range(2, PATH_GAP + 1):
        longer = longer[gap[longer] >= k]
        c = arr[table.starts[longer] - k]
        link[longer[~_PATH_JOIN[c]]] = False
        slash = np.r_[slash, longer[(c == 47) | (c == 92)]]
    slash = slash[link[slash]]
    linked = np.flatnonzero(link)
    # a linked token's run (tokens linked to the one before): the unlinked tokens up to it, as
    # its index less the linked tokens before it (no cumulative sum over every token)
    run = linked - np.arange(linked.shape[0])
    is_slash = np.zeros(n, dtype=bool)
    is_slash[slash] = True
    has_slash = np.zeros(n + 1, dtype=bool)
    has_slash[run[is_slash[linked]]] = True
    on = np.zeros(n, dtype=bool)
    on[linked[has_slash[run]]] = True
    keys = keys.copy()
    keys[np.flatnonzero(on[1:] & ~on[:-1])] = _PATH_KEY  # (each path's first token)
    return keys, on


def _word_parts(
    arr: npt.NDArray[np.uint8], table: TokenTable, on: npt.NDArray[np.bool_], gaps: _Gaps
) -> tuple[Int64Array, Int64Array, Int64Array, npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """Where the prior's words of a block are (``_words``): the first token of each word (its head)
    and the tokens joined to one before (shape ``(n_tokens - heads,)``); the words (indexes of heads)
    with punctuation right before them, and that punctuation's first and last byte that are not
    spaces (0: none), looking at most 2 bytes into the gap from each end."""
    gap, before = gaps.gap, gaps.before
    joined = (gap == 0) | ((gap == 1) & (before == 95)) | on  # (touching, "_", a path)
    heads = np.flatnonzero(~joined)
    glued = np.flatnonzero(joined)
    later = heads[1:]
    starts = table.starts[later]
    glen = gap[later]
    # the gap's first and last byte, or the one after / before it when that is a space (" -> ");
    # a line's first word has no punctuation before it (its gap, PATH_GAP + 1, is not the bytes')
    wide = glen > 1
    first = starts - glen
    lead = _SOLID[arr[first]]
    lead = np.where(lead > 0, lead, _SOLID[arr[first + wide]])
    trail = _SOLID[before[later]]
    trail = np.where(trail > 0, trail, _SOLID[arr[starts - 1 - wide]])
    cand = np.flatnonzero(~gaps.line_start[later] & ((lead | trail) > 0))
    return heads, glued, cand + 1, lead[cand], trail[cand]


def _words(
    keys: npt.NDArray[np.uint64],
    path_keys: npt.NDArray[np.uint64],
    parts: tuple[Int64Array, Int64Array, Int64Array, npt.NDArray[np.uint8], npt.NDArray[np.uint8]],
    before: npt.NDArray[np.uint8],
    tok_line: Int64Array,
    n_lines: int,
) -> tuple[npt.NDArray[np.uint64], Int64Array]:
    """The prior's words of a block, in order: tokens that touch or are joined by ``_`` are one word
    (a whole identifier: ``AssertionError``, ``test_parse``, ``E0308``), a path is one (``<path>``
    and its extension, ``_path_runs``), and the punctuation between two words is one (its first and
    last byte that are not spaces: ``:``, ``->``, ``(``). After the reference prior's tokens
    (``../shared/reference/prior/features.py``), from the filter's own token table: out of fold on
    the corpus they rank a log's lines better than the tokens (benchmarks/quality.md, session 36).

    Args:
        keys: the block's masked token keys (``_masked_keys``); ``path_keys`` the same with each
            path's first token ``_PATH_KEY`` (``_path_runs``).
        parts: where the words are (``_word_parts``).
        before: per token, the byte right before it (``_Gaps.before``).
        tok_line: per token, its line; ``n_lines`` the block's lines.

    Returns:
        the words' keys (uint64), and the words of each line (shape ``(n_lines,)``).
    """
    n = keys.shape[0]
    if n == 0:
        return keys, np.zeros(n_lines, dtype=np.int64)
    heads, glued, cand, lead, trail = parts
    wkeys = keys[heads] * _MIX
    if glued.shape[0]:  # (a word of several tokens: each mixed in at its place in the word)
        group = glued - np.arange(1, glued.shape[0] + 1)  # (its word: the heads up to it, less one)
        pos = (glued - heads[group]).view(np.uint64)
        np.bitwise_xor.at(wkeys, group, (keys[glued] ^ (pos * _MIX2)) * _MIX)
        paths = np.flatnonzero(path_keys[heads] == _PATH_KEY)
        if paths.shape[0]:  # a path's extension: its last token, after a "."
            t = np.r_[heads[1:], n][paths] - 1
            ext = np.where(before[t] == 46, keys[t], np.uint64(0))
            wkeys[paths] = _PATH_KEY ^ (ext * _MIX2)
    pkeys = _PUNCT_KEY ^ (lead.astype(np.uint64) << np.uint64(8)) ^ (trail.astype(np.uint64) << np.uint64(16))
    # each punctuation word right before its word (np.insert's result, at a third less of its cost)
    out = np.empty(wkeys.shape[0] + cand.shape[0], dtype=np.uint64)
    at = cand + np.arange(cand.shape[0])
    punct = np.zeros(out.shape[0], dtype=bool)
    punct[at] = True
    out[at] = pkeys
    out[~punct] = wkeys
    per_line = np.bincount(tok_line[heads], minlength=n_lines) + np.bincount(tok_line[heads[cand]], minlength=n_lines)
    return out, per_line.astype(np.int64)


def _line_words(text: bytes) -> tuple[npt.NDArray[np.uint64], Callable[[int], str]]:
    """The prior's words of one line (``_words``): their keys and, for ``--explain``, the text of
    word ``i`` of them (a number ``<num>``, letters stuck to one ``<id>``, a path ``<path>`` and its
    extension, punctuation as it is without its spaces). Made when asked for: a line of a million
    words is explained by its heaviest few, and naming each had taken minutes (helper-69)."""
    table = token_table(text, np.asarray([len(text)], dtype=np.int64))
    n = table.keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64), str
    line_start = np.zeros(n, dtype=bool)
    line_start[0] = True
    block = _block_words(np.frombuffer(text, dtype=np.uint8), table, line_start, np.zeros(n, dtype=np.int64), 1)
    words, path_keys, before = block.keys, block.path_keys, block.gaps.before
    heads, _, cand, _, _ = block.parts
    lower, starts, lengths = table.lower, table.starts, table.lengths
    punct = np.zeros(words.shape[0], dtype=bool)
    punct[cand + np.arange(cand.shape[0])] = True  # (each punctuation word right before its word)
    at = np.where(punct, np.cumsum(punct) - 1, np.cumsum(~punct) - 1)  # (its index in cand, or in heads)

    def token(i: int) -> str:
        masked = int(path_keys[i] & _LOW56)  # (the masked key; a path's first token is named apart)
        if masked in (_NUM_KEY_L, _ID_KEY_L):
            return "<num>" if masked == _NUM_KEY_L else "<id>"
        return lower[int(starts[i]) : int(starts[i] + lengths[i])].decode("utf-8", "replace")

    def between(i: int) -> bytes:  # (the bytes between token i - 1 and token i)
        return lower[int(starts[i - 1] + lengths[i - 1]) : int(starts[i])]

    def name(i: int) -> str:
        if punct[i]:
            return between(int(heads[cand[at[i]]])).strip().decode("utf-8", "replace")
        h = int(at[i])
        a, b = int(heads[h]), int(heads[h + 1]) if h + 1 < heads.shape[0] else n
        if path_keys[a] == _PATH_KEY:
            return "<path>" + ("." + token(b - 1) if b - 1 > a and before[b - 1] == 46 else "")
        pieces = [token(a)]
        for j in range(a + 1, b):  # (with what joins them: nothing or "_")
            pieces += [between(j).decode("utf-8", "replace"), token(j)]
        return "".join(pieces)

    return words, name


def _id_shapes(
    keys: npt.NDArray[np.uint64],
    go_on: npt.NDArray[np.bool_],
    rank: Int64Array,
    line_first: Int64Array,
    first: Int64Array,
    has_tokens: npt.NDArray[np.bool_],
) -> Int64Array:
    """Shape ``(n_lines,)``: ``shape_hashes`` of each line's masked tokens (``keys``; ``rank`` in
    its line, whose first token is ``line_first``), a run of masked tokens that touch each other
    (``4164d839``, ``cb91ce37``: numbers and the short letter runs between them; ``go_on`` its
    tokens after the first) one token: a hash or an id is one shape whatever its digits' places."""
    if not go_on.any():
        return shape_hashes(keys, rank, first, has_tokens)
    keys = keys.copy()
    first_of_run = np.flatnonzero(go_on[1:] & ~go_on[:-1])
    keys[first_of_run[keys[first_of_run] != _PATH_KEY]] = _RUN_KEY  # (each run's first token but a path's)
    gone = np.cumsum(go_on)
    rank = rank - (gone - gone[line_first])  # (a line's first token never goes on a run)
    return shape_hashes(keys, rank, first, has_tokens, skip=go_on)


def _marked(pattern: re2._Regexp, lower: bytes, ends: Int64Array, within: Int64Array | None = None) -> Int64Array:
    """Shape like ``ends``: 1 for each line of ``lower`` (lines ending at ``ends``, each with its
    ``\\n`` but the text's last) where ``pattern`` matches, of the lines ``within`` (sorted indexes)
    when given: ``pattern`` runs over those lines alone, joined. RE2 (a DFA, one pass over the bytes
    whatever the alternatives: 15 to 20 times faster here than Python's backtracking ``re``,
    measured on the bench log's 20 MB)."""
    out = np.zeros(ends.shape[0], dtype=np.int64)
    if within is not None:
        # each line keeps its "\n", so a match sees the same bytes around it (a \b, a line end)
        line_ends = ends[within]
        starts = np.r_[0, ends[:-1]][within]
        lower = b"".join([lower[a:b] for a, b in zip(starts.tolist(), line_ends.tolist(), strict=True)])
        ends = np.cumsum(line_ends - starts)
    at = [m.start() for m in pattern.finditer(lower)]
    if at:
        hit = np.searchsorted(ends, np.asarray(at, dtype=np.int64), side="right")
        out[hit if within is None else within[hit]] = 1
    return out


def _summary_candidates(lower: bytes, ends: Int64Array, error: Int64Array) -> Int64Array:
    """The lines of ``lower`` (ending at ``ends``) where ``_FAILURE_SUMMARY`` can match: each of its
    alternatives holds "fail", "error" or "broken", and a line with "fail" or "error" has an error word
    (``error``, ``_marked(_ERROR_WORD, ...)``); so those lines and the lines with "broken". Scanning
    them alone gives the same marks at a fraction of the bytes (the summary scan cost as much as the
    error words' on the bench log, where 3 % of the lines are candidates)."""
    result: Int64Array = np.flatnonzero(error | _marked(_BROKEN, lower, ends))
    return result


def _path_lines(arr: npt.NDArray[np.uint8], numbers: Int64Array) -> Int64Array:
    """Offsets of the ``:`` or ``(`` of each ``a.py:12`` or ``Foo.java(12)`` in the text: a word
    byte, a dot, 1 to 6 ASCII letters, then ``:`` or ``(`` and a digit (regex ``\\w\\.[A-Za-z]{1,6}[:(]\\d``,
    on numpy over the few bytes before each number token, ``numbers`` (their offsets, sorted): the
    digit after a ``:`` or ``(`` starts one (16 ms per 30 MB of the bench log, against 20 looking
    at every byte for a ``:``; a regex scan that makes a match object each costs more than the rest
    of the prior). ``np.compress``: numpy's boolean indexing costs up to 4 times as much when the
    items kept are scattered, as numbers among tokens are."""
    colon = numbers - 1
    colon = colon[colon >= 3]
    colon = np.compress((arr[colon] == 58) | (arr[colon] == 40), colon)
    found = np.zeros(colon.shape[0], dtype=bool)
    letters = np.ones(colon.shape[0], dtype=bool)  # the bytes between the dot and the colon so far are letters
    for k in range(1, 8):
        at = np.maximum(colon - k, 1)
        inside = colon - k >= 1
        c = arr[at]
        if k >= 2:
            b = arr[at - 1]
            word = (((b | np.uint8(0x20)) - np.uint8(97)) < 26) | ((b - np.uint8(48)) < 10) | (b == 95)
            found |= letters & inside & (c == 46) & word
        letters &= inside & (((c | np.uint8(0x20)) - np.uint8(97)) < 26)
    result: Int64Array = colon[found].astype(np.int64)
    return result


def _last_solid(arr: npt.NDArray[np.uint8], ends: Int64Array) -> Int64Array:
    """Offset of the last byte of each line that is not a space, tab, ``\\r`` or ``\\n`` (lines with one)."""
    pos = ends - 1
    for _ in range(4):  # a line end and up to three trailing blanks; more are rare and harmless
        c = arr[np.maximum(pos, 0)]
        back = (c == 10) | (c == 13) | (c == 32) | (c == 9)
        pos = np.where(back & (pos > 0), pos - 1, pos)
    return np.maximum(pos, 0)


def scale_of(counts: Int64Array) -> Float64Array:
    """Shape like ``counts`` (word features per line): what a line's sum of word weights is
    multiplied by: 1 up to ``SCALE_FEATURES`` features, then ``sqrt(SCALE_FEATURES / features)``, so
    a line of a thousand words does not outweigh every line of ten (the feature vector's L2 norm,
    beyond a line's usual size)."""
    scale: Float64Array = np.sqrt(SCALE_FEATURES / np.maximum(counts, SCALE_FEATURES))
    return scale


def _log2_bin(d: Int64Array, cap: int) -> Int64Array:
    """Shape like ``d`` (>= 0): 0 for 0, then ``floor(log2(d)) + 1`` (1, 2-3, 4-7, ...), at most ``cap``
    (``cap`` at most ``_FAR_BINS``)."""
    # d's bit length, read from a table: a distance at or past 2**(cap - 1) is in the last bin
    result: Int64Array = _BIT_LENGTH[np.minimum(d, 1 << (cap - 1))]
    return result


_NEAR_BINS = 8  # log2 bins of a distance below REACH (0, 1, 2-3, ..., 64-127), then "none"
_FAR_BINS = 14  # log2 bins of a distance back (0 .. 8192+), then "none"
_FAR = np.iinfo(np.int64).max // 2  # a line further than any
# the bit length of 0 .. 2**(_FAR_BINS - 1), for ``_log2_bin`` (np.log2 costs more than the lookup)
_BIT_LENGTH = np.asarray([i.bit_length() for i in range((1 << (_FAR_BINS - 1)) + 1)], dtype=np.int64)
_SEEN_EDGES = np.asarray([1, 2, 5, 20, 100], dtype=np.int64)  # earlier lines of its shape: 0, 1, 2-4, ...
_AHEAD_EDGES = np.asarray([1, 2, 5], dtype=np.int64)  # lines of its shape within REACH after it: 0, 1, 2-4, 5+
# the bin of each count up to the last edge (a table lookup costs less than a binary search)
_SEEN_BIN = np.searchsorted(_SEEN_EDGES, np.arange(_SEEN_EDGES[-1] + 1), side="right")
_AHEAD_BIN = np.searchsorted(_AHEAD_EDGES, np.arange(_AHEAD_EDGES[-1] + 1), side="right")
# the one-hot groups: (name, slots)
_GROUPS: tuple[tuple[str, int], ...] = (
    ("end", _NEAR_BINS + 1),
    ("verdict_next", _NEAR_BINS + 1),
    ("verdict_last", _FAR_BINS + 1),
    ("summary_next", _NEAR_BINS + 1),
    ("summary_last", _FAR_BINS + 1),
    ("first_verdict", 1 + _NEAR_BINS + _FAR_BINS),
    ("seen", _SEEN_EDGES.shape[0] + 1),
    ("ahead", _AHEAD_EDGES.shape[0] + 1),
    ("start", _FAR_BINS + 1),
    ("indent", 7),
    ("indent_change", 3),
    ("length", 11),
    ("blank", 2),
    ("error_here_above_below", 8),
    ("error_x_end", 2 * (_NEAR_BINS + 1)),
    ("error_x_seen", 2 * (_SEEN_EDGES.shape[0] + 1)),
    ("error_next", _NEAR_BINS + 1),
    ("error_last", _FAR_BINS + 1),
)
_OFFSETS = np.cumsum([0] + [n for _, n in _GROUPS])[:-1].astype(np.int64)
STRUCTURE_NAMES: tuple[str, ...] = tuple(f"{name}:{k}" for name, n in _GROUPS for k in range(n))
STRUCTURE_GROUPS = len(_GROUPS)  # slots a line has, one a group


@dataclass(frozen=True, slots=True)
class StreamFacts:
    """What ``structure`` needs of the lines around those it describes (stream indexes, 0-based).

    Attributes:
        verdicts: sorted: lines with a command's exit verdict, every one from the last before the
            described lines to ``REACH`` lines past them (more may be given).
        summaries: sorted: failure-summary lines (``LineFeatures.static[:, 3]``), likewise.
        first_verdict: the stream's first exit verdict, or -1 when none is known.
        errors: sorted: lines with an error word (``LineFeatures.static[:, 2]``), likewise.
    """

    verdicts: Int64Array
    summaries: Int64Array
    first_verdict: int
    errors: Int64Array


def _next_bin(lines: Int64Array, marks: Int64Array) -> Int64Array:
    """Bins of the lines from each of ``lines`` to the first of ``marks`` at or after it, below ``REACH``."""
    if not marks.shape[0]:
        return np.full(lines.shape[0], _NEAR_BINS, dtype=np.int64)
    at = np.searchsorted(marks, lines, side="left")
    # past the last mark, one too far to count (REACH lines or more: the last bin, as for none)
    d = np.append(marks, _FAR)[at] - lines
    return _log2_bin(d, _NEAR_BINS)


def _last_bin(lines: Int64Array, marks: Int64Array) -> Int64Array:
    """Bins of the lines from the last of ``marks`` at or before each of ``lines`` to it."""
    if not marks.shape[0]:
        return np.full(lines.shape[0], _FAR_BINS, dtype=np.int64)
    at = np.searchsorted(marks, lines, side="right") - 1
    d = lines - marks[np.maximum(at, 0)]
    result: Int64Array = np.where(at >= 0, _log2_bin(np.maximum(d, 0), _FAR_BINS - 1), _FAR_BINS)
    return result


def ahead_counts(shapes: Int64Array, n: int) -> Int64Array:
    """Shape ``(n,)``: for each of the first ``n`` of consecutive lines' shape hashes (``shapes``,
    which holds the ``REACH`` lines after the ``n`` where they exist), the lines after it within
    ``REACH`` lines with its shape."""
    m = shapes.shape[0]
    order = np.argsort(shapes.astype(np.uint16), kind="stable")  # (a radix sort: hashes of SHAPE_BITS = 16)
    keyed = shapes[order] * (m + REACH + 1) + order  # by shape, then by line
    # (queries in order: numpy's binary search starts each where the last ended)
    after = np.searchsorted(keyed, keyed + REACH, side="right") - np.arange(m) - 1
    result: Int64Array = np.empty(m, dtype=np.int64)
    result[order] = after
    return result[:n]


def structure(
    lines: Int64Array,
    to_end: Int64Array,
    facts: StreamFacts,
    seen: Int64Array,
    ahead: Int64Array,
    static: Int64Array,
    blank: npt.NDArray[np.bool_],
) -> Int64Array:
    """The structure features of consecutive lines, one slot of each group (``STRUCTURE_NAMES``).

    Args:
        lines: shape ``(n,)``: the lines' stream indexes, consecutive.
        to_end: shape ``(n,)``: lines after each to the stream's end, ``REACH`` or more when it is
            not within reach (not known yet).
        facts: the exit verdicts and failure summaries around them.
        seen: shape ``(n,)``: earlier lines of the stream with the line's shape.
        ahead: shape ``(n,)``: lines of its shape within ``REACH`` after it (``ahead_counts``).
        static: shape ``(n + 2, 4)``: ``LineFeatures.static`` of the line before the first, the
            lines, and the line after the last (rows of zeros where there is none).
        blank: shape ``(n,)``: the line has only whitespace.

    Returns:
        shape ``(n, len(_GROUPS))`` int64: indexes into ``STRUCTURE_NAMES``.
    """
    n = lines.shape[0]
    out = np.empty((len(_GROUPS), n), dtype=np.int64)  # (a group a row: written whole, then turned)
    end = _log2_bin(np.maximum(to_end, 0), _NEAR_BINS)  # (REACH lines or more: the last bin)
    out[0] = end
    out[1] = _next_bin(lines, facts.verdicts)
    out[2] = _last_bin(lines, facts.verdicts)
    out[3] = _next_bin(lines, facts.summaries)
    out[4] = _last_bin(lines, facts.summaries)
    first = facts.first_verdict
    if first < 0:
        out[5] = 0
    else:
        to_first = first - lines  # > 0: the first verdict is still to come
        out[5] = np.where(
            to_first > 0,
            np.where(to_first < REACH, _log2_bin(np.maximum(to_first, 0), _NEAR_BINS), 0),
            1 + _NEAR_BINS + _log2_bin(np.maximum(-to_first, 0), _FAR_BINS - 1),
        )
    seen_bin = _SEEN_BIN[np.minimum(seen, _SEEN_EDGES[-1])]
    out[6] = seen_bin
    out[7] = _AHEAD_BIN[np.minimum(ahead, _AHEAD_EDGES[-1])]
    out[8] = _log2_bin(lines, _FAR_BINS)
    here = static[1:-1]
    out[9] = here[:, 0]
    out[10] = np.sign(here[:, 0] - static[:-2, 0]) + 1
    out[11] = here[:, 1]
    out[12] = blank
    err = here[:, 2]
    out[13] = err * 4 + static[:-2, 2] * 2 + static[2:, 2]
    out[14] = err * (_NEAR_BINS + 1) + end
    out[15] = err * (_SEEN_EDGES.shape[0] + 1) + seen_bin
    # the nearest error word after and before the line, past its neighbours: the block it is in
    out[16] = _next_bin(lines + 1, facts.errors)
    out[17] = _last_bin(lines - 1, facts.errors)
    out += _OFFSETS[:, None]
    result: Int64Array = out.T.copy()  # (C order: probability sums each line's row in that order)
    return result


# lines either side of a line whose first-stage log-odds its second stage looks at
CONTEXT_REACH = 30
_CONTEXT_RADII = (3, 10, CONTEXT_REACH)  # (each at most 3 times the one before plus 1: context_features)
CONTEXT_NAMES: tuple[str, ...] = ("own", *(f"own-max{r}" for r in _CONTEXT_RADII))
ABSENT = float("nan")  # the log-odds of a line that is not there (before the stream, past its end, not rated yet)


def context_features(z: Float64Array) -> Float64Array:
    """The second stage's features of consecutive lines from the first stage's log-odds around them.

    A failure is a block: a line near a likely line is likelier, the more so the nearer (stacked
    generalization, Wolpert 1992, over the neighbourhood).

    Args:
        z: shape ``(n + 2 * CONTEXT_REACH,)``: the log-odds of the ``n`` lines with ``CONTEXT_REACH``
            lines before and after them, ``ABSENT`` where there is no line (or none rated yet).

    Returns:
        shape ``(n, len(CONTEXT_NAMES))`` float64: per line its log-odds (clipped to -20 .. 20), then
        for each radius in ``_CONTEXT_RADII`` its own less the largest within that many lines either side.
    """
    r = CONTEXT_REACH
    n = z.shape[0] - 2 * r
    clipped = np.where(np.isnan(z), -40.0, np.clip(z, -20.0, 20.0))  # (below any line's: never a window's largest)
    own = clipped[r : r + n]
    out = np.empty((n, len(CONTEXT_NAMES)), dtype=np.float64)
    out[:, 0] = own
    # the largest within a radius from that within a smaller one: three windows of the smaller
    # radius, centred d lines apart, cover the larger one exactly when it is at most 3 times the
    # smaller plus 1 (van Herk 1992 in spirit: a few maxima a line, not 2r + 1)
    top, radius = clipped, 0  # top[j]: the largest within radius of clipped[j + radius]
    for k, target in enumerate((1, *_CONTEXT_RADII)):
        d = target - radius
        top = np.maximum(np.maximum(top[: -2 * d], top[d:-d]), top[2 * d :])
        radius = target
        if k:
            out[:, k] = own - top[r - radius : r - radius + n]
    return out


@dataclass(frozen=True, slots=True)
class PriorModel:
    """The prior's weights.

    Attributes:
        own: shape ``(N_FEATURES,)`` float32: the weight of each word feature of the line itself
            (0 for the ids it was not allowed to learn).
        above: shape ``(N_FEATURES,)`` float32: of each unigram feature of the line before.
        below: shape ``(N_FEATURES,)`` float32: of each unigram feature of the line after.
        structure: shape ``(len(STRUCTURE_NAMES),)`` float64: of each structure slot.
        bias: the first stage's intercept.
        context: shape ``(len(CONTEXT_NAMES) + 1,)`` float64: the second stage's weight of each
            context feature, then its intercept.
        cut: the probability at or above which a line is kept (chosen by the training script).
    """

    own: npt.NDArray[np.float32]
    above: npt.NDArray[np.float32]
    below: npt.NDArray[np.float32]
    structure: Float64Array
    bias: float
    context: Float64Array
    cut: float

    FORMAT = 4  # the weights' file format version (``save``, ``load``); 4: words (``_words``)

    def line_logits(self, features: LineFeatures, n_lines: int) -> Float64Array:
        """Shape ``(n_lines, 3)``: per line of a block, the sum of its own word weights (scaled,
        ``scale_of``), of its first words as the line before the next one's (``above``), and as the
        line after the previous one's (``below``)."""
        # (np.take with mode "clip" reads the weights without checking each id, as indexing does:
        # the ids are below N_FEATURES by construction; 7 % of the sums' time on the bench log)
        out = np.zeros((n_lines, 3), dtype=np.float64)
        for part_lines, part_ids in zip(features.lines, features.ids, strict=True):
            out[:, 0] += np.bincount(part_lines, weights=np.take(self.own, part_ids, mode="clip"), minlength=n_lines)
        out[:, 0] *= scale_of(features.counts)
        near, ids = features.near_lines, features.near_ids
        out[:, 1] = np.bincount(near, weights=np.take(self.above, ids, mode="clip"), minlength=n_lines)
        out[:, 2] = np.bincount(near, weights=np.take(self.below, ids, mode="clip"), minlength=n_lines)
        return out

    def logit(self, logits: Float64Array, slots: Int64Array) -> Float64Array:
        """Shape ``(n,)``: the first stage's log-odds of each of ``n`` consecutive lines.

        Args:
            logits: shape ``(n + 2, 3)``: ``line_logits`` of the line before the first, the lines,
                and the line after the last (rows of zeros where there is none).
            slots: shape ``(n, groups)``: ``structure`` of the lines.
        """
        z: Float64Array = logits[1:-1, 0] + logits[:-2, 1] + logits[2:, 2] + self.structure[slots].sum(axis=1)
        z += self.bias
        return z

    def probability(self, context: Float64Array) -> Float64Array:
        """Shape ``(n,)``: the probability of each of ``n`` lines from their ``context_features``
        (shape ``(n, len(CONTEXT_NAMES))``): the second stage, a logistic model over the first's
        log-odds around each line."""
        z = context @ self.context[:-1] + self.context[-1]
        out: Float64Array = 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))
        return out

    def explain(self, text: bytes, slots: Int64Array, k: int = 3) -> tuple[str, ...]:
        """The ``k`` words or word pairs of one line's scoring text and the ``k`` structure slots
        (``slots``, shape ``(groups,)``, as ``structure`` gives a line's) whose weights raise its
        probability most, as text (``_line_words``; a slot as ``group:bin``), for ``--explain``."""
        words, name = _line_words(text)
        n = words.shape[0]
        ids = np.concatenate((_hash(_UNIGRAM, words), _hash(_BIGRAM, words[:-1], words[1:])))
        _, first = np.unique(ids, return_index=True)  # a word twice in the line is one feature
        weights = self.own[ids[first]]
        order = np.argsort(-weights, kind="stable")[:k]
        # (feature j < n: word j; else the pair of words j - n and j - n + 1)
        labels = [int(first[i]) for i in order.tolist() if weights[i] > 0]
        heavy = [name(j) if j < n else f"{name(j - n)} {name(j - n + 1)}" for j in labels]
        by_slot = self.structure[slots]
        heaviest = np.argsort(-by_slot, kind="stable")[:k]
        return (*heavy, *(STRUCTURE_NAMES[int(slots[i])] for i in heaviest.tolist() if by_slot[i] > 0))

    def save(self, path: Path) -> None:
        """Write the weights as a compressed numpy archive: the non-zero word weights' ids and
        values (float16), the structure and context weights.

        Raises:
            OSError: the file cannot be written.
        """
        words = np.concatenate((self.own, self.above, self.below))
        ids = np.flatnonzero(words).astype(np.int32)
        np.savez_compressed(
            path,
            version=np.asarray(self.FORMAT),
            feature_bits=np.asarray(FEATURE_BITS),
            structure_names=np.asarray(STRUCTURE_NAMES),
            word_ids=ids,
            word_weights=words[ids].astype(np.float16),
            structure=self.structure,
            bias=np.asarray(self.bias),
            context_names=np.asarray(CONTEXT_NAMES),
            context=self.context,
            cut=np.asarray(self.cut),
        )

    @classmethod
    def load(cls, path: Path) -> PriorModel:
        """Read weights written by ``save``.

        Raises:
            OSError: the file cannot be read.
            ValueError: the file is of another format version, hash width or structure layout.
        """
        with np.load(path) as z:
            if int(z["version"]) != cls.FORMAT or int(z["feature_bits"]) != FEATURE_BITS:
                raise ValueError(f"{path}: prior weights of format {int(z['version'])}, expected {cls.FORMAT}")
            if tuple(str(s) for s in z["structure_names"]) != STRUCTURE_NAMES:
                raise ValueError(f"{path}: prior weights for other structure features")
            if tuple(str(s) for s in z["context_names"]) != CONTEXT_NAMES:
                raise ValueError(f"{path}: prior weights for other context features")
            words = np.zeros(3 * N_FEATURES, dtype=np.float32)
            words[z["word_ids"]] = z["word_weights"]
            return cls(
                words[:N_FEATURES],
                words[N_FEATURES : 2 * N_FEATURES],
                words[2 * N_FEATURES :],
                z["structure"].astype(np.float64),
                float(z["bias"]),
                z["context"].astype(np.float64),
                float(z["cut"]),
            )


@functools.cache
def default_model() -> PriorModel:
    """The weights that ship in the package (``streamfilter/core/prior.npz``), loaded once per process.

    Raises:
        OSError, ValueError: as ``PriorModel.load``.
    """
    with resources.as_file(resources.files(__package__).joinpath("prior.npz")) as path:
        return PriorModel.load(path)


SHAPE_BITS = 16


def shape_hashes(
    keys: npt.NDArray[np.uint64],
    rank: Int64Array,
    starts: Int64Array,
    has_tokens: npt.NDArray[np.bool_],
    skip: npt.NDArray[np.bool_] | None = None,
) -> Int64Array:
    """Shape ``(n_lines,)``: a hash in ``0 .. 2**SHAPE_BITS - 1`` of each line's masked tokens in order
    (a line without tokens hashes to 0).

    Args:
        keys: shape ``(n_tokens,)``: the block's masked token keys (``_masked_keys``).
        rank: shape ``(n_tokens,)``: each token's position in its line (0 for its first).
        starts: the index in ``keys`` of the first token of each line with tokens.
        has_tokens: shape ``(n_lines,)``: which lines have tokens.
        skip: shape ``(n_tokens,)``: tokens left out of the hash (no line's first).
    """
    out = np.zeros(has_tokens.shape[0], dtype=np.uint64)
    if keys.shape[0]:
        mixed = rank.view(np.uint64) * _MIX2  # (uint64 arithmetic wraps around, as hashing wants)
        mixed += keys
        mixed *= _MIX
        if skip is not None:
            np.copyto(mixed, np.uint64(0), where=skip)  # (0 leaves a xor as it was)
        out[has_tokens] = np.bitwise_xor.reduceat(mixed, starts)
    result: Int64Array = (out >> np.uint64(64 - SHAPE_BITS)).astype(np.int64)
    return result


# a shape's count is kept up to this (each use bins it or compares it at 100 or less): one byte a
# hash, 64 KiB a counter, where int64 counts took 512 KiB (a daemon has several a followed file)
SEEN_CAP = 255


class ShapeCounter:
    """How many earlier lines of a stream had each line's shape hash, up to ``SEEN_CAP`` (a fixed
    table of counts, so memory does not grow with the stream; hashes that collide share a count).
    The table is made at the first line counted: a stream has three counters (``hits``), two of
    which most streams never use, and a daemon one stream a followed file (a glob of per-job logs
    took 224 KB a stream, 192 of them these tables, helper-42 and 45)."""

    def __init__(self) -> None:
        self._counts: npt.NDArray[np.uint8] | None = None

    def seen(self, hashes: Int64Array) -> Int64Array:
        """Shape ``(n,)``: for each of the next ``n`` lines' hashes, the earlier lines with that hash
        (those before these lines counted up to ``SEEN_CAP``); then counts them."""
        n = hashes.shape[0]
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if self._counts is None:
            self._counts = np.zeros(1 << SHAPE_BITS, dtype=np.uint8)
        order = np.argsort(hashes.astype(np.uint16), kind="stable")  # (a radix sort: SHAPE_BITS = 16)
        ordered = hashes[order]
        group_start = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        size = np.diff(np.r_[group_start, n])
        rank = np.arange(n) - np.repeat(group_start, size)
        before = np.empty(n, dtype=np.int64)
        before[order] = rank
        before += self._counts[hashes]
        first = ordered[group_start]  # (each hash once)
        self._counts[first] = np.minimum(self._counts[first] + size, SEEN_CAP)
        return before
