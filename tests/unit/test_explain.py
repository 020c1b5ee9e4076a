"""``FilterConfig(explain=True)``: the traces attached to runs."""

from __future__ import annotations

import re
from pathlib import Path

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.hits import PRIOR_BEFORE
from streamfilter.core.records import Run


def test_every_piece_of_a_protected_window_names_its_first_hit_line() -> None:
    """A protected window split over two KEEP events (at ``max_keep_event_bytes``): the piece
    after the hit named no hit_line (0) before; each piece names the hit, line 41."""
    lines = [b"INFO step %d ok" % i for i in range(40)]
    lines += [b"Traceback (most recent call last):"] + [b'  File "m%d.py", line %d, in f' % (i, i) for i in range(6)]
    lines += [b"ValueError: boom"] + [b"INFO after %d" % i for i in range(40)]
    data = b"".join(line + b"\n" for line in lines)
    sf = StreamFilter(FilterConfig(query="nothing", explain=True, tail_lines=0, max_keep_event_bytes=100))
    runs = sf.feed(data) + sf.flush()
    # (the traceback's window: a line beside it may be the prior's, its own hit)
    protected = [(r, t) for r in runs if r.decision == "keep" for t in r.traces if t.reason.endswith("-traceback")]
    assert len({r.first_line for r, _ in protected}) > 1  # the window is in more than one piece
    assert all(t.hit_line == 41 for _, t in protected), [(r.first_line, t) for r, t in protected]


def test_an_over_long_lines_query_terms_do_not_keep_its_window() -> None:
    """A line over max_line_bytes is never shown as a window's member: the window's other lines
    (no query term) were kept with reason ``score`` on its terms while it was summarized."""
    lines = [b"start plain", b"w" * 2000 + b" error happened"] + [b"plain after %d" % i for i in range(5)]
    lines += [b"filler %d" % i for i in range(40)]
    data = b"".join(line + b"\n" for line in lines)
    # (no prior: its end's most probable lines are kept whatever their words)
    config = FilterConfig(query="error", explain=True, head_lines=0, tail_lines=0, max_line_bytes=1000, prior=False)
    sf = StreamFilter(config)
    runs = sf.feed(data) + sf.flush()
    assert all(r.decision == "drop" for r in runs)
    (window,) = [t for r in runs for t in r.traces if t.first_line <= 2 <= t.last_line]
    assert window.reason == "weak-line"
    assert "1 over-long line of 2.0 KiB" in runs[0].summary
    # the same line under the cap is what keeps its window
    sf = StreamFilter(FilterConfig(query="error", explain=True, head_lines=0, tail_lines=0, max_line_bytes=4000))
    kept = [r for r in sf.feed(data) + sf.flush() if r.decision == "keep"]
    assert kept and kept[0].first_line <= 2 <= kept[0].last_line


def test_a_drop_summary_counts_its_over_long_lines_and_gives_the_longest() -> None:
    """The README promised an over-long line's size in its summary; among other lines it was
    only in the run's total."""
    lines = [b"normal %d ok" % i for i in range(60)] + [b"x" * 5000 + b" ERROR: huge line failed " + b"y" * 5000]
    lines += [b"y" * 3000] + [b"more %d ok" % i for i in range(60)]
    data = b"".join(line + b"\n" for line in lines)
    config = FilterConfig(query="error", head_lines=0, tail_lines=0, max_line_bytes=1000)
    summaries = []
    for size in (len(data), 997):  # the same however the bytes come
        sf = StreamFilter(config)
        runs = [r for i in range(0, len(data), size) for r in sf.feed(data[i : i + size])] + sf.flush()
        (drop,) = [r for r in runs if r.decision == "drop"]
        summaries.append(drop.summary)
    assert summaries[0] == summaries[1]
    assert "2 over-long lines, the longest 9.8 KiB" in summaries[0]


def _dropped_reasons(runs: list[Run], first: int, last: int) -> set[str]:
    return {t.reason for r in runs if r.decision == "drop" for t in r.traces if first <= t.first_line <= last}


def test_a_window_whose_query_terms_are_repeats_says_so() -> None:
    """The 4th and later "connection error" lines' terms do not count (the repeat rule): their
    windows read ``no-term`` though each line holds "error"."""
    lines = [b"INFO step %d ok" % i for i in range(60)]
    lines += [b"WARN: retry %d hit a connection error" % i for i in range(40)] + lines
    data = b"".join(line + b"\n" for line in lines)
    sf = StreamFilter(FilterConfig(explain=True, prior=False, tail_lines=0))
    runs = sf.feed(data) + sf.flush()
    assert _dropped_reasons(runs, 61, 100) == {"repeated-term"}
    assert _dropped_reasons(runs, 1, 60) == {"no-term"}


def test_a_summary_counts_the_repeated_lines_with_query_terms_it_drops() -> None:
    """The repeats' terms do not score, but the lines hold them: the DROP summary says so (it said
    nothing of the 37 dropped "connection error" lines)."""
    lines = [b"INFO step %d ok" % i for i in range(60)]
    lines += [b"WARN: retry %d hit a connection error" % i for i in range(40)] + lines
    data = b"".join(line + b"\n" for line in lines)
    sf = StreamFilter(FilterConfig(prior=False, tail_lines=0))
    runs = sf.feed(data) + sf.flush()
    term_lines = sum(
        int(m.group(1))
        for r in runs
        if r.decision == "drop"
        for m in [re.search(r"(\d+) lines? with query terms", r.summary)]
        if m
    )
    kept = sum(1 for r in runs if r.decision == "keep" for line in r.data.splitlines() if b"connection error" in line)
    assert term_lines + kept == 40


def test_a_line_of_a_priors_window_outside_what_it_keeps_says_so() -> None:
    """cargo (21 crates compiled first): the prior's line 24 keeps the ``PRIOR_BEFORE`` lines before
    it, not the lines of its window before those, which read ``beside-prior``, not ``weak-line`` (they are
    neither over-long nor redrawn); its record starts more than ``PRIOR_HEAD`` lines above."""
    data = b"".join(b"   Compiling dep%d v0.2.0 (/tmp/fu22/proj/dep%d)\n" % (i, i) for i in range(21))
    data += (Path(__file__).resolve().parents[1] / "data" / "cargo-five-errors.log").read_bytes()
    sf = StreamFilter(FilterConfig(explain=True))
    runs = sf.feed(data) + sf.flush()
    last = 23 - PRIOR_BEFORE
    assert runs[0].decision == "drop" and runs[0].last_line == last
    trace = runs[0].traces[-1]
    assert (trace.reason, trace.hit_line, trace.last_line) == ("beside-prior", 24, last)
