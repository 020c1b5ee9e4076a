"""With a baseline too, nothing is lost and the same bytes give the same answer however they are
chunked; and the baseline built from a green run does not depend on how its bytes were chunked."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamfilter.core.baseline import MAX_SHAPES, Baseline, ShapeCollector
from streamfilter.core.filter import StreamFilter
from streamfilter.core.records import Run
from tests.property.test_filter_properties import CONFIGS, FRAGMENTS, input_lines, streams

cutting = st.lists(st.integers(min_value=0, max_value=10_000), max_size=20)


def collected(data: bytes, cuts: list[int], max_shapes: int = MAX_SHAPES) -> Baseline:
    """The baseline a filter fed ``data`` in pieces at ``cuts`` collects (at most ``max_shapes``)."""
    sf = StreamFilter()
    sf.collector = ShapeCollector(max_shapes)
    prev = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        sf.feed(data[prev:cut])
        prev = cut
    sf.flush()
    return sf.collector.baseline()


def run_filter(data: bytes, cuts: list[int], which: int, baseline: Baseline, explain: bool = False) -> list[Run]:
    sf = StreamFilter(replace(CONFIGS[which], explain=explain), baseline=baseline)
    runs: list[Run] = []
    prev = 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        runs += sf.feed(data[prev:cut])
        prev = cut
    return runs + sf.feed(data[prev:]) + sf.flush()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a cap of 8 shapes: a full set, whose hashes past its limit are unknown, is exercised too
@given(streams, streams, cutting, st.sampled_from(range(len(CONFIGS))), st.booleans(), st.sampled_from([8, MAX_SHAPES]))
def test_any_chunking_gives_the_same_runs_with_a_baseline(
    green: bytes, data: bytes, cuts: list[int], which: int, explain: bool, cap: int
) -> None:
    baseline = collected(green, [], cap)
    whole = run_filter(data, [], which, baseline, explain)
    assert run_filter(data, cuts, which, baseline, explain) == whole


# the fragments a green run does not print: a failing run is the green one with some of them in
# between, so most of its lines are seen and its failures, with what follows them, are novel
FAILURES = [f for f in FRAGMENTS if any(w in f for w in (b"ERROR", b"Traceback", b"Error", b"Caused by", b"ERR!"))]
pieces = st.lists(st.sampled_from(FRAGMENTS), max_size=80)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces, cutting, st.sampled_from(range(len(CONFIGS))), st.booleans())
def test_any_chunking_gives_the_same_runs_when_the_green_run_lacks_the_failures(
    parts: list[bytes], cuts: list[int], which: int, explain: bool
) -> None:
    data = b"".join(parts)
    baseline = collected(b"".join(p for p in parts if p not in FAILURES), [])
    whole = run_filter(data, [], which, baseline, explain)
    assert run_filter(data, cuts, which, baseline, explain) == whole
    # the lines a hit keeps before it and the hits stay: what a signature protects, kept without
    # a baseline, is kept with one
    plain = StreamFilter(replace(CONFIGS[which], explain=True))
    kept_plain = {
        n
        for r in plain.feed(data) + plain.flush()
        if r.decision == "keep"
        for n in range(r.first_line, r.last_line + 1)
    }
    kept = {n for r in whole if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    hits = {t.hit_line for r in run_filter(data, [], which, baseline, True) for t in r.traces if t.hit_line}
    assert hits & kept_plain <= kept


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, streams, cutting, st.sampled_from(range(len(CONFIGS))))
@example(  # (a green run's line redrawn by a "\r": its last frame is not a line the green run printed)
    b"lone cr at end\rINFO starting job 42\n", b"x" * 300 + b"\n" + b"INFO starting job 42\n" * 3, [], 0
)
def test_runs_tile_the_input_with_a_baseline(green: bytes, data: bytes, cuts: list[int], which: int) -> None:
    runs = run_filter(data, cuts, which, collected(green, []))
    expect_line, expect_byte = 1, 0
    for run in runs:
        assert run.first_line == expect_line and run.start_byte == expect_byte
        if run.decision == "keep":
            assert run.data == data[run.start_byte : run.end_byte]
        elif not run.rest:
            # how many of its lines the green run printed, unless none (no "0 in the last green
            # run") or the summary is cut to its length
            # (lines end at "\n" only, as the filter's: a "\r" inside a line is a redraw, not a line end)
            printed = set(green.split(b"\n"))
            seen = any(line in printed for line in data[run.start_byte : run.end_byte].removesuffix(b"\n").split(b"\n"))
            said = "in the last green run" in run.summary
            assert said or not seen or len(run.summary) >= CONFIGS[which].summary_chars - 30
        expect_line, expect_byte = run.last_line + 1, run.end_byte
    assert (expect_line, expect_byte) == (input_lines(data) + 1, len(data))
    for a, b in itertools.pairwise(runs):
        assert a.decision != b.decision or (a.decision == "keep" and a.n_bytes >= CONFIGS[which].max_keep_event_bytes)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, cutting)
def test_the_baseline_a_run_collects_does_not_depend_on_chunking(green: bytes, cuts: list[int]) -> None:
    baseline = collected(green, cuts, 8)
    assert baseline == collected(green, [], 8)
    assert baseline.lines == input_lines(green)
    assert baseline.size <= 8


def test_a_green_run_of_the_same_bytes_marks_no_line_novel_and_keeps_only_what_signatures_keep() -> None:
    noise = b"".join(b"INFO step %d of the error-free build is ok\n" % i for i in range(100))
    data = noise + b"".join(FRAGMENTS) + noise
    baseline = collected(data, [])
    runs = run_filter(data, list(range(0, len(data), 7)), 2, baseline, explain=True)
    assert all(t.novel == 0 for r in runs for t in r.traces)
    reasons = {t.reason.partition(":")[0] for r in runs for t in r.traces if r.decision == "keep"}
    assert reasons <= {"protected", "context", "tail", "short-gap"}
    without = run_filter(data, [], 2, Baseline(b"", 0, 0))  # a set that can tell nothing
    kept = [sum(r.n_bytes for r in rs if r.decision == "keep") for rs in (runs, without)]
    assert kept[0] < kept[1]


# a line the green run printed with other numbers in it: where it printed a GREEN line, the failing
# run prints its RED one, of the same shape
GREEN = [b"schema check: 0 mismatch(es)\n", b"# fail 0\n", b"running 30 tests\n"]
RED = [b"schema check: 3 mismatch(es)\n", b"# fail 1\n", b"running 0 tests\n"]
counted = st.lists(st.sampled_from(FRAGMENTS + GREEN), max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counted, st.lists(st.booleans(), min_size=60, max_size=60), cutting, st.sampled_from(range(len(CONFIGS))))
def test_all_in_the_last_green_run_is_said_only_of_lines_it_printed(
    parts: list[bytes], changed: list[bool], cuts: list[int], which: int
) -> None:
    green = b"".join(parts)
    data = b"".join(RED[GREEN.index(p)] if p in GREEN and c else p for p, c in zip(parts, changed, strict=False))
    printed = set(green.split(b"\n"))
    for run in run_filter(data, cuts, which, collected(green, [])):
        if run.decision == "drop" and "all in the last green run" in run.summary:
            assert set(data[run.start_byte : run.end_byte].removesuffix(b"\n").split(b"\n")) <= printed
