"""The learned line prior: how likely a line is part of the failure a developer must see.

Format-agnostic, so that it keeps failures of tools no signature knows. Two logistic models
(Cox 1958; fitted by ``streamfilter.train_prior``):

- **content**: a line's own words. Hashed features (``FEATURE_BITS`` bits) of its scoring text:
  each word token and each pair of adjacent tokens, with numbers and the letters stuck to them
  masked (``3eb6`` is an id, not a word); its first token; its first and last non-blank byte when
  punctuation (``>``, ``:``, ``^``); its indentation and length in buckets; whether it names a
  ``path.ext:line``. Pure per line: ``content_features`` then ``PriorModel.content_logits``.
- **context**: the content logits of the line and of its neighbours, where the line stands
  relative to the stream's end and to the next exit verdict, and how often its shape came before
  in the stream. ``context_features`` builds it (a ``Context``); ``PriorModel.probability`` combines.

Only hashed ids and weights ship (``prior.npz``, about 70 KB), never a word list. Features a
training set saw in fewer than ``train_prior.MIN_REPOS`` repositories get no weight, so the model
learns no one project's names (but for words that share a bucket with learned ones: at 20 bits
about one word in seventy lands on a bucket with a weight).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .segment import LineLayout
from .tokens import TokenTable, token_table

__all__ = (
    "CONTEXT_FEATURES",
    "CONTEXT_NAMES",
    "DENSE",
    "END_REACH",
    "FEATURE_BITS",
    "NEIGHBOURS",
    "Context",
    "PriorModel",
    "ShapeCounter",
    "content_features",
    "context_features",
    "default_model",
    "shape_hashes",
    "to_verdict",
)

FEATURE_BITS = 20
N_FEATURES = 1 << FEATURE_BITS
# lines after a line that its context features look at: the stream's end and the next exit
# verdict within this many lines (the filter's look-ahead is far longer, so streaming knows them)
END_REACH = 24
NEIGHBOURS = 3  # lines each side whose content logits a line's context sees

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

# feature kinds, mixed into the hash so that the same token is another feature in each role
_UNIGRAM, _BIGRAM, _FIRST, _FIRST_BYTE, _LAST_BYTE, _INDENT, _LENGTH, _PATH_LINE = range(1, 9)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xC2B2AE3D27D4EB4F)
_NUM_KEY = np.uint64(0x6D756E3C)  # any number (a token of digits)
_ID_KEY = np.uint64(0x64693C)  # a short run of letters stuck to digits: part of an id
_LENGTH_MIX = np.arange(17, dtype=np.uint64) << np.uint64(56)  # a token's length (up to 16) in its key's top byte
_LOW56 = np.uint64((1 << 56) - 1)  # a masked key without the length _masked_keys mixes in
_NUM_KEY_L, _ID_KEY_L = int(_NUM_KEY), int(_ID_KEY)
_INDENT_EDGES = np.asarray([1, 2, 4, 8], dtype=np.int64)
_LENGTH_EDGES = np.asarray([1, 3, 6, 11, 21, 41], dtype=np.int64)


def _hash(kind: int, a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64] | None = None) -> Int64Array:
    """Feature ids in ``0 .. N_FEATURES-1`` of values ``a`` (and ``b``) of a kind (multiplicative hashing)."""
    # (uint64 arithmetic wraps around, as hashing wants; numpy does not warn of it for arrays)
    h = (a ^ np.uint64(kind * int(_MIX2) % (1 << 64))) * _MIX  # (kinds apart even for small values: a byte)
    if b is not None:
        h += b * _MIX2  # the top bits of both products mix a pair (multiplicative hashing)
    h >>= np.uint64(64 - FEATURE_BITS)
    ids: Int64Array = h.view(np.int64)  # (below 2**FEATURE_BITS: the same values)
    return ids


def _masked_keys(table: TokenTable) -> npt.NDArray[np.uint64]:
    """Each token's key, numbers and the short letter runs stuck to them (``3eb6``, ``E0308``) masked."""
    keys = table.keys.copy()
    n = keys.shape[0]
    if n == 0:
        return keys
    lower = np.frombuffer(table.lower, dtype=np.uint8)
    first = lower[table.starts]
    digit = (first - np.uint8(48)) < 10
    keys[digit] = _NUM_KEY
    # a token that touches a number token (no separator between them)
    adjacent = table.starts[1:] == table.starts[:-1] + table.lengths[:-1]
    touches = np.zeros(n, dtype=bool)
    touches[1:] |= digit[:-1] & adjacent
    touches[:-1] |= digit[1:] & adjacent
    short = ~digit & touches & (table.lengths <= 4)
    keys[short] = _ID_KEY
    # a key of a token longer than 8 bytes also carries its length (``_hash`` mixes it)
    keys ^= _LENGTH_MIX[np.minimum(table.lengths, 16)]
    return keys


def content_features(
    text: bytes, ends: Int64Array, table: TokenTable, layout: LineLayout
) -> tuple[list[Int64Array], list[Int64Array], npt.NDArray[np.uint64]]:
    """The hashed content features of a block's lines, as ``(line, feature)`` pairs.

    Args:
        text: scoring text of whole lines (``NormalizedBlock.text``).
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
        table: the block's tokens.
        layout: the block's layout (indentation, first non-blank byte, blank lines).

    Returns:
        ``(lines, ids, keys)``: two lists of int64 arrays, the arrays of one index of one shape (one
        kind of feature each), each pair a 0-based line of the block and a feature id in
        ``0 .. 2**FEATURE_BITS - 1`` (a feature may repeat in a line: it counts as often; every line
        has at least its indentation and length features); and the tokens' masked keys (shape
        ``(n_tokens,)``, for ``shape_hashes``). Kept in parts: joining them costs more than using them.
    """
    n_lines = int(ends.shape[0])
    arr = np.frombuffer(text, dtype=np.uint8)
    keys = _masked_keys(table)
    tok_line = np.repeat(np.arange(n_lines, dtype=np.int64), table.per_line)
    parts_l = [tok_line]
    parts_f = [_hash(_UNIGRAM, keys)]
    if keys.shape[0] > 1:
        pairs = np.flatnonzero(tok_line[1:] == tok_line[:-1])  # adjacent tokens of one line
        parts_l.append(tok_line[pairs])
        parts_f.append(_hash(_BIGRAM, keys[:-1], keys[1:])[pairs])
    has_tokens = table.per_line > 0
    if has_tokens.any():
        first_tok = (np.cumsum(table.per_line) - table.per_line)[has_tokens]
        parts_l.append(np.flatnonzero(has_tokens).astype(np.int64))
        parts_f.append(_hash(_FIRST, keys[first_tok]))
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
    indent = np.where(layout.blank, 9, np.searchsorted(_INDENT_EDGES, layout.indent, side="right"))
    length = np.searchsorted(_LENGTH_EDGES, table.per_line, side="right")
    parts_l += [lines, lines]
    parts_f += [_hash(_INDENT, indent.astype(np.uint64)), _hash(_LENGTH, length.astype(np.uint64))]
    found = _path_lines(arr)
    if found.shape[0]:
        pl = np.unique(np.searchsorted(ends, found, side="right"))
        parts_l.append(pl.astype(np.int64))
        parts_f.append(_hash(_PATH_LINE, np.zeros(pl.shape[0], dtype=np.uint64)))
    return parts_l, parts_f, keys


def _path_lines(arr: npt.NDArray[np.uint8]) -> Int64Array:
    """Offsets of the ``:`` or ``(`` of each ``a.py:12`` or ``Foo.java(12)`` in the text: a word
    byte, a dot, 1 to 6 ASCII letters, then ``:`` or ``(`` and a digit (regex ``\\w\\.[A-Za-z]{1,6}[:(]\\d``,
    on numpy over the few bytes around each ``:`` and ``(``: a regex scan that makes a match
    object each costs more than the rest of the prior)."""
    n = arr.shape[0]
    colon = np.flatnonzero((arr == 58) | (arr == 40))
    colon = colon[(colon >= 3) & (colon < n - 1)]
    colon = colon[(arr[colon + 1] - np.uint8(48)) < 10]
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


SCALE_FEATURES = 24  # a line of more features than this has its sum scaled down


def scale_of(counts: Int64Array) -> Float64Array:
    """Shape like ``counts`` (features per line): what a line's sum of feature weights is multiplied
    by: 1 up to ``SCALE_FEATURES`` features, then ``sqrt(SCALE_FEATURES / features)``, so a line of a
    thousand words does not outweigh every line of ten (the feature vector's L2 norm, beyond a
    line's usual size)."""
    scale: Float64Array = np.sqrt(SCALE_FEATURES / np.maximum(counts, SCALE_FEATURES))
    return scale


def to_verdict(lines: Int64Array, verdicts: Int64Array) -> Int64Array:
    """Shape like ``lines``: lines from each to the next of the sorted ``verdicts`` at or after it,
    ``END_REACH`` when there is none."""
    if verdicts.shape[0] == 0:
        return np.full(lines.shape[0], END_REACH, dtype=np.int64)
    at = np.searchsorted(verdicts, lines, side="left")
    nxt = verdicts[np.minimum(at, verdicts.shape[0] - 1)]
    result: Int64Array = np.where(at < verdicts.shape[0], np.minimum(nxt - lines, END_REACH), END_REACH)
    return result


# -- context -------------------------------------------------------------------------------
# the columns of the context matrix, in order
_END_EDGES = (1, 3, 6, 12)  # lines after this one to the stream's end: 0, 1-2, 3-5, 6-11, 12..END_REACH
_VERDICT_EDGES = (1, 3, 6, 12)  # lines to the next exit verdict below: 1-2, 3-5, 6-11, 12..END_REACH
_SEEN_EDGES = (1, 2, 5)  # earlier lines of the same shape: 0, 1, 2-4, 5+
CONTEXT_NAMES: tuple[str, ...] = (
    "content",
    "content_prev",
    "content_next",
    "content_max_near",
    "content_max_before",
    "content_far",
    *(f"end_{i}" for i in range(len(_END_EDGES) + 1)),
    *(f"verdict_{i}" for i in range(len(_VERDICT_EDGES))),
    "is_verdict",
    *(f"seen_{i}" for i in range(len(_SEEN_EDGES) + 1)),
    "blank",
)
CONTEXT_FEATURES = len(CONTEXT_NAMES)


@dataclass(frozen=True, slots=True)
class Context:
    """The context features of ``n`` lines, compactly: ``matrix()`` spreads them out.

    Attributes:
        dense: shape ``(n, DENSE)`` float64: the first ``DENSE`` columns of ``CONTEXT_NAMES``.
        onehot: shape ``(n, GROUPS)`` int64: for each group of indicator columns, the column that
            is 1 (an index into ``CONTEXT_NAMES``), or ``CONTEXT_FEATURES`` when none is.
    """

    dense: Float64Array
    onehot: Int64Array

    def matrix(self) -> Float64Array:
        """Shape ``(n, CONTEXT_FEATURES)``: every column as ``CONTEXT_NAMES`` names them."""
        n = self.dense.shape[0]
        out = np.zeros((n, CONTEXT_FEATURES + 1), dtype=np.float64)
        out[:, :DENSE] = self.dense
        out[np.arange(n)[:, None], self.onehot] = 1.0
        result: Float64Array = out[:, :CONTEXT_FEATURES]
        return result


DENSE = 6  # content logits: own, previous, next, most of the neighbours, most of those before, own far from the end
_END_COL = DENSE
_VERDICT_COL = _END_COL + len(_END_EDGES) + 1
_IS_VERDICT_COL = _VERDICT_COL + len(_VERDICT_EDGES)
_SEEN_COL = _IS_VERDICT_COL + 1
_BLANK_COL = _SEEN_COL + len(_SEEN_EDGES) + 1


def context_features(
    logits: Float64Array,
    lo: int,
    hi: int,
    to_end: Int64Array,
    to_verdict: Int64Array,
    seen: Int64Array,
    blank: npt.NDArray[np.bool_],
) -> Context:
    """The context features of lines ``lo .. hi-1`` of an array of content logits.

    Args:
        logits: shape ``(n,)``: content logits of consecutive lines that hold lines
            ``lo - NEIGHBOURS .. hi + NEIGHBOURS - 1`` where they exist (beyond the array: none).
        lo, hi: the lines to describe (indexes into ``logits``).
        to_end: shape ``(hi - lo,)``: lines after each to the stream's end, or ``END_REACH`` or more
            when the end is not within reach (not known yet).
        to_verdict: shape ``(hi - lo,)``: lines to the next exit verdict below (0: the line is one),
            ``END_REACH`` or more when none is within reach.
        seen: shape ``(hi - lo,)``: earlier lines of the stream with the line's shape.
        blank: shape ``(hi - lo,)``: the line has only whitespace.

    Returns:
        The ``hi - lo`` lines' ``Context`` (columns as ``CONTEXT_NAMES``).
    """
    n = hi - lo
    pad = np.full(NEIGHBOURS, -8.0)
    ext = np.concatenate((pad, logits, pad))
    c = lo + NEIGHBOURS
    dense = np.empty((n, DENSE), dtype=np.float64)
    dense[:, 0] = ext[c : c + n]
    dense[:, 1] = ext[c - 1 : c - 1 + n]
    dense[:, 2] = ext[c + 1 : c + 1 + n]
    before = dense[:, 4]
    before[:] = dense[:, 1]
    for k in range(2, NEIGHBOURS + 1):
        np.maximum(before, ext[c - k : c - k + n], out=before)
    near = dense[:, 3]
    np.maximum(before, dense[:, 2], out=near)
    for k in range(2, NEIGHBOURS + 1):
        np.maximum(near, ext[c + k : c + k + n], out=near)
    # its own words where neither the end nor an exit verdict is near: there they are all it has
    far = (to_end >= END_REACH) & (to_verdict >= END_REACH)
    dense[:, 5] = np.where(far, dense[:, 0], 0.0)
    none = CONTEXT_FEATURES
    onehot = np.full((n, 5), none, dtype=np.int64)
    end_bin = np.searchsorted(np.asarray(_END_EDGES), to_end, side="right")
    onehot[:, 0] = np.where(to_end < END_REACH, _END_COL + end_bin, none)
    v_bin = np.searchsorted(np.asarray(_VERDICT_EDGES), to_verdict, side="right") - 1
    onehot[:, 1] = np.where((to_verdict > 0) & (to_verdict < END_REACH), _VERDICT_COL + v_bin, none)
    onehot[:, 2] = np.where(to_verdict == 0, _IS_VERDICT_COL, none)
    onehot[:, 3] = _SEEN_COL + np.searchsorted(np.asarray(_SEEN_EDGES), seen, side="right")
    onehot[:, 4] = np.where(blank, _BLANK_COL, none)
    return Context(dense, onehot)


@dataclass(frozen=True, slots=True)
class PriorModel:
    """The prior's weights.

    Attributes:
        content: shape ``(2**FEATURE_BITS,)`` float32: the content model's weight of each feature id
            (0 for the ids it was not allowed to learn).
        content_bias: the content model's intercept.
        context: shape ``(CONTEXT_FEATURES,)`` float64: the context model's weights.
        context_bias: its intercept.
        cut: the probability at or above which a line is kept (chosen by the training script).
    """

    content: npt.NDArray[np.float32]
    content_bias: float
    context: Float64Array
    context_bias: float
    cut: float

    FORMAT = 1  # the weights' file format version (``save``, ``load``)

    def content_logits(self, lines: Sequence[Int64Array], ids: Sequence[Int64Array], n_lines: int) -> Float64Array:
        """Shape ``(n_lines,)``: the content logit of each line, from ``content_features``' pairs
        (in parts, or joined: the same up to rounding)."""
        sums = np.zeros(n_lines, dtype=np.float64)
        counts = np.zeros(n_lines, dtype=np.int64)
        for part_lines, part_ids in zip(lines, ids, strict=True):
            sums += np.bincount(part_lines, weights=self.content[part_ids], minlength=n_lines)
            counts += np.bincount(part_lines, minlength=n_lines)
        return sums * scale_of(counts) + self.content_bias

    def probability(self, context: Context) -> Float64Array:
        """Shape ``(n,)``: the prior probability of each line of a ``Context`` (``context_features``):
        the logistic of the context weights' dot product with ``context.matrix()``, on its compact form."""
        weights = np.append(self.context, 0.0)  # (the column of "none" of a group)
        z = context.dense @ self.context[:DENSE] + weights[context.onehot].sum(axis=1) + self.context_bias
        out: Float64Array = 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))
        return out

    def explain_line(self, text: bytes, k: int = 3) -> tuple[str, ...]:
        """The ``k`` words or word pairs of one line's scoring text whose weights raise its content
        logit most, as text (``<num>`` a number, ``<id>`` letters stuck to one), for ``--explain``."""
        ends = np.asarray([len(text)], dtype=np.int64)
        table = token_table(text, ends)
        keys = _masked_keys(table)
        lower = table.lower
        names = [
            "<num>" if k == _NUM_KEY_L else "<id>" if k == _ID_KEY_L else lower[a : a + n].decode("utf-8", "replace")
            for k, a, n in zip((keys & _LOW56).tolist(), table.starts.tolist(), table.lengths.tolist(), strict=True)
        ]
        ids = np.concatenate((_hash(_UNIGRAM, keys), _hash(_BIGRAM, keys[:-1], keys[1:])))
        labels = names + [f"{a} {b}" for a, b in itertools.pairwise(names)]
        _, first = np.unique(ids, return_index=True)  # a word twice in the line is one feature
        weights = self.content[ids[first]]
        order = np.argsort(-weights, kind="stable")[:k]
        return tuple(labels[first[i]] for i in order.tolist() if weights[i] > 0)

    def save(self, path: Path) -> None:
        """Write the weights as a compressed numpy archive (the content weights as float16).

        Raises:
            OSError: the file cannot be written.
        """
        np.savez_compressed(
            path,
            version=np.asarray(self.FORMAT),
            feature_bits=np.asarray(FEATURE_BITS),
            context_names=np.asarray(CONTEXT_NAMES),
            content=self.content.astype(np.float16),
            content_bias=np.asarray(self.content_bias),
            context=self.context,
            context_bias=np.asarray(self.context_bias),
            cut=np.asarray(self.cut),
        )

    @classmethod
    def load(cls, path: Path) -> PriorModel:
        """Read weights written by ``save``.

        Raises:
            OSError: the file cannot be read.
            ValueError: the file is of another format version, hash width or context layout.
        """
        with np.load(path) as z:
            if int(z["version"]) != cls.FORMAT or int(z["feature_bits"]) != FEATURE_BITS:
                raise ValueError(f"{path}: prior weights of format {int(z['version'])}, expected {cls.FORMAT}")
            if tuple(str(s) for s in z["context_names"]) != CONTEXT_NAMES:
                raise ValueError(f"{path}: prior weights for other context features")
            return cls(
                z["content"].astype(np.float32),
                float(z["content_bias"]),
                z["context"].astype(np.float64),
                float(z["context_bias"]),
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


def shape_hashes(table: TokenTable, keys: npt.NDArray[np.uint64]) -> Int64Array:
    """Shape ``(n_lines,)``: a hash in ``0 .. 2**SHAPE_BITS - 1`` of each line's masked tokens in order
    (``keys``, as ``content_features`` returns them; a line without tokens hashes to 0)."""
    n_lines = int(table.per_line.shape[0])
    if keys.shape[0] == 0:
        return np.zeros(n_lines, dtype=np.int64)
    starts = np.cumsum(table.per_line) - table.per_line
    tok_line = np.repeat(np.arange(n_lines, dtype=np.int64), table.per_line)
    position = (np.arange(keys.shape[0], dtype=np.int64) - starts[tok_line]).astype(np.uint64)
    with np.errstate(over="ignore"):
        mixed = (keys + position * _MIX2) * _MIX
    has = table.per_line > 0
    out = np.zeros(n_lines, dtype=np.uint64)
    out[has] = np.bitwise_xor.reduceat(mixed, starts[has])
    result: Int64Array = (out >> np.uint64(64 - SHAPE_BITS)).astype(np.int64)
    return result


class ShapeCounter:
    """How many earlier lines of a stream had each line's shape hash (a fixed table of counts, so
    memory does not grow with the stream; hashes that collide share a count)."""

    def __init__(self) -> None:
        self._counts = np.zeros(1 << SHAPE_BITS, dtype=np.int64)

    def seen(self, hashes: Int64Array) -> Int64Array:
        """Shape ``(n,)``: for each of the next ``n`` lines' hashes, the earlier lines with that hash;
        then counts them."""
        n = hashes.shape[0]
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        group_start = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        rank = np.arange(n) - np.repeat(group_start, np.diff(np.r_[group_start, n]))
        before = np.empty(n, dtype=np.int64)
        before[order] = rank
        before += self._counts[hashes]
        self._counts += np.bincount(hashes, minlength=self._counts.shape[0])
        return before
