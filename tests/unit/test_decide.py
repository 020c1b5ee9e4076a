"""The cut (Otsu 1979) and the line ranges protected hits keep."""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.core.decide import CutTracker, RepeatGate, otsu_threshold, protected_ranges


def test_otsu_separates_two_clusters() -> None:
    values = np.concatenate((np.full(90, 1.0), np.full(10, 9.0)))
    cut = otsu_threshold(values)
    assert 1.0 < cut <= 9.0
    assert (values >= cut).sum() == 10


def test_otsu_of_equal_values_keeps_them_all() -> None:
    assert otsu_threshold(np.full(5, 2.5)) == 2.5


def test_otsu_matches_a_brute_force_search() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate((rng.normal(2, 0.5, 300), rng.normal(7, 1.0, 40)))
    cut = otsu_threshold(values, bins=64)
    # brute force over the same histogram edges: maximize between-class variance
    hist, edges = np.histogram(values, bins=64)
    centers = (edges[:-1] + edges[1:]) / 2
    best, best_k = -1.0, 0
    for k in range(1, 64):
        w0, w1 = hist[:k].sum(), hist[k:].sum()
        if w0 == 0 or w1 == 0:
            continue
        m0 = (hist[:k] * centers[:k]).sum() / w0
        m1 = (hist[k:] * centers[k:]).sum() / w1
        var = w0 * w1 * (m0 - m1) ** 2
        if var > best:
            best, best_k = var, k
    assert cut == edges[best_k]


def test_cut_per_group_uses_the_floor_until_enough_samples() -> None:
    tracker = CutTracker(min_score=0.5, group_windows=4, history=16, min_samples=4, wait_groups=0)
    tracker.add(np.asarray([1.0, 2.0, 0.0, 1.0]), np.asarray([True, False, False, False]))
    assert tracker.known_groups == 0  # a group's cut waits for the next group
    tracker.add(np.asarray([1.0, 1.0]), np.asarray([False, False]))
    assert tracker.known_groups == 0
    tracker.add(np.asarray([1.0, 1.0]), np.asarray([False, False]))
    assert tracker.known_groups == 1
    assert tracker.cuts(np.asarray([0, 3])).tolist() == [0.5, 0.5]  # one term window: floor only
    tracker.add(np.asarray([1.0, 1.1, 9.0, 9.5]), np.asarray([True, True, True, True]))
    assert tracker.known_groups == 2
    assert 1.1 < tracker.cuts(np.asarray([4]))[0] <= 9.0  # group 1 with group 2's windows: 5 samples
    tracker.flush()
    assert tracker.known_groups == 3 and 1.1 < tracker.cuts(np.asarray([11]))[0] <= 9.0


def test_too_few_samples_wait_for_more_groups_then_fall_back_to_the_floor() -> None:
    tracker = CutTracker(min_score=0.0, group_windows=4, history=64, min_samples=4, wait_groups=2)
    tracker.add(np.asarray([3.0, 0.0, 0.0, 0.0]), np.asarray([True, False, False, False]))
    tracker.add(np.zeros(4), np.zeros(4, dtype=bool))  # the next group, no term: group 0 waits
    assert tracker.known_groups == 0
    tracker.add(np.zeros(4), np.zeros(4, dtype=bool))  # waited: the floor, for the groups before this
    assert tracker.known_groups == 2 and tracker.cuts(np.asarray([0, 7])).tolist() == [0.0, 0.0]
    # the same start, but more term windows come within the wait: the lone 3.0 is cut by them
    tracker = CutTracker(min_score=0.0, group_windows=4, history=64, min_samples=4, wait_groups=2)
    tracker.add(np.asarray([3.0, 0.0, 0.0, 0.0]), np.asarray([True, False, False, False]))
    tracker.add(np.zeros(4), np.zeros(4, dtype=bool))
    tracker.add(np.asarray([9.0, 8.5, 9.5, 2.5]), np.asarray([True, True, True, True]))
    assert tracker.known_groups == 2 and 3.0 < tracker.cuts(np.asarray([0]))[0] <= 8.5


def test_a_sparse_first_group_is_cut_with_the_windows_after_it() -> None:
    # the first group alone has too few term windows for a cut; with the next group it has one
    tracker = CutTracker(min_score=0.0, group_windows=4, history=64, min_samples=4)
    tracker.add(np.asarray([3.0, 0.0, 0.0, 0.0]), np.asarray([True, False, False, False]))
    tracker.add(np.asarray([9.0, 8.5, 9.5, 2.5]), np.asarray([True, True, True, True]))
    assert tracker.known_groups == 1
    assert 3.0 < tracker.cuts(np.asarray([0]))[0] <= 8.5  # the lone 3.0 is not kept by default


@given(
    st.lists(st.tuples(st.floats(0, 20), st.booleans()), max_size=200),
    st.lists(st.integers(1, 40), min_size=1, max_size=20),
)
@settings(max_examples=300, deadline=None)
def test_cut_sees_the_latest_history_scores_whatever_the_batches(
    windows: list[tuple[float, bool]], batches: list[int]
) -> None:
    tracker = CutTracker(min_score=0.25, group_windows=3, history=7, min_samples=2, wait_groups=0)
    recent: deque[float] = deque(maxlen=7)  # the history, kept in order
    expected: list[float] = []
    i = 0
    for size in itertools.cycle(batches):
        if i >= len(windows):
            break
        part = windows[i : i + size]
        tracker.add(np.asarray([s for s, _ in part], dtype=np.float64), np.asarray([t for _, t in part], dtype=bool))
        for j, (score, term) in enumerate(part, i):
            if term:
                recent.append(score)
            if j % 3 == 2 and j >= 5:  # a group's cut comes with the last window of the next one
                values = np.asarray(recent, dtype=np.float64)
                expected.append(max(0.25, otsu_threshold(values)) if len(recent) >= 2 else 0.25)
        i += size
    closed = np.arange(len(expected) * 3, dtype=np.int64)
    assert tracker.known_groups == len(expected)
    assert tracker.cuts(closed).tolist() == np.repeat(expected, 3).tolist()


def test_hits_extend_through_continuation_lines_only() -> None:
    #                0      1     2     3      4      5      6      7      8      9     10
    cont = np.array([False, False, True, True, False, False, False, False, False, True, False])
    first, last = protected_ranges(np.array([1, 8]), cont, before=1, extend=10)
    assert first.tolist() == [0, 7]
    assert last.tolist() == [3, 9]  # 4-8 is a gap longer than BRIDGE_LINES (3): not bridged


def test_a_short_gap_then_a_continuation_block_is_bridged() -> None:
    """Node's assertion error: the message, a blank line, '1 !== 2', a blank line, the frames."""
    #                0      1      2      3      4     5     6      7
    cont = np.array([False, False, False, False, True, True, False, False])
    first, last = protected_ranges(np.array([0]), cont, before=0, extend=10)
    assert (first.tolist(), last.tolist()) == ([0], [5])
    _, capped = protected_ranges(np.array([0]), cont, before=0, extend=4)
    assert capped.tolist() == [4]  # still at most ``extend`` lines
    _, alone = protected_ranges(np.array([0]), np.array([False] * 5 + [True]), before=0, extend=10)
    assert alone.tolist() == [0]  # 1-4 is a gap of 4 lines


def test_extension_is_capped_and_sections_ignore_indentation() -> None:
    cont = np.array([False] + [True] * 20)
    first, last = protected_ranges(np.array([0]), cont, before=3, extend=5)
    assert (first.tolist(), last.tolist()) == ([0], [5])
    flat = np.zeros(30, dtype=bool)
    first, last = protected_ranges(np.array([2]), flat, 0, 60, section=np.array([True]), section_lines=10)
    assert last.tolist() == [12]


def test_context_before_a_hit_stays_in_its_record() -> None:
    records = np.array([0, 0, 1, 1, 1, 2])
    cont = np.zeros(6, dtype=bool)
    first, _ = protected_ranges(np.array([3, 5]), cont, before=3, extend=0, records=records)
    assert first.tolist() == [2, 5]


def test_a_whole_record_hit_keeps_the_rest_of_its_record_up_to_the_section_cap() -> None:
    records = np.array([0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3])
    flat = np.zeros(13, dtype=bool)  # no continuation lines: column-0 reports
    first, last = protected_ranges(
        np.array([1, 7]), flat, 0, 60, records=records, whole_record=np.array([True, True]), section_lines=3
    )
    assert (first.tolist(), last.tolist()) == ([1, 7], [4, 10])
    _, last = protected_ranges(np.array([1]), flat, 0, 60, records=records, whole_record=np.array([False]))
    assert last.tolist() == [1]


def test_repeat_gate_admits_the_first_repeats_of_each_shape_only() -> None:
    gate = RepeatGate(max_repeats=2, max_shapes=3)
    assert gate.admit([b"a", b"b", b"a", b"a"]).tolist() == [True, True, True, False]
    assert gate.admit([b"a", b"c", b"d", b"d", b"d"]).tolist() == [False, True, True, True, True]
