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

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ("Query", "count_terms", "is_counted", "token_spans", "tokenize")

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
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def is_counted(lower: bytes, start: int, end: int) -> bool:
    """Whether a query-term token at ``lower[start:end]`` counts as an occurrence.

    It does not when it names a zero count (``Failures: 0``, ``errors=0``,
    ``0 failed``), or when it is one component of a compound identifier joined by
    ``. _ / \\ -`` (``org.example.error.Foo``, ``--error-format``, ``errors.go``,
    ``test_error_path``): such names are everywhere in build logs and say nothing
    about a failure. ``ValueError`` (a case split) and ``error:`` still count.
    """
    if start >= 2 and lower[start - 1] in _JOINERS and lower[start - 2] in _ALNUM:
        return False
    if end + 1 < len(lower) and lower[end] in _JOINERS and lower[end + 1] in _ALNUM:
        return False
    return _ZERO_AFTER.match(lower, end) is None and _ZERO_BEFORE.search(lower, max(0, start - 8), start) is None


def _stem(word: bytes) -> bytes:
    for ending in _STEM_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


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

    def prefixes(self) -> tuple[tuple[bytes, ...], ...]:
        """For each term, the shortest forms: every variant starts with one of them."""
        out = []
        for forms in self.variants:
            short = sorted(forms, key=len)
            out.append(tuple(f for i, f in enumerate(short) if not any(f.startswith(g) for g in short[:i])))
        return tuple(out)


def count_terms(
    text: bytes, ends: npt.NDArray[np.int64], query: Query
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Count tokens and query-term occurrences per line of a block.

    Args:
        text: scoring text of whole lines (``NormalizedBlock.text``).
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
        query: the parsed query.

    Returns:
        ``(tokens, tf)``: ``tokens`` shape ``(n_lines,)`` int64, tokens per line;
        ``tf`` shape ``(n_lines, n_terms)`` int64, occurrences of each term per line.
        Equal to counting ``tokenize`` of each line (``Query.canonical`` applied).
    """
    n_lines = int(ends.shape[0])
    n_terms = len(query.terms)
    tf = np.zeros((n_lines, n_terms), dtype=np.int64)
    if not text:
        return np.zeros(n_lines, dtype=np.int64), tf
    arr = np.frombuffer(text, dtype=np.uint8)
    cls = _CLASS[arr]
    n = cls.shape[0]
    prev = np.empty(n, dtype=np.uint8)
    prev[0] = _OTHER
    prev[1:] = cls[:-1]
    nxt = np.empty(n, dtype=np.uint8)
    nxt[-1] = _OTHER
    nxt[:-1] = cls[1:]
    word = cls != _OTHER
    is_digit = cls == _DIGIT
    upper = cls == _UPPER
    start = word & (
        (prev == _OTHER)
        | (is_digit != (prev == _DIGIT))
        | (upper & (prev == _LOWER))
        | (upper & (prev == _UPPER) & (nxt == _LOWER))
    )
    start_pos = np.flatnonzero(start)
    tokens = np.bincount(np.searchsorted(ends, start_pos, side="right"), minlength=n_lines)[:n_lines]
    if n_terms:
        # a token ends where the next one starts or a separator comes (or the text ends)
        boundary = np.empty(n + 1, dtype=bool)
        boundary[:n] = start | ~word
        boundary[n] = True
        bounds = np.flatnonzero(boundary)
        lower = text.lower()
        for t, (forms, prefixes) in enumerate(zip(query.variants, query.prefixes(), strict=True)):
            found: list[int] = []
            for prefix in prefixes:
                at = lower.find(prefix)
                while at >= 0:
                    found.append(at)
                    at = lower.find(prefix, at + 1)
            if not found:
                continue
            pos = np.unique(np.asarray(found, dtype=np.int64))
            pos = pos[start[pos]]
            if not pos.shape[0]:
                continue
            token_end = bounds[np.searchsorted(bounds, pos, side="right")]
            forms_set = set(forms)
            match = [
                lower[p:e] in forms_set and is_counted(lower, p, e)
                for p, e in zip(pos.tolist(), token_end.tolist(), strict=True)
            ]
            hit = pos[np.asarray(match, dtype=bool)]
            if hit.shape[0]:
                line_of = np.searchsorted(ends, hit, side="right")
                tf[:, t] = np.bincount(line_of, minlength=n_lines)[:n_lines]
    return tokens.astype(np.int64), tf
