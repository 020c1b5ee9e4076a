"""A window kept for its BM25 score alone keeps the lines in it that hold a query term, each with
the continuation lines after it; a window with a failure signature keeps all its lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.filter import FilterConfig, Run, StreamFilter

NOISE = b"".join(b"compiling unit %d of 300 in module core\n" % i for i in range(300))
# one dense window: the query's term in its 4th line, a continuation under it
WINDOW = (
    b"reading cache index\n"
    b"resolving dependency graph\n"
    b"checking lockfile\n"
    b"upload timeout while sending artifact bundle\n"
    b"    retry 1 of 3 scheduled\n"
    b"writing summary report\n"
)


def runs_of(data: bytes, chunk: int = 1 << 20, query: str = "timeout") -> list[Run]:
    sf = StreamFilter(FilterConfig(query=query, tail_lines=0, found_tail_lines=0))
    runs: list[Run] = []
    for i in range(0, len(data), chunk):
        runs += sf.feed(data[i : i + chunk])
    return runs + sf.flush()


def kept(runs: list[Run]) -> bytes:
    return b"".join(r.data for r in runs if r.decision == "keep")


def test_a_scored_window_keeps_its_term_line_and_the_continuation_after_it() -> None:
    runs = runs_of(NOISE + b"\n" + WINDOW + b"\n" + NOISE)
    assert kept(runs) == b"upload timeout while sending artifact bundle\n    retry 1 of 3 scheduled\n"
    # the window's other lines are in the DROP runs around it, counted, not lost
    assert sum(r.lines for r in runs) == 300 + 1 + 6 + 1 + 300
    drops = [r for r in runs if r.decision == "drop"]
    assert drops[0].last_line == 300 + 1 + 3 and drops[1].first_line == 300 + 1 + 6


def test_a_window_with_a_failure_signature_keeps_all_its_lines() -> None:
    failing = WINDOW.replace(b"checking lockfile\n", b"Traceback (most recent call last):\n")
    out = kept(runs_of(NOISE + b"\n" + failing + b"\n" + NOISE))
    assert failing.replace(b"writing summary report\n", b"") in out


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(
            [
                b"upload timeout in step\n",
                b"    at frame one\n",
                b"plain progress line\n",
                b"\n",
                b"  indented note with timeout\n",
                b"another plain line here\n",
            ]
        ),
        min_size=1,
        max_size=300,
    ),
    chunk=st.integers(min_value=1, max_value=97),
)
def test_scored_lines_do_not_depend_on_chunking(lines: list[bytes], chunk: int) -> None:
    data = b"".join(lines)
    whole = runs_of(data)
    assert runs_of(data, chunk=chunk) == whole
    assert b"".join(r.data for r in whole if r.decision == "keep") == kept(whole)
    assert sum(r.lines for r in whole) == len(lines)
