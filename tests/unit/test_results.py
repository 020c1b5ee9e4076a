"""Test result lines: each test target's counts, kept for a run known to have passed."""

from __future__ import annotations

import numpy as np
import pytest

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.results import reports_failure, result_lines


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
        b"79 failed, 1 passed in 0.94s",  # pytest -q
        b"1 passed, 2 warnings in 62.01s (0:01:02)",
        b"no tests ran in 0.01s",
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
    "line",
    [
        b"okay, moving on",
        b"test results are in the report",
        b"# pass the salt",
        b"the tests completed",
        b"2 passed in review",
    ],
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
    plain = StreamFilter(FilterConfig(tail_lines=5, prior=False))  # (the end's most probable lines aside)
    assert b"".join(r.data for r in plain.feed(data) + plain.flush()).count(b"test result") == 1


# node --test's TAP (node 20, as it prints it): a suite whose test failed, then the next suite, which passed
TAP = b"""# Subtest: formatTable
    # Subtest: aligns labels
    not ok 1 - aligns labels
      ---
      duration_ms: 0.432701
      location: '/src/units/test/format.test.js:14:3'
      failureType: 'testCodeFailure'
      error: "Cannot read properties of undefined (reading 'value')"
      code: 'ERR_TEST_FAILURE'
      ...
    1..1
not ok 11 - formatTable
  ---
  duration_ms: 1.24564
  type: 'suite'
  location: '/src/units/test/format.test.js:13:1'
  failureType: 'subtestsFailed'
  error: '1 subtests failed'
  ...
# Subtest: parseQuantity
    # Subtest: parses integers
    ok 1 - parses integers
      ---
      duration_ms: 1.269083
      ...
    # Subtest: parses decimals
    ok 2 - parses decimals
      ---
      duration_ms: 0.285854
      ...
    1..2
ok 12 - parseQuantity
  ---
  duration_ms: 2.1
  type: 'suite'
  ...
"""


def test_a_failed_tap_suite_does_not_keep_the_next_passing_suite_as_its_context() -> None:
    data = TAP + b"".join(b"# Subtest: filler %d\nok %d - filler %d\n" % (i, 13 + i, i) for i in range(60))
    data += b"1..72\n# tests 74\n# pass 73\n# fail 1\n"
    sf = StreamFilter(FilterConfig(explain=True))
    runs = sf.feed(data) + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert b"not ok 11 - formatTable\n  ---\n" in kept and b"  error: '1 subtests failed'\n  ...\n" in kept
    assert b"parses integers" not in kept and b"# Subtest: parseQuantity" not in kept


@pytest.mark.parametrize(
    ("line", "failed"),
    [
        (b"79 failed, 1 passed in 0.94s", True),
        (b"== 3 passed in 0.10s ==", False),
        (b"test result: FAILED. 1 passed; 2 failed; 0 ignored", True),
        (b"test result: ok. 43 passed; 0 failed; 0 ignored", False),
        (b"FAIL\texample.com/shop/cart\t0.012s", True),
        (b"ok  \texample.com/shop/tax\t(cached)", False),
        (b"# fail 1", True),
        (b"# fail 0", False),
        (b"# todo 0", False),
        ("ℹ fail 2".encode(), True),
        (b"Tests:       1 failed, 2 passed, 3 total", True),
        (b"[INFO] Tests run: 8, Failures: 0, Errors: 2, Skipped: 0", True),
        (b"[INFO] Tests run: 8, Failures: 0, Errors: 0, Skipped: 0", False),
        (b"67% tests passed, 1 tests failed out of 3", True),
        (b"100% tests passed, 0 tests failed out of 5", False),
        (b"Failed!  - Failed:     1, Passed:    12", True),
        (b"12 examples, 1 failure", True),
        (b"12 examples, 0 failures", False),
        (b"  2 failing", True),
        (b"Results: FAILURE (12 tests, 11 successes, 1 failures, 0 skipped)", True),
    ],
)
def test_a_result_line_that_reports_failed_tests_is_told(line: bytes, failed: bool) -> None:
    data, ends = lines_of(line)
    assert result_lines(data, ends).tolist() == [True]
    assert reports_failure(line) is failed
