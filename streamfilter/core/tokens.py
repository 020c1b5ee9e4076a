"""Terms: the tokenizer, the query, and per-line term counts on whole blocks.

A token is a maximal run of letters or digits, split further where case or kind
changes, then ASCII-lowercased, so ``error`` matches ``ValueError``,
``TypeError:``, ``error[E0308]`` and ``npm ERR!`` (through the query's variants).

Byte classes: ``a-z`` and every byte >= 0x80 are lower-case letters (so UTF-8
words stay whole), ``A-Z`` upper-case, ``0-9`` digits, everything else separates.
A token starts at a letter or digit when the previous byte is a separator, or
when a lower-case letter is followed by an upper-case one (``valueError``), a
letter meets a digit or a digit a letter (``E0308``), or an upper-case run ends
before an upper-lower pair (``HTTPServer`` -> ``http``, ``server``).

``tokenize`` is the reference (plain Python); ``count_terms`` computes the same
counts on a whole block with numpy, never making a Python object per token.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = (
    "KeySet",
    "Query",
    "TokenTable",
    "count_terms",
    "is_counted",
    "token_key",
    "token_spans",
    "token_table",
    "tokenize",
)

_OTHER, _LOWER, _UPPER, _DIGIT = 0, 1, 2, 3
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[ord("a") : ord("z") + 1] = _LOWER
_CLASS[0x80:] = _LOWER
_CLASS[ord("A") : ord("Z") + 1] = _UPPER
_CLASS[ord("0") : ord("9") + 1] = _DIGIT
_CLASS_LIST: list[int] = _CLASS.tolist()

# Suffixes that make a query word's variants (light stemming, no dictionary), and
# the short forms tools print for a few words.
_SUFFIXES = (b"", b"s", b"es", b"ed", b"d", b"ing", b"ure", b"ures", b"er", b"ers", b"ion", b"ions")
_STEM_ENDINGS = (b"ures", b"ure", b"ing", b"ions", b"ion", b"ers", b"er", b"ed", b"es", b"s")
_ALIASES: dict[bytes, tuple[bytes, ...]] = {
    b"error": (b"err", b"errored"),
    b"fail": (b"failure", b"failures"),
    b"exception": (b"exc",),
    b"warning": (b"warn",),
}


def _starts(cls: list[int], i: int) -> bool:
    c = cls[i]
    if c == _OTHER:
        return False
    if i == 0:
        return True
    p = cls[i - 1]
    if p == _OTHER or (c == _DIGIT) != (p == _DIGIT):
        return True
    if c == _UPPER and p == _LOWER:
        return True
    return c == _UPPER and p == _UPPER and i + 1 < len(cls) and cls[i + 1] == _LOWER


def token_spans(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` byte offsets of each token of ``data`` (reference implementation)."""
    cls = [_CLASS_LIST[b] for b in data]
    spans: list[tuple[int, int]] = []
    start = -1
    for i in range(len(cls)):
        if cls[i] == _OTHER:
            if start >= 0:
                spans.append((start, i))
                start = -1
        elif _starts(cls, i):
            if start >= 0:
                spans.append((start, i))
            start = i
    if start >= 0:
        spans.append((start, len(cls)))
    return spans


def tokenize(data: bytes) -> list[bytes]:
    """Split ``data`` into lowercased tokens (reference implementation; slow, exact).

    Args:
        data: scoring text (bytes; any content).

    Returns:
        The tokens in order, ASCII-lowercased.
    """
    return [data[a:b].lower() for a, b in token_spans(data)]


# "Failures: 0", "errors=0", "0 failed": a count of zero is not an occurrence of the term
_ZERO_AFTER = re.compile(rb"[ \t]*[:=][ \t]*0(?![0-9.])")
_ZERO_BEFORE = re.compile(rb"(?<![0-9.=:])0[ \t]+$")


_JOINERS = frozenset(b"._/\\-")
_ZERO_NEXT = frozenset(b" \t:=")
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def is_counted(lower: bytes, start: int, end: int) -> bool:
    """Whether a query-term token at ``lower[start:end]`` counts as an occurrence.

    It does not when it names a zero count (``Failures: 0``, ``errors=0``,
    ``0 failed``), or when it is one component of a compound identifier joined by
    ``. _ / \\ -`` or ``::`` (``org.example.error.Foo``, ``--error-format``, ``errors.go``,
    ``test_error_path``, ``tests::error_path``): such names are everywhere in build logs and say nothing
    about a failure. ``ValueError`` (a case split) and ``error:`` still count.
    """
    if start >= 2 and lower[start - 1] in _JOINERS and lower[start - 2] in _ALNUM:
        return False
    if start >= 3 and lower[start - 2 : start] == b"::" and lower[start - 3] in _ALNUM:
        return False
    after = lower[end] if end < len(lower) else 10
    if after in _JOINERS and end + 1 < len(lower) and lower[end + 1] in _ALNUM:
        return False
    if after == 58 and lower[end : end + 2] == b"::" and end + 2 < len(lower) and lower[end + 2] in _ALNUM:
        return False
    if after not in _ZERO_NEXT and (start == 0 or lower[start - 1] not in _ZERO_NEXT):
        return True  # neither "<term>: 0" nor "0 <term>" can follow or precede
    return _ZERO_AFTER.match(lower, end) is None and _ZERO_BEFORE.search(lower, max(0, start - 8), start) is None


def _stem(word: bytes) -> bytes:
    for ending in _STEM_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


@functools.lru_cache(maxsize=64)
def _variant_keys(variants: tuple[tuple[bytes, ...], ...]) -> tuple[KeySet, list[dict[bytes, int]]]:
    by_key: dict[int, dict[bytes, int]] = {}
    for t, forms in enumerate(variants):
        for form in forms:
            by_key.setdefault(token_key(form), {})[form] = t
    keyset = KeySet.of(by_key)
    return keyset, [by_key[k] for k in keyset.sorted.tolist()]


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: distinct terms, each with the surface forms that count as it.

    Attributes:
        terms: distinct query terms (stems), in query order.
        variants: for each term, the tokens that count as an occurrence of it.
    """

    terms: tuple[bytes, ...]
    variants: tuple[tuple[bytes, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Query:
        """Tokenize ``text`` into a query; each word also matches its light-stemmed variants.

        ``failed`` becomes the term ``fail`` with variants ``fail, fails, failed,
        failing, failure, failures, ...``; ``error`` also matches ``err``.
        """
        terms: list[bytes] = []
        variants: list[tuple[bytes, ...]] = []
        for token in tokenize(text.encode("utf-8", "surrogateescape")):
            stem = _stem(token)
            if stem in terms:
                continue
            forms = {stem + suffix for suffix in _SUFFIXES} | {token}
            for base in (stem, token):
                forms.update(_ALIASES.get(base, ()))
            terms.append(stem)
            variants.append(tuple(sorted(forms)))
        # one surface form counts for one term only (the first that claims it)
        seen: set[bytes] = set()
        unique: list[tuple[bytes, ...]] = []
        for forms_t in variants:
            unique.append(tuple(f for f in forms_t if f not in seen))
            seen.update(forms_t)
        return cls(terms=tuple(terms), variants=tuple(unique))

    def terms_in(self, line: bytes) -> list[bytes]:
        """Tokens of one line, each query-term occurrence replaced by its term (reference).

        A term occurrence that ``is_counted`` rejects is replaced by ``b"0"``
        instead, so it counts towards length but not towards tf.
        """
        lower = line.lower()
        out = []
        for a, b in token_spans(line):
            term = self.canonical(lower[a:b])
            out.append(b"0" if term in self.terms and not is_counted(lower, a, b) else term)
        return out

    def canonical(self, token: bytes) -> bytes:
        """Map a token to the query term it counts as, or return it unchanged."""
        for term, forms in zip(self.terms, self.variants, strict=True):
            if token in forms:
                return term
        return token

    def keys(self) -> tuple[KeySet, list[dict[bytes, int]]]:
        """The ``KeySet`` of every variant, and for each of its keys (in order) its variants -> term index.

        Built once per distinct query (cached): ``count_terms`` asks for it on every block.
        """
        return _variant_keys(self.variants)


KEY_BYTES = 8
# the low 8*k bits set, for k = 0..8: keeps a token's first k bytes of an 8-byte load
_KEY_MASK = np.asarray([(1 << (8 * k)) - 1 for k in range(KEY_BYTES + 1)], dtype=np.uint64)


def token_key(token: bytes) -> int:
    """The ``TokenTable`` key of a lowercased token: its first 8 bytes, zero-padded, little-endian."""
    return int.from_bytes(token[:KEY_BYTES].ljust(KEY_BYTES, b"\0"), "little")


_BUCKET_BITS = 12


def _bucket(keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    # multiplicative hashing: the top bits of key * odd constant spread keys over the buckets
    return (keys * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - _BUCKET_BITS)


@dataclass(frozen=True, slots=True)
class KeySet:
    """A set of token keys, with a bucket bitmap so most tokens are rejected by one lookup.

    Attributes:
        sorted: the keys, sorted ascending (uint64).
        buckets: shape ``(4096,)`` bool: buckets that hold a key.
    """

    sorted: npt.NDArray[np.uint64]
    buckets: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, keys: Iterable[int]) -> KeySet:
        """The set of ``keys`` (ints from ``token_key``)."""
        ordered = np.asarray(sorted(set(keys)), dtype=np.uint64)
        buckets = np.zeros(1 << _BUCKET_BITS, dtype=bool)
        buckets[_bucket(ordered)] = True
        return cls(ordered, buckets)


@dataclass(frozen=True, slots=True)
class TokenTable:
    """Every token of a block, as arrays (no Python object per token).

    Attributes:
        starts: shape ``(n_tokens,)`` int64: offset of each token in the text.
        lengths: shape ``(n_tokens,)`` int64: length of each token in bytes.
        keys: shape ``(n_tokens,)`` uint64: first 8 lowercased bytes, zero-padded
            (``token_key``); equal keys and lengths <= 8 mean equal tokens.
        per_line: shape ``(n_lines,)`` int64: tokens in each line.
        ends: shape ``(n_lines,)`` int64: end offset of each line in the text.
        lower: the text, ASCII-lowercased.
        buckets: shape ``(n_tokens,)`` uint64: the ``KeySet`` bucket of each key (hashed
            once per block, for every ``find``).
    """

    starts: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    keys: npt.NDArray[np.uint64]
    per_line: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    lower: bytes
    buckets: npt.NDArray[np.uint64]

    def find(self, keys: KeySet) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Tokens whose key is in ``keys``: their indexes and the index of the key in ``keys.sorted``."""
        if keys.sorted.shape[0] == 0 or self.keys.shape[0] == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        maybe = np.flatnonzero(keys.buckets[self.buckets])
        at = np.minimum(np.searchsorted(keys.sorted, self.keys[maybe]), keys.sorted.shape[0] - 1)
        hit = keys.sorted[at] == self.keys[maybe]
        return maybe[hit], at[hit].astype(np.int64)

    def line_of(self, tokens: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """0-based line of each of the given tokens."""
        return np.searchsorted(self.ends, self.starts[tokens], side="right").astype(np.int64)

    def lines_with(self, keys: KeySet) -> npt.NDArray[np.int64]:
        """0-based lines holding a token whose key is in ``keys`` (sorted, unique)."""
        tokens, _ = self.find(keys)
        marks = np.zeros(self.ends.shape[0], dtype=bool)
        marks[self.line_of(tokens)] = True
        return np.flatnonzero(marks).astype(np.int64)


def token_table(text: bytes, ends: npt.NDArray[np.int64]) -> TokenTable:
    """Tokenize a block of whole lines with numpy (same tokens as ``tokenize``).

    Args:
        text: scoring text of whole lines (``NormalizedBlock.text``).
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
    """
    n_lines = int(ends.shape[0])
    arr = np.frombuffer(text, dtype=np.uint8)
    n = arr.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        none = np.zeros(0, dtype=np.uint64)
        return TokenTable(empty, empty, none, np.zeros(n_lines, dtype=np.int64), ends, b"", none)
    # byte classes by comparisons (cheaper than a 256-entry gather)
    upper = (arr - np.uint8(65)) < 26
    digit = (arr - np.uint8(48)) < 10
    lower_letter = ((arr - np.uint8(97)) < 26) | (arr >= 0x80)
    word = upper | digit | lower_letter
    # start[i] for i >= 1 compares byte i with byte i-1 (and i+1 for the upper-run rule)
    start = word.copy()
    w, pw = word[1:], word[:-1]
    start[1:] = w & (
        ~pw
        | (digit[1:] != digit[:-1])
        | (upper[1:] & lower_letter[:-1])
        | (upper[1:] & upper[:-1] & np.append(lower_letter[2:], False))
    )
    starts = np.flatnonzero(start).astype(np.int64)
    # a token ends before the next start or separator; each token has exactly one end
    after = np.ones(n, dtype=bool)
    after[:-1] = start[1:] | ~word[1:]
    token_ends = np.flatnonzero(word & after).astype(np.int64) + 1
    lengths = token_ends - starts
    lower_text = text.lower()
    low = np.zeros(n + KEY_BYTES, dtype=np.uint8)
    low[:n] = np.frombuffer(lower_text, dtype=np.uint8)
    # 8 bytes from every offset (an unaligned, overlapping view; gathered as opaque 8-byte items,
    # which numpy copies faster than unaligned integers), then read as little-endian uint64
    words8 = np.ndarray(shape=(n,), dtype="V8", buffer=low.data, offset=0, strides=(1,))
    keys = words8[starts].view("<u8") & _KEY_MASK[np.minimum(lengths, KEY_BYTES)]
    # tokens never cross a line end: a line's tokens are those starting before its end
    per_line = np.diff(np.searchsorted(starts, ends), prepend=0).astype(np.int64)
    keys = keys.astype(np.uint64)
    return TokenTable(starts, lengths, keys, per_line, ends, lower_text, _bucket(keys))


def count_terms(
    text: bytes, ends: npt.NDArray[np.int64], query: Query, table: TokenTable | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Count tokens and query-term occurrences per line of a block.

    Args:
        text: scoring text of whole lines (``NormalizedBlock.text``).
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
        query: the parsed query.
        table: the block's ``TokenTable``, when already made.

    Returns:
        ``(tokens, tf)``: ``tokens`` shape ``(n_lines,)`` int64, tokens per line;
        ``tf`` shape ``(n_lines, n_terms)`` int64, occurrences of each term per line.
        Equal to counting ``Query.terms_in`` of each line.
    """
    table = table if table is not None else token_table(text, ends)
    n_lines = int(ends.shape[0])
    tf = np.zeros((n_lines, len(query.terms)), dtype=np.int64)
    keys, forms_of = query.keys()
    tokens, which = table.find(keys)
    if tokens.shape[0]:
        lower = table.lower
        starts = table.starts[tokens].tolist()
        lengths = table.lengths[tokens].tolist()
        lines = table.line_of(tokens).tolist()
        for p, length, line, k in zip(starts, lengths, lines, which.tolist(), strict=True):
            e = p + length
            term = forms_of[k].get(lower[p:e])
            if term is not None and is_counted(lower, p, e):
                tf[line, term] += 1
    return table.per_line, tf
