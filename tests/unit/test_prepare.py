"""Term counts: a line reporting a passing check counts no query term, nor a term line's shape repeated by the dozen."""

from __future__ import annotations

import numpy as np
import pytest

from streamfilter.core.filter import TERM_REPEATS, FilterConfig, StreamFilter
from streamfilter.core.prepare import Preparer
from streamfilter.core.records import LineBlock, Run
from streamfilter.core.signatures import SignatureSet
from streamfilter.core.tokens import Query

PASSING = [
    "    ✓ testThatCustomValidationCanThrowCustomError (0.052 seconds)",  # XCTest via xcpretty
    "ok 86 http-client - http-client (errors are bubbled)",  # TAP
    "tests/rules/test_ifconfig.py::test_match[wlan0: error fetching interface] PASSED [ 10%]",  # pytest -v
    "test parse::error_on_empty ... ok",  # cargo test, unittest
    "    informative error messages:                                      OK (0.04s)",  # tasty
    "[       OK ] ParserTest.ReportsErrorOnEof (0 ms)",  # googletest
    "--- PASS: TestFailedLogin (0.00s)",  # go test
    "PASS src/errors.test.js",  # jest
    "io.reactivex.SafeSubscriberTest > onErrorFailureWithUnsubscribeFailure SKIPPED",  # Gradle
]
FAILING = [
    "    ✗ testThatCustomValidationCanThrowCustomError (0.052 seconds)",
    "not ok 86 http-client - http-client (errors are bubbled)",
    "tests/rules/test_ifconfig.py::test_match[wlan0: error fetching interface] FAILED [ 10%]",
    "test parse::error_on_empty ... FAILED",
    "error: could not compile `parse` (lib) due to 1 previous error; okay",
]


def _tf(line: str) -> int:
    data = b"INFO starting\n" + line.encode() + b"\n"
    ends = np.array([14, len(data)], dtype=np.int64)
    facts = Preparer(Query.parse("error failed"), SignatureSet(), FilterConfig().max_line_bytes)(
        LineBlock(data, 1, 0, ends)
    )
    return int(facts.tf[1].sum())


@pytest.mark.parametrize("line", PASSING)
def test_a_passing_check_counts_no_query_term(line: str) -> None:
    assert _tf(line) == 0


@pytest.mark.parametrize("line", FAILING)
def test_a_failing_check_counts_its_query_terms(line: str) -> None:
    assert _tf(line) > 0


def test_passing_checks_named_after_errors_are_summarized_and_the_failure_kept() -> None:
    noise = b"".join(b"compiling module %d of 300\n" % i for i in range(300))
    passing = "    ✓ testThatValidationThrowsError (0.01 seconds)\n".encode()
    failure = "    ✗ testThatParserReportsErrors (0.1 seconds)\nerror: assertion failed: left == right\n".encode()
    data = noise + passing + noise + failure + noise
    sf = StreamFilter(FilterConfig(tail_lines=0), "t")
    runs = sf.feed(data) + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert b"error: assertion failed" in kept
    assert b"testThatValidationThrowsError" not in kept


def test_a_term_line_repeated_by_the_dozen_counts_its_terms_the_first_times_only() -> None:
    noise = b"".join(b"compiling module %d of 60\n" % i for i in range(60))
    warning = b"/usr/lib/python2.7/ssl_.py:%d: InsecurePlatformWarning: connection error, retrying\n"
    data = b"".join(noise + warning % (100 + i) for i in range(10)) + noise
    runs: list[Run] = []
    for chunking in (len(data), 7):  # decisions do not depend on where the bytes were cut
        sf = StreamFilter(FilterConfig(tail_lines=0, prior=False), "t")  # (the end's most probable lines aside)
        out = [r for i in range(0, len(data), chunking) for r in sf.feed(data[i : i + chunking])] + sf.flush()
        assert not runs or out == runs
        runs = out
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert kept.count(b"InsecurePlatformWarning") == TERM_REPEATS
