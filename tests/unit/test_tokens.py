from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.core.tokens import Query, count_terms, tokenize


def test_tokenizer_splits_case_and_kind_changes() -> None:
    assert tokenize(b"ValueError: bad") == [b"value", b"error", b"bad"]
    assert tokenize(b"error[E0308]: mismatched") == [b"error", b"e", b"0308", b"mismatched"]
    assert tokenize(b"HTTPServer npm ERR!") == [b"http", b"server", b"npm", b"err"]
    assert tokenize(b"TypeError:\r\n") == [b"type", b"error"]


def test_query_variants_match_failed_failure_and_err() -> None:
    q = Query.parse("error failed")
    assert q.terms == (b"error", b"fail")
    assert q.canonical(b"err") == b"error"
    assert q.canonical(b"failures") == b"fail"
    assert q.canonical(b"failing") == b"fail"
    assert q.canonical(b"errand") == b"errand"


def reference_counts(text: bytes, q: Query) -> tuple[list[int], list[list[int]]]:
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    tokens, tf = [], []
    for line in lines:
        toks = q.terms_in(line)
        c = Counter(toks)
        tokens.append(len(toks))
        tf.append([c[t] for t in q.terms])
    return tokens, tf


def ends_of(text: bytes) -> np.ndarray:
    ends = [i + 1 for i, b in enumerate(text) if b == 10]
    if text and not text.endswith(b"\n"):
        ends.append(len(text))
    return np.asarray(ends, dtype=np.int64)


ALPHABET = [*list(b"aeErRoOfFiIlLdDsSuU0129 :=.[]!_-\n\r\t\x00\xc3\xa9\xff"), b"failed", b"Errors", b" 0", b": 0"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(ALPHABET), max_size=200).map(
        lambda xs: b"".join(x if isinstance(x, bytes) else bytes([x]) for x in xs)
    ),
    st.sampled_from(["error failed", "fail", "ERR", "sudo"]),
)
def test_block_counts_equal_reference_tokenizer(text: bytes, query: str) -> None:
    q = Query.parse(query)
    tokens, tf = count_terms(text, ends_of(text), q)
    ref_tokens, ref_tf = reference_counts(text, q)
    assert tokens.tolist() == ref_tokens
    assert tf.tolist() == (ref_tf if ref_tf else [])


def test_block_counts_on_a_real_line() -> None:
    q = Query.parse("error failed")
    text = b"npm ERR! Test FAILED: TypeError: x\nall good\nfailures: errors\n"
    tokens, tf = count_terms(text, ends_of(text), q)
    assert tf.tolist() == [[2, 1], [0, 0], [1, 1]]
    assert tokens.tolist() == [7, 2, 2]


def test_zero_counts_and_identifier_parts_are_not_occurrences() -> None:
    q = Query.parse("error failed")
    text = (
        b"Tests run: 3, Failures: 0, Errors: 0\n0 failed, 2 errors\nfailed=0 errors=10\n"
        b"org.example.error.Foo --error-format=json test_error_path errors.go\n"
        b"ValueError: x\nerror: y\nBuild failed.\ntests::error_path io::Error::new failed: 2\n"
    )
    _, tf = count_terms(text, ends_of(text), q)
    assert tf.tolist() == [[0, 0], [1, 0], [1, 0], [0, 0], [1, 0], [1, 0], [0, 1], [0, 1]]
