"""Failure signatures: each family on real line shapes; the trigger prefilter misses nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.normalize import strip_ansi
from streamfilter.core.segment import line_layout
from streamfilter.core.signatures import DEFAULT_SIGNATURES, LEAD_IN, SignatureSet, first_bytes, required_literal
from streamfilter.core.tokens import token_table
from streamfilter.live.config import ConfigError, load_config
from tests.conftest import run_cli

LINES = [
    ("python-traceback", b"Traceback (most recent call last):"),
    ("exception-line", b"ValueError: invalid literal for int() with base 10: 'x'"),
    ("exception-line", b"java.lang.IllegalStateException: boom"),
    ("pytest-E", b"E       assert 1 == 2"),
    ("pytest-section", b"=================================== FAILURES ==================================="),
    ("pytest-summary", b"========================= 2 failed, 71 passed in 2.65s ========================="),
    ("pytest-failed", b"FAILED tests/test_x.py::test_y - AssertionError"),
    ("pytest-verbose-failed", b"tests/test_inventory.py::test_parse_bad_quantity FAILED                  [ 97%]"),
    ("java-exception", b"Caused by: java.io.IOException: disk full"),
    ("java-exception", b'Exception in thread "main" java.lang.NullPointerException'),
    ("python-thread-exception", b"Exception in thread Thread-1 (worker):"),
    ("maven-error", b"[ERROR] Failed to execute goal org.apache.maven.plugins"),
    ("sbt-error", b"[error] (compile:compileIncremental) Compilation failed"),
    ("build-failure", b"BUILD FAILURE"),
    ("junit-failure", b"testFoo(com.x.FooTest)  Time elapsed: 0.1 sec  <<< FAILURE!"),
    ("junit-counts", b"Tests run: 12, Failures: 1, Errors: 0, Skipped: 0"),
    ("gradle-task-failed", b"> Task :app:compileJava FAILED"),
    ("scalatest-failed", b"[info] - should work *** FAILED ***"),
    ("npm-err", b"npm ERR! code ELIFECYCLE"),
    ("jest-bullet", b"  \xe2\x97\x8f Suite > adds numbers"),
    ("jest-fail", b" FAIL  src/sum.test.js"),
    ("jest-expected", b"    Expected: 3"),
    ("jest-expected", b"    Expected value to equal:"),
    ("mocha-failing", b"  2 failing"),
    ("tsc-error", b"src/a.ts(3,5): error TS2322: Type 'string' is not assignable"),
    ("ts-node-error", b"[16:40:38] E/launcher - Error: TSError: \xe2\xa8\xaf Unable to compile TypeScript"),
    ("ts-node-error", b"e2e/app.e2e-spec.ts (5,1): Cannot find name 'describe'. (2304)"),
    ("numbered-failure", b"  1) test adds numbers (MathTest)"),
    ("rust-error", b"error[E0308]: mismatched types"),
    ("rust-panic", b"thread 'main' panicked at 'boom', src/main.rs:2:5"),
    ("rust-test-failed", b"test tests::it_works ... FAILED"),
    ("rust-failures", b"failures:"),
    ("go-fail", b"--- FAIL: TestAdd (0.00s)"),
    ("go-compile", b"./main.go:12:3: undefined: foo"),
    ("compiler-error", b"src/a.c:3:5: error: expected ';' before '}' token"),
    ("tool-error", b"pg_dump: error: connection to server on socket failed"),
    ("tool-error", b"clang: error: linker command failed with exit code 1 (use -v to see invocation)"),
    ("compiler-warning", b"src/Text/Pandoc/Ipynb.hs:94:10: Warning:"),
    ("make-error", b"make[2]: *** [Makefile:12: all] Error 1"),
    ("linker-error", b"/usr/bin/ld: a.o: undefined reference to `foo'"),
    ("caret-line", b"        ^~~~~"),
    ("sanitizer", b"==30799==ERROR: AddressSanitizer: heap-use-after-free on address 0x61b0"),
    ("python-fatal", b"Fatal Python error: Segmentation fault"),
    ("python-fatal", b"Current thread 0x00007f41f2f77b80 (most recent call first):"),
    ("lua-traceback", b"  stack traceback:"),
    ("rspec-failure", b"     Failure/Error: expect(x).to eq(2)"),
    ("failures-section", b"Failures:"),
    ("minitest-failure", b"Failure:"),
    ("lint-offenses", b"Offenses:"),
    ("lint-error", b"  28:14  error  Replace `x` with `y`  prettier/prettier"),
    ("python-lint", b"bad.py:8:16: F821 undefined name 'undefined_name'"),  # flake8 7.5
    ("python-lint", b"bad.py:8:15: E0602: Undefined variable 'undefined_name' (undefined-variable)"),  # pylint 4.1
    ("python-lint", b"bad.py:1:8: F401 [*] `os` imported but unused"),  # ruff 0.17, concise
    ("python-lint", b" --> bad.py:1:8"),  # ruff, full: under "F401 [*] `os` imported but unused"
    ("pylint-rating", b"Your code has been rated at 0.00/10 (previous run: 0.00/10, +0.00)"),  # pylint 4.1
    ("vitest-fail", b" FAIL  vt/bad.test.js > math > adds wrong"),  # vitest 4.1
    # a fresh-user helper's lines, each dropped in 200 lines of noise
    ("make-stop", b"Makefile:12: *** missing separator.  Stop."),  # GNU make 4.3
    ("command-failed", b"cp: error writing 'out.bin': No space left on device"),
    ("network-error", b"psql: could not connect to server: Connection refused"),
    ("network-error", b"dial tcp 127.0.0.1:5432: connect: connection refused"),
    ("network-error", b"unable to resolve host github.com: Temporary failure in name resolution"),
    ("network-error", b"ssh: Could not resolve hostname github.com: Temporary failure in name resolution"),
    ("tls-error", b"x509: certificate signed by unknown authority"),
    ("git-rejected", b" ! [rejected]        main -> main (fetch first)"),
    ("docker-error", b"docker: invalid reference format."),
    ("exit-status", b"Command exited with non-zero status 1"),  # GNU time
    ("found-errors", b"Found 2 errors in 1 file (checked 16 source files)"),
    ("phpunit-failure", b"FAILURES!"),
    ("phpunit-failures", b"There were 2 failures:"),
    ("pester-failure", b"    [-] Should validate the schema 191ms"),
    ("bracketed-failure", b"[  ERROR   ] 9 errors, listed below:"),
    (
        "failure-tag",
        b"[fail] Failed to push the website to http://example.com.s3-website-us-east-1.amazonaws.com",
    ),
    ("http-error-status", b"  1. [L0153] 404 http://a5.example.com/screen.jpeg"),
    ("exit-status", b'The command "make test" exited with 2.'),
    ("exit-status", b"- exit code: 1"),
    ("exit-status", b'The command "bundle exec rake" failed. Retrying, 2 of 3.'),
    ("tap-not-ok", b"not ok 23 dns - resolveTxtTCP"),
    ("limit-exceeded", b"  Package size limit has exceeded by 4.72 KB"),
    ("command-failed", b"bash: foo: command not found"),
    ("timed-out", b"Tests timed out"),
    ("killed", b"Killed"),
    ("ci-error", b"##[error]Process completed with exit code 1."),
    ("generic-error", b"FATAL: could not open the database"),
    ("test-failed", b"test_upload ... FAILED"),
    (
        "perlcritic",
        b"Use IO::Interactive::is_interactive() instead of -t at line 69, column 28."
        b"  See page 218 of PBP.  (Severity: 5)",
    ),
    ("link-check-issues", b"Issues :-("),
    ("test-failed", b"      tables:                                          FAIL (0.06s)"),
    ("verdict-fail", b"multiple-cursors/selections-trim                  FAIL"),
    ("verdict-fail", b"Test suite test-pandoc: FAIL\r"),
    ("errors-generated", b"2 errors generated."),
    ("linker-error", b"ld: library not found for -lssl"),
    ("linker-error", b"/usr/bin/ld: cannot find -lssl"),
    ("cpp-terminate", b"terminate called after throwing an instance of 'std::runtime_error'"),
    ("sh-not-found", b"/bin/sh: 1: jq: not found"),
    ("apt-error", b"E: Unable to locate package libfoo-dev"),
    ("apt-error", b"E: Sub-process /usr/bin/dpkg returned an error code (1)"),
    ("rake-aborted", b"rake aborted!"),
    ("fatal-line", b"fatal: not a git repository (or any of the parent directories): .git"),
    ("timed-out", b"The job exceeded the maximum time limit for jobs, and has been terminated."),
    ("linker-error", b"ld: symbol(s) not found for architecture x86_64"),
    ("fatal-line", b"fatal error: all goroutines are asleep - deadlock!"),
    ("command-failed", b"./run.sh: line 12: syntax error near unexpected token 'fi'"),
    ("command-failed", b"Permission denied (publickey)."),
    ("curl-error", b"curl: (22) The requested URL returned error: 404"),
    ("out-of-memory", b"Out of memory: Killed process 1234 (java)"),
    ("dotnet-error", b"Program.cs(10,13): error CS1002: ; expected [/src/app.csproj]"),
    ("dotnet-error", b"Build FAILED."),
    ("php-error", b"PHP Fatal error:  Uncaught Error: Call to undefined function f()"),
    ("elixir-error", b"** (CompileError) lib/foo.ex:3: undefined function x/0"),
    ("xctest-failed", b"Executed 10 tests, with 1 failure (0 unexpected) in 0.1 seconds"),
    ("xctest-assert", b'  testThatLoginFails, XCTAssertEqual failed: ("1") is not equal to ("2")'),
    ("unhandled-rejection", b"(node:123) UnhandledPromiseRejectionWarning: Error: boom"),
    ("timed-out", b"No output has been received in the last 10m0s, this potentially indicates a stalled build"),
    ("assertion", b"Assertion failed: (x > 0), function main"),
    ("failed-colon", b"  testValidation, Asynchronous wait failed: Exceeded timeout of 5 seconds"),
    ("phpunit-counts", b"Tests: 78, Assertions: 197, Failures: 2."),
    ("phpunit-counts", b"Tests: 127, Assertions: 310, Errors: 5, Skipped: 2."),
    ("lua-module-not-found", b"test/functional/a_spec.lua:5: module 'runtime.lua.util' not found:"),
    ("expected-to", b'Expected "" to include "sqlite>".'),
    ("expected-to", b"    Expected false to be truthy."),
    ("standard-lint", b"standard: Use JavaScript Standard Style (https://standardjs.com)"),
    ("standard-lint", b"semistandard: Use Semicolons For All! (https://github.com/standard/semistandard)"),
    ("tsc-error", b"app.ts:4:7 - error TS2345: Argument of type '{ id: number; }' is not assignable"),
    ("tap-diag-failed", b"#   Failed test 'structure matches'"),
    ("valgrind-error", b"==18555== Invalid read of size 4"),
    ("valgrind-error", b"==18555== ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)"),
    ("command-failed", b"bash: line 1: UNDEFINED_VAR_X: unbound variable"),
    ("command-failed", b"bash: line 1:  3934 Killed                  sleep 10"),
    ("unittest-report", b"FAIL: test_lists (test_lists.T.test_lists)"),
    ("unittest-report", b"ERROR: test_load (tests.test_io.LoadTest)"),
    ("perl-die", b"Can't use an undefined value as an ARRAY reference at die.pl line 1."),
    ("perl-die", b"Can't locate Foo/Bar.pm in @INC (you may need to install the Foo::Bar module) at t/a.t line 3."),
    ("perl-die", b"Died at script/run.pl line 9, <STDIN> line 2."),
    ("tcl-error", b"    while executing"),
    # lines only a tail of 25 kept in the corpus's logs (each its kind's real shape)
    ("elixir-error", b"** (Mix) mix format failed due to --check-formatted."),
    ("diff-output", b"diff --git a/src/wallet/rpcwallet.cpp b/src/wallet/rpcwallet.cpp"),
    ("diff-hunk", b"@@ -1,2 +1,2 @@"),
    ("errors-encountered", b"Dependabot encountered '1' error(s) during execution, please check the logs."),
    (
        "yaml-error",
        b"(./th-th/pascal.html.markdown): found character that cannot start any token while scanning for the next"
        b" token at line 5 column 1",
    ),
    ("yaml-error", b"(<unknown>): did not find expected key while parsing a block mapping at line 2 column 1"),
    ("yaml-error", b"yaml: line 3: mapping values are not allowed in this context"),
    ("markdownlint", b'react/README.md: 750: MD034/no-bare-urls Bare URL used [Context: "https://x.org/"]'),
    ("markdownlint", b"README.md:12:81 MD013/line-length Line length [Expected: 80; Actual: 91]"),
    ("elisp-error", b'Debugger entered--Lisp error: (error "Package `emacs-25.1\' is unavailable")'),
    ("elisp-error", b'  signal(error ("Could not create connection to elpa.gnu.org:443"))'),
    # a fresh-user helper's log levels above ERROR
    ("generic-error", b"CRITICAL billing: ledger out of balance by 1532.00, halting writes"),  # Python logging
    ("generic-error", b"SEVERE: database connection pool exhausted"),  # java.util.logging
    ("bracketed-failure", b"[CRITICAL] disk /dev/sda1 is 100% full"),
    ("r-check-failed", b"Running examples in \xe2\x80\x98AnomalyDetection-Ex.R\xe2\x80\x99 failed"),
]


def hits(text: bytes, prefilter: bool) -> tuple[list[int], list[str]]:
    ends = np.cumsum([len(x) + 1 for x in text.split(b"\n")[:-1]], dtype=np.int64)
    sigs = SignatureSet()
    lines, ids = (
        sigs.find(text, ends, token_table(text, ends), line_layout(text, ends).first)
        if prefilter
        else (sigs.find(text, ends))
    )
    return lines.tolist(), [sigs.names[i] for i in ids.tolist()]


@pytest.mark.parametrize(("name", "line"), LINES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(LINES)])
@pytest.mark.parametrize("prefilter", [False, True])
def test_each_family_fires_on_its_line_shape(name: str, line: bytes, prefilter: bool) -> None:
    text = b"INFO starting\n" * 40 + line + b"\n" + b"INFO done\n" * 40
    lines, names = hits(text, prefilter)
    assert 40 in lines, (name, lines, names)


@pytest.mark.parametrize(
    ("line", "name"),
    [
        (b"Exception in thread Thread-1 (worker):", "python-thread-exception"),
        (b'Exception in thread "main" java.lang.NullPointerException', "java-exception"),
        (b"pg_dump: error: connection to server on socket failed", "tool-error"),
        (b"src/a.c:3:5: error: expected ';' before '}' token", "compiler-error"),
    ],
)
def test_a_line_is_named_after_the_tool_that_wrote_it(line: bytes, name: str) -> None:
    # (--explain shows the name: a Python thread's exception is not Java's, pg_dump is no compiler)
    text = b"INFO starting\n" * 40 + line + b"\n"
    for prefilter in (False, True):
        assert hits(text, prefilter) == ([40], [name])


def test_noise_is_not_protected() -> None:
    noise = [
        b"   Compiling serde v1.0.130",
        b"[INFO] Downloading from central: https://repo.example.org/a/b/1.0/b-1.0.pom",
        b"tests/test_x.py::test_parse[3] PASSED                       [ 42%]",
        b"Tests run: 12, Failures: 0, Errors: 0, Skipped: 0",
        b"added 120 packages in 3s",
        b"org.example.error.Handler registered",
        b"test_retry XFAIL",
        b"Setting up libssl-dev (1.1.1) ...",
        b"checking for jq... not found",
        b"1 warning and 0 errors generated.",
        b"test_handles_FAIL",
        b"PASS: test_FAIL",
        b"Executed 10 tests, with 0 failures (0 unexpected) in 0.1 seconds",
        b"Code generated.",
        b"Tests: 127, Assertions: 317, Skipped: 3.",
        b"OK (235 tests, 1283 assertions)",
        b"> standard lib/*.js main.js",
        b"==18555== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)",
        b"==18555==    in use at exit: 16 bytes in 1 blocks",
        b"# Subtest: parses input",
        b"x.c:1195:1: note: variable tracking size limit exceeded with -fvar-tracking-assignments, retrying without",
        b"You can pass --verbose to see the line 3 of the config",
        b"Can't wait to ship it",
        b"[wait] Trying again in 1 second.",
        b"  checks: [failing] 0 of 12",
        b"retry [fail] count 0",
        b"    while executing the setup step",
        b"compiling 12 files",
        b"Your code has been rated at 10.00/10 (previous run: 9.50/10, +0.50)",
        b"[ RUN      ] shell functions os_system returns non-zero exit code: 52.69 ms OK",  # a duration
        b"Build encountered 0 errors",
        b"diff --stat shows 3 files",
        b"        500 http://deb.debian.org/debian bookworm/main amd64 Packages",  # apt's pin priority (helper-107)
    ]
    lines, names = hits(b"\n".join(noise) + b"\n", True)
    assert lines == [], names


def test_prefilter_finds_what_a_full_scan_finds_on_a_corpus_like_mix() -> None:
    text = b"\n".join(line for _, line in LINES) + b"\n" + b"INFO ok\n" * 500
    assert hits(text, True) == hits(text, False)


def test_max_hits_keeps_only_the_first_warnings() -> None:
    text = b"".join(b"src/a.hs:%d:1: Warning: unused\n" % i for i in range(30))
    lines, names = hits(text, True)
    assert lines == list(range(10)) and set(names) == {"compiler-warning"}


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        (rb"[Ff]ailed: ", b"ailed: "),
        (rb"\.py:\d+: ", b".py:"),
        (rb"exit(?:ed)? (?:with )?(?:code|status) [1-9]", b"exit"),
        (rb"ab?c", b"a"),
        (rb"a{2,3}bc", b"bc"),
        (rb"x\*\*y+", b"x**"),
        (rb"ab|cd", b""),  # a top-level alternative: nothing is required
        (rb"(?i)abc", b""),  # an inline flag: case may differ
        (rb"(?=ab)", b""),
    ],
)
def test_required_literal_is_in_every_match(pattern: bytes, needle: bytes) -> None:
    assert required_literal(pattern) == needle


def test_every_built_in_finder_needs_its_literal() -> None:
    for sig in DEFAULT_SIGNATURES:
        for finder in sig.find:
            needle = required_literal(finder)
            for name, line in LINES:
                if re.search(finder, line):
                    assert needle in line, (name, finder)


def test_a_protect_pattern_takes_a_line_a_built_in_also_matches() -> None:
    text = b"INFO a\nFATAL probe 1\nINFO b\n"
    ends = np.cumsum([len(x) + 1 for x in text.split(b"\n")[:-1]], dtype=np.int64)
    sigs = SignatureSet(extra=("^FATAL probe",), first=1)
    lines, ids = sigs.find(text, ends, token_table(text, ends), line_layout(text, ends).first)
    assert lines.tolist() == [1] and sigs.names[int(ids[0])] == "user1"


@pytest.mark.parametrize("prefilter", [False, True])
def test_a_set_of_find_signatures_only_hits_their_lines(prefilter: bool) -> None:
    # no anchored signature: an empty alternation would match at every line start
    text = b"INFO starting\n" * 20 + b"thread 'main' panicked at 'boom', src/main.rs:2:5\n" + b"INFO done\n" * 20
    ends = np.cumsum([len(x) + 1 for x in text.split(b"\n")[:-1]], dtype=np.int64)
    sigs = SignatureSet([s for s in DEFAULT_SIGNATURES if s.name == "rust-panic"])
    table, first = (token_table(text, ends), line_layout(text, ends).first) if prefilter else (None, None)
    lines, ids = sigs.find(text, ends, table, first)
    assert lines.tolist() == [20] and ids.tolist() == [0]


@pytest.mark.parametrize(
    ("pattern", "first"),
    [
        (rb"Traceback", b"T"),
        (rb"(?:FAILED|ERROR) \S+::", b"EF"),
        (rb"=+ (?:FAILURES|ERRORS) =+", b"="),
        (rb"(?:g?make(?:\[\d+\])?: \*\*\*|ninja: build stopped|CMake Error)", b"Cgmn"),
        (rb"[a-c]x", b"abc"),
        (rb"\S+::", None),  # a category: not spelt out
        (rb"x*", None),  # may match nothing: any byte may follow
        (rb"(?i:e)rror", None),  # flags inside
    ],
)
def test_first_bytes_of_a_pattern(pattern: bytes, first: bytes | None) -> None:
    assert first_bytes(pattern) == (None if first is None else frozenset(first))


def test_every_anchored_line_starts_with_a_first_byte_of_its_signature() -> None:
    for name, line in LINES:
        sig = next(s for s in DEFAULT_SIGNATURES if s.name == name)
        if not sig.find:
            lead = line.lstrip(b" \t")[0]
            assert lead in (first_bytes(sig.pattern) or {lead}), name


def test_rubocop_offenses_after_a_blank_line_are_kept_as_a_section() -> None:
    offenses = b"".join(
        b"lib/app/file%d.rb:%d:17: C: Performance/RegexpMatch: Use match? instead of =~.\n"
        b"        next if head =~ pattern\n"
        b"                ^^^^^^^^^^^^^^^\n" % (i, i)
        for i in range(5)
    )
    text = (
        b"Inspecting 129 files\n"
        + b"." * 80
        + b"\n" * 40
        + b"Offenses:\n\n"
        + offenses
        + b"\n129 files inspected, 5 offenses detected\n"
        + b"".join(b"INFO cleanup step %d\n" % i for i in range(200))
    )
    sf = StreamFilter(FilterConfig(query="error", tail_lines=0, head_lines=0))
    runs = sf.feed(text) + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert offenses in kept and b"INFO cleanup step 199" not in kept


def test_a_link_checker_report_is_kept_to_the_end_of_its_record_only() -> None:
    report = (
        b"Issues :-(\n> Links \n"
        b"  1. [L296] 301 https://github.com/a/helm-dash  \xe2\x86\x92 https://github.com/b/helm-dash \n"
        b"  2. [L687] 404 https://github.com/c/blog-admin \n"
        b"> Dupes \n  None \xe2\x9c\x93\n"
    )
    text = b"".join(b"  %d. [L%d] 200 https://x.org/%d  \n" % (i, i, i) for i in range(300)) + b"\n"
    text += report + b"\n" + b"".join(b"Wrote results to file%d.json\n" % i for i in range(100))
    # (the signature's record alone: the learned prior keeps lines after a report's end too)
    sf = StreamFilter(FilterConfig(query="error failed", tail_lines=0, head_lines=0, prior=False))
    runs = sf.feed(text) + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert kept.lstrip(b"\n") == report  # with the blank line that starts its window


def test_the_docs_list_every_built_in_signature_by_name() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "signatures.md").read_text()
    listed = page.split("The built-in failure signatures", 1)[1].split("(`streamfilter/core/signatures.py`)", 1)[0]
    names = re.findall(r"[a-z][a-z0-9E]*(?:-[a-zA-Z0-9]+)+|[a-z]+(?=,|\n| \()", listed.split(":", 1)[1])
    assert sorted(names) == sorted(s.name for s in DEFAULT_SIGNATURES)


REAL = Path(__file__).resolve().parents[1] / "data"


def _kept(text: bytes) -> bytes:
    sf = StreamFilter(FilterConfig(query="error", tail_lines=0, head_lines=0))
    return b"".join(r.data for r in sf.feed(text) + sf.flush() if r.decision == "keep")


def test_a_unittest_report_is_kept_to_its_closing_rule_with_its_diff() -> None:
    # python3 -m unittest on assertEqual of two lists (3.11), between 300 lines of noise each side
    log = (REAL / "unittest-lists.log").read_bytes()
    report = log.partition(b"\n\n" + b"-" * 70 + b"\nRan ")[0]
    report = report.split(b"test_ok (test_lists.T.test_ok) ... ok\n", 1)[1]
    kept = _kept(log)
    assert report in kept  # the diff after the message's blank lines too
    assert b"- {'a': 1, 'b': [1, 2, 3]" in kept and b"First differing element 29:" in kept and b"-  29]" in kept
    assert b"INFO after 150" not in kept  # the section ended at the rule


def test_compiler_notes_stay_with_their_error() -> None:
    # g++ 12 on an overloaded call with no match, between build and link lines
    log = (REAL / "gpp-candidates.log").read_bytes()
    diagnostic = log[log.index(b"cand.cpp:4:42: error") : log.index(b"make: *** [all] Error 1")]
    assert diagnostic.count(b"note: candidate:") == 2
    kept = _kept(log)
    assert diagnostic in kept
    assert b"Linking CXX object bin/x150" not in kept


def test_a_line_is_a_hit_or_not_whatever_else_its_block_holds() -> None:
    # pytest's "x.py:5: in rec" frame holds no trigger word: in a block where most lines are
    # candidates (scanned whole) it was a hit, in another block not, so chunking changed decisions
    frame = b"test_deep.py:5: in rec"
    dense = b"".join(b"ERROR step %d failed\n" % i for i in range(20)) + frame + b"\n"
    sparse = b"".join(b"INFO step %d ok\n" % i for i in range(20)) + frame + b"\n"
    assert (20 in hits(dense, True)[0]) == (20 in hits(sparse, True)[0])


def test_nodes_assert_diff_and_frames_stay_with_the_assertion() -> None:
    # node 20, assert.deepStrictEqual on two objects, between compile and link lines
    log = (REAL / "node-deep-equal.log").read_bytes()
    report = log[log.index(b"AssertionError [ERR_ASSERTION]") : log.index(b"    at node:internal/main/run_main_module")]
    assert b"+     3\n-     4\n" in report
    kept = _kept(log)
    assert report in kept
    assert b"LD       lib/lib150.so" not in kept


def test_a_tcl_error_is_kept_with_its_whole_error_info() -> None:
    # tclsh 8.6 on a missing dict key two procedures deep, between 150 lines of noise each side;
    # its message holds no query word, and each command it ran is quoted at column 0
    log = (REAL / "tcl-dict-error.log").read_bytes()
    info = log[log.index(b'key "port" not known') : log.index(b"cleanup: removed temp dir /tmp/work/1\n")]
    assert info.count(b"invoked from within") == 2 and b'\n"inner $d"\n' in info
    kept = _kept(log)
    assert info in kept
    assert b"tick 100:" not in kept and b"/tmp/work/2\n" not in kept


def test_rustcs_help_and_note_lines_stay_with_their_error() -> None:
    # cargo 1.95 on mismatched types: rustc's "note: method defined here" and "help: use ..."
    # at column 0, each with its "-->" and "|" lines, inside one diagnostic (no blank line)
    log = (REAL / "rustc-help-note.log").read_bytes()
    first = log[log.index(b"error[E0308]") : log.index(b"\n\nerror[E0308]")]
    assert b"\nnote: method defined here\n" in first and b"\nhelp: use `Option::map_or`" in first
    kept = _kept(log)
    assert first in kept
    assert b"CC       src/file100.o" not in kept and b"linked lib/lib50.so" not in kept


def test_a_jest_verbose_list_of_passed_tests_is_summarized_and_its_failures_kept() -> None:
    # jest 30 --verbose (CI=true): "FAIL ./cart.test.js" heads an indented list of 60 passed and 2
    # failed tests, then each failure's block; the passed tests were kept as the FAIL line's
    # continuation lines (a fresh-user helper's find: 150 of them)
    log = (REAL / "jest-verbose.log").read_bytes()
    blocks = log[log.index(b"  \xe2\x97\x8f cart \xe2\x80\xba applies") : log.index(b"\n\nTest Suites:") + 1]
    assert b"Expected: 27" in blocks and b"at Object.toEqual (cart.test.js:5:61)" in blocks
    kept = _kept(log)
    assert blocks in kept and b"\xe2\x9c\x95 keeps line order" in kept
    assert kept.count("\u2713 adds item".encode()) <= 16  # a window each side at most, of 60


def test_python_linters_findings_are_kept() -> None:
    # a CI script's flake8 7.5, pylint 4.1 and ruff 0.17 (concise) on one file, then 60 passed pytest
    # tests: the findings hold no trigger word, so no signature saw them and flake8's and pylint's
    # were summarized (a session's own find)
    log = (REAL / "python-lint.log").read_bytes()
    findings = [line for line in log.split(b"\n") if re.match(rb"bad\.py:\d+:\d+:? [A-Z]+\d+", line)]
    assert len(findings) == 12 + 15 + 7
    kept = _kept(log)
    assert all(line in kept for line in findings)
    assert b"\nYour code has been rated at 0.00/10 " in kept  # pylint's verdict, 60 lines before the end
    assert kept.count(b" PASSED ") <= 16  # a window each side at most, of 60


def test_a_compiler_errors_lead_in_lines_are_kept_with_it() -> None:
    # g++ 12, two template errors: the second one's "In file included from", "In instantiation of"
    # and "required from" chain (where the error comes from) was summarized; only "required from
    # here", its one line of context, was kept
    log = (REAL / "gpp-template-errors.log").read_bytes()
    start = log.index(b"In file included from /usr/include/c++/12/bits/stl_algobase.h:71:")
    chain = log[
        start : log.index(
            b"error: no match for \xe2\x80\x98operator<\xe2\x80\x99 (operand types are \xe2\x80\x98K\xe2\x80\x99"
        )
    ]
    assert chain.count(b"required from") == 5
    assert chain in _kept(log)
    sf = StreamFilter(FilterConfig(query="error", tail_lines=0, head_lines=0))
    pieces = [r for i in range(0, len(log), 7) for r in sf.feed(log[i : i + 7])] + sf.flush()
    assert b"".join(r.data for r in pieces if r.decision == "keep") == _kept(log)  # however it is chunked


@pytest.mark.parametrize(
    "line",
    [
        b"In file included from /usr/include/c++/12/bits/stl_algobase.h:64,",
        b"                 from t.cpp:1:",
        b"t.cpp: In function \xe2\x80\x98int main()\xe2\x80\x99:",
        b"src/a.cc: In member function \xe2\x80\x98void A::f()\xe2\x80\x99:",
        b"/usr/include/c++/12/bits/predefined_ops.h: In instantiation of \xe2\x80\x98constexpr bool f()\xe2\x80\x99:",
        b"/usr/include/c++/12/bits/stl_algo.h:1809:14:   required from \xe2\x80\x98void std::sort()\xe2\x80\x99",
        b"t.cpp:10:12:   required from here",
        b"--- expected.txt\t2026-12-02 12:28:54.965744558 +0000",  # diff -u's, over its first hunk
        b"+++ actual.txt\t2026-12-02 12:28:54.965744558 +0000",
    ],
)
def test_lead_in_lines(line: bytes) -> None:
    assert LEAD_IN.match(line) is not None
    assert LEAD_IN.match(b"INFO " + line.lstrip()) is None


def test_each_ruff_finding_is_told_apart_by_its_code_and_message() -> None:
    # ruff 0.17's full form on 20 files, 60 findings: the protected line is "  --> pkg/mod9.py:6:12",
    # whose shape is every finding's, so after 50 the later ones were "duplicates" (a fresh-user
    # helper's find: 3 of 25 undefined names kept)
    log = (REAL / "ruff-full.log").read_bytes()
    names = [line for line in log.split(b"\n") if line.startswith(b"F821 Undefined name")]
    assert len(names) == 20 and log.count(b" --> pkg/") == 60
    kept = _kept(log)
    assert all(line + b"\n --> pkg/" in kept for line in names)
    sf = StreamFilter(FilterConfig(query="error", tail_lines=0, head_lines=0))
    pieces = [r for i in range(0, len(log), 97) for r in sf.feed(log[i : i + 97])] + sf.flush()
    assert b"".join(r.data for r in pieces if r.decision == "keep") == kept  # however it is chunked


def test_a_vitest_report_is_kept_to_its_rule_with_its_diff_and_location() -> None:
    # vitest 4.1 --reporter=verbose: 240 passed tests, 3 failed. Its diff of expected and received
    # and its "❯ file:line:col" location come after blank lines, past the reach of a continuation,
    # and were summarized (a fresh-user helper's find)
    log = (REAL / "vitest-verbose.log").read_bytes()
    kept = strip_ansi(_kept(log))
    for line in (b"- Expected", b"+ Received", b"- 5", b"+ 4", b'-   "age": 4,', b'+   "age": 3,'):
        assert b"\n" + line + b"\n" in kept, line
    for location in (b" \xe2\x9d\xaf vt/bad.test.js:3:48\n", b" \xe2\x9d\xaf vt/bad.test.js:4:56\n"):
        assert location in kept  # and the code frame's caret under it
    assert kept.count(b"|                                                ^") == 1
    assert strip_ansi(log).count(b" \xe2\x9c\x93 ") == 240 and kept.count(b" \xe2\x9c\x93 ") <= 16  # passed


def test_a_go_panic_is_kept_with_the_stack_of_its_goroutine() -> None:
    # go test -v (the format of Go 1.22) on a nil pointer in a test, between 120 passed tests each
    # side: the stack comes after a blank line, each function at column 0 above its place
    log = (REAL / "go-test-panic.log").read_bytes()
    stack = log[log.index(b"panic: runtime error") : log.index(b"\n\ngoroutine 300 [")]
    assert b"\ngoroutine 214 [running]:\n" in stack and b"orders.(*Ledger).Refund(0x0" in stack
    for text in (log, log.replace(b"\n", b"\r\n")):
        kept = _kept(text)
        assert stack.replace(b"\n", b"\n" if text is log else b"\r\n") in kept
        assert b"--- PASS: TestItem31 " not in kept and b"--- PASS: TestHandler100 " not in kept
    # the mark that finds a frame ("ledger.go:57 +0x3d") is in a later chunk than some frames
    sf = StreamFilter(FilterConfig(query="error", tail_lines=0, head_lines=0))
    runs = [r for i in range(0, len(log), 97) for r in sf.feed(log[i : i + 97])] + sf.flush()
    assert b"".join(r.data for r in runs if r.decision == "keep") == _kept(log)


# each a tool's real output (kotlinc's in Kotlin 2's format), as a fresh-user helper saw it summarized
FIELD_REPORTS = [
    (  # gradle: kotlinc's "e: " errors, no query word in them
        b"e: file:///w/app/src/main/kotlin/com/acme/shop/Cart.kt:42:17 Unresolved reference 'percentOff'.\n"
        b"e: file:///w/app/src/main/kotlin/com/acme/shop/Cart.kt:57:9 Type mismatch: inferred type is String?\n",
        [b"Cart.kt:42:17 Unresolved reference", b"Cart.kt:57:9 Type mismatch"],
    ),
    (  # prettier --check, then stylelint's findings under their file
        b"$ npx prettier --check .\nChecking formatting...\n[warn] src/m42.js\n[warn] src/m99.js\n"
        b"[warn] Code style issues found in 2 files. Run Prettier with --write to fix.\n"
        b"$ npx stylelint 'css/**/*.css'\n\ncss/c30.css\n"
        b'  2:3   \xe2\x9c\x96  Unknown property "colr"                        property-no-unknown\n'
        b"  3:12  \xe2\x9c\x96  Disallowed unit                                length-zero-no-unit\n\n"
        b"\xe2\x9c\x96 2 problems (2 errors, 0 warnings)\n",
        [b"[warn] src/m42.js\n[warn] src/m99.js\n", b"css/c30.css\n", b'Unknown property "colr"', b"Disallowed unit"],
    ),
    (  # black --check
        b"would reformat /w/app/billing.py\n",
        [b"would reformat /w/app/billing.py"],
    ),
    (  # Sphinx -W
        b"/w/docs/index.rst:4: WARNING: toctree contains reference to nonexisting document 'missing_page'\n",
        [b"nonexisting document 'missing_page'"],
    ),
    (  # Robot Framework: the failed test's message is the line under it
        b"Check Item 69                                                         | PASS |\n" + b"-" * 78 + b"\n"
        b"Login With Expired Token                                              | FAIL |\n"
        b"login returned 401: token expired: 401 != 200\n" + b"-" * 78 + b"\n",
        [b"| FAIL |\nlogin returned 401: token expired: 401 != 200\n"],
    ),
    (  # pre-commit: a failed hook's output, after its "- hook id:" lines and a blank line
        b"ruff.....................................................................Passed\n"
        b"codespell................................................................Failed\n"
        b"- hook id: codespell\n- exit code: 65\n\n"
        b"app/billing.py:9: Charg ==> Charge\ndocs/index.rst:3: recieve ==> receive\n\n"
        b"pretty format json.......................................................Failed\n"
        b"- hook id: pretty-format-json\n- exit code: 1\n\n"
        b"File config/settings.json is not pretty-formatted\n\n"
        b"shellcheck...............................................................Passed\n",
        [b"Charg ==> Charge\ndocs/index.rst:3: recieve ==> receive", b"settings.json is not pretty-formatted"],
    ),
    (  # kubectl get pods
        b"shop-web-5c7b9-0001d      1/1     Running            0             5m\n"
        b"shop-api-7d9f8c6b5-x2k9q    0/1     CrashLoopBackOff   5 (40s ago)   5m\n",
        [b"shop-api-7d9f8c6b5-x2k9q    0/1     CrashLoopBackOff"],
    ),
    (  # an error a download's progress bar drew over
        b"\rDownloading pkg  10%\rERROR: checksum mismatch for pkg-1.2.tar.gz\rretrying...\rDownloading pkg  95%\n",
        [b"\rERROR: checksum mismatch for pkg-1.2.tar.gz\rretrying...\rDownloading pkg  95%\n"],
    ),
    (  # diff -u of an expected and an actual output
        b"--- e.txt\t2026-12-02 12:28:54.965744558 +0000\n+++ a.txt\t2026-12-02 12:28:54.965744558 +0000\n"
        b"@@ -1,2 +1,2 @@\n-total: 3\n+total: 4\n done\n\n",
        [
            b"--- e.txt\t2026-12-02 12:28:54.965744558 +0000\n+++ a.txt\t",
            b"@@ -1,2 +1,2 @@\n-total: 3\n+total: 4\n done\n",
        ],
    ),
    (  # a whitespace check's diff, to the end of its record
        b"\ndiff --git a/src/a.cpp b/src/a.cpp\nindex 1c84b51..a6d991c 100644\n--- a/src/a.cpp\n+++ b/src/a.cpp\n"
        b"@@ -3281,2 +3281,2 @@ static int f()\n-    return 1; \n+    return 1;\n\n",
        [b"diff --git a/src/a.cpp b/src/a.cpp\nindex 1c84b51..a6d991c 100644\n--- a/src/a.cpp\n", b"+    return 1;\n"],
    ),
    (  # ctest -V: a test that crashed, among passed ones (helper-56: it was summarized)
        b'test 37\n      Start 37: geo_case_37\n\n37: Test command: /w/build/geotest "37"\n'
        b"37: Working Directory: /w/build\n37: Test timeout computed to be: 10000000\n"
        b"37/90 Test #37: geo_case_37 ......................***Exception: SegFault  0.00 sec\n"
        b'test 38\n      Start 38: geo_case_38\n\n38: Test command: /w/build/geotest "38"\n'
        b"38/90 Test #38: geo_case_38 ......................   Passed    0.00 sec\n",
        [b"37/90 Test #37: geo_case_37 ......................***Exception: SegFault  0.00 sec\n"],
    ),
]


@pytest.mark.parametrize(("report", "needed"), FIELD_REPORTS)
def test_a_tools_findings_with_no_query_word_are_kept(report: bytes, needed: list[bytes]) -> None:
    noise = b"".join(b"npm http fetch GET 200 https://registry.npmjs.org/pkg-%d 179ms\n" % i for i in range(200))
    kept = _kept(noise + report + noise)
    for line in needed:
        assert line in kept
    assert b"/pkg-20 " not in kept and b"/pkg-180 " not in kept


def test_a_dotnet_test_failure_in_its_verbose_list_keeps_its_report_not_the_list() -> None:
    # dotnet test -v n: every result is an indented line of one record, so the failure's report
    # went on through the next 150 passed tests as its continuation (a fresh-user helper's find)
    passed = b"".join(b"  Passed Shop.Tests.CartTests.Adds_%d [< 1 ms]\n" % i for i in range(150))
    report = (
        b"  Failed Shop.Tests.OrderTests.Total_AppliesCoupon [12 ms]\n  Error Message:\n"
        b"   Assert.Equal() Failure: Values differ\nExpected: 18.00\nActual:   20.00\n  Stack Trace:\n"
        b"     at Shop.Tests.OrderTests.Total_AppliesCoupon() in /src/Shop.Tests/OrderTests.cs:line 42\n"
    )
    log = b"Starting test execution, please wait...\n" + passed + report + passed.replace(b"Adds_", b"Removes_")
    kept = _kept(log)
    assert report in kept
    assert b"Adds_100 " not in kept and b"Removes_10 " not in kept and kept.count(b"\n") < 20


def test_an_rspec_failures_list_ends_at_its_timing_line() -> None:
    # RSpec's "Failures:" section went on 150 lines, through its coverage report (a fresh-user
    # helper's find): "Finished in 48.21 seconds" ends it, as "test result:" ends cargo's
    failures = (
        b"Failures:\n\n  1) Order#total with a coupon subtracts the discount\n"
        b"     Failure/Error: expect(order.total).to eq(Money.new(1800))\n\n"
        b"       expected: #<Money fractional:1800 currency:USD>\n"
        b"            got: #<Money fractional:2000 currency:USD>\n\n"
        b"     # ./spec/models/order_spec.rb:42:in `block (4 levels) in <top (required)>'\n\n"
    )
    coverage = b"".join(b"  app/models/m%d.rb  90.0%%  %d / 302 LOC\n" % (i, i) for i in range(120))
    log = b"Randomized with seed 41234\n" + b"." * 100 + b"\n\n" + failures
    log += b"Finished in 48.21 seconds (files took 3.42 seconds to load)\n652 examples, 1 failure\n\n"
    log += b"Coverage report generated for RSpec to /app/coverage.\n" + coverage
    kept = _kept(log)
    assert failures.rstrip(b"\n") in kept
    assert b"m60.rb" not in kept


def test_djangos_system_check_errors_are_kept() -> None:
    # manage.py test on a model with three field errors, then a GitLab job's after_script: the
    # issues under "ERRORS:" scored under the cut (a fresh-user helper's find)
    log = (REAL / "django-checks-ci.log").read_bytes()
    issues = log[log.index(b"ERRORS:\n") : log.index(b"\n\nSystem check identified 3 issues")]
    assert issues.count(b"(fields.E") == 3
    assert issues in _kept(log)


def test_a_behave_step_traceback_is_kept_with_its_scenario_not_the_feature() -> None:
    # behave 1.2 on a feature of 60 scenarios: each is indented under the feature, one record, so a
    # step's traceback went on through the next scenarios as its continuation (173 of 332 lines
    # kept; a fresh-user helper's find); a scenario's first line counts as column 0
    log = (REAL / "behave-steps.log").read_bytes()
    scenario = log[log.index(b"  Scenario: apply coupon to cart") : log.index(b"  Scenario: add item 33 ")]
    assert b"KeyError: 'SAVE10'" in scenario
    sf = StreamFilter(FilterConfig(tail_lines=0))
    kept = b"".join(r.data for r in sf.feed(log) + sf.flush() if r.decision == "keep")
    assert scenario.rstrip(b"\n") in kept and b"ASSERT FAILED: expected 46 got 45" in kept
    assert b"Scenario: add item 34 " not in kept and b"Scenario: add item 36 " not in kept


def test_no_signatures_turns_the_table_off_on_the_command_line_and_in_a_config(tmp_path: Path) -> None:
    # a failure only a signature keeps: a refused connection amid passing lines, no prior for it
    log = tmp_path / "job.log"
    noise = b"".join(b"step %d ok: copied artifacts/part-%d.html\n" % (i, i) for i in range(200))
    log.write_bytes(noise + b"psql: error: connection to server failed: Connection refused\n" + noise)
    on = run_cli("filter", "--format", "jsonl", "--explain", "--no-prior", str(log))
    off = run_cli("filter", "--format", "jsonl", "--explain", "--no-prior", "--no-signatures", str(log))
    assert on.returncode == off.returncode == 0, (on.stderr, off.stderr)

    def reasons(out: str) -> set[str]:
        return {w["reason"] for line in out.splitlines() for w in json.loads(line).get("windows", [])}

    assert any(r.startswith("protected:") for r in reasons(on.stdout))
    assert not any(r.startswith("protected:") for r in reasons(off.stdout))
    config = tmp_path / "c.toml"
    config.write_text(f'[defaults]\nsignatures = false\n\n[[source]]\ntype = "file"\npath = "{log}"\n')
    (source,) = load_config(config).sources
    assert source.filter.signatures is False
    config.write_text(f'[[source]]\ntype = "file"\npath = "{log}"\nsignatures = "no"\n')
    with pytest.raises(ConfigError, match="signatures"):
        load_config(config)


def test_a_hit_s_continuation_keeps_thirty_lines_of_one_shape_and_goes_on() -> None:
    """helper-76: after "psql: error: ..." 148 indented lines of one shape (the files a step archived)
    were kept as its continuation, 155 lines of 506; a kernel build's CC lines after an "error:" and a
    recursion's identical frames the same. The stretch after a hit keeps ``CONT_REPEATS`` lines of a
    shape; a line of another shape after them, the cause, is still kept, and the rest are summarized."""
    noise = b"".join(b"step %d ok\n" % i for i in range(200))
    listed = [b"  archived artifacts/report-part-%d.html (%d KB)\n" % (i, 3 * i) for i in range(100)]
    cause = b"  caused by: disk quota exceeded on /var/ci\n"
    data = noise + b"psql: error: connection to server failed: Connection refused\n" + b"".join(listed) + cause + noise
    for chunk in (len(data), 777):
        sf = StreamFilter(FilterConfig(prior=False))
        runs = [r for i in range(0, len(data), chunk) for r in sf.feed(data[i : i + chunk])] + sf.flush()
        kept = b"".join(r.data for r in runs if r.decision == "keep")
        assert b"psql: error: connection to server failed" in kept and cause in kept
        assert sum(line in kept for line in listed) <= 40  # (30, and the lines of the hit's own window)
        assert any("archived artifacts/report-part-<" in r.summary for r in runs if r.decision == "drop")
        assert sum(r.lines for r in runs) == data.count(b"\n")


def test_a_valgrind_report_glued_to_the_program_s_own_output_is_kept() -> None:
    # valgrind's memcheck on an out-of-bounds read (gcc -g -O0, valgrind 3.19, 2>&1 into one file):
    # stdout is block-buffered, stderr not, so the report's first line starts in the middle of the
    # program's "[ingest] row 292 sum=" (helper-88: the report was summarized among 599 rows)
    log = (REAL / "valgrind-interleaved.log").read_bytes()
    report = log[log.index(b"==23455== Invalid read") : log.index(b"==23455== \n=1752 ok")]
    assert log[log.index(report) - 20 : log.index(report)] == b"[ingest] row 292 sum"  # (its "=1752 ok" after)
    assert b"at 0x10918E: sum_row (vg.c:4)" in report and b"by 0x1091C3: main (vg.c:7)" in report
    kept = _kept(log)
    assert report in kept
    # and the report ends at valgrind's blank line ("==23455== "): the program's rows after it had
    # been kept as the rest of its record, 30 of them (helper-91)
    assert b"\n=1752 ok\n" not in kept and b"[ingest] row 293 " not in kept


def test_a_failed_ctest_keeps_its_output_up_to_the_next_test_line() -> None:
    # ctest -j2 --output-on-failure (CMake 3.25) on a C test that fails among 40, and plain ctest -j2
    # on the same tests: the failed test's output comes right after its "***Failed" line, at column 0,
    # up to a blank line and the next "Start N:" (helper-88: the assertion after it was summarized)
    log = (REAL / "ctest-output-on-failure.log").read_bytes()
    output = log[log.index(b" 7/40 Test  #7: ") : log.index(b"case 7: check 19 ok\n") + 20]
    assert output.count(b"\n") == 22 and b"unit.c:7: area(10.0) = 314.000000, expected 314.159265" in output
    kept = _kept(log)
    assert output in kept
    assert b"Start  9: geom_case_9" not in kept and b"Test  #9: geom_case_9" not in kept
    plain = (REAL / "ctest-plain.log").read_bytes()
    kept = _kept(plain)
    assert b" 1/40 Test  #7: geom_case_7 ......................***Failed" in kept
    assert b"Start 16: geom_case_16" not in kept  # (the next line: no output of the test's follows)


def test_test_more_diagnostics_are_kept_without_the_passing_points_after_them() -> None:
    # prove -v (Perl 5.36, Test::More): a failed test's diagnostics go to stderr, so they come
    # before its TAP file's points, with no blank line after them (helper-88: 30 passing points were
    # kept as the rest of their record); is_deeply's and like()'s diagnostics span several lines
    log = (REAL / "prove-failed-diag.log").read_bytes()
    diag = log[log.index(b"#   Failed test 'round2") : log.index(b"t/50_round.t ... \n")]
    assert diag.count(b"\n") == 5
    kept = _kept(log)
    assert diag in kept and b"\nnot ok 31 - round2 rounds half up\n" in kept
    assert b"\nok 2 - add ok 2\n" not in kept and b"\nok 20 - add ok 20\n" not in kept
    log = (REAL / "prove-is-deeply.log").read_bytes()
    kept = _kept(log)
    for failure in log[: log.index(b"# Looks like")].split(b"\n\n")[1:]:
        assert failure.count(b"\n") >= 3 and failure in kept
    assert b"\nok 10 - filler 10\n" not in kept


def test_a_failed_ninja_step_keeps_its_output_up_to_the_next_step_line() -> None:
    # ninja 1.11 -k 0 on a build whose code generator fails among 105 steps: the step's command and
    # the generator's own words come after "FAILED: <outputs>", up to the next "[N/M] " line
    # (helper-95: the message after the line was kept or not by where the windows fell)
    log = (REAL / "ninja-generator-failed.log").read_bytes()
    output = log[log.index(b"FAILED: gen/payments.h") : log.index(b"[65/105]")]
    assert output.count(b"\n") == 4 and b"which the wire format cannot carry" in output
    for shift in range(8):  # wherever the windows fall
        kept = _kept(b"+ setup step\n" * shift + log)
        assert output in kept, shift
        assert b"[74/105]" not in kept  # (the section ends at the next step: a window at most)


def test_each_file_a_merge_stopped_on_is_kept() -> None:
    # git 2.39 merge of a branch that changed 120 files, two of them where the other did:
    # "2× CONFLICT (content): M…" had named neither file (helper-95)
    log = (REAL / "git-merge-conflict.log").read_bytes()
    kept = _kept(log)
    for path in (b"src/mod37.txt", b"src/mod88.txt"):
        assert b"CONFLICT (content): Merge conflict in " + path + b"\n" in kept


def test_a_truncated_archive_s_messages_are_kept_in_a_script_that_goes_on() -> None:
    # tar 1.34 xzvf of a .tgz cut at 1500 bytes, between a script's own lines: gzip's and tar's
    # messages, not only tar's last line that holds "Error" (helper-95)
    log = (REAL / "tar-truncated.log").read_bytes()
    kept = _kept(log)
    for line in (
        b"gzip: stdin: unexpected end of file\n",
        b"tar: Unexpected EOF in archive\ntar: Unexpected EOF in archive\n",
        b"tar: Error is not recoverable: exiting now\n",
    ):
        assert line in kept
    assert kept.count(b"upload: ") < 10
