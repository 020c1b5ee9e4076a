"""Novelty against a baseline: the bounded shape set, what it changes in the filter's decisions,
and the baselines stored on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from streamfilter.core.baseline import MAX_SHAPES, Baseline, Novelty, ShapeCollector, line_hashes, text_hashes
from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.lines import LineSplitter
from streamfilter.core.records import Run
from streamfilter.core.summarize import event_text
from streamfilter.live.baselines import MAGIC, MAX_FILE_BYTES, BaselineStore, baseline_of_files, read_baseline


def baseline_of(data: bytes, max_line_bytes: int = 1 << 20) -> Baseline:
    collector = ShapeCollector()
    splitter = LineSplitter()
    for block in (splitter.feed(data), splitter.flush()):
        if block is not None:
            collector.add_block(block, max_line_bytes)
    return collector.baseline()


def filtered(data: bytes, baseline: Baseline | None, config: FilterConfig | None = None) -> list[Run]:
    sf = StreamFilter(config or FilterConfig(), baseline=baseline)
    return sf.feed(data) + sf.flush()


def kept_text(runs: list[Run]) -> bytes:
    return b"".join(r.data for r in runs if r.decision == "keep")


# -- the shape set ---------------------------------------------------------------------------------


def test_line_hashes_hash_each_lines_shape() -> None:
    shapes = event_text(b"took 12 ms\ntook 345 ms\nother\nlast")
    hashes = line_hashes(shapes, 4)
    assert hashes.dtype == np.uint32 and hashes.shape == (4,)
    assert hashes[0] == hashes[1] != hashes[2]  # numbers are masked


def u32(*values: int) -> npt.NDArray[np.uint32]:
    return np.asarray(values, dtype=np.uint32)


def u64(*values: int) -> npt.NDArray[np.uint64]:
    return np.asarray(values, dtype=np.uint64)


def test_text_hashes_tell_lines_that_share_a_shape_apart() -> None:
    data = b"schema check: 0 mismatch(es)\nschema check: 3 mismatch(es)\nschema check: 0 mismatch(es)"
    texts = text_hashes(data, 3)
    assert texts.dtype == np.uint64 and texts[0] == texts[2] != texts[1]
    shapes = line_hashes(event_text(data), 3)
    assert shapes[0] == shapes[1] == shapes[2]


def test_lookup_tells_seen_novel_and_unknown() -> None:
    collector = ShapeCollector(max_shapes=2)
    collector.add(u32(50, 10, 30, 10), u64(5, 1, 3, 1))
    baseline = collector.baseline()
    assert np.frombuffer(baseline.hashes, dtype="<u4").tolist() == [10, 30]  # the smallest two
    assert np.frombuffer(baseline.texts, dtype="<u8").tolist() == [1, 3]
    assert baseline.limit == 30 and baseline.lines == 4
    # texts 1 and 3 were printed; 7 was not, with a shape printed (changed) or not (novel)
    seen, novel = baseline.lookup(u32(10, 20, 30, 50, 10), u64(1, 7, 3, 7, 7))
    assert seen.tolist() == [True, False, True, False, False]
    assert novel.tolist() == [False, True, False, False, False]  # 50 is past the limit: unknown


def test_the_set_is_bounded_and_does_not_depend_on_the_order_lines_come_in() -> None:
    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 1 << 32, size=5 * MAX_SHAPES, dtype=np.uint32)
    one, other = ShapeCollector(), ShapeCollector()
    for part in np.array_split(hashes, 37):
        one.add(part, part.astype(np.uint64) * np.uint64(3))
    for part in np.array_split(rng.permutation(hashes), 5):
        other.add(part, part.astype(np.uint64) * np.uint64(3))
    assert one.baseline() == other.baseline()
    baseline = one.baseline()
    assert baseline.size == MAX_SHAPES and len(baseline.hashes) == 4 * MAX_SHAPES
    assert len(baseline.texts) == 8 * MAX_SHAPES
    assert baseline.limit == int(np.sort(np.unique(hashes))[MAX_SHAPES - 1])
    assert baseline.sampled  # (a line not among its texts may have been printed)
    small = ShapeCollector()
    small.add(hashes[:100], hashes[:100].astype(np.uint64))
    assert not small.baseline().sampled


def test_a_baseline_from_a_file_is_the_one_the_filter_collects(tmp_path: Path) -> None:
    data = b"".join(b"step %d of %s took %d ms\n" % (i, b"abcdefg"[i % 7 : i % 7 + 1], i * 7) for i in range(3000))
    path = tmp_path / "good.log"
    path.write_bytes(data + b"no line end")
    sf = StreamFilter()
    sf.collector = ShapeCollector()
    for start in range(0, len(data), 4096):  # the filter in small chunks, the file in 1 MiB ones
        sf.feed(data[start : start + 4096])
    sf.feed(b"no line end")
    sf.flush()
    assert baseline_of_files([str(path)], FilterConfig().max_line_bytes) == sf.collector.baseline()


# -- what novelty changes -------------------------------------------------------------------------

GREEN = b"".join(b"test_case_%02d ... ok\n" % i for i in range(40)) + b"Ran 40 tests\nOK\n"


def test_without_a_baseline_nothing_changes_and_an_empty_run_marks_everything_novel() -> None:
    red = GREEN.replace(b"test_case_07 ... ok", b"test_case_07 ... exploded")
    assert filtered(red, None) == filtered(red, None, FilterConfig())
    runs = filtered(red, baseline_of(b""), FilterConfig(explain=True))
    assert all(t.novel is not None for r in runs for t in r.traces)


def test_the_tail_keeps_only_what_the_green_run_did_not_print_and_the_last_lines() -> None:
    red = GREEN.replace(b"Ran 40 tests\nOK\n", b"test_case_40 ... the disk is full\nRan 41 tests\nOK\n")
    without = kept_text(filtered(red, None))
    with_ = kept_text(filtered(red, baseline_of(GREEN)))
    assert b"test_case_39 ... ok" in without and b"test_case_39 ... ok" not in with_
    assert b"the disk is full" in with_ and with_.endswith(b"Ran 41 tests\nOK\n")


def test_a_novel_line_anywhere_in_the_tails_reach_is_kept_once_a_failure_was_found() -> None:
    green = b"".join(b"step %d done\n" % i for i in range(60))
    # a known failure (the tail shrinks to --found-tail) and, 20 lines before the end, a line no
    # signature knows that the green run never printed
    red = green[: green.index(b"step 40 ")] + b"quota exceeded for bucket builds\n" + green[green.index(b"step 40 ") :]
    red += b'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n'
    assert b"quota exceeded" not in kept_text(filtered(red, None, FilterConfig(prior=False)))
    assert b"quota exceeded" in kept_text(filtered(red, baseline_of(green), FilterConfig(prior=False)))


def test_a_window_all_of_whose_lines_were_seen_is_not_kept_for_its_score() -> None:
    green = b"".join(b"checking error handling of module %d ... fine\n" % i for i in range(30))
    green += b"".join(b"copying asset %d\n" % i for i in range(200))
    config = FilterConfig(tail_lines=0, explain=True, prior=False)
    without = filtered(green, None, config)
    assert b"error handling" in kept_text(without)
    with_ = filtered(green, baseline_of(green), config)
    assert b"error handling" not in kept_text(with_)
    reasons = {t.reason for r in with_ for t in r.traces}
    assert "seen" in reasons and "score" not in reasons


def test_lines_seen_in_a_signature_window_go_but_the_signatures_lines_stay() -> None:
    green = b"".join(b"test_%02d PASSED\n" % i for i in range(30))
    red = green.replace(b"test_12 PASSED\n", b"test_12 FAILED\n    assert 1 == 2\n")
    config = FilterConfig(tail_lines=0, prior=False)
    without = kept_text(filtered(red, None, config))
    with_ = kept_text(filtered(red, baseline_of(green), config))
    assert b"test_09 PASSED" in without and b"test_09 PASSED" not in with_
    # the failure line, its context line before it and its continuation line
    assert b"test_11 PASSED\ntest_12 FAILED\n    assert 1 == 2\n" in with_


def test_seen_lines_after_a_failure_go_but_the_failure_and_the_line_before_it_stay() -> None:
    green = b"".join(
        b"test_%02d PASSED\n    setup took %d ms\n    teardown took %d ms\n" % (i, i, i + 1) for i in range(30)
    )
    red = green.replace(b"test_12 PASSED\n", b"test_12 FAILED\n    assert 1 == 2\n")
    config = FilterConfig(tail_lines=0, prior=False, explain=True)
    # without a baseline the failure keeps its record's continuation lines, novel or not
    without = kept_text(filtered(red, None, config))
    assert b"test_12 FAILED\n    assert 1 == 2\n    setup took 12 ms\n    teardown took 13 ms\n" in without
    runs = filtered(red, baseline_of(green), config)
    # with one, those the green run printed too are summarized; the failure, its novel line and
    # the context line before it (what ran right before the failure) stay
    assert kept_text(runs) == b"    teardown took 12 ms\ntest_12 FAILED\n    assert 1 == 2\n"
    after = [t for r in runs if r.decision == "drop" for t in r.traces if t.first_line == 39]
    assert [t.reason for t in after] == ["seen-after-hit"]


def test_a_summary_of_lines_all_in_the_green_run_names_no_shape() -> None:
    red = GREEN.replace(b"test_case_20 ... ok", b"test_case_20 ... FAILED")
    runs = filtered(red, baseline_of(GREEN), FilterConfig(tail_lines=0, prior=False))
    drops = [r.summary for r in runs if r.decision == "drop"]
    assert drops[0] == "[streamfilter: dropped lines 1-19 (19 lines, 380 B; all in the last green run)]"
    # a run with lines the green run never printed (more than a lone one, which is kept) names
    # its shapes as without a baseline
    partly = GREEN
    for i in range(3, 11, 2):  # (four apart: more blocks of novel lines than a lone one's)
        partly = partly.replace(b"test_case_%02d ... ok" % i, b"test_case_%02d ... slow" % i)
    partly = partly.replace(b"test_case_30 ... ok", b"test_case_30 ... FAILED")
    runs = filtered(partly, baseline_of(GREEN), FilterConfig(tail_lines=0))
    summary = next(r.summary for r in runs if r.decision == "drop")
    assert summary.endswith("; 25 in the last green run): 29× test_case_<*> ... {ok ×25, slow ×4 @L4}]")


@pytest.mark.parametrize(
    ("green_line", "red_line"),
    [
        (b"schema check: 0 mismatch(es)", b"schema check: 3 mismatch(es)"),
        (b"running 30 tests", b"running 0 tests"),
        (b"test result: ok. 30 passed; 0 filtered out", b"test result: ok. 0 passed; 30 filtered out"),
        (b"# fail 0", b"# fail 1"),
    ],
)
def test_a_line_that_differs_from_the_green_runs_only_in_its_numbers_is_not_seen(
    green_line: bytes, red_line: bytes
) -> None:
    green = GREEN + b"".join(b"cleanup step %d\n" % i for i in range(10))
    red = green.replace(b"Ran 40 tests\n", b"Ran 40 tests\n" + red_line + b"\n")
    green = green.replace(b"Ran 40 tests\n", b"Ran 40 tests\n" + green_line + b"\n")
    runs = filtered(red, baseline_of(green), FilterConfig(explain=True, prior=False))
    assert red_line + b"\n" in kept_text(runs)  # in the tail's reach: kept, as a novel line is
    # a run of lines that does not hold it says "all" of them; one that holds it would not
    for r in runs:
        if r.decision == "drop" and "all in the last green run" in r.summary:
            assert red_line not in r.data
    # without the tail, it is dropped, and its summary does not count it as printed by the green run
    runs = filtered(red, baseline_of(green), FilterConfig(tail_lines=0, prior=False))
    holding = next(r for r in runs if r.first_line <= 42 <= r.last_line)
    assert holding.decision == "keep" or "all in the last green run" not in holding.summary


def test_a_lone_novel_line_among_seen_ones_is_kept() -> None:
    green = b"".join(b"worker %d: request %d served from cache\n" % (i % 4, i) for i in range(700))
    lone = b"connection pool exhausted while refreshing token cache\n"
    red = green.replace(b"worker 2: request 350 served", lone + b"worker 2: request 350 served")
    red += b"Traceback (most recent call last):\nValueError: token expired\n"
    config = FilterConfig(explain=True, prior=False)
    assert lone not in kept_text(filtered(red, None, config))
    runs = filtered(red, baseline_of(green), config)
    assert lone in kept_text(runs)
    assert [t.reason for r in runs if lone in r.data for t in r.traces] == ["novel-line"]
    # a failure's header and its details, one block of novel lines, are kept whole
    block = b"request 350 FAILED\n    want: 200\n    got:  503\n    upstream: cache-7\n    retry: none\n"
    red = green.replace(b"worker 2: request 350 served", block + b"worker 2: request 350 served")
    red += b"Traceback (most recent call last):\nValueError: token expired\n"
    assert block in kept_text(filtered(red, baseline_of(green), config))
    # a longer stretch of novel lines is not lone: the other rules decide it (here, it is dropped)
    many = b"".join(b"cache miss for key %s\n" % k.encode() for k in "abcdefghij")
    red = green.replace(b"worker 2: request 350 served", many + b"worker 2: request 350 served")
    assert b"cache miss" not in kept_text(filtered(red, baseline_of(green), config))
    # and so are more blocks than LONE_MAX near each other
    apart = b"".join(b"cache miss for key %s\nworker 2: request 350 served from cache\n" % k.encode() for k in "abcd")
    red = green.replace(b"worker 2: request 350 served from cache\n", apart)
    assert b"cache miss" not in kept_text(filtered(red, baseline_of(green), config))


def test_an_identical_line_with_a_query_term_is_seen() -> None:
    green = b"".join(b"checking error handling of module %d ... fine\n" % i for i in range(30))
    runs = filtered(green, baseline_of(green), FilterConfig(tail_lines=0, explain=True, prior=False))
    assert b"error handling" not in kept_text(runs)
    assert all("all in the last green run" in r.summary for r in runs if r.decision == "drop")


def test_explain_counts_novel_lines_and_summaries_count_seen_ones() -> None:
    red = GREEN.replace(b"Ran 40 tests\nOK\n", b"test_case_40 ... the disk is full\nRan 41 tests\nFAILED\n")
    runs = filtered(red, baseline_of(GREEN), FilterConfig(explain=True))
    traces = [t for r in runs for t in r.traces]
    assert sum(t.novel or 0 for t in traces) == 2  # the new test's line and FAILED (41 is masked)
    drops = [r for r in runs if r.decision == "drop"]
    assert drops and all("in the last green run" in r.summary for r in drops)
    assert "all in the last green run" in drops[0].summary


def test_a_window_with_a_novel_line_near_the_end_or_before_a_verdict_weighs_more() -> None:
    collector = ShapeCollector()
    collector.add(u32(1, 2), u64(1, 2))
    novelty = Novelty(collector.baseline())
    # 100 lines: novel (hash 9) at 10, 50 and 97, seen (1) elsewhere; windows of 10 lines
    hashes = np.ones(100, dtype=np.uint32)
    hashes[[10, 50, 97]] = 9
    novelty.add_lines(hashes, hashes.astype(np.uint64))
    novelty.add_windows(0, np.arange(0, 100, 10, dtype=np.int64), 100)
    windows = np.arange(10, dtype=np.int64)
    terms = np.ones(10, dtype=bool)
    scores = np.full(10, 1.5)
    cuts = np.full(10, 2.0)  # below the cut: kept only weighed up
    verdicts = np.asarray([60], dtype=np.int64)  # an exit verdict 10 lines after the line at 50
    kept, weighed = novelty.scored(windows, terms, scores, cuts, 100, verdicts, 25)
    assert kept.tolist() == weighed.tolist() == [i in (5, 9) for i in range(10)]
    kept, _ = novelty.scored(windows, terms, scores, cuts, None, verdicts, 5)  # the stream goes on
    assert kept.tolist() == [False] * 10
    # above the cut: kept but for the windows every line of which the baseline saw
    kept, weighed = novelty.scored(windows, terms, np.full(10, 3.0), cuts, 100, verdicts, 25)
    assert kept.tolist() == [i in (1, 5, 9) for i in range(10)] and not weighed.any()
    assert novelty.novel_lines_of(windows).tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert novelty.seen(95, 5).tolist() == [True, True, False, True, True]


# -- stored baselines -------------------------------------------------------------------------------


def test_a_stored_baseline_reads_back(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "baselines")
    baseline = baseline_of(GREEN)
    path = store.save("python -m unittest", "/src", baseline)
    assert store.load("python -m unittest", "/src") == baseline
    assert store.load("python -m unittest", "/elsewhere") is None
    assert store.load("python -m pytest", "/src") is None
    lines = path.read_bytes().split(b"\n", 2)
    assert lines[0] + b"\n" == MAGIC
    assert json.loads(lines[1]) == {
        "command": "python -m unittest",
        "cwd": "/src",
        "lines": 42,
        "limit": (1 << 32) - 1,
        "shapes": baseline.size,
        "texts": 42,
    }


def test_baselines_are_bounded_on_disk(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "baselines", cap=5)
    full = ShapeCollector()
    hashes = np.arange(3 * MAX_SHAPES, dtype=np.uint32) * np.uint32(1021)
    full.add(hashes, hashes.astype(np.uint64) << np.uint64(20))
    big = full.baseline()
    for i in range(12):
        store.save(f"make test-{i} " + "x" * 10_000, "/src", big)  # a long command is cut in the header
        os.utime(store.path(f"make test-{i} " + "x" * 10_000, "/src"), ns=(i, i))  # (mtimes in order)
    store.load("make test-8 " + "x" * 10_000, "/src")  # used: evicted last
    store.save("make test-12", "/src", big)
    files = sorted(store.folder.iterdir())
    assert len(files) == 5
    assert store.path("make test-8 " + "x" * 10_000, "/src") in files
    assert all(f.stat().st_size <= MAX_FILE_BYTES for f in files)


def test_a_baseline_of_the_first_version_is_dropped_and_the_next_green_run_replaces_it(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    path = store.save("make", "/src", baseline_of(GREEN))
    shapes_only = baseline_of(GREEN).hashes
    header = json.dumps({"command": "make", "cwd": "/src", "lines": 42, "limit": (1 << 32) - 1, "shapes": 2})
    path.write_bytes(b"streamfilter-baseline 1\n" + header.encode() + b"\n" + shapes_only)
    with pytest.raises(ValueError, match="another version"):
        read_baseline(path.read_bytes())
    assert store.load("make", "/src") is None
    store.save("make", "/src", baseline_of(GREEN))
    assert store.load("make", "/src") == baseline_of(GREEN)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"not a baseline\n" + data,
        lambda data: data[:-1],
        lambda data: data[: len(MAGIC)] + b'{"shapes": 2}\n' + data.split(b"\n", 2)[2],
        lambda data: data.split(b"\n", 2)[0] + b"\n" + data.split(b"\n", 2)[1] + b"\n" + data.split(b"\n", 2)[2][::-1],
    ],
)
def test_a_damaged_baseline_is_ignored(tmp_path: Path, damage: object) -> None:
    store = BaselineStore(tmp_path)
    path = store.save("make", "/src", baseline_of(GREEN))
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(ValueError):
        read_baseline(path.read_bytes())
    assert store.load("make", "/src") is None
