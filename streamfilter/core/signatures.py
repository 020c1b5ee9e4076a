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

import importlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import UsageError
from .normalize import gather_lines
from .tokens import KeySet, TokenTable, token_key

__all__ = (
    "DEFAULT_SIGNATURES",
    "EXIT_VERDICTS",
    "LEAD_IN",
    "LEAD_LINES",
    "Signature",
    "SignatureSet",
    "first_bytes",
    "required_literal",
)


@dataclass(frozen=True, slots=True)
class Signature:
    """One named failure signature.

    Attributes:
        name: short name shown in decision traces (``protected:<name>``).
        pattern: a regex (bytes) matched at the start of a line, after any
            indentation. It must begin with a literal byte, so that ``re`` skips a
            line at its first byte; or, with ``find``, it only confirms a hit.
        find: regexes searched anywhere in the text, each beginning with a literal
            (which ``re`` scans for quickly). A line with a match is a hit; when
            ``pattern`` is also given, the line must match it too.
        max_hits: most lines of the stream this signature protects (the first
            ones); None for no limit. For signatures that can repeat by the
            hundred (compiler warnings), so the first ones are kept.
        section: the line heads a section of failure reports (pytest's
            ``=== FAILURES ===``, cargo's ``failures:``): the lines after it are
            kept whatever their indentation, up to the filter's ``section_lines``.
        record: the line heads a report that ends with its record (at a blank line):
            the rest of the record is kept whatever its indentation, up to the
            filter's ``section_lines``.
        anywhere: the ``find`` regexes are searched in every line, not only in the
            lines the trigger prefilter lets through: for a signature with no trigger
            word whose finders share a literal rare enough to rule out most blocks
            at once (``.py:``).
        shape_above: its repeats (``FilterConfig.max_repeats``) are told apart by the
            shape of the line above it too: for a location line under its finding
            (ruff's ``  --> a.py:3:1``), whose own shape is the same for every finding.
        found: a hit is a failure found, after which the tail can be short
            (``FilterConfig.found_tail_lines``). False for a line that says only that a command or
            a run failed (``exit code 1``, make's ``*** [all] Error 1``, ``BUILD FAILED``, a run's
            failed counts), that warns, or that a script may well get past (a missing file, git's
            ``fatal:`` from a probe such as ``git describe``), and for ``--protect`` patterns.
    """

    name: str
    pattern: bytes = b""
    find: tuple[bytes, ...] = ()
    max_hits: int | None = None
    section: bool = False
    record: bool = False
    anywhere: bool = False
    shape_above: bool = False
    found: bool = True


def _s(name: str, pattern: str, *, section: bool = False, record: bool = False, found: bool = True) -> Signature:
    return Signature(name, pattern.encode(), section=section, record=record, found=found)


def _f(
    name: str,
    *find: str,
    line: str = "",
    max_hits: int | None = None,
    section: bool = False,
    record: bool = False,
    anywhere: bool = False,
    shape_above: bool = False,
    found: bool = True,
) -> Signature:
    return Signature(
        name, line.encode(), tuple(f.encode() for f in find), max_hits, section, record, anywhere, shape_above, found
    )


_EXCEPTION_LINE = r"(?:[A-Za-z_$][\w$]{0,100}\.){0,30}[A-Z][\w$]{0,200}(?:Error|Exception)(?::|\b.{0,300}$)"

# a command's non-zero exit, as the exit-status signature finds it (``BlockFacts.verdicts`` too)
EXIT_VERDICTS = (
    r"exit(?:ed)? (?:with )?(?:code|status):? [1-9](?!\d*\.\d)",  # not a duration: "exit code: 52.69 ms"
    r"exited with [1-9]",
    r"returned non-zero exit status",
    r"exited with non-zero status",  # GNU time's
    r'" failed \d+ times\.',  # Travis, after the retries: 'The command "git clone ..." failed 3 times.'
)

# The lines a compiler prints before a diagnostic to say where it comes from, matched at a line's
# start (escapes removed): gcc's and clang's "In file included from a.h:3," and its indented
# "from b.cpp:1:" lines, "a.cpp: In function 'int f()':", "a.h:5:7: In instantiation of '...':" and
# its "required from ..." chain down to "t.cpp:8:9:   required from here". A protected line keeps
# those right before it, at most LEAD_LINES, as it keeps its frames after it.
LEAD_LINES = 20
LEAD_IN = re.compile(
    rb"[ \t]*(?:In file included from \S|from \S+:\d+[,:][ \t\r]*$"
    rb"|\S+: (?:In (?:(?:static )?member )?function|In constructor|In destructor|In instantiation of"
    rb"|In lambda function|In substitution of|At global scope|At top level)\b"
    rb"|\S+:\d+:\d+:[ \t]+required (?:from|by)\b"
    rb"|(?:---|\+\+\+) \S+\t"  # diff -u's file lines, over its first hunk
    rb"|\[warn\] \S+[ \t\r]*$)"  # prettier's files, before "[warn] Code style issues found in 2 files."
)

# Case-sensitive unless (?i:...).
DEFAULT_SIGNATURES: tuple[Signature, ...] = (
    # Python / pytest
    _s("python-traceback", r"Traceback \(most recent call last\)"),
    # faulthandler's dump after a crash: "Fatal Python error: ...", then each thread's frames
    _s("python-fatal", r"(?:Fatal Python error: |(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\))"),
    _f("exception-line", "Error", "Exception", line=_EXCEPTION_LINE),
    _s("pytest-E", r"E   "),
    _s("pytest-section", r"=+ (?:FAILURES|ERRORS) =+", section=True),
    # unittest: "FAIL: test_x (pkg.Case.test_x)", a rule, the traceback, the message and its diff
    _s("unittest-report", r"(?:FAIL|ERROR): \w+ \([\w.]+\)", section=True),
    _s("pytest-summary", r"=+ [^\n]{0,300}\b(?:failed|error|errors)\b[^\n]{0,300} =+[ \t\r]*$", found=False),
    _s("pytest-failed", r"(?:FAILED|ERROR) \S+::"),
    _f("pytest-verbose-failed", r" FAILED\b", r" ERROR\b", line=r"\S+::\S+.*? (?:FAILED|ERROR)\b"),
    _f("pytest-location", r"\.py:\d+: ", line=r"\S+\.py:\d+: (?:in \S+|\w*(?:Error|Exception))"),
    # Java / Maven / Gradle / sbt / ScalaTest
    _s("java-exception", r"(?:Exception in thread|Caused by:)"),
    _s("maven-error", r"\[ERROR\]"),
    _s("sbt-error", r"\[error\]"),
    _s("build-failure", r"(?:BUILD FAILURE|BUILD FAILED|FAILURE: Build failed|\* What went wrong:)", found=False),
    _f("junit-failure", r"<<< (?:FAILURE|ERROR)!"),
    _s("junit-counts", r"Tests run: [^\n]*(?:Failures: [1-9]|Errors: [1-9])", found=False),
    _s("gradle-task-failed", r"> Task \S+ FAILED", found=False),
    _f("scalatest-failed", r"\*\*\* FAILED \*\*\*"),
    # kotlinc's errors: "e: file:///src/Cart.kt:42:17 Unresolved reference 'x'." (Kotlin 2), and
    # "e: /src/Cart.kt: (42, 17): Unresolved reference: x" (Kotlin 1); not its "w: " warnings
    _f(
        "kotlin-error",
        r"\.kts?(?::\d+:\d+ |: \(\d+, \d+\): )",
        line=r"e: (?:file://)?\S+\.kts?(?::\d+:\d+|: \(\d+, \d+\)):? ",
    ),
    # JS: npm, jest, mocha, tsc
    _s("npm-err", r"npm (?:ERR!|error)"),
    _s("jest-bullet", r"● "),
    # vitest's failure report: " FAIL  a.test.js > suite > test", its message, the diff of expected
    # and received, the "❯ a.test.js:3:48" location and its code frame, to its "⎯⎯⎯[1/3]⎯" rule
    _s("vitest-fail", r"FAIL  \S[^\n]{0,500} > ", section=True),
    _s("jest-fail", r"(?:FAIL|✕|✗|×) "),
    # jest's and vitest's counts at the end of a run with failures ("Tests:       1 failed, 41 passed")
    _s("jest-summary", r"(?:Test Suites|Tests|Test Files): +[1-9]\d* failed", found=False),
    _s("jest-expected", r"(?:Expected|Received)(?: value| length| substring)?(?: to (?:be|equal|match)\w*)?:"),
    _f("mocha-failing", r" failing", line=r"\d+ failing", section=True),
    # plain "src/a.ts(5,1): error TS2304: ..." and --pretty "src/a.ts:5:1 - error TS2304: ..."
    _f("tsc-error", r"error TS\d+", line=r"\S+(?:\(\d+,\d+\):|:\d+:\d+ -) error TS\d+"),
    # ts-node's diagnostics: "TSError: ⨯ Unable to compile TypeScript", then "src/a.ts (5,1): message (2304)"
    _f("ts-node-error", r"TSError: ", r"\.tsx? \(", line=r"(?:.{0,300}\bTSError: |\S+\.tsx? \(\d+,\d+\): )"),
    # numbered failure lists: ExUnit "1) test ...", PHPUnit "1) Ns\\Class::method"
    _f("numbered-failure", r"\) test ", r"::", line=r"\d+\) (?:test |[\w\\]+::\w)"),
    # Rust
    _s("rust-error", r"error(?:\[E\d+\])?:"),
    _f("rust-panic", r"panicked at"),
    _s("rust-test-failed", r"(?:test \S+ \.\.\. FAILED|test result: FAILED)"),
    _s("rust-failures", r"failures:\r?$", section=True),
    # Go
    _s("go-fail", r"(?:--- FAIL:|FAIL\b|panic: )"),
    _f("go-compile", r"\.go:\d+:\d+: ", line=r"\S+\.go:\d+:\d+: "),
    # C / C++ / make / cmake / linker / sanitizers / other compilers
    _f(
        "compiler-error",
        r": (?:fatal )?error:",
        r": Error\b",
        line=r"(?:\S+:\d+:(?:\d+:)? [Ee]rror\b|.*: (?:fatal )?error:)",
    ),
    # and Sphinx's "index.rst:4: WARNING: toctree contains reference to nonexisting document" (-W fails on them)
    _f(
        "compiler-warning",
        r": warning\b",
        r": Warning\b",
        r": WARNING: ",
        line=r"\S+:\d+:(?:\d+:)? (?:[Ww]arning\b|WARNING: )",
        max_hits=10,
        found=False,
    ),
    _s("make-error", r"(?:g?make(?:\[\d+\])?: \*\*\*|ninja: build stopped)", found=False),
    _s("cmake-error", r"CMake Error"),
    # make's own errors in a makefile: "Makefile:12: *** missing separator.  Stop."
    _f("make-stop", r": \*\*\* ", line=r"\S+:\d+: \*\*\* .*Stop\."),
    _f(
        "linker-error",
        r"undefined reference to",
        r"ld returned \d+ exit status",
        r"collect2: error",
        r"library not found for",  # Apple's ld
        r"cannot find -l",  # GNU ld: "ld: cannot find -lssl"
        r"symbol\(s\) not found",  # Apple's ld
    ),
    # the C++ runtime's last words before abort(), then its indented "  what():  std::bad_alloc"
    _f("cpp-terminate", r"terminate called after throwing", r"terminate called without an active exception"),
    _s("caret-line", r"\^~*[ \t\r]*$"),
    # a sanitizer report: its stacks are separated by blank lines and column-0 headings
    _f("sanitizer", r"==\d+==(?:ERROR|WARNING): \w*Sanitizer", section=True),
    # valgrind's memcheck: "==123== Invalid read of size 4", its stacks on "==123==    at ..." lines
    _f(
        "valgrind-error",
        r"== Invalid (?:read|write|free)",
        r"== Conditional jump or move depends",
        r"== Use of uninitialised value",
        r"== Mismatched free",
        r"== ERROR SUMMARY: [1-9]",
        line=r"==\d+== ",
        record=True,
    ),
    # Ruby, PHP, PowerShell, Lua and other test runners and linters
    _s("rspec-failure", r"(?:Failure/Error:|rspec \./)"),
    _s("lua-traceback", r"stack traceback:"),
    # Tcl's errorInfo: the message, then "    while executing", the command in quotes at column 0,
    # "    invoked from within" and the callers up to '    (file "x.tcl" line 4)' (its continuation)
    _f("tcl-error", r"while executing[ \t\r]*$", line=r"while executing[ \t\r]*$"),
    # Lua's require: "x_spec.lua:5: module 'a.b' not found:", then the tab-indented places it looked
    _f("lua-module-not-found", r"module '", line=r".{0,300}\bmodule '[^'\n]{1,200}' not found:"),
    # minitest's and similar assertion messages: 'Expected "" to include "sqlite>".'
    _s("expected-to", r"Expected .{1,300} to (?:be|include|match|equal|respond|have|eq)\b"),
    _s("failures-section", r"Failures:\r?$", section=True),
    _s("minitest-failure", r"(?:Failure|Error):\r?$"),
    _s("lint-offenses", r"Offenses:\r?$", section=True),  # RuboCop: a blank line, then the offenses
    # perl's fatal errors: "Can't locate Foo.pm in @INC (...) at t/a.t line 3.", "Died at x.pl line 9."
    _f(
        "perl-die",
        r" line \d+",
        line=r"(?:Can't |Died\b|Undefined subroutine |Not an? [A-Z]+ reference|Illegal division )"
        r"[^\n]*? at \S+ line \d+",
    ),
    # Perl::Critic: "Use x instead of y at line 69, column 28.  See page 218 of PBP.  (Severity: 5)"
    _f("perlcritic", r"\(Severity: \d\)", line=r".{0,400}\bat line \d+, column \d+\."),
    # awesome_bot's link report: "Issues :-(", then "> Links" and the failing links
    _s("link-check-issues", r"Issues :-\(", record=True),
    _f("lint-error", r"  error  ", line=r"\d+:\d+\s+error\s"),
    # stylelint's findings under their file: "  2:3  ✖  Unknown property "colr"  property-no-unknown"
    _f("stylelint-error", "✖", line=r"\d+:\d+\s+✖\s", anywhere=True),
    # formatters' checks: black's "would reformat src/a.py", ruff format's "Would reformat: src/a.py",
    # prettier's "[warn] Code style issues found in 2 files." (the files' "[warn] src/a.js" lead in to it)
    _s("format-check", r"(?:would reformat |Would reformat: |\[warn\] Code style issues)"),
    # codespell's "docs/index.rst:3: recieve ==> receive"
    _f("codespell", " ==> ", line=r"\S+:\d+: \S+ ==> \S", anywhere=True),
    # pre-commit's failed hook ("mypy.........Failed"), its "- hook id:" and the hook's output, to
    # the next hook's line (a section stop)
    _f("pre-commit-failed", r"\.\.\.\.Failed", line=r"\S[^\n]*?\.{4,}Failed[ \t\r]*$", section=True),
    # Django's system checks: "ERRORS:", then "shop.Coupon.amount: (fields.E130) DecimalFields must
    # define ..." a line each, to a blank line
    _s("django-check", r"ERRORS:\r?$", record=True),
    # Robot Framework's failed test or suite, "Login With Expired Token     | FAIL |", then its
    # message, to the rule under it
    _f("robot-fail", r"\| FAIL \|", line=r".*\| FAIL \|[ \t\r]*$", section=True),
    # Python's linters: flake8's, pycodestyle's, pylint's and ruff's "bad.py:8:16: F821 undefined name 'x'",
    # and ruff's full form, the code and message over "  --> bad.py:8:16" (kept as its context line)
    _f(
        "python-lint",
        r"\.py:\d+:\d+(?::? [A-Z]{1,4}\d{2,4}\b|\r?$)",  # one regex: half the time of two
        line=r"(?:--> )?\S+\.py:\d+:\d+",
        anywhere=True,
        shape_above=True,
    ),
    # pylint's verdict after its findings, below a perfect score (pylint then exits non-zero)
    _s("pylint-rating", r"Your code has been rated at (?!10\.00/)", found=False),
    # JavaScript Standard Style (standard, semistandard, ts-standard) heads its findings so:
    # "standard: Use JavaScript Standard Style (https://standardjs.com)", then "  file:1:2: ..."
    _f("standard-lint", r": Use JavaScript Standard Style", r": Use Semicolons For All!"),
    _f("found-errors", r"Found errors", r"Found \d+ errors?\b"),
    # clang's count after its diagnostics, not "1 warning and 0 errors generated."
    _f(
        "errors-generated",
        r" error generated\.",
        r" errors generated\.",
        line=r".*(?<!\d)[1-9]\d* errors? generated\.",
    ),
    _s("phpunit-failure", r"FAILURES!"),
    # PHPUnit's verdict counts of a run with failures or errors (after "FAILURES!" or "ERRORS!")
    _s("phpunit-counts", r"Tests: \d+, Assertions: \d+, [^\n]{0,100}\b(?:Failures|Errors): [1-9]", found=False),
    _s("phpunit-failures", r"There (?:was|were) \d+ (?:failure|error)s?:", section=True),
    _s("pester-failure", r"\[-\] "),
    _s("tap-not-ok", r"not ok \d+"),  # TAP (prove, node-tap, bats): a failed test point
    # Test::More's diagnostics of a failed test: "#   Failed test 'x'", "#   at t/a.t line 3.", "#  got: ..."
    _s("tap-diag-failed", r"#\s+Failed (?:\(TODO\) )?test\b", record=True),
    _f("bracketed-failure", r"\[ *(?:ERROR|FAILED|FAIL|FAILURE|CRITICAL|SEVERE) *\]"),
    # a lowercase level tag, first in its line (s3_website's "[fail] Failed to push the website",
    # beside its "[info]" and "[wait]")
    _f("failure-tag", r"\[fa(?:il(?:ed|ure)?|tal)\] ", line=r"\[fa(?:il(?:ed|ure)?|tal)\] "),
    # link checkers: an HTTP error status beside a URL
    _f("http-error-status", r" [45]\d\d https?://"),
    # shell, CI, generic
    _f(
        "exit-status",
        *EXIT_VERDICTS,
        r'" failed\.',  # Travis: 'The command "make test" failed. Retrying, 2 of 3.'
        found=False,
    ),
    _f(
        "command-failed",
        r"command not found",
        r"Segmentation fault",
        r"core dumped",
        r"No such file or directory",
        r"syntax error near unexpected token",
        r": unbound variable",  # set -u
        r": line \d+: +\d+ (?:Killed|Terminated|Aborted)",  # bash's report of a killed job
        r"Permission denied",
        r"No space left on device",
        found=False,
    ),
    # a service or host that cannot be reached: "psql: could not connect to server: Connection refused",
    # "dial tcp 127.0.0.1:5432: connect: connection refused", "getaddrinfo ENOTFOUND", git's and apt's
    # "Could not resolve host", "Temporary failure in name resolution"
    _f(
        "network-error",
        r"[Cc]onnection refused",
        r"ECONNREFUSED",
        r"ENOTFOUND",
        r"[Cc]ould not resolve host",
        r"Temporary failure in name resolution",
        r"Network is unreachable",
    ),
    _f("tls-error", r"x509: ", r"certificate verify failed"),
    _f("git-rejected", r"! \[rejected\]", r"! \[remote rejected\]"),
    _s("docker-error", r"docker: (?:Error|invalid)"),
    _s("curl-error", r"curl: \(\d+\) "),
    _f("out-of-memory", r"Out of memory: Kill"),  # the kernel's OOM killer
    # a Kubernetes pod that does not run, in kubectl's table or events
    _f(
        "pod-error",
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "OOMKilled",
        "CreateContainerConfigError",
    ),
    # .NET / MSBuild, PHP, Elixir, Swift's XCTest, Node
    _f("dotnet-error", r"error CS\d{4}", r"error MSB\d{4}", r"Build FAILED\.", r"Unhandled exception\. "),
    _f("php-error", r"PHP Fatal error:", r"PHP Parse error:"),
    # Elixir's uncaught exceptions and Mix's task errors: "** (Mix) mix format failed due to ..."
    _s("elixir-error", r"\*\* \((?:Mix|(?:\w+\.)*\w*(?:Error|Exception))\) "),
    _f(
        "xctest-failed",
        r"' failed at ",
        r" with [1-9]",
        line=r"(?:Test Suite '.*' failed at |Executed \d+ tests?, with [1-9])",
    ),
    # an XCTest assertion's message: "XCTAssertTrue failed", "XCTAssertEqual failed: ("1") is not equal to ("2")"
    _f("xctest-assert", r"XCTAssert\w{0,40} failed\b"),
    _f("unhandled-rejection", r"UnhandledPromiseRejection"),
    # dash and other POSIX shells: "/bin/sh: 1: jq: not found"
    _f("sh-not-found", r": not found", line=r"(?:\S*/)?(?:a|b|da|k|z)?sh: (?:line )?\d+: .{0,300}: not found"),
    # apt-get's errors: "E: Unable to locate package x", "E: Sub-process /usr/bin/dpkg returned an error code (1)"
    _s("apt-error", r"E: (?:Unable to |Failed to |Sub-process |Could not )"),
    _s("rake-aborted", r"rake aborted!"),
    # git and tools like it: "fatal: not a git repository (or any of the parent directories): .git"
    _s("fatal-line", r"fatal(?: error)?: ", found=False),  # and clang's and Go's runtime's "fatal error: ..."
    _f(
        "timed-out",
        r"imed out",
        r"TIMED OUT",
        r"imeout exceeded",
        r"exceeded the maximum time limit",  # a CI runner's job limit
        r"No output has been received in the last",  # a CI runner's stall guard
    ),
    # size-limit, memory and time limits; not a compiler's note ("size limit exceeded ..., retrying without")
    _f("limit-exceeded", r"limit exceeded", r"limit has exceeded", line=r"(?!.*\bnote: )"),
    _s("killed", r"Killed[ \t\r]*$"),
    _s("ci-error", r"(?:##\[error\]|::error)"),
    # and the log levels above ERROR: Python's CRITICAL, java.util.logging's SEVERE
    _s("generic-error", r"(?:ERROR|FATAL|FAIL|FAILED|CRITICAL|SEVERE|Error|Fatal)\b[:!\s]"),
    # a test's verdict at the end of its line, and tasty's "  tables:   FAIL (0.06s)"
    _f("test-failed", r"FAILED[ \t\r]*$", r"FAILURE[ \t\r]*$", r"ERROR[ \t\r]*$", r"\bFAIL \(\d[\d.]*m?s\)"),
    # a verdict column at the end of a line ("selections-trim      FAIL", "Test suite test-pandoc: FAIL")
    # (a word of its own: not "test_handles_FAIL")
    _f("verdict-fail", r"FAIL[ \t\r]*$", line=r"(?:.*[\s:\])])?FAIL[ \t\r]*$"),
    _f("failed-colon", r"[Ff]ailed: "),
    # a diff in a CI log is a check's demand for changes (a formatter's, a linter's, "git diff
    # --exit-code" after a generator ran): its header, then its hunks, to a blank line
    _s("diff-output", r"diff --git a/\S", record=True),
    # diff -u's hunk, "@@ -1,2 +1,2 @@", under its "--- a.txt\t2026-..." and "+++ b.txt\t..." lead-in, to
    # the end of its window (not a record: with no blank line after it, the record is the noise too)
    _f("diff-hunk", r"@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", line=r"@@ ", anywhere=True),
    # a tool's count of its errors, then their list: "Dependabot encountered '1' error(s) during execution"
    _f("errors-encountered", r"encountered '?[1-9]\d*'? error", record=True),
    # libyaml's parse errors, as Ruby's Psych, PyYAML and go-yaml word them: "(a.md): found character
    # that cannot start any token while scanning for the next token at line 5 column 1"
    _f(
        "yaml-error",
        r"found character that cannot start any token",
        r"did not find expected ",
        r"mapping values are not allowed in this context",
        r"found undefined alias",
    ),
    # markdownlint's findings: "README.md: 750: MD034/no-bare-urls Bare URL used" (markdownlint-cli),
    # "README.md:750:5 MD034/no-bare-urls ..." (markdownlint-cli2)
    _f("markdownlint", r" MD0\d\d/", line=r"\S+:\s?\d+(?::\d+)?:? MD0\d\d/", anywhere=True),
    # Emacs's backtrace of an uncaught error in batch mode: "Debugger entered--Lisp error: (error ...)",
    # then its frames, the first "  signal(error (...))"
    _s("elisp-error", r"(?:Debugger entered--Lisp error: |signal\([\w-]*error \()"),
    # R CMD check's failed examples: "Running examples in 'x-Ex.R' failed", the example's last lines
    # and R's "Error in f(x) : ..." to "Execution halted"
    _s("r-check-failed", r"Running (?:examples|the tests) in .{1,300} failed", section=True),
    _f("assertion", r"AssertionError", r"Assertion failed", r"assert failed", r"assertion failed"),
)


# Every built-in signature holds one of these tokens (after tokenizing, lowercased)...
TRIGGER_WORDS = (
    "error errors err errored fail fails failed failure failures failing fatal exception exceptions "
    "traceback panic panicked assert assertion asserts expected received undefined returned collect "
    "segmentation dumped such found timed timeout exceeded killed exit exited offenses warning warnings sanitizer "
    "caused wrong make gmake ninja cmake go rspec denied abort aborted recent ts tsx severity issues not "
    "cannot unable terminate curl memory unhandled executed standard semicolons invalid uninitialised "
    "conditional mismatched unbound terminated can died illegal executing rated stop space refused "
    "econnrefused enotfound resolve resolution unreachable certificate rejected reformat kt kts crash pull "
    "mix diff critical severe 400 401 403 404 405 408 410 429 500 502 503 504"
).split()
_TRIGGERS = KeySet.of(token_key(w.encode()) for w in TRIGGER_WORDS)


def _symbol_lines(text: bytes, ends: npt.NDArray[np.int64], first: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """...or starts, after its indentation, with a symbol: ``^ = > ● ✕ ✗ ×``, ``E `` (pytest),
    ``[-`` (Pester), or a number and ``)`` (numbered failure lists). ``first``: each
    line's first non-blank byte (``LineLayout.first``)."""
    arr = np.frombuffer(text, dtype=np.uint8)
    n = arr.shape[0]
    if ends.shape[0] == 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    # the bytes at first .. first+3, 0 past the end of the text
    b0, b1, b2, b3 = (np.where(first + k < n, arr[np.minimum(first + k, n - 1)], 0) for k in range(4))
    digit0 = (b0 - np.uint8(48)) < 10
    symbol = (
        (b0 == ord("^"))
        | (b0 == ord("="))
        | (b0 == ord(">"))
        | (b0 == 0xE2)
        | (b0 == 0xC3)
        | ((b0 == ord("E")) & (b1 == ord(" ")))
        | ((b0 == ord("[")) & (b1 == ord("-")))
        | (digit0 & ((b1 == ord(")")) | (b2 == ord(")")) | (b3 == ord(")"))))
    )
    return np.flatnonzero(symbol & (first < ends)).astype(np.int64)


_META = frozenset(b".^$*+?{}[]()|\\")


def _skip_class(pattern: bytes, i: int) -> int:
    """Offset just past the character class that starts at ``pattern[i]`` (``[``)."""
    i += 1
    if i < len(pattern) and pattern[i] == ord("^"):
        i += 1
    if i < len(pattern) and pattern[i] == ord("]"):
        i += 1  # a "]" first in the class is a literal
    while i < len(pattern) and pattern[i] != ord("]"):
        i += 2 if pattern[i] == ord("\\") else 1
    return i + 1


def _skip_group(pattern: bytes, i: int) -> int:
    """Offset just past the group that starts at ``pattern[i]`` (``(``)."""
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if c == ord("\\"):
            i += 2
            continue
        if c == ord("["):
            i = _skip_class(pattern, i)
            continue
        depth += (c == ord("(")) - (c == ord(")"))
        i += 1
        if depth == 0:
            break
    return i


def first_bytes(pattern: bytes) -> frozenset[int] | None:
    """The bytes a match of ``pattern`` can start with, or None when any could (or it is not known).

    Read from ``re``'s own parse of the pattern: literals, classes of literals and ranges,
    alternatives, groups and repeats (a repeat that may be empty lets the next item start
    the match too). Anything else (categories such as ``\\S``, look-arounds, flags) gives None.
    """
    parser = importlib.import_module("re._parser")
    try:
        items = list(parser.parse(pattern))
    except re.error:
        return None
    first, empty = _first_of(items)
    return None if first is None or empty else frozenset(first)


def _first_of(items: list[tuple[Any, Any]]) -> tuple[set[int] | None, bool]:
    """First bytes of a sequence of parsed items, and whether it can match the empty string."""
    constants = importlib.import_module("re._constants")
    out: set[int] = set()
    for op, arg in items:
        first: set[int] | None
        if op is constants.LITERAL:
            first, empty = {arg}, False
        elif op is constants.IN:
            first, empty = _class_bytes(arg, constants), False
        elif op is constants.BRANCH:
            union: set[int] = set()
            empty = False
            for branch in arg[1]:
                sub, sub_empty = _first_of(list(branch))
                if sub is None:
                    return None, False
                union |= sub
                empty = empty or sub_empty
            first = union
        elif op is constants.SUBPATTERN and not arg[1] and not arg[2]:  # a group without flags
            first, empty = _first_of(list(arg[3]))
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
            first, empty = _first_of(list(arg[2]))
            empty = empty or arg[0] == 0
        elif op is constants.AT:  # an anchor takes no byte
            first, empty = set(), True
        else:
            return None, False
        if first is None:
            return None, False
        out |= first
        if not empty:
            return out, False
    return out, True


def _class_bytes(items: list[tuple[Any, Any]], constants: Any) -> set[int] | None:
    """The bytes a parsed character class matches (literals and ranges only)."""
    out: set[int] = set()
    for op, arg in items:
        if op is constants.LITERAL:
            out.add(arg)
        elif op is constants.RANGE:
            out.update(range(arg[0], arg[1] + 1))
        else:  # a negation or a category: not worth spelling out
            return None
    return out


def required_literal(pattern: bytes) -> bytes:
    """The longest run of literal bytes that every match of ``pattern`` contains, or ``b""``.

    Conservative: only bytes outside any group, class or alternative count, a byte
    followed by a quantifier does not, and a pattern with a top-level ``|``, an
    inline flag (``(?i)``) or a look-around gives ``b""``. So, for a pattern compiled
    without IGNORECASE, ``needle not in text`` proves that it cannot match ``text``.
    """
    best = b""
    run = bytearray()
    i = 0
    while i < len(pattern):
        c = pattern[i]
        literal: int | None = None
        if c == ord("\\") and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            literal = None if chr(nxt).isalnum() or nxt >= 0x80 else nxt  # \d \b \n ...: not one byte
            i += 2
        elif c == ord("("):
            if pattern.startswith(b"(?", i) and not pattern.startswith(b"(?:", i):
                return b""  # an inline flag or a look-around
            i = _skip_group(pattern, i)
        elif c == ord("["):
            i = _skip_class(pattern, i)
        elif c == ord("|"):
            return b""
        elif c == ord("{"):
            i = pattern.find(b"}", i) + 1 or len(pattern)
        elif c in _META:
            i += 1
        else:
            literal = c
            i += 1
        if i < len(pattern) and pattern[i] in b"*?+{":
            literal = None  # quantified: it may be absent
        if literal is None:
            if len(run) > len(best):
                best = bytes(run)
            run.clear()
        else:
            run.append(literal)
    return best if len(best) >= len(run) else bytes(run)


_GRAM_BITS = 16  # hashed trigram table: 64 Ki entries (small enough to stay in cache)


def _grams(data: bytes) -> npt.NDArray[np.uint32]:
    """The hashed trigrams of ``data`` (``_GRAM_BITS`` bits each; empty below 3 bytes)."""
    arr = np.frombuffer(data, dtype=np.uint8).astype(np.uint32)
    if arr.shape[0] < 3:
        return arr[:0]
    codes = arr[:-2] | (arr[1:-1] << np.uint32(8)) | (arr[2:] << np.uint32(16))
    hashed: npt.NDArray[np.uint32] = (codes * np.uint32(0x9E3779B1)) >> np.uint32(32 - _GRAM_BITS)
    return hashed


def _text_grams(text: bytes) -> npt.NDArray[np.bool_]:
    """Which hashed trigrams occur in ``text``: a needle with one that does not cannot be in it."""
    seen = np.zeros(1 << _GRAM_BITS, dtype=bool)
    seen[_grams(text)] = True
    return seen


@dataclass(frozen=True, slots=True)
class _Finder:
    """One ``Signature.find`` regex, with a literal that all its matches contain (``b""``: none
    known) and that literal's hashed trigrams."""

    regex: re.Pattern[bytes]
    needle: bytes
    grams: npt.NDArray[np.uint32]

    @classmethod
    def of(cls, pattern: bytes, builtin: bool) -> _Finder:
        needle = required_literal(pattern) if builtin else b""
        return cls(re.compile(pattern, re.MULTILINE), needle, _grams(needle))

    def may_match(self, text: bytes, grams: npt.NDArray[np.bool_] | None) -> bool:
        """False when ``text`` cannot hold a match (its trigrams or its needle are missing)."""
        if grams is not None and self.grams.shape[0] and not grams[self.grams].all():
            return False
        return not self.needle or self.needle in text


_Found = tuple[int, list[_Finder], re.Pattern[bytes] | None]  # signature index, finders, line regex


class SignatureSet:
    """A compiled set of signatures, matched over whole blocks of lines.

    Stateful only in counting hits of signatures with ``max_hits`` (in stream
    order), so feed it one stream's blocks in order.

    Args:
        signatures: the built-in signatures (ids ``0 .. len-1``).
        extra: user regexes, matched anywhere in a line (ids after the built-ins).
        first: a line matching one of the first ``first`` extra patterns gets that
            pattern's id even when a built-in signature matches it too. They are named
            ``user1``, ... (the patterns asked for); the later extras ``query1``, ...
        prior: one more id, ``prior_id``, named ``prior``, that no text matches: the learned line
            prior's lines (``streamfilter.core.prior``), which the filter protects as hits.

    Raises:
        UsageError: a user pattern that is not a valid regular expression.
    """

    def __init__(
        self,
        signatures: Sequence[Signature] = DEFAULT_SIGNATURES,
        extra: Iterable[str] = (),
        first: int = 0,
        prior: bool = False,
    ) -> None:
        sigs = list(signatures)
        for i, pattern in enumerate(extra):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--protect {pattern!r}: not a valid regular expression: {exc}") from None
            # the first ``first`` are the ones asked for (user1, ...), the rest a query's symbols (query1, ...)
            name = f"user{i + 1}" if i < first else f"query{i - first + 1}"
            # a pattern asked for is what a user wants kept, not a failure found
            sigs.append(Signature(name, find=(pattern.encode("utf-8", "surrogateescape"),), found=False))
        # the learned prior's lines are hits too (the filter adds them), under the last id
        named = [*sigs, Signature("prior", found=False)] if prior else sigs
        self.prior_id = len(sigs) if prior else -1
        self.names: tuple[str, ...] = tuple(s.name for s in named)
        self._first = first
        self.section = np.asarray([s.section for s in named], dtype=bool)
        self.record = np.asarray([s.record for s in named], dtype=bool)
        self.shape_above = np.asarray([s.shape_above for s in named], dtype=bool)
        self.found = np.asarray([s.found for s in named], dtype=bool)
        anchored = [(i, s) for i, s in enumerate(sigs) if not s.find]
        alternation = b"|".join(b"(?P<g%d>%s)" % (i, s.pattern) for i, s in anchored)
        # "\n" first gives re a literal prefix to scan for; text is prefixed with "\n". A lookahead
        # for the bytes the signatures can start with rejects most lines before the alternation
        starts = [first_bytes(s.pattern) for _, s in anchored]
        known = [b for b in starts if b is not None]
        lead = sorted(set().union(*known))
        ahead = b"(?=[%s])" % b"".join(b"\\x%02x" % c for c in lead) if known and len(known) == len(starts) else b""
        # with no anchored signature, an empty alternation would match at every line start
        self._anchored = (
            re.compile(b"\n[ \t]*" + ahead + b"(?:" + alternation + b")", re.MULTILINE) if anchored else None
        )
        # user patterns (ids from here on) have no trigger words: they see every line
        self.builtin = builtin = len(signatures)
        found: list[_Found] = [
            (
                i,
                # a built-in finder is only run on text that holds its required literal
                [_Finder.of(f, i < builtin) for f in s.find],
                re.compile(b"[ \t]*(?:" + s.pattern + b")", re.MULTILINE) if s.pattern else None,
            )
            for i, s in enumerate(sigs)
            if s.find
        ]
        self._found = [f for f in found if f[0] < builtin and not sigs[f[0]].anywhere]
        self._anywhere = [f for f in found if f[0] < builtin and sigs[f[0]].anywhere]
        self._user = [f for f in found if f[0] >= builtin]
        self._left = {i: s.max_hits for i, s in enumerate(sigs) if s.max_hits is not None}

    def find(
        self,
        text: bytes,
        ends: npt.NDArray[np.int64],
        table: TokenTable | None = None,
        first: npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Find the lines of a block that carry a signature.

        Args:
            text: scoring text of whole lines.
            ends: shape ``(n_lines,)``: end offset of each line in ``text``.
            table: the block's ``TokenTable``. With ``first``, the built-in
                signatures are only tried on lines that hold a trigger token
                (``TRIGGER_WORDS``) or start with one of the symbols some signatures
                start with; every built-in signature needs one of the two (an
                ``anywhere`` one is searched in every line).
            first: shape ``(n_lines,)``: offset of each line's first non-blank byte
                (``LineLayout.first``).

        Returns:
            ``(lines, ids)``: 0-based line indexes (sorted, unique) and, for each,
            the index in ``names`` of the signature that matched it: one of the first
            ``first`` extra patterns if any did, else the first in table order.
        """
        lines, sig = self.find_all(text, ends, table, first)
        keep = self.limit(sig)
        return lines[keep], sig[keep]

    def find_all(
        self,
        text: bytes,
        ends: npt.NDArray[np.int64],
        table: TokenTable | None = None,
        first: npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``find`` without the ``max_hits`` limits: a pure function of the block (no state)."""
        starts: list[int] = []
        ids: list[int] = []
        if table is None or first is None:
            self._scan(text, ends, None, self._anchored, self._found + self._anywhere, starts, ids)
        else:
            marks = np.zeros(ends.shape[0], dtype=bool)
            marks[table.lines_with(_TRIGGERS)] = True
            marks[_symbol_lines(text, ends, first)] = True
            lines = np.flatnonzero(marks).astype(np.int64)
            if lines.shape[0] * 3 > ends.shape[0]:
                # most lines are candidates: scanning the whole text is quicker, and its hits on the
                # other lines go (a line's hit must not depend on the block it came in)
                self._scan(text, ends, None, self._anchored, self._found, starts, ids)
                on = marks[np.asarray(starts, dtype=np.int64)].tolist() if starts else []
                starts[:] = [line for line, ok in zip(starts, on, strict=True) if ok]
                ids[:] = [i for i, ok in zip(ids, on, strict=True) if ok]
            elif lines.shape[0]:
                sub, sub_ends = gather_lines(text, ends, lines)
                self._scan(sub, sub_ends, lines, self._anchored, self._found, starts, ids)
            if self._anywhere:  # their literals rule a block out quicker than its trigrams would
                self._scan(text, ends, None, None, self._anywhere, starts, ids, trigrams=False)
        if self._user:
            self._user_lines(text, int(ends.shape[0]), starts, ids)
        if not starts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        lines = np.asarray(starts, dtype=np.int64)
        sig = np.asarray(ids, dtype=np.int64)
        # per line, the id of one of the first ``first`` extra patterns (--protect: its lines are
        # exempt from the repeat gate) before any other; else the first signature's in order
        preferred = (sig >= self.builtin) & (sig < self.builtin + self._first)
        order = np.lexsort((np.where(preferred, sig - (1 << 40), sig), lines))
        lines, sig = lines[order], sig[order]
        first = np.ones(lines.shape[0], dtype=bool)
        first[1:] = lines[1:] != lines[:-1]
        return lines[first].astype(np.int64), sig[first]

    def limit(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Apply the ``max_hits`` limits to the next hits of the stream (``find_all``'s ids, in order).

        Returns:
            shape ``(h,)``: which hits still count; the limits are used up by them.
        """
        keep = np.ones(ids.shape[0], dtype=bool)
        for i, left in self._left.items():
            at = np.flatnonzero(ids == i)
            keep[at[left:]] = False
            self._left[i] = max(0, left - at.shape[0])
        return keep

    def _user_lines(self, text: bytes, n_lines: int, out_lines: list[int], out_ids: list[int]) -> None:
        """``--protect`` patterns: searched in each line on its own (no line end), so ``^``, ``\\A``
        and ``$`` mean the line's start and end, and a match never spans lines or depends on blocks."""
        for index, line in enumerate(text.split(b"\n")[:n_lines]):
            for i, finders, _ in self._user:
                if finders[0].regex.search(line.removesuffix(b"\r")) is not None:
                    out_lines.append(index)
                    out_ids.append(i)
                    break

    @staticmethod
    def _scan(
        text: bytes,
        ends: npt.NDArray[np.int64],
        line_map: npt.NDArray[np.int64] | None,
        anchored: re.Pattern[bytes] | None,
        found: list[_Found],
        out_lines: list[int],
        out_ids: list[int],
        *,
        trigrams: bool = True,
    ) -> None:
        """Append (line, signature) hits in ``text`` to the lists; ``line_map`` maps its lines to the block's.

        ``trigrams``: rule out finders by the text's trigrams before their literals.
        """
        hit_starts: list[int] = []
        if anchored is not None:
            padded = b"\n" + text
            pos = 0
            while pos >= 0:
                m = anchored.search(padded, pos)
                if m is None:
                    break
                hit_starts.append(m.start())  # the "\n" before the line = the line's offset in text
                out_ids.append(int(m.lastgroup[1:]) if m.lastgroup else 0)
                pos = padded.find(b"\n", m.start() + 1)  # one anchored signature per line is enough
        grams = _text_grams(text) if trigrams and found and len(text) >= 3 else None
        for i, finders, confirm in found:
            positions = [m.start() for f in finders if f.may_match(text, grams) for m in f.regex.finditer(text)]
            if not positions:
                continue
            line_of = np.sort(np.searchsorted(ends, np.asarray(positions, dtype=np.int64), side="right"))
            distinct = np.ones(line_of.shape[0], dtype=bool)
            distinct[1:] = line_of[1:] != line_of[:-1]
            for line in line_of[distinct].tolist():
                start = int(ends[line - 1]) if line else 0
                if confirm is None or confirm.match(text, start) is not None:
                    hit_starts.append(start)
                    out_ids.append(i)
        if hit_starts:
            lines = np.searchsorted(ends, np.asarray(hit_starts, dtype=np.int64), side="right")
            out_lines.extend((line_map[lines] if line_map is not None else lines).tolist())
