"""Test result lines: the line each test target, package or suite prints with its counts.

A run that passed is kept terse (``run``'s success tail), but its last lines are only the last
target's: a green ``cargo test`` of a library and its doc-tests ends ``running 0 tests`` and
``0 passed``, where the library's line said ``43 passed``. ``FilterConfig.results`` keeps every
line ``RESULT_LINE`` matches (``result_lines``), so the reader sees what ran.

Pure: no I/O.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

__all__ = ("RESULT_LINE", "reports_failure", "result_lines")

_RESULTS = (
    rb"test result: ",  # cargo, per test target
    rb"(?:ok|FAIL)\s+\S+\s+(?:\d[\d.]*m?s|\(cached\))",  # go test, per package
    rb"\d+ tests? completed",  # gradle, per module
    rb"Results: (?:SUCCESS|FAILURE) \(\d+ tests?",  # gradle's test logger, per module
    rb"\d+ workers? \[\d+ items?\]",  # pytest-xdist: what was collected
    rb"=+ [^\n]*\b(?:passed|failed|errors?|skipped|deselected|no tests ran)\b[^\n]* =+[ \t\r]*$",  # pytest
    rb"(?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)(?:, |(?= in ))|no tests ran)+"
    rb" in \d[\d.]*s\b",  # pytest -q
    rb"Test Suites: |Tests: ",  # jest (all projects)
    rb"Test Files |Tests  ",  # vitest
    rb"(?:#|\xe2\x84\xb9) (?:tests|suites|pass|fail|cancelled|skipped|todo) \d+",  # node --test: TAP, spec (ℹ)
    rb"Ran \d+ tests? in ",  # unittest
    rb"\d+ (?:passing|failing|pending)\b",  # mocha
    rb"(?:\[INFO\] |\[ERROR\] )?Tests run: \d+, Failures: ",  # maven surefire
    rb"\d+% tests passed, \d+ tests? failed out of \d+",  # ctest
    rb"(?:Passed|Failed)! +- Failed: ",  # dotnet test
    rb"\d+ examples?, \d+ failures?",  # rspec
)
# at a line's start, after its indentation
RESULT_LINE = re.compile(rb"(?m)^[ \t]*(?:" + b"|".join(_RESULTS) + rb")")

BoolArray = npt.NDArray[np.bool_]
# a result line that reports failed tests: a count of them not 0, or the runner's word for it
_FAILED = re.compile(
    rb"(?i)\b[1-9]\d* (?:tests? )?(?:failed|failing|failures?|errors?)\b|\b(?:fail|failed|failures|errors)[:=]? +[1-9]"
    rb"|^[ \t]*FAIL\b|test result: FAILED|Results: FAILURE|Failed! "
)


def reports_failure(line: bytes) -> bool:
    """Whether a result line (``RESULT_LINE``) reports failed tests: pytest's ``1 failed, 3 passed
    in 0.5s``, node's ``# fail 1``, go's ``FAIL pkg``, surefire's ``Failures: 0, Errors: 2``; not
    ``# fail 0`` nor ``# todo 0``."""
    return _FAILED.search(line) is not None


def result_lines(data: bytes | bytearray, ends: npt.NDArray[np.int64]) -> BoolArray:
    """Shape ``(n,)``: which of the lines of ``data`` (line ``i`` ends at offset ``ends[i]``, past its
    ``\\n``; ``n = len(ends)``) are result lines (``RESULT_LINE``)."""
    n = int(ends.shape[0])
    found = np.zeros(n, dtype=bool)
    if n:
        starts = [m.start() for m in RESULT_LINE.finditer(data, 0, int(ends[-1]))]
        found[np.searchsorted(ends, np.asarray(starts, dtype=np.int64), side="right")] = True
    return found
