"""The built-in failure signatures as data: one plain record each, in table order.

A record gives a signature's name, its family (the ecosystem or tool it belongs to;
``"generic"`` for the catch-alls), its regexes and flags, and one log line it is meant to
catch (most of them from real CI logs). ``tests/unit/test_signature_table.py`` checks every
example: it is a hit of its own signature and of no other family's, but for the few
exceptions listed there. ``streamfilter.core.signatures`` compiles the table
(``DEFAULT_SIGNATURES``) and does the matching. A signature's id is its index here, so order
matters: of the signatures a line matches, the first names it.

A signature's lines must hold one of ``signatures.TRIGGER_WORDS`` or start with one of the
symbols the trigger prefilter knows (``anywhere`` ones excepted), or the filter never tries
it; its example's test shows whether they do. Regexes are case-sensitive unless ``(?i:...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("EXIT_VERDICTS", "TABLE", "Entry")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One built-in failure signature, with its family and an example line.

    Attributes:
        name: short name shown in decision traces (``protected:<name>``).
        family: the ecosystem or tool the signature belongs to: ``"python"``, ``"java"``,
            ``"js"``, ``"c/c++"``, ``"make"``, ``"shell"``, ... or ``"generic"`` for the
            catch-alls that fire on any ecosystem's lines.
        example: one log line the signature is meant to catch, as scoring text (escapes
            and timestamps removed).
        pattern: ``Signature.pattern``, as text (UTF-8 when compiled).
        find: ``Signature.find``, as text.
        max_hits: ``Signature.max_hits``.
        section: ``Signature.section``.
        record: ``Signature.record``.
        anywhere: ``Signature.anywhere``.
        shape_above: ``Signature.shape_above``.
        found: ``Signature.found``.
    """

    name: str
    family: str
    example: str
    pattern: str = ""
    find: tuple[str, ...] = ()
    max_hits: int | None = None
    section: bool = False
    record: bool = False
    anywhere: bool = False
    shape_above: bool = False
    found: bool = True


# a command's non-zero exit, as the exit-status signature finds it (``BlockFacts.verdicts`` too)
EXIT_VERDICTS = (
    r"exit(?:ed)? (?:with )?(?:code|status):? [1-9](?!\d*\.\d)",  # not a duration: "exit code: 52.69 ms"
    r"exited with [1-9]",
    r"returned non-zero exit status",
    r"exited with non-zero status",  # GNU time's
    r'" failed \d+ times\.',  # Travis, after the retries: 'The command "git clone ..." failed 3 times.'
)

TABLE: tuple[Entry, ...] = (
    # Python / pytest
    Entry(
        name="python-traceback",
        family="python",
        pattern=r"Traceback \(most recent call last\)",
        example="Traceback (most recent call last):",
    ),
    # faulthandler's dump after a crash: "Fatal Python error: ...", then each thread's frames
    Entry(
        name="python-fatal",
        family="python",
        pattern=r"(?:Fatal Python error: |(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\))",
        example="Current thread 0x00007f41f2f77b80 (most recent call first):",
    ),
    Entry(
        name="exception-line",
        family="python",
        pattern=r"(?:[A-Za-z_$][\w$]{0,100}\.){0,30}[A-Z][\w$]{0,200}(?:Error|Exception)(?::|\b.{0,300}$)",
        find=("Error", "Exception"),
        example="NameError: name 'Github' is not defined",
    ),
    # a thread's uncaught exception (threading.excepthook), then its traceback: Java quotes the
    # thread's name ("java-exception"), Python does not
    Entry(
        name="python-thread-exception",
        family="python",
        pattern=r'Exception in thread [^"\s]',
        example="Exception in thread Thread-1 (worker):",
    ),
    Entry(
        name="pytest-E",
        family="python",
        pattern=r"E   ",
        example="E       AttributeError: 'tuple' object has no attribute 'output'",
    ),
    Entry(
        name="pytest-section",
        family="python",
        pattern=r"=+ (?:FAILURES|ERRORS) =+",
        section=True,
        example="=================================== FAILURES ===================================",
    ),
    # unittest: "FAIL: test_x (pkg.Case.test_x)", a rule, the traceback, the message and its diff
    Entry(
        name="unittest-report",
        family="python",
        pattern=r"(?:FAIL|ERROR): \w+ \([\w.]+\)",
        section=True,
        example="ERROR: test_load (tests.test_io.LoadTest)",
    ),
    Entry(
        name="pytest-summary",
        family="python",
        pattern=r"=+ [^\n]{0,300}\b(?:failed|error|errors)\b[^\n]{0,300} =+[ \t\r]*$",
        found=False,
        example="======= 1 failed, 1582 passed, 14 skipped, 2 warnings in 441.80 seconds ========",
    ),
    Entry(
        name="pytest-failed",
        family="python",
        pattern=r"(?:FAILED|ERROR) \S+::",
        example="FAILED test_orders.py::test_missing_price - LookupError: no price for b-2",
    ),
    Entry(
        name="pytest-verbose-failed",
        family="python",
        pattern=r"\S+::\S+.*? (?:FAILED|ERROR)\b",
        find=(r" FAILED\b", r" ERROR\b"),
        example="tests/test_readme.py::test_readme FAILED                                 [  2%]",
    ),
    Entry(
        name="pytest-location",
        family="python",
        pattern=r"\S+\.py:\d+: (?:in \S+|\w*(?:Error|Exception))",
        find=(r"\.py:\d+: ",),
        example="/opt/python/3.7.1/lib/python3.7/unittest/mock.py:1229: AttributeError",
    ),
    # Java / Maven / Gradle / sbt / ScalaTest
    Entry(
        name="java-exception",
        family="java",
        pattern=r'(?:Exception in thread "|Caused by:)',
        example="Caused by: java.lang.RuntimeException: unsupported Java version: 11",
    ),
    Entry(
        name="maven-error",
        family="java",
        pattern=r"\[ERROR\]",
        example="[ERROR] COMPILATION ERROR :",
    ),
    Entry(
        name="sbt-error",
        family="java",
        pattern=r"\[error\]",
        example="[error] (finagle-http / Test / test) sbt.TestsFailedException: Tests unsuccessful",
    ),
    Entry(
        name="build-failure",
        family="java",
        pattern=r"(?:BUILD FAILURE|BUILD FAILED|FAILURE: Build failed|\* What went wrong:)",
        found=False,
        example="FAILURE: Build failed with an exception.",
    ),
    Entry(
        name="junit-failure",
        family="java",
        find=(r"<<< (?:FAILURE|ERROR)!",),
        example="malformedContentTypeHeaderThrows(retrofit2.RequestFactoryTest)  Time elapsed: 0.02 sec  <<< FAILURE!",
    ),
    Entry(
        name="junit-counts",
        family="java",
        pattern=r"Tests run: [^\n]*(?:Failures: [1-9]|Errors: [1-9])",
        found=False,
        example="Tests run: 3, Failures: 1, Errors: 0, Skipped: 0",
    ),
    Entry(
        name="gradle-task-failed",
        family="java",
        pattern=r"> Task \S+ FAILED",
        found=False,
        example="> Task :test FAILED",
    ),
    Entry(
        name="scalatest-failed",
        family="java",
        find=(r"\*\*\* FAILED \*\*\*",),
        example="[info] - Requests exceeding limit should increase dropped_request count *** FAILED ***",
    ),
    # kotlinc's errors: "e: file:///src/Cart.kt:42:17 Unresolved reference 'x'." (Kotlin 2), and
    # "e: /src/Cart.kt: (42, 17): Unresolved reference: x" (Kotlin 1); not its "w: " warnings
    Entry(
        name="kotlin-error",
        family="java",
        pattern=r"e: (?:file://)?\S+\.kts?(?::\d+:\d+|: \(\d+, \d+\)):? ",
        find=(r"\.kts?(?::\d+:\d+ |: \(\d+, \d+\): )",),
        example="e: file:///w/app/src/main/kotlin/com/acme/shop/Cart.kt:42:17 Unresolved reference 'percentOff'.",
    ),
    # JS: npm, jest, mocha, tsc
    Entry(
        name="npm-err",
        family="js",
        pattern=r"npm (?:ERR!|error)",
        example="npm ERR! code ELIFECYCLE",
    ),
    Entry(
        name="jest-bullet",
        family="js",
        pattern=r"● ",
        example="  ● hacks › supports grid layout",
    ),
    # vitest's failure report: " FAIL  a.test.js > suite > test", its message, the diff of expected
    # and received, the "❯ a.test.js:3:48" location and its code frame, to its "⎯⎯⎯[1/3]⎯" rule
    Entry(
        name="vitest-fail",
        family="js",
        pattern=r"FAIL  \S[^\n]{0,500} > ",
        section=True,
        example=" FAIL  vt/bad.test.js > math > adds wrong",
    ),
    Entry(
        name="jest-fail",
        family="js",
        pattern=r"(?:FAIL|✕|✗|×) ",
        example="    ✕ applies the discount (9 ms)",
    ),
    # jest's and vitest's counts at the end of a run with failures ("Tests:       1 failed, 41 passed")
    Entry(
        name="jest-summary",
        family="js",
        pattern=r"(?:Test Suites|Tests|Test Files): +[1-9]\d* failed",
        found=False,
        example="Tests:       1 failed, 216 passed, 217 total",
    ),
    Entry(
        name="jest-expected",
        family="js",
        pattern=r"(?:Expected|Received)(?: value| length| substring)?(?: to (?:be|equal|match)\w*)?:",
        example="    Expected: 27",
    ),
    Entry(
        name="mocha-failing",
        family="js",
        pattern=r"\d+ failing",
        find=(r" failing",),
        section=True,
        example="  5 failing",
    ),
    # plain "src/a.ts(5,1): error TS2304: ..." and --pretty "src/a.ts:5:1 - error TS2304: ..."
    Entry(
        name="tsc-error",
        family="js",
        pattern=r"\S+(?:\(\d+,\d+\):|:\d+:\d+ -) error TS\d+",
        find=(r"error TS\d+",),
        example=(
            "../../../tools/examples/shared/node_modules/@types/jasmine/index.d.ts(142,47): error TS1005: ';' expected."
        ),
    ),
    # ts-node's diagnostics: "TSError: ⨯ Unable to compile TypeScript", then "src/a.ts (5,1): message (2304)"
    Entry(
        name="ts-node-error",
        family="js",
        pattern=r"(?:.{0,300}\bTSError: |\S+\.tsx? \(\d+,\d+\): )",
        find=(r"TSError: ", r"\.tsx? \("),
        example="e2e/app.e2e-spec.ts (5,1): Cannot find name 'describe'. (2304)",
    ),
    # numbered failure lists: ExUnit "1) test ...", PHPUnit "1) Ns\\Class::method"
    Entry(
        name="numbered-failure",
        family="generic",
        pattern=r"\d+\) (?:test |[\w\\]+::\w)",
        find=(r"\) test ", r"::"),
        example="  1) test pry no sessions (IEx.ServerTest)",
    ),
    # Rust
    Entry(
        name="rust-error",
        family="rust",
        pattern=r"error(?:\[E\d+\])?:",
        example="error[E0425]: cannot find value `CURSOR` in this scope",
    ),
    Entry(
        name="rust-panic",
        family="rust",
        find=(r"panicked at",),
        example=(
            "thread 'grid_reset' panicked at 'Ref test failed; grid doesn't match',"
            " alacritty_terminal/tests/ref.rs:125:9"
        ),
    ),
    Entry(
        name="rust-test-failed",
        family="rust",
        pattern=r"(?:test \S+ \.\.\. FAILED|test result: FAILED)",
        example=(
            "test result: FAILED. 550 passed; 1 failed; 103 ignored; 0 measured; 0 filtered out; finished in 15.38s"
        ),
    ),
    Entry(
        name="rust-failures",
        family="rust",
        pattern=r"failures:\r?$",
        section=True,
        example="failures:",
    ),
    # Go
    Entry(
        name="go-fail",
        family="go",
        pattern=r"(?:--- FAIL:|FAIL\b|panic: )",
        example="--- FAIL: TestSimulation (10.06s)",
    ),
    Entry(
        name="go-compile",
        family="go",
        pattern=r"\S+\.go:\d+:\d+: ",
        find=(r"\.go:\d+:\d+: ",),
        example="./main.go:12:3: undefined: foo",
    ),
    # C / C++ / make / cmake / linker / sanitizers / other compilers
    Entry(
        name="compiler-error",
        family="c/c++",
        pattern=r"\S+:\d+:(?:\d+:)? [Ee]rror\b",
        find=(r": (?:fatal )?error:", r": Error\b"),
        example="vis-subprocess.h:21:29: error: unknown type name ‘fd_set’",
    ),
    # a tool's own "NAME: error: ..." (GNU's convention: pg_dump, clang's driver, argparse), not at a
    # file's line as a compiler's is
    Entry(
        name="tool-error",
        family="generic",
        pattern=r".*: (?:fatal )?error:",
        find=(r": (?:fatal )?error:",),
        example='pg_dump: error: connection to server on socket "/tmp/.s.PGSQL.5432" failed',
    ),
    # and Sphinx's "index.rst:4: WARNING: toctree contains reference to nonexisting document" (-W fails on them)
    Entry(
        name="compiler-warning",
        family="c/c++",
        pattern=r"\S+:\d+:(?:\d+:)? (?:[Ww]arning\b|WARNING: )",
        find=(r": warning\b", r": Warning\b", r": WARNING: "),
        max_hits=10,
        found=False,
        example=(
            "leveldb/util/logging.cc:58:40: warning: comparison of integers of different signs: 'const int' and"
            " 'unsigned long' [-Wsign-compare]"
        ),
    ),
    Entry(
        name="make-error",
        family="make",
        pattern=r"(?:g?make(?:\[\d+\])?: \*\*\*|ninja: build stopped)",
        found=False,
        example="make[1]: *** [scripttests] Error 2",
    ),
    Entry(
        name="cmake-error",
        family="make",
        pattern=r"CMake Error",
        example="CMake Error at /home/travis/build/neovim/neovim/cmake/RunTests.cmake:85 (message):",
    ),
    # CTest's result of a test that did not pass: "***Failed", "***Exception: SegFault" (a crash:
    # no query word), "***Timeout", "***Not Run" (helper-56: a segfault among 90 tests was summarized);
    # a section: --output-on-failure prints the test's output after it, at column 0, up to the next
    # test's "Start N:" or "N/M Test #N:" line (helper-88: the assertion there was summarized)
    Entry(
        name="ctest-failed",
        family="make",
        find=(r"\*\*\*(?:Failed|Exception: |Timeout|Not Run)",),
        section=True,
        example="37/90 Test #37: geo_case_37 ......................***Exception: SegFault  0.00 sec",
    ),
    # a section: ninja prints a failed step's command and its output after "FAILED: <outputs>", up
    # to the next step's "[N/M] " line (helper-95: the generator's message after it was summarized)
    Entry(
        name="ninja-failed",
        family="make",
        pattern=r"FAILED: \S",
        section=True,
        example="FAILED: gen/payments.h ",
    ),
    # make's own errors in a makefile: "Makefile:12: *** missing separator.  Stop."
    Entry(
        name="make-stop",
        family="make",
        pattern=r"\S+:\d+: \*\*\* .*Stop\.",
        find=(r": \*\*\* ",),
        example="Makefile:12: *** missing separator.  Stop.",
    ),
    Entry(
        name="linker-error",
        family="c/c++",
        find=(
            r"undefined reference to",
            r"ld returned \d+ exit status",
            r"collect2: error",
            r"library not found for",  # Apple's ld
            r"cannot find -l",  # GNU ld: "ld: cannot find -lssl"
            r"symbol\(s\) not found",  # Apple's ld
        ),
        example="map.c:(.text.build_values+0xd): undefined reference to `array_add_ptr'",
    ),
    # the C++ runtime's last words before abort(), then its indented "  what():  std::bad_alloc"
    Entry(
        name="cpp-terminate",
        family="c/c++",
        find=(r"terminate called after throwing", r"terminate called without an active exception"),
        example="terminate called after throwing an instance of 'std::runtime_error'",
    ),
    Entry(
        name="caret-line",
        family="c/c++",
        pattern=r"\^~*[ \t\r]*$",
        example="         ^~~~~~~~~~~",
    ),
    # a sanitizer report: its stacks are separated by blank lines and column-0 headings
    Entry(
        name="sanitizer",
        family="c/c++",
        find=(r"==\d+==(?:ERROR|WARNING): \w*Sanitizer",),
        section=True,
        example=(
            "==30799==ERROR: AddressSanitizer: heap-use-after-free on address 0x61b000080607 at pc 0x555888669d4c bp"
            " 0x7f3822083810 sp 0x7f3822083808"
        ),
    ),
    # valgrind's memcheck: "==123== Invalid read of size 4", its stacks on "==123==    at ..." lines;
    # found anywhere in a line: the program's block-buffered stdout can end its line before it
    # ("[ingest] row 292 sum==123== Invalid read", helper-88)
    Entry(
        name="valgrind-error",
        family="c/c++",
        find=(
            r"== Invalid (?:read|write|free)",
            r"== Conditional jump or move depends",
            r"== Use of uninitialised value",
            r"== Mismatched free",
            r"== ERROR SUMMARY: [1-9]",
        ),
        record=True,
        example="==18555== Invalid read of size 4",
    ),
    # Ruby, PHP, PowerShell, Lua and other test runners and linters
    Entry(
        name="rspec-failure",
        family="ruby",
        pattern=r"(?:Failure/Error:|rspec \./)",
        example="     Failure/Error: expect(x).to eq(10)",
    ),
    Entry(
        name="lua-traceback",
        family="lua",
        pattern=r"stack traceback:",
        example="stack traceback:",
    ),
    # Tcl's errorInfo: the message, then "    while executing", the command in quotes at column 0,
    # "    invoked from within" and the callers up to '    (file "x.tcl" line 4)' (its continuation)
    Entry(
        name="tcl-error",
        family="tcl",
        pattern=r"while executing[ \t\r]*$",
        find=(r"while executing[ \t\r]*$",),
        example="    while executing",
    ),
    # Lua's require: "x_spec.lua:5: module 'a.b' not found:", then the tab-indented places it looked
    Entry(
        name="lua-module-not-found",
        family="lua",
        pattern=r".{0,300}\bmodule '[^'\n]{1,200}' not found:",
        find=(r"module '",),
        example=(
            "test/functional/lua/util_spec.lua:5: module 'runtime.lua.util' not found:No LuaRocks module found for"
            " runtime.lua.util"
        ),
    ),
    # minitest's and similar assertion messages: 'Expected "" to include "sqlite>".'
    Entry(
        name="expected-to",
        family="ruby",
        pattern=r"Expected .{1,300} to (?:be|include|match|equal|respond|have|eq)\b",
        example="Expected #<E:0x000000030acd48> to be a kind of E, not E.",
    ),
    Entry(
        name="failures-section",
        family="ruby",
        pattern=r"Failures:\r?$",
        section=True,
        example="Failures:",
    ),
    Entry(
        name="minitest-failure",
        family="ruby",
        pattern=r"(?:Failure|Error):\r?$",
        example="Failure:",
    ),
    # RuboCop: a blank line, then the offenses
    Entry(
        name="lint-offenses",
        family="ruby",
        pattern=r"Offenses:\r?$",
        section=True,
        example="Offenses:",
    ),
    # perl's fatal errors: "Can't locate Foo.pm in @INC (...) at t/a.t line 3.", "Died at x.pl line 9."
    Entry(
        name="perl-die",
        family="perl",
        pattern=(
            r"(?:Can't |Died\b|Undefined subroutine |Not an? [A-Z]+ reference|Illegal division )"
            r"[^\n]*? at \S+ line \d+"
        ),
        find=(r" line \d+",),
        example="Can't locate Foo/Bar.pm in @INC (you may need to install the Foo::Bar module) at t/a.t line 3.",
    ),
    # Perl::Critic: "Use x instead of y at line 69, column 28.  See page 218 of PBP.  (Severity: 5)"
    Entry(
        name="perlcritic",
        family="perl",
        pattern=r".{0,400}\bat line \d+, column \d+\.",
        find=(r"\(Severity: \d\)",),
        example=(
            "Use IO::Interactive::is_interactive() instead of -t at line 69, column 28."
            "  See page 218 of PBP.  (Severity: 5)"
        ),
    ),
    # awesome_bot's link report: "Issues :-(", then "> Links" and the failing links
    Entry(
        name="link-check-issues",
        family="link-check",
        pattern=r"Issues :-\(",
        record=True,
        example="Issues :-(",
    ),
    Entry(
        name="lint-error",
        family="js",
        pattern=r"\d+:\d+\s+error\s",
        find=(r"  error  ",),
        example="  12:2  error  Unnecessary semicolon  no-extra-semi",
    ),
    # stylelint's findings under their file: "  2:3  ✖  Unknown property "colr"  property-no-unknown"
    Entry(
        name="stylelint-error",
        family="js",
        pattern=r"\d+:\d+\s+✖\s",
        find=("✖",),
        anywhere=True,
        example=" 13:2  ✖  Expected double colon          selector-pseudo-element-colon-notation",
    ),
    # formatters' checks: black's "would reformat src/a.py", ruff format's "Would reformat: src/a.py",
    # prettier's "[warn] Code style issues found in 2 files." (the files' "[warn] src/a.js" lead in to it)
    Entry(
        name="format-check",
        family="lint",
        pattern=r"(?:would reformat |Would reformat: |\[warn\] Code style issues)",
        example="would reformat /w/app/billing.py",
    ),
    # codespell's "docs/index.rst:3: recieve ==> receive"
    Entry(
        name="codespell",
        family="lint",
        pattern=r"\S+:\d+: \S+ ==> \S",
        find=(" ==> ",),
        anywhere=True,
        example="docs/index.rst:3: recieve ==> receive",
    ),
    # pre-commit's failed hook ("mypy.........Failed"), its "- hook id:" and the hook's output, to
    # the next hook's line (a section stop)
    Entry(
        name="pre-commit-failed",
        family="lint",
        pattern=r"\S[^\n]*?\.{4,}Failed[ \t\r]*$",
        find=(r"\.\.\.\.Failed",),
        section=True,
        example="pyright..................................................................Failed",
    ),
    # Django's system checks: "ERRORS:", then "shop.Coupon.amount: (fields.E130) DecimalFields must
    # define ..." a line each, to a blank line
    Entry(
        name="django-check",
        family="python",
        pattern=r"ERRORS:\r?$",
        record=True,
        example="ERRORS:",
    ),
    # Robot Framework's failed test or suite, "Login With Expired Token     | FAIL |", then its
    # message, to the rule under it
    Entry(
        name="robot-fail",
        family="robot",
        pattern=r".*\| FAIL \|[ \t\r]*$",
        find=(r"\| FAIL \|",),
        section=True,
        example="Login With Expired Token                                              | FAIL |",
    ),
    # Python's linters: flake8's, pycodestyle's, pylint's and ruff's "bad.py:8:16: F821 undefined name 'x'",
    # and ruff's full form, the code and message over "  --> bad.py:8:16" (kept as its context line)
    Entry(
        name="python-lint",
        family="python",
        pattern=r"(?:--> )?\S+\.py:\d+:\d+",
        find=(
            r"\.py:\d+:\d+(?::? [A-Z]{1,4}\d{2,4}\b|\r?$)",  # one regex: half the time of two
        ),
        anywhere=True,
        shape_above=True,
        example="./thefuck/rules/nixos_cmd_not_found.py:8:1: E302 expected 2 blank lines, found 1",
    ),
    # pylint's verdict after its findings, below a perfect score (pylint then exits non-zero)
    Entry(
        name="pylint-rating",
        family="python",
        pattern=r"Your code has been rated at (?!10\.00/)",
        found=False,
        example="Your code has been rated at 0.00/10 (previous run: 0.00/10, +0.00)",
    ),
    # JavaScript Standard Style (standard, semistandard, ts-standard) heads its findings so:
    # "standard: Use JavaScript Standard Style (https://standardjs.com)", then "  file:1:2: ..."
    Entry(
        name="standard-lint",
        family="js",
        find=(r": Use JavaScript Standard Style", r": Use Semicolons For All!"),
        example="standard: Use JavaScript Standard Style (https://standardjs.com)",
    ),
    Entry(
        name="found-errors",
        family="generic",
        find=(r"Found errors", r"Found \d+ errors?\b"),
        example="Found errors in Test_popup_beval():",
    ),
    # clang's count after its diagnostics, not "1 warning and 0 errors generated."
    Entry(
        name="errors-generated",
        family="c/c++",
        pattern=r".*(?<!\d)[1-9]\d* errors? generated\.",
        find=(r" error generated\.", r" errors generated\."),
        example="2 errors generated.",
    ),
    Entry(
        name="phpunit-failure",
        family="php",
        pattern=r"FAILURES!",
        example="FAILURES!",
    ),
    # PHPUnit's verdict counts of a run with failures or errors (after "FAILURES!" or "ERRORS!")
    Entry(
        name="phpunit-counts",
        family="php",
        pattern=r"Tests: \d+, Assertions: \d+, [^\n]{0,100}\b(?:Failures|Errors): [1-9]",
        found=False,
        example="Tests: 83, Assertions: 100, Failures: 1.",
    ),
    Entry(
        name="phpunit-failures",
        family="php",
        pattern=r"There (?:was|were) \d+ (?:failure|error)s?:",
        section=True,
        example="There were 7 failures:",
    ),
    Entry(
        name="pester-failure",
        family="powershell",
        pattern=r"\[-\] ",
        example="    [-] should write a successful test result 54ms",
    ),
    # TAP (prove, node-tap, bats): a failed test point
    Entry(
        name="tap-not-ok",
        family="tap",
        pattern=r"not ok \d+",
        example="not ok 7 no messages in results",
    ),
    # TAP's counts at the end of a run with failures (node --test's "# fail 2", its spec reporter's
    # "ℹ fail 2"), as jest's; the counts and the plan "1..62" right before it are its lead-in
    # (``signatures.LEAD_IN``)
    Entry(
        name="tap-summary",
        family="tap",
        pattern=r"(?:#|ℹ) fail [1-9]\d*",
        found=False,
        example="# fail 2",
    ),
    # Test::More's diagnostics of a failed test: "#   Failed test 'x'", "#   at t/a.t line 3.", "#  got: ...";
    # kept through its "#" lines, not as the rest of its record: on stderr, they come right before
    # the test file's passing points, with no blank line between (helper-88: 30 of them were kept)
    Entry(
        name="tap-diag-failed",
        family="tap",
        pattern=r"#\s+Failed (?:\(TODO\) )?test\b",
        example="#   Failed test 'structure matches'",
    ),
    Entry(
        name="bracketed-failure",
        family="generic",
        find=(r"\[ *(?:ERROR|FAILED|FAIL|FAILURE|CRITICAL|SEVERE) *\]",),
        example="[  FAILED  ] 103 tests, listed below:",
    ),
    # a lowercase level tag, first in its line (s3_website's "[fail] Failed to push the website",
    # beside its "[info]" and "[wait]")
    Entry(
        name="failure-tag",
        family="generic",
        pattern=r"\[fa(?:il(?:ed|ure)?|tal)\] ",
        find=(r"\[fa(?:il(?:ed|ure)?|tal)\] ",),
        example="[fail] Failed to upload index.html (Access key cannot be null.)",
    ),
    # link checkers: an HTTP error status beside a URL, after a list number or a line ref ("06. [L1622]
    # 404 https://"), not after indentation alone: apt-cache policy's "     500 http://deb.debian.org/..."
    # is a pin priority (helper-107: 326 lines of it kept)
    Entry(
        name="http-error-status",
        family="link-check",
        find=(r"\S [45]\d\d https?://",),
        example="  06. [L1622] 404 https://www.goprimer.com",
    ),
    # shell, CI, generic
    Entry(
        name="exit-status",
        family="shell",
        find=(
            *EXIT_VERDICTS,
            r'" failed\.',  # Travis: 'The command "make test" failed. Retrying, 2 of 3.'
        ),
        found=False,
        example='The command "bin/lein test" exited with 1.',
    ),
    Entry(
        name="command-failed",
        family="shell",
        find=(
            r"command not found",
            r"Segmentation fault",
            r"core dumped",
            r"No such file or directory",
            r"syntax error near unexpected token",
            r": unbound variable",  # set -u
            r": line \d+: +\d+ (?:Killed|Terminated|Aborted)",  # bash's report of a killed job
            r"Permission denied",
            r"No space left on device",
        ),
        found=False,
        example="bash: line 97: bc: command not found",
    ),
    # a service or host that cannot be reached: "psql: could not connect to server: Connection refused",
    # "dial tcp 127.0.0.1:5432: connect: connection refused", "getaddrinfo ENOTFOUND", git's and apt's
    # "Could not resolve host", "Temporary failure in name resolution"
    Entry(
        name="network-error",
        family="network",
        find=(
            r"[Cc]onnection refused",
            r"ECONNREFUSED",
            r"ENOTFOUND",
            r"[Cc]ould not resolve host",
            r"Temporary failure in name resolution",
            r"Network is unreachable",
        ),
        example="psql: could not connect to server: Connection refused",
    ),
    Entry(
        name="tls-error",
        family="network",
        find=(r"x509: ", r"certificate verify failed"),
        example="x509: certificate signed by unknown authority",
    ),
    Entry(
        name="git-rejected",
        family="git",
        find=(r"! \[rejected\]", r"! \[remote rejected\]"),
        example=" ! [rejected]        main -> main (fetch first)",
    ),
    # a merge, rebase, cherry-pick or stash apply that stopped on a conflict, one line a path
    # (helper-95: "2× CONFLICT (content): M…" named neither file)
    Entry(
        name="git-conflict",
        family="git",
        pattern=r"CONFLICT \([a-z/ ]+\): ",
        example="CONFLICT (content): Merge conflict in src/mod137.txt",
    ),
    Entry(
        name="docker-error",
        family="container",
        pattern=r"docker: (?:Error|invalid)",
        example="docker: Error response from daemon: manifest for koalaman/shellcheck:current not found.",
    ),
    Entry(
        name="curl-error",
        family="network",
        pattern=r"curl: \(\d+\) ",
        example="curl: (22) The requested URL returned error: 404 Not Found",
    ),
    # the kernel's OOM killer
    Entry(
        name="out-of-memory",
        family="system",
        find=(r"Out of memory: Kill",),
        example="Out of memory: Killed process 1234 (java)",
    ),
    # a Kubernetes pod that does not run, in kubectl's table or events
    Entry(
        name="pod-error",
        family="container",
        find=("CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "OOMKilled", "CreateContainerConfigError"),
        example="shop-api-7d9f8c6b5-x2k9q    0/1     CrashLoopBackOff   5 (40s ago)   5m",
    ),
    # .NET / MSBuild, PHP, Elixir, Swift's XCTest, Node
    Entry(
        name="dotnet-error",
        family="dotnet",
        find=(r"error CS\d{4}", r"error MSB\d{4}", r"Build FAILED\.", r"Unhandled exception\. "),
        example="Program.cs(10,13): error CS1002: ; expected [/src/app.csproj]",
    ),
    Entry(
        name="php-error",
        family="php",
        find=(r"PHP Fatal error:", r"PHP Parse error:"),
        example=(
            "PHP Fatal error:  Class 'Composer\\Util\\Response' not found in"
            " /home/travis/build/composer/composer/src/Composer/Util/RemoteFilesystem.php on line 286"
        ),
    ),
    # Elixir's uncaught exceptions and Mix's task errors: "** (Mix) mix format failed due to ..."
    Entry(
        name="elixir-error",
        family="elixir",
        pattern=r"\*\* \((?:Mix|(?:\w+\.)*\w*(?:Error|Exception))\) ",
        example="** (CompileError) (for doctest at) lib/list.ex:102: undefined function i/1",
    ),
    Entry(
        name="xctest-failed",
        family="swift",
        pattern=r"(?:Test Suite '.*' failed at |Executed \d+ tests?, with [1-9])",
        find=(r"' failed at ", r" with [1-9]"),
        example="\t Executed 1190 tests, with 1 failure (0 unexpected) in 69.249 (71.401) seconds",
    ),
    # an XCTest assertion's message: "XCTAssertTrue failed", "XCTAssertEqual failed: ("1") is not equal to ("2")"
    Entry(
        name="xctest-assert",
        family="swift",
        find=(r"XCTAssert\w{0,40} failed\b",),
        example="  testThatDownloadRequestWithInvalidURLStringThrowsResponseHandlerError, XCTAssertTrue failed",
    ),
    Entry(
        name="unhandled-rejection",
        family="js",
        find=(r"UnhandledPromiseRejection",),
        example=(
            "(node:5022) UnhandledPromiseRejectionWarning: Unhandled promise rejection (rejection id: 2): undefined"
        ),
    ),
    # awk's own errors in its program: mawk's "awk: line 3: missing } near end of file", gawk's
    # "gawk: cmd. line:1: ..." (helper-95: one among 880 lines of a report script was summarized)
    Entry(
        name="awk-error",
        family="awk",
        pattern=r"[gmn]?awk: (?:cmd\. )?line:? ?\d+: ",
        example="awk: line 3: missing } near end of file",
    ),
    # Python's json decoder in a tool's own words (python -m json.tool, a config check): its
    # message without a traceback (helper-95)
    Entry(
        name="json-decode-error",
        family="python",
        find=(
            r"Expecting (?:value|property name enclosed in double quotes|'[,:]' delimiter): line \d+ column \d+",
            r"Unterminated string starting at: line \d+ column \d+",
        ),
        example="Expecting ',' delimiter: line 4 column 3 (char 44)",
    ),
    # a truncated archive or stream: gzip's "stdin: unexpected end of file", tar's "Unexpected EOF
    # in archive" and "Error is not recoverable: exiting now", dpkg-deb's "... unexpected end of file
    # or stream" (helper-95: in a script that went on, only tar's last line was kept, by its word)
    Entry(
        name="unexpected-eof",
        family="archive",
        find=(r"nexpected EOF", r"unexpected end of file", r"Error is not recoverable"),
        example="tar: Unexpected EOF in archive",
    ),
    # dash and other POSIX shells: "/bin/sh: 1: jq: not found"
    Entry(
        name="sh-not-found",
        family="shell",
        pattern=r"(?:\S*/)?(?:a|b|da|k|z)?sh: (?:line )?\d+: .{0,300}: not found",
        find=(r": not found",),
        example="sh: 1: pnpm: not found",
    ),
    # apt-get's errors: "E: Unable to locate package x", "E: Sub-process /usr/bin/dpkg returned an error code (1)"
    Entry(
        name="apt-error",
        family="system",
        pattern=r"E: (?:Unable to |Failed to |Sub-process |Could not )",
        example=(
            "E: Failed to fetch http://dl.hhvm.com/ubuntu/dists/trusty/main/binary-i386/Packages  404  Not Found"
            " [IP: 13.33.164.200 80]"
        ),
    ),
    Entry(
        name="rake-aborted",
        family="ruby",
        pattern=r"rake aborted!",
        example="rake aborted!",
    ),
    # git and tools like it: "fatal: not a git repository (or any of the parent directories): .git"
    # and clang's and Go's runtime's "fatal error: ..."
    Entry(
        name="fatal-line",
        family="generic",
        pattern=r"fatal(?: error)?: ",
        found=False,
        example="fatal: not a git repository (or any of the parent directories): .git",
    ),
    Entry(
        name="timed-out",
        family="generic",
        find=(
            r"imed out",
            r"TIMED OUT",
            r"imeout exceeded",
            r"exceeded the maximum time limit",  # a CI runner's job limit
            r"No output has been received in the last",  # a CI runner's stall guard
        ),
        example="Tests timed out",
    ),
    # size-limit, memory and time limits; not a compiler's note ("size limit exceeded ..., retrying without")
    Entry(
        name="limit-exceeded",
        family="generic",
        pattern=r"(?!.*\bnote: )",
        find=(r"limit exceeded", r"limit has exceeded"),
        example="  Package size limit has exceeded by 934 B",
    ),
    Entry(
        name="killed",
        family="shell",
        pattern=r"Killed[ \t\r]*$",
        example="Killed",
    ),
    Entry(
        name="ci-error",
        family="ci",
        pattern=r"(?:##\[error\]|::error)",
        example="##[error]Dependabot encountered an error performing the update",
    ),
    # and the log levels above ERROR: Python's CRITICAL, java.util.logging's SEVERE
    Entry(
        name="generic-error",
        family="generic",
        pattern=r"(?:ERROR|FATAL|FAIL|FAILED|CRITICAL|SEVERE|Error|Fatal)\b[:!\s]",
        example="FATAL: Could not checkout 779ff9c0c30a8e6e745844ba2c84ef74054f6f7a",
    ),
    # a test's verdict at the end of its line, and tasty's "  tables:   FAIL (0.06s)"
    Entry(
        name="test-failed",
        family="generic",
        find=(r"FAILED[ \t\r]*$", r"FAILURE[ \t\r]*$", r"ERROR[ \t\r]*$", r"\bFAIL \(\d[\d.]*m?s\)"),
        example="io.reactivex.observers.SerializedObserverTest > notificationDelay FAILED",
    ),
    # a verdict column at the end of a line ("selections-trim      FAIL", "Test suite test-pandoc: FAIL")
    # (a word of its own: not "test_handles_FAIL")
    Entry(
        name="verdict-fail",
        family="generic",
        pattern=r"(?:.*[\s:\])])?FAIL[ \t\r]*$",
        find=(r"FAIL[ \t\r]*$",),
        example="Running test ./errors/filter with sam ... FAIL",
    ),
    Entry(
        name="failed-colon",
        family="generic",
        find=(r"[Ff]ailed: ",),
        example="Tests Passed: 5986, Failed: 2, Skipped: 631, Pending: 169, Inconclusive: 0",
    ),
    # a diff in a CI log is a check's demand for changes (a formatter's, a linter's, "git diff
    # --exit-code" after a generator ran): its header, then its hunks, to a blank line
    Entry(
        name="diff-output",
        family="diff",
        pattern=r"diff --git a/\S",
        record=True,
        example="diff --git a/src/wallet/rpcwallet.cpp b/src/wallet/rpcwallet.cpp",
    ),
    # diff -u's hunk, "@@ -1,2 +1,2 @@", under its "--- a.txt\t2026-..." and "+++ b.txt\t..." lead-in, to
    # the end of its window (not a record: with no blank line after it, the record is the noise too)
    Entry(
        name="diff-hunk",
        family="diff",
        pattern=r"@@ ",
        find=(r"@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@",),
        anywhere=True,
        example="@@ -3281,2 +3281,2 @@ static UniValue bumpfee(const JSONRPCRequest& request)",
    ),
    # a tool's count of its errors, then their list: "Dependabot encountered '1' error(s) during execution"
    Entry(
        name="errors-encountered",
        family="generic",
        find=(r"encountered '?[1-9]\d*'? error",),
        record=True,
        example="Dependabot encountered '1' error(s) during execution, please check the logs for more details.",
    ),
    # libyaml's parse errors, as Ruby's Psych, PyYAML and go-yaml word them: "(a.md): found character
    # that cannot start any token while scanning for the next token at line 5 column 1"
    Entry(
        name="yaml-error",
        family="yaml",
        find=(
            r"found character that cannot start any token",
            r"did not find expected ",
            r"mapping values are not allowed in this context",
            r"found undefined alias",
        ),
        example=(
            "(./tr-tr/clojure-tr.html.markdown): did not find expected ',' or ']' while parsing a flow sequence at"
            " line 5 column 7"
        ),
    ),
    # markdownlint's findings: "README.md: 750: MD034/no-bare-urls Bare URL used" (markdownlint-cli),
    # "README.md:750:5 MD034/no-bare-urls ..." (markdownlint-cli2)
    Entry(
        name="markdownlint",
        family="lint",
        pattern=r"\S+:\s?\d+(?::\d+)?:? MD0\d\d/",
        find=(r" MD0\d\d/",),
        anywhere=True,
        example=(
            "react/README.md: 29: MD012/no-multiple-blanks Multiple consecutive blank lines [Expected: 1; Actual: 2]"
        ),
    ),
    # Emacs's backtrace of an uncaught error in batch mode: "Debugger entered--Lisp error: (error ...)",
    # then its frames, the first "  signal(error (...))"
    Entry(
        name="elisp-error",
        family="elisp",
        pattern=r"(?:Debugger entered--Lisp error: |signal\([\w-]*error \()",
        example='Debugger entered--Lisp error: (error "No version of command-log-mode >= nil is available")',
    ),
    # R CMD check's failed examples: "Running examples in 'x-Ex.R' failed", the example's last lines
    # and R's "Error in f(x) : ..." to "Execution halted"
    Entry(
        name="r-check-failed",
        family="r",
        pattern=r"Running (?:examples|the tests) in .{1,300} failed",
        section=True,
        example="Running the tests in ‘tests/testthat.R’ failed.",
    ),
    Entry(
        name="assertion",
        family="generic",
        find=(r"AssertionError", r"Assertion failed", r"assert failed", r"assertion failed"),
        example="test/helpers.lua:156: assertion failed!",
    ),
)
