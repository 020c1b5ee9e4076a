from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.core.segment import LineLayout, Segmenter, WindowAssignment, line_layout
from streamfilter.core.tokens import token_table


def windows(text: bytes, n: int = 8, m: int = 1200, chunks: int = 1) -> list[list[int]]:
    """Group 1-based line numbers by window, feeding the lines in ``chunks`` blocks."""
    lines = text.split(b"\n")[:-1]
    seg = Segmenter(n, m)
    assigned: list[int] = []
    step = max(1, len(lines) // chunks)
    for i in range(0, len(lines), step):
        part = b"".join(line + b"\n" for line in lines[i : i + step])
        ends = np.cumsum([len(x) + 1 for x in lines[i : i + step]]).astype(np.int64)
        assigned += seg.feed(line_layout(part, ends)).windows.tolist()
    assigned += seg.flush().windows.tolist()
    assert len(assigned) == len(lines)
    groups: dict[int, list[int]] = {}
    for number, w in enumerate(assigned, 1):
        groups.setdefault(w, []).append(number)
    return list(groups.values())


def test_blank_line_ends_a_record_and_starts_the_next_window() -> None:
    text = b"a\nb\n\nc\nd\n"
    assert windows(text) == [[1, 2], [3, 4, 5]]


def test_blank_lines_inside_an_indented_record_stay_with_it() -> None:
    # B14: fields indented under a column-0 header, separated by blank lines
    text = b"ERROR report\n  field: 1\n\n  field: 2\n\n\n  Module x\n\nINFO next\n"
    assert windows(text) == [[1, 2, 3, 4, 5, 6, 7], [8, 9]]


def test_dense_stream_is_packed_by_lines_and_chars() -> None:
    text = b"".join(b"line %02d\n" % i for i in range(20))
    assert [len(w) for w in windows(text, n=8)] == [8, 8, 4]
    assert [len(w) for w in windows(text, n=100, m=21)] == [3] * 6 + [2]  # "line NN" is 7 characters


def test_python_traceback_stays_together_with_its_column0_lines() -> None:
    text = (
        b"Traceback (most recent call last):\n"
        b'  File "a.py", line 1, in <module>\n'
        b"    main()\n"
        b'  File "a.py", line 5, in main\n'
        b"    raise ValueError('x')\n"
        b"ValueError: x\n"
        b"\n"
        b"During handling of the above exception, another exception occurred:\n"
        b"\n"
        b"Traceback (most recent call last):\n"
        b'  File "b.py", line 2, in <module>\n'
        b"KeyError: 'y'\n"
    )
    assert windows(text, n=4) == [list(range(1, 13))]


def test_cargo_status_lines_are_not_continuations() -> None:
    text = b"".join(b"   Compiling crate%d v1.0.%d\n" % (i, i) for i in range(20))
    assert [len(w) for w in windows(text)] == [8, 8, 4]


def test_a_word_in_capitals_ending_at_column_12_is_no_status_line() -> None:
    """behave's ``      ASSERT FAILED: ...`` under its step ends its first word at column 12, as
    cargo's status words do: it was read as one (column 0), a record of its own, and a window kept
    for its score showed it without its scenario and step (helper-27). Cargo's are title case."""
    block = (
        b"  Scenario: coupon applies  # f.feature:453\n"
        b"    Then the total is 13.5  # s.py:9\n"
        b"      ASSERT FAILED: cart total 15 != expected 13.5\n"
    )
    assert windows(block * 2, n=3) == [[1, 2, 3], [4, 5, 6]]

    def continued(text: bytes) -> list[bool]:
        ends = np.cumsum([len(x) + 1 for x in text.split(b"\n")[:-1]]).astype(np.int64)
        seg = Segmenter(8, 1200)
        return [*seg.feed(line_layout(text, ends)).cont.tolist(), *seg.flush().cont.tolist()]

    assert continued(block) == [False, True, True]
    # cargo's status words stay column 0: not a continuation of the error above them
    assert continued(b"error: x\n   Compiling a v1\n   Doc-tests a\n    Finished dev\n") == [False] * 4


def test_indented_stream_respects_the_hard_cap() -> None:
    text = b"Exception in thread main\n" + b"".join(b"\tat f%d(X.java:1)\n" % i for i in range(100))
    sizes = [len(w) for w in windows(text, n=8)]
    assert max(sizes) == 32 and sum(sizes) == 101


def test_windows_do_not_depend_on_block_boundaries() -> None:
    text = (b"head\n  cont\n\n  more\nnext\n\n\nx\n" * 7) + b"".join(b"l%d\n" % i for i in range(30))
    one = windows(text, n=5)
    for chunks in (2, 3, 7, 50):
        assert windows(text, n=5, chunks=chunks) == one


def test_junit_assertion_message_and_its_frames_stay_with_the_exception() -> None:
    text = (
        b"Tests run: 3, Failures: 1\n"
        b"java.lang.AssertionError: expected:<a>\n"
        b"but was:\n"
        b" <null>\n"
        b"\tat retrofit2.ResponseTest.nullErrorThrows(ResponseTest.java:139)\n"
        b"\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
    )
    assert windows(text, n=3) == [[1, 2, 3, 4, 5, 6]]


def test_ruby_backtrace_frames_at_column_0_stay_with_the_error() -> None:
    text = (
        b"Running migrations\n"
        b"rails aborted!\n"
        b"NameError: undefined local variable or method `type_metadata'\n"
        b"Did you mean?  @type_metadata\n"
        b"/app/lib/active_record/type_metadata.rb:22:in `deduplicated'\n"
        b"/app/lib/active_record/railties/databases.rake:83:in `block (3 levels) in <top (required)>'\n"
        b"/app/bin/rails:4:in '<main>'\n"
        b"Tasks: TOP => db:migrate\n"
    )
    # the suggestion and the frames continue the NameError's window past the 3-line cap; the next line does not
    assert windows(text, n=3) == [[1, 2, 3, 4, 5, 6, 7], [8]]


def test_a_source_excerpt_with_its_line_number_at_column_0_stays_with_the_error() -> None:
    text = (
        b"error[E0425]: cannot find value `CURSOR` in this scope\n"
        b"  --> src/cursor.rs:70:26\n"
        b"   |\n"
        b"70 |     RasterizedGlyph { c: CURSOR, top: line_width }\n"
        b"   |                         ^^^^^^ did you mean `CUSOR`?\n"
        b"2059 |no gutter space, a table row\n"
    )
    # rustc's gutter: "70 |" is at column 0 only because the line number fills the margin
    assert windows(text, n=2) == [[1, 2, 3, 4, 5], [6]]


def test_a_pester_failure_keeps_its_expected_actual_and_frames() -> None:
    text = (
        b"    [+] adds 6ms (1ms|5ms)\n"
        b"[-] runs all files -> Expected and actual values differ!\n"
        b"Expected: '/tmp/dir/file1.Tests.ps1'\n"
        b"Actual  : 'file1.Tests.ps1'\n"
        b"at Verify-Equal, /src/Verify-Equal.ps1:16\n"
        b"at <ScriptBlock>, <No file>:1\n"
        b"Starting test discovery in 2 files.\n"
    )
    for chunks in (1, 2, 3, 7):  # a frame that starts a block is found as one inside a block
        assert windows(text, n=2, chunks=chunks) == [[1], [2, 3, 4, 5, 6], [7]], chunks


def test_indentation_is_counted_after_a_level_tag() -> None:
    text = (
        b"[info] - should resolve *** FAILED ***\n"
        b"[info]   java.lang.Exception: boom\n"
        b"[info]   at com.twitter.Scheduler.blocking(Scheduler.scala:189)\n"
        b"[info]   at com.twitter.Await.result(Awaitable.scala:152)\n"
        b"[info] Test run finished\n"
        b"[ERROR] Failures:\n"
        b"[ERROR]   FooTest.bar:12 expected:<1> but was:<2>\n"
    )
    assert windows(text, n=2) == [[1, 2, 3, 4], [5, 6, 7]]


def test_nose_captured_output_stays_with_its_failure_across_blank_lines() -> None:
    text = (
        b"AssertionError: \n"
        b"-------------------- >> begin captured stdout << ---------------------\n"
        b"\n"
        b"Traceback (most recent call last):\n"
        b'  File "align.py", line 18, in <module>\n'
        b"ImportError: No module named 'cv2'\n"
        b"\n"
        b"\n"
        b"--------------------- >> end captured stdout << ----------------------\n"
        b"\n"
        b"======================================================================\n"
    )
    assert windows(text, n=3) == [[1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11]]


TRACE_PIECES = [
    b"Traceback (most recent call last):\n",
    b'  File "x.py", line 3, in f\n',
    b"ValueError: bad\n",
    b"ValueErrors are many\n",
    b"my.pkg.IOError\xc3\xa9 odd\n",
    b"java.lang.IllegalStateException: boom\n",
    b"\tat com.example.Foo.bar(Foo.java:12)\n",
    b"Caused by: java.io.IOException: disk\n",
    b"... 12 more\n",
    b"Suppressed: x\n",
    b"goroutine 7 [running]:\n",
    b"github.com/a/b.(*Ledger).Refund(0x0, {0xc0001a2b40, 0x8})\n",
    b"\t/src/b/ledger.go:57 +0x3d\n",
    b"created by testing.(*T).Run in goroutine 1\n",
    b"but was:<2>\n",
    b"During handling of the above exception, another exception occurred:\n",
    b"The above exception was the direct cause of the following exception:\n",
    b"KeyboardInterrupt\n",
    b"SystemExit: 2\n",
    b"plain text error here\n",
    b"/app/models/user.rb:12:in `save'\n",
    b"Did you mean?  @name\n",
    b"-------------------- >> end captured logging << ---------------------\n",
    b"----------------------------------------------------------------------\n",
    b"[-] adds numbers 10ms\n",
    b"70 |     let x = CURSOR;\n",
    b"7 | no\n",
    b"12|no gutter space\n",
    b"Expected: 3\n",
    b"Actual  : 4\n",
    b"at <ScriptBlock>, /src/a.Tests.ps1:16\n",
    b"\n",
    b"    indented\n",
]


@given(st.lists(st.sampled_from(TRACE_PIECES), max_size=30))
@settings(max_examples=300, deadline=None)
def test_layout_with_token_table_equals_the_full_scan(pieces: list[bytes]) -> None:
    text = b"".join(pieces)
    ends = np.cumsum([len(p) for p in pieces]).astype(np.int64)
    full = line_layout(text, ends)
    quick = line_layout(text, ends, token_table(text, ends))
    assert full.join.tolist() == quick.join.tolist()
    assert full.first.tolist() == quick.first.tolist()


def _layout(rows: list[tuple[int, int, int]]) -> LineLayout:
    """A layout from (indent, chars, join) rows; indent -1 is a blank line."""
    indent = np.asarray([max(r[0], 0) for r in rows], dtype=np.int64)
    return LineLayout(
        blank=np.asarray([r[0] < 0 for r in rows], dtype=bool),
        indent=indent,
        chars=np.asarray([r[1] for r in rows], dtype=np.int64),
        join=np.asarray([r[2] for r in rows], dtype=np.int8),
        first=indent,
    )


ROWS = st.tuples(st.sampled_from([-1, -1, 0, 0, 0, 1, 2, 4]), st.integers(1, 9), st.sampled_from([0, 0, 0, 1, 2]))


@given(
    st.lists(ROWS, max_size=120),
    st.lists(st.integers(0, 120), max_size=12),
    st.sampled_from([(3, 10, 5), (8, 1200, 32), (2, 4, 2), (4, 20, 12)]),
    st.lists(st.integers(0, 120), max_size=2),
    st.booleans(),
)
@settings(max_examples=1500, deadline=None)
def test_numpy_segmentation_equals_the_line_loop(
    rows: list[tuple[int, int, int]], cuts: list[int], caps: tuple[int, int, int], pauses: list[int], column0: bool
) -> None:
    # the numpy path takes over once a window is open and no line is indented less than its record
    rows = [(0, 3, 0), *rows] if column0 else rows
    n, m, hard = caps
    fast, loop = Segmenter(n, m, hard), Segmenter(n, m, hard)
    bounds = sorted({0, int(column0), len(rows), *(c for c in cuts if c <= len(rows))})
    got: list[WindowAssignment] = []
    want: list[WindowAssignment] = []
    for a, b in itertools.pairwise(bounds):
        layout = _layout(rows[a:b])
        got.append(fast.feed(layout))
        want.append(loop._feed_lines(layout))
        if a in pauses:  # a live stream went quiet here
            got.append(fast.close())
            want.append(loop.close())
    got.append(fast.flush())
    want.append(loop.flush())
    for g, w in zip(got, want, strict=True):
        assert (g.first_line, g.closed) == (w.first_line, w.closed)
        assert g.windows.tolist() == w.windows.tolist()
        assert g.records.tolist() == w.records.tolist()
        assert g.cont.tolist() == w.cont.tolist()


def test_sqlalchemys_statement_and_link_stay_with_its_exception() -> None:
    text = (
        b"Traceback (most recent call last):\n"
        b'  File "/w/sqlalchemy/engine/default.py", line 1192, in do_execute\n'
        b"    cursor.execute(statement, parameters)\n"
        b"sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) no such table: orders\n"
        b"[SQL: ALTER TABLE orders ADD COLUMN total NUMERIC(10, 2)]\n"
        b"(Background on this error at: https://sqlalche.me/e/21/e3q8)\n"
        b"+ docker logs ci-postgres-1\n"
    )
    assert windows(text, n=3) == [[1, 2, 3, 4, 5, 6], [7]]
