"""Failure signatures: lines that are kept whatever the query says.

A signature is a named regular expression over one line of scoring text (escapes
removed, case kept). The built-in table covers the common ecosystems; users add
their own with ``--protect REGEX``. Evidence that shares no word with a query
(jest's ``●``, pytest's ``E   `` lines, a compiler's caret line, ``exit code 1``)
is found here, not by BM25.

Matching is done on a whole block at once: each signature family is one
alternation anchored at a line start (``\\n`` literal prefix, which ``re`` scans
for quickly), plus a few unanchored literals searched with ``bytes.find``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .errors import UsageError

__all__ = ("DEFAULT_SIGNATURES", "Signature", "SignatureSet")


@dataclass(frozen=True, slots=True)
class Signature:
    """One named failure signature.

    Attributes:
        name: short name shown in decision traces (``protected:<name>``).
        pattern: a regex (bytes) matched at the start of a line, after any
            indentation; it may use ``.*`` to reach into the line.
    """

    name: str
    pattern: bytes


def _s(name: str, pattern: str) -> Signature:
    return Signature(name, pattern.encode())


# Matched at line start after optional indentation; case-sensitive unless (?i:...).
DEFAULT_SIGNATURES: tuple[Signature, ...] = (
    # Python / pytest
    _s("python-traceback", r"Traceback \(most recent call last\)"),
    _s("python-exception", r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit)(?::|$)"),
    _s("pytest-E", r"E   "),
    _s("pytest-section", r"=+ (?:FAILURES|ERRORS) =+"),
    _s("pytest-summary", r"=+ .*\b(?:failed|error|errors)\b.* =+[ \t\r]*$"),
    _s("pytest-failed", r"(?:FAILED|ERROR) \S+::"),
    _s("pytest-location", r"\S+\.py:\d+: (?:in \S+|\w*(?:Error|Exception))"),
    _s("test-failed", r"(?i:\S.*\b(?:FAILED|FAILURE|ERROR)[ \t\r]*$)"),
    # Java / Maven / Gradle
    _s("java-exception", r"(?:Exception in thread|Caused by:|[a-z][\w$]*(?:\.[\w$]+)+(?:Exception|Error)\b)"),
    _s("maven-error", r"\[ERROR\]"),
    _s("build-failure", r"(?:BUILD FAILURE|BUILD FAILED|FAILURE: Build failed|\* What went wrong:)"),
    _s("junit-failure", r".*<<< (?:FAILURE|ERROR)!"),
    _s("junit-counts", r"Tests run: .*(?:Failures: [1-9]|Errors: [1-9])"),
    _s("gradle-task-failed", r"> Task \S+ FAILED"),
    # JS: npm, jest, mocha, tsc
    _s("npm-err", r"npm (?:ERR!|error)"),
    _s("jest-bullet", r"● "),
    _s("jest-fail", r"(?:FAIL|✕|✗|×) "),
    _s("jest-expected", r"(?:Expected|Received)(?: value| length| substring)?:"),
    _s("mocha-failing", r"\d+ failing"),
    _s("tsc-error", r"\S+\(\d+,\d+\): error TS\d+"),
    # Rust
    _s("rust-error", r"error(?:\[E\d+\])?:"),
    _s("rust-panic", r".*panicked at"),
    _s("rust-test-failed", r"(?:test .* \.\.\. FAILED|test result: FAILED|failures:\r?$)"),
    # Go
    _s("go-fail", r"(?:--- FAIL:|FAIL\b|panic: )"),
    _s("go-compile", r"\S+\.go:\d+:\d+: "),
    # C / C++ / make / cmake / linker
    _s("compiler-error", r".*: (?:fatal )?error:"),
    _s("make-error", r"(?:g?make(?:\[\d+\])?: \*\*\*|ninja: build stopped|CMake Error)"),
    _s("linker-error", r".*(?:undefined reference to|ld returned \d+ exit status|collect2: error)"),
    _s("caret-line", r"\^~*[ \t\r]*$"),
    # Ruby, PHP and other test runners
    _s("rspec-failure", r"(?:Failure/Error:|Failures:\r?$|rspec \./)"),
    _s("phpunit-failure", r"(?:FAILURES!|There (?:was|were) \d+ (?:failure|error)s?:)"),
    # shell, CI, generic
    _s("exit-status", r".*(?:exit(?:ed)? (?:with )?(?:code|status) [1-9]|exited with [1-9]|returned non-zero exit status)"),
    _s("command-failed", r".*(?:command not found|Segmentation fault|core dumped|Killed[ \t\r]*$)"),
    _s("ci-error", r"(?:##\[error\]|::error)"),
    _s("generic-error", r"(?:ERROR|FATAL|FAIL|FAILED|Error|Fatal)\b[:!\s]"),
    _s("assertion", r".*(?:AssertionError|Assertion failed|assert(?:ion)? failed)"),
)


class SignatureSet:
    """A compiled set of signatures, matched over whole blocks of lines.

    Raises:
        UsageError: a user pattern that is not a valid regular expression.
    """

    def __init__(self, signatures: Sequence[Signature] = DEFAULT_SIGNATURES, extra: Iterable[str] = ()) -> None:
        sigs = list(signatures)
        for i, pattern in enumerate(extra):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--protect {pattern!r}: not a valid regular expression: {exc}") from None
            # a user pattern may match anywhere in the line
            sigs.append(Signature(f"user{i + 1}", b".*?(?:" + pattern.encode("utf-8", "surrogateescape") + b")"))
        self.names: tuple[str, ...] = tuple(s.name for s in sigs)
        alternation = b"|".join(b"(?P<g%d>%s)" % (i, s.pattern) for i, s in enumerate(sigs))
        # "\n" first gives re a literal prefix to scan for; text is prefixed with "\n".
        self._regex = re.compile(b"\n[ \t]*(?:" + alternation + b")", re.MULTILINE)

    def find(self, text: bytes, ends: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Find the lines of a block that carry a signature.

        Args:
            text: scoring text of whole lines.
            ends: shape ``(n_lines,)``: end offset of each line in ``text``.

        Returns:
            ``(lines, ids)``: 0-based line indexes (sorted, unique) and, for each,
            the index in ``names`` of the first signature that matched it.
        """
        lines: list[int] = []
        ids: list[int] = []
        padded = b"\n" + text
        pos = 0
        regex = self._regex
        while pos >= 0:
            m = regex.search(padded, pos)
            if m is None:
                break
            lines.append(m.start())
            ids.append(int(m.lastgroup[1:]) if m.lastgroup else 0)
            # one signature per line is enough: go on from the next line's start
            pos = padded.find(b"\n", m.start() + 1)
            if pos < 0:
                break
        if not lines:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        starts = np.asarray(lines, dtype=np.int64)  # = offset of the line start in text
        line_idx = np.searchsorted(ends, starts, side="right")
        return line_idx.astype(np.int64), np.asarray(ids, dtype=np.int64)
