"""Test result lines: each test target's counts, kept for a run known to have passed."""

from __future__ import annotations

import numpy as np
import pytest

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.results import result_lines


def lines_of(*lines: bytes) -> tuple[bytes, np.ndarray]:
    data = b"".join(line + b"\n" for line in lines)
    return data, np.cumsum([len(line) + 1 for line in lines]).astype(np.int64)


@pytest.mark.parametrize(
    "line",
    [
        b"test result: ok. 43 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
        b"ok  \texample.com/shop/cart\t0.012s",
        b"ok  \texample.com/shop/tax\t(cached)",
        b"12 tests completed, 0 failed",
        b"Results: SUCCESS (12 tests, 12 successes, 0 failures, 0 skipped)",
        b"4 workers [120 items]",
        b"============================= 120 passed in 3.21s ==============================",
        b"Test Suites: 3 passed, 3 total",
        b"Tests:       40 passed, 40 total",
        b" Test Files  2 passed (2)",
        b"# tests 32",
        b"# pass 32",
        b"# fail 0",
        "ℹ pass 30".encode(),
        b"Ran 12 tests in 0.003s",
        b"  14 passing (32ms)",
        b"[INFO] Tests run: 8, Failures: 0, Errors: 0, Skipped: 0",
        b"100% tests passed, 0 tests failed out of 5",
        b"Passed!  - Failed:     0, Passed:    12, Skipped:     0, Total:    12",
        b"12 examples, 0 failures",
    ],
)
def test_each_runners_result_line_is_found(line: bytes) -> None:
    data, ends = lines_of(b"running the suite", line, b"done")
    assert result_lines(data, ends).tolist() == [False, True, False]


@pytest.mark.parametrize(
    "line", [b"okay, moving on", b"test results are in the report", b"# pass the salt", b"the tests completed"]
)
def test_other_lines_are_not(line: bytes) -> None:
    data, ends = lines_of(line)
    assert not result_lines(data, ends).any()


def test_a_filter_told_the_run_passed_keeps_every_result_line_whatever_the_chunking() -> None:
    blocks = [
        b"running %d tests\n" % n
        + b"".join(b"test t%d_%d ... ok\n" % (n, i) for i in range(n))
        + b"\ntest result: ok. %d passed; 0 failed\n\n" % n
        for n in (43, 4, 0)
    ]
    data = b"".join(blocks) * 3  # three runs' worth: far more lines than the look-ahead
    config = FilterConfig(tail_lines=5, results=True, explain=True)
    sf = StreamFilter(config)
    runs = [r for i in range(0, len(data), 333) for r in sf.feed(data[i : i + 333])] + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert kept.count(b"test result: ok.") == 9 and b"... ok" not in kept
    assert {t.reason for r in runs if r.decision == "keep" for t in r.traces} <= {"result", "tail"}
    whole = StreamFilter(config)
    assert whole.feed(data) + whole.flush() == runs
    plain = StreamFilter(FilterConfig(tail_lines=5))
    assert b"".join(r.data for r in plain.feed(data) + plain.flush()).count(b"test result") == 1
