"""DROP summaries: masks on real line shapes, distinct events stay distinct, facts only, stable."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.normalize import normalize_block
from streamfilter.core.summarize import (
    _MAX_NEW_SHAPES,
    _SHAPE_SOURCE_BYTES,
    ODD_TEMPLATES,
    RARE_BLOCK,
    RARE_TEMPLATES,
    DropSummary,
    _mask,
    event_text,
    line_shapes,
    mask_shapes,
    shape_text,
    warn_counts,
)
from streamfilter.core.templates import MAX_MINED, MAX_VALUES, Miner

DATA = Path(__file__).resolve().parents[1] / "data"


SHAPES = [
    (b"   Compiling serde v1.0.130 (/home/ci/.cargo/registry/src/serde)", b" Compiling serde v<*> (<*>)"),
    (
        b"[INFO] Downloaded from central: https://repo.maven.apache.org/a/b-1.2.jar (12 kB at 96 kB/s)",
        b"[INFO] Downloaded from central: https:<*> (<*> kB at <*> <*>)",
    ),
    (b"2026-04-23T08:28:54.3422190Z ##[group]Run actions/checkout@v4", b"<*>T<*>Z ##[group]Run <*>"),
    (b"src/main.rs:12:5: warning: unused variable", b"<*>:<*>: warning: unused variable"),
    (
        b"tests/test_api.py::test_get[42] PASSED                     [ 87%]",
        b"<*>::test_get[<*>] PASSED [ <*>%]",
    ),
    (
        b"npm WARN deprecated request@2.88.2: request has been deprecated",
        b"npm WARN deprecated request@<*>: request has been deprecated",
    ),
    (b"\tat com.example.batch.Step060.run(Step060.java:112)", b"\tat com.example.batch.Step<*>.run(Step<*>.java:<*>)"),
    (b"Progress: 45% (450/1000) in 3.25s", b"Progress: <*>% (<*>) in <*>s"),
]


@pytest.mark.parametrize(("line", "shape"), SHAPES)
def test_masks_on_real_line_shapes(line: bytes, shape: bytes) -> None:
    assert mask_shapes(line) == shape


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (b"VM Started", b"VM Paused"),
        (b"Test passed: test_login", b"Test failed: test_login"),
        (b"Connection opened to db-1", b"Connection closed to db-1"),
        (b"GET /health 200 3ms", b"GET /health 500 3ms"[:0] + b"POST /health 200 3ms"),
    ],
)
def test_two_different_events_never_share_a_shape(a: bytes, b: bytes) -> None:
    assert mask_shapes(a) != mask_shapes(b)


def filled(data: bytes, pieces: int = 1, raw: bool = False, **kwargs: int) -> DropSummary:
    """A summary of the lines of ``data``, added in ``pieces`` pieces (``raw``: with their bytes, as
    the filter adds them)."""
    lines = data.split(b"\n")[:-1]
    s = DropSummary(1, 0, **kwargs)
    step = max(1, len(lines) // pieces)
    for i in range(0, len(lines), step):
        piece = [x + b"\n" for x in lines[i : i + step]]
        part = b"".join(piece)
        norm = normalize_block(part, part.count(b"\n"), 1 << 20)
        warnings = int(warn_counts(norm.text, norm.ends).sum())
        line = (lambda j, n, piece=piece: piece[j][:n]) if raw else None
        s.add(len(part), event_text(norm.text), part.count(b"\n"), 0, warnings, norm.frames, line=line)
    return s


def summary_of(data: bytes, pieces: int = 1, **kwargs: int) -> str:
    return filled(data, pieces, **kwargs).render()


def test_summary_states_range_counts_and_top_shapes() -> None:
    data = b"".join(b"   Compiling crate v1.%d.0\n" % i for i in range(230)) + b"".join(
        b"  Downloaded dep v0.%d\n" % i for i in range(30)
    )
    text = summary_of(data)
    assert text.startswith("[streamfilter: dropped lines 1-260 (260 lines, ")
    assert "230× Compiling crate v<*>" in text and "30× Downloaded dep v<*>" in text
    assert text.endswith("]") and "\n" not in text


def test_a_summary_shows_bytes_that_are_not_utf8_as_escapes_not_as_a_replacement_character() -> None:
    # helper-80: "6× caf\ufffd latin<*>" stood for bytes the log does not hold; a terminal and the
    # MCP tools show such a byte as \xNN, and so does a summary now
    data = b"".join(b"caf\xe9 latin line %d\n" % i for i in range(40)) + "naïve ünïcode line\n".encode() * 3
    text = summary_of(data)
    assert "40× caf\\xe9 latin line <*>" in text and "\ufffd" not in text
    assert "naïve ünïcode line" in text
    # a line that ends in one is shown whole (helper-81: "48× x <*> caf", as if cut inside a character)
    assert "50× x <*> caf\\xe9" in summary_of(b"".join(b"x %d caf\xe9\n" % i for i in range(50)))


def test_the_odd_line_among_thousands_is_named_past_the_length_and_not_under_a_budget() -> None:
    """A fresh user's reconciler: 3000 passing rows and the one that drifted, summarized as "+1
    other line"; now that line's template is named, whatever the summary's length, and so is a
    template between (a harness's checks beside its fixtures). When more than ``ODD_TEMPLATES``
    are left, or under a budget (``odd_lines=0``), the count stays."""
    rows = [b"reconcile row %d ok (running total %d)" % (i, 7 * i) for i in range(3000)]
    drift = b"ledger drift detected at row 4411: expected 1200.00, got 1199.99"
    data = b"".join(line + b"\n" for line in [*rows[:1500], drift, *rows[1500:]])
    text = summary_of(data, max_chars=140)
    assert "3000× reconcile row <*> ok (running total <*>)" in text
    assert "1× ledger drift detected at row <*>: expected <*>, got <*>" in text and "other line" not in text
    assert summary_of(data, 7, max_chars=140) == text  # (however the lines came)
    assert "+1 other line]" in summary_of(data, max_chars=140, odd_lines=0)
    checks = b"".join(b"CHECK item_%d ... ok\n" % i for i in range(400))
    harness = data + checks
    assert "400× CHECK item_<*> ... ok; 1× ledger drift" in summary_of(harness, max_chars=140)
    gaps = b"".join(line + b"\n" + (b"\n" if i % 100 == 99 else b"") for i, line in enumerate(rows))
    spaced = summary_of(gaps + drift + b"\n", max_chars=140)  # (blank lines: counted, not a template)
    assert "; 1× ledger drift detected" in spaced and spaced.endswith("; 30 blank lines]")
    others = [b"alpha step %d", b"beta phase %d done", b"gamma sync of shard %d", b"delta pass %d clean"]
    many = harness + b"".join(line % i + b"\n" for line in others for i in range(10))
    assert len(others) + 2 > ODD_TEMPLATES
    more = summary_of(many, max_chars=140)
    assert "+441 other lines]" in more and "ledger" not in more


def test_a_template_of_one_line_is_named_by_the_line_itself() -> None:
    """helper-112: "1× gzip: log<*>.txt.gz: not in gzip…", the failure's file masked as a number: a
    template of one line is named by that line (its escape sequences removed), not its shape, when
    its bytes are known; a progress display keeps its shape (of its last frame)."""
    rows = [b"reconcile row %d ok (running total %d)" % (i, 7 * i) for i in range(3000)]
    drift = b"\x1b[31mledger drift\x1b[0m detected at row 4411: expected 1200.00, got 1199.99"
    data = b"".join(line + b"\n" for line in [*rows[:1500], drift, *rows[1500:]])
    text = summary_of(data, max_chars=140)
    assert "1× ledger drift detected at row <*>: expected <*>, got <*>" in text  # (no bytes: its shape)
    named = filled(data, raw=True, max_chars=140).render()
    assert "3000× reconcile row <*> ok (running total <*>)" in named
    # (cut at a shape's length, with "…")
    assert named.endswith("; 1× ledger drift detected at row 4411: expected 1200.00, go…]"), named
    assert filled(data, 7, raw=True, max_chars=140).render() == named  # (however the lines came)
    short = filled(data.replace(b" at row 4411", b""), raw=True, max_chars=140).render()
    assert short.endswith("; 1× ledger drift detected: expected 1200.00, got 1199.99]"), short
    text, rare = filled(_downloads(141), raw=True, max_chars=140).rendered()
    assert "1× pkg-<*>.tar.zst: digest does not match" in text and rare == (142,), text


def test_the_filter_s_summary_names_a_lone_line_by_its_text() -> None:
    ok = [b"log%d.txt.gz:\t OK\n" % i for i in range(301)]
    data = b"".join([*ok[:150], b"gzip: log150.txt.gz: not in gzip format\n", *ok[151:]])
    sf = StreamFilter(FilterConfig(prior=False))
    runs = sf.feed(data) + sf.flush()
    summaries = [r.summary for r in runs if r.decision == "drop"]
    assert any("; 1× gzip: log150.txt.gz: not in gzip" in t for t in summaries), summaries


def rare_lines_of(data: bytes, pieces: int = 1, **kwargs: int) -> tuple[int, ...]:
    return filled(data, pieces, **kwargs).rendered()[1]


def test_a_run_s_rare_lines_are_its_templates_of_few_lines_when_its_templates_take_in_every_line() -> None:
    """``rendered``: the first line of each template of at most ``ODD_LINES`` lines, named within the
    summary's length or past it; none when some line is left out of every template found."""
    rows = [b"shard-%04d: read %d rows, validated, loaded" % (i, 37 * i) for i in range(900)]
    rejected = b"shard-0301: rejected by loader - checksum 9f2c11aa != manifest 9f2c11ab"
    data = b"".join(line + b"\n" for line in [*rows[:301], rejected, *rows[301:]])
    assert rare_lines_of(data) == (302,)  # (named within the length)
    assert rare_lines_of(data, max_chars=120) == (302,)  # (past it)
    assert rare_lines_of(data, max_chars=100) == ()  # ("2 shapes": no template found)
    twice = b"".join(line + b"\n" for line in [*rows[:10], rejected, *rows[10:20], rejected, *rows[20:]])
    assert rare_lines_of(twice) == (11,)  # (a template's first line)
    others = [b"alpha step %d", b"beta phase %d done", b"gamma sync of shard %d", b"delta pass %d clean"]
    many = data + b"".join(line % i + b"\n" for line in others for i in range(10))
    assert "other lines" in summary_of(many, max_chars=140) and rare_lines_of(many, max_chars=140) == ()
    assert rare_lines_of(data, odd_lines=0) == ()  # (under a budget)
    assert rare_lines_of(b"".join(line + b"\n" for line in rows)) == ()
    # four like failures among 5000 lines: a template of 1 % of the run's at most, its first line
    more = [b"shard-%04d: read %d rows, validated, loaded" % (i, 37 * i) for i in range(5000)]
    for at in (4000, 3000, 2000, 1000):
        more.insert(at, rejected)
    assert rare_lines_of(b"".join(line + b"\n" for line in more)) == (1001,)


# a harness of five kinds of passing check and one mismatch (a fresh user's): the summary names one
# template and "+118 other lines", so its own templates do not take in every line
KINDS = [b"ok (%d ms)", b"ok (cached)", b"SKIP (needs gpu)", b"ok after retry %d", b"ok [slow: %d s]"]
CHECKS = [
    b"CHECK item_%04d ... " % i + (KINDS[0] if i % 10 else KINDS[(i // 10) % 5]).replace(b"%d", b"%d" % (i % 7))
    for i in range(2000)
]
MISMATCH = b"CHECK widget_total ... MISMATCH (want 3, have 4)"


def test_a_run_mined_for_its_rare_lines_has_them_when_its_summary_does_not_take_in_every_line() -> None:
    """``mine_rare``: every template of the run, its rare ones when at most ``RARE_TEMPLATES`` and 1 %
    of its lines; the summary the same, and the same rare lines however the lines were added."""
    data = b"".join(line + b"\n" for line in [*CHECKS[:900], MISMATCH, *CHECKS[900:1975]])
    assert "+119 other lines]" in summary_of(data, max_chars=140) and rare_lines_of(data, max_chars=140) == ()
    assert rare_lines_of(data, max_chars=140, mine_rare=True) == (901,)
    assert summary_of(data, max_chars=140, mine_rare=True) == summary_of(data, max_chars=140)
    assert all(rare_lines_of(data, pieces, max_chars=140, mine_rare=True) == (901,) for pieces in (3, 7, 1976))
    # rare templates, each of its own delimiters, apart: more blocks than RARE_TEMPLATES are a long
    # tail, none is taken for the odd lines
    odd = [b"note" + b":" * k + b" x" for k in range(1, 2 * RARE_BLOCK + 2)]

    def apart(blocks: int) -> bytes:  # (an odd line after every 300th check)
        lines = [
            [check, *([odd[k // 300]] if k % 300 == 5 and k // 300 < blocks else [])] for k, check in enumerate(CHECKS)
        ]
        return b"".join(line + b"\n" for row in lines for line in row)

    assert rare_lines_of(apart(RARE_TEMPLATES + 1), mine_rare=True) == ()
    assert rare_lines_of(apart(RARE_TEMPLATES), mine_rare=True) == (7, 308, 609, 910, 1211)[:RARE_TEMPLATES]
    # one after the other they are one block (a failure's header and its details): its first line
    block = b"".join(line + b"\n" for line in [*CHECKS, *odd[:RARE_BLOCK]])
    assert rare_lines_of(block, mine_rare=True) == (2001,)
    longer = b"".join(line + b"\n" for line in [*CHECKS, *odd[: RARE_BLOCK + 1]])
    assert rare_lines_of(longer, mine_rare=True) == ()  # (all-unique lines, not an event)
    # a short run: its templates of other checks are of few lines too, none rare among many (of 99
    # lines, 2 cached, 2 retried, 2 slow and the mismatch: 7 lines, past 1 %); of 200, the mismatch
    short = b"".join(line + b"\n" for line in [*CHECKS[:49], MISMATCH, *CHECKS[49:98]])
    assert "+7 other lines]" in summary_of(short, max_chars=140)
    assert rare_lines_of(short, max_chars=140, mine_rare=True) == ()
    longer = b"".join(line + b"\n" for line in [*CHECKS[:99], MISMATCH, *CHECKS[99:199]])
    assert "+13 other lines]" in summary_of(longer, max_chars=140)
    assert rare_lines_of(longer, max_chars=140, mine_rare=True) == (100,)


def test_a_run_mined_for_its_rare_lines_counts_the_lines_past_its_table_of_shapes() -> None:
    """Past the table of shapes (ids the masks keep as words): a shape of new delimiters is mined
    with the table's, the others are counted against the templates with theirs; past
    ``_MAX_NEW_SHAPES`` new shapes, a run has no rare line (its templates are not known)."""
    words = [bytes(w) for w in itertools.product(b"abcdefghij", repeat=4)]
    rows = [b"job " + w + b" done" for w in words[:6000]]
    failure = b"disk quota exceeded (27 GB) on sda1"
    failed = [b"failed: " + w for w in words[6000:]]  # (one template of many lines, of new delimiters)
    data = b"".join(line + b"\n" for line in [*rows[:5000], failure, *failed[: _MAX_NEW_SHAPES - 1], *rows[5000:]])
    assert rare_lines_of(data) == ()
    assert all(rare_lines_of(data, pieces, mine_rare=True) == (5001,) for pieces in (1, 5, 64))
    lost = b"".join(line + b"\n" for line in [*rows[:5000], failure, *failed[:_MAX_NEW_SHAPES], *rows[5000:]])
    assert rare_lines_of(lost, mine_rare=True) == ()
    # a rare template of the table's delimiters: the lines past the table may be its own
    like = b"".join(line + b"\n" for line in [*rows[:10], b"job failed badly", *rows[10:]])
    assert rare_lines_of(like, mine_rare=True) == ()
    assert rare_lines_of(like[: like.index(rows[4000])], mine_rare=True) == (11,)


def test_summary_is_byte_identical_however_the_lines_were_added() -> None:
    data = b"".join(b"line %d kind %d\n" % (i, i % 7) for i in range(500)) + b"warning: x\n" * 3
    whole = summary_of(data)
    for pieces in (2, 7, 500):
        assert summary_of(data, pieces) == whole


def test_summary_never_exceeds_its_length_and_keeps_the_facts() -> None:
    data = b"".join(b"progress %d%%\r" % i for i in range(100)) + b"done\n"
    data += b"".join(b"%s warning: something long and different number %d\n" % (b"x" * 50, i) for i in range(20))
    text = summary_of(data, max_chars=120)
    assert len(text) <= 120
    assert "(21 lines, " in text


@pytest.mark.parametrize("max_chars", [20, 64, 75, 90])
def test_a_short_summary_drops_whole_facts_and_never_cuts_its_range_and_counts(max_chars: int) -> None:
    # (as under --budget-tokens: it cut "[streamfilter: dropped lines 1-40 (40 …" mid-fact)
    data = b"".join(b"warning: compiling unit %d of many\n" % i for i in range(40)) + b"error: x failed\n"
    head = "[streamfilter: dropped lines 1-41 (41 lines, 1.4 KiB)"
    text = summary_of(data, max_chars=max_chars)
    assert text.startswith(head) and "…" not in text
    assert len(text) <= max(max_chars, len(head) + 1)
    facts = text.removeprefix(head).removeprefix(": ").removesuffix("]")
    full = summary_of(data, max_chars=240).removeprefix(head).removeprefix(": ").removesuffix("]")
    # whole facts only (with no room to name a shape, their count stands in for them)
    assert not facts or all(f in full.split("; ") or re.fullmatch(r"\d+ shapes?", f) for f in facts.split("; "))


def test_summary_counts_progress_frames_and_warnings() -> None:
    data = b"Receiving 1%\rReceiving 50%\rReceiving 100%\nwarning: deprecated\nok\n"
    text = summary_of(data)
    assert "1 progress line, 2 frames collapsed" in text
    assert "; 1 warning mention;" in text or "; 1 warning mention)" in text


def test_a_count_of_one_is_singular_and_a_green_run_that_printed_none_is_not_named() -> None:
    # ("1 frames collapsed"; and "0 in the last green run" said nothing)
    assert "1 progress line, 1 frame collapsed" in summary_of(b"Receiving 1%\rReceiving 100%\nok\n")
    s = DropSummary(1, 0, green=True)
    s.add(12, b"step <*>\nstep <*>\n", 2, 0, 0, np.zeros(2, dtype=np.int32))
    text = s.render()
    assert text.startswith("[streamfilter: dropped lines 1-2 (2 lines, 12 B): ") and "green run" not in text
    s.add(6, b"step <*>\n", 1, 0, 0, np.zeros(1, dtype=np.int32), seen_lines=1)
    assert "1 in the last green run" in s.render()


def _downloads(failing: int | None) -> bytes:
    """300 downloads, each a line of progress frames; the failing one's last frame is its failure."""
    out = []
    for f in range(300):
        frames = [b"\rpkg-%03d.tar.zst [%-20s] %3d%%" % (f, b"=" * (p // 5), p) for p in range(0, 101, 5)]
        if f == failing:
            frames = [
                *frames[:14],
                b"\rpkg-%03d.tar.zst: digest does not match the lockfile; file left in quarantine" % f,
            ]
        else:
            frames.append(b"\rpkg-%03d.tar.zst [%s] 100%% %d KiB" % (f, b"=" * 20, f % 900 + 100))
        out.append(b"".join(frames) + b"\n")
    return b"".join(out)


def test_a_run_of_progress_lines_names_its_templates_and_its_odd_one() -> None:
    # (its fact "300 progress lines: 6293 frames collapsed" left no room for a template: "; 2 shapes",
    # and the one download whose last frame said why it failed was nowhere in the summary)
    s = filled(_downloads(141), max_chars=140)
    text, rare = s.rendered()
    assert "6293 progress frames collapsed" in text and "299× pkg-<*>.tar.zst [" in text, text
    assert "1× pkg-<*>.tar.zst: digest does not match" in text and rare == (142,), text


def test_a_count_against_a_sampled_green_run_is_a_lower_bound() -> None:
    # (a green run of 500000 distinct lines: its baseline keeps 32768 of their hashes, so a line not
    # found may have been printed; "20929 in the last green run" read as "the rest were not")
    s = DropSummary(1, 0, green=True, green_sampled=True)
    s.add(18, b"step <*>\nstep <*>\nstep <*>\n", 3, 0, 0, np.zeros(3, dtype=np.int32), seen_lines=2)
    assert "at least 2 in the last green run" in s.render()
    every = DropSummary(1, 0, green=True, green_sampled=True)
    every.add(12, b"step <*>\nstep <*>\n", 2, 0, 0, np.zeros(2, dtype=np.int32), seen_lines=2)
    assert "; all in the last green run)]" in every.render()


@pytest.mark.parametrize("verdict", [b"all passed", b"no tests collected", b"success"])
def test_summary_states_no_verdict_of_its_own(verdict: bytes) -> None:
    text = summary_of(b"collected 0 items\n" * 3 + b"Interrupted: 1 error during collection\n")
    assert verdict.decode() not in text.lower()


def test_shapes_are_counted_when_no_shape_fits() -> None:
    s = DropSummary(1049, 0, max_chars=115)
    lines = [b"INFO processing item %d ok" % i for i in range(2002)] + [b"FAILED t.py::test_x - boom"] * 100
    data = b"".join(line + b"\n" for line in lines)
    s.add(len(data), event_text(data), len(lines), 0, 0, np.zeros(len(lines), dtype=np.int32), 100)
    text = s.render()
    assert "100 more failure lines like ones kept" in text and "kept): 2 shapes]" in text, text
    assert len(text) <= 115


def test_the_most_frequent_shape_is_named_and_the_count_of_term_lines_gives_way_to_it() -> None:
    """20000 repeats of one failure line: the count of repeats stays, the count of lines with
    query terms gives way to the shape (the line was cut mid-word, "1 sha…", with no shape named)."""
    s = DropSummary(57, 0, max_chars=140)
    data = b"".join(b"ERROR: line %d failed with a reasonably long message\n" % i for i in range(19919))
    s.add(len(data), event_text(data), 19919, 19919, 0, np.zeros(19919, dtype=np.int32), 19919)
    text = s.render()
    assert "19919 more failure lines like ones kept): 19919× ERROR: line <*> failed" in text, text
    assert "query terms" not in text and len(text) <= 140


def test_shape_table_is_bounded_and_overflow_is_counted() -> None:
    s = DropSummary(1, 0)
    words = [bytes([97 + a, 97 + b, 97 + c]) for a in range(26) for b in range(26) for c in range(8)]  # 5408 shapes
    data = b"".join(b"event " + w + b"\n" for w in words)
    s.add(len(data), event_text(data), len(words), 0, 0, np.zeros(len(words), dtype=np.int32))
    assert len(s._shapes) == len(s._firsts) == 4096 and s._other == 5408 - 4096
    # a template is found among the shapes of most lines only (the cost of a summary is bounded)
    assert s.render().endswith(f"{MAX_MINED}× event <*>; +{5408 - MAX_MINED} other lines]"), s.render()


SHAPE_PIECES = [b"a", b"1", b"2", b".", b"-", b"/", b" ", b"\t", b"\r", b":", b"(", b"x" * 40, b"12.5" * 10, b"\n"]


@given(st.lists(st.sampled_from(SHAPE_PIECES), max_size=80))
@settings(max_examples=500, deadline=None)
def test_shapes_of_long_lines_equal_masking_the_cut_lines(pieces: list[bytes]) -> None:
    text = b"".join(pieces)
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    cut = b"\n".join(line[:_SHAPE_SOURCE_BYTES] for line in lines)
    assert line_shapes(text) == _mask(cut).split(b"\n")[: len(lines)]


@given(st.lists(st.sampled_from([*SHAPE_PIECES, b"warn", b"WaRning", b"wa"]), max_size=80))
@settings(max_examples=300, deadline=None)
def test_a_block_s_shapes_and_warnings_are_those_of_its_lines(pieces: list[bytes]) -> None:
    # the filter masks a whole block once and slices it per DROP run: masking must be line-local
    text = b"".join(pieces)
    lines = [line + b"\n" for line in text.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    lines = [line for line in lines if line]
    ends = np.cumsum([len(line) for line in lines], dtype=np.int64)
    assert shape_text(text) == b"".join(shape_text(line) for line in lines)
    assert warn_counts(text, ends).tolist() == [line.lower().count(b"warn") for line in lines]


_REFERENCE_DELIMS = b" \t\r\n\"'()[]{}<>,;=|:"


def _mask_reference(text: bytes) -> bytes:
    """``_mask`` spelled out byte by byte, from its docstring."""
    digit = [48 <= c <= 57 for c in text]
    masked = digit[:]
    for i in range(1, len(text) - 1):
        masked[i] |= text[i] in b".:,_-" and digit[i - 1] and digit[i + 1]
    start = 0
    for i in range(len(text) + 1):
        if i == len(text) or text[i] in _REFERENCE_DELIMS:
            if b"/" in text[start:i]:
                masked[start:i] = [True] * (i - start)
            start = i + 1
    out = bytearray()
    for i, c in enumerate(text):
        pair = i > 0 and ((masked[i] and masked[i - 1]) or (c in b" \t" and text[i - 1] in b" \t"))
        if c != 0x0D and not pair:
            out.append(1 if masked[i] else c)
    return bytes(out)


MASK_PIECES = [b"a", b"1", b"2", b".", b"-", b"/", b" ", b"\t", b"\r", b":", b"(", b"\n", b"\x1b", b"\x00", b"\x01"]


@given(st.lists(st.sampled_from(MASK_PIECES), max_size=60), st.booleans())
@settings(max_examples=500, deadline=None)
def test_mask_equals_its_reference_whatever_bytes_the_text_holds(pieces: list[bytes], every_byte: bool) -> None:
    # with every byte value present, no value is free to mark deletions: the other path is taken
    text = b"".join(pieces) + (bytes(range(256)) if every_byte else b"")
    assert _mask(text) == _mask_reference(text)


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"".join(b"%d\n" % i for i in range(95)), "95× <*>"),  # `seq 100`: only numbers
        (b"\n" * 4975, "4975× blank"),
        # (the blank lines named in few characters; the numbers only counted)
        (
            b"build step\n" + b"\n" * 10 + b"".join(b"%d\n" % i for i in range(5)),
            "1× build step; 10 blank lines; +5 other lines",
        ),
    ],
)
def test_blank_and_masked_lines_are_named_only_when_nothing_else_is(data: bytes, named: str) -> None:
    # a run of numbers or blank lines said only "1 shape" (a fresh-user helper's find)
    n = data.count(b"\n")
    s = DropSummary(1, 0)
    s.add(len(data), event_text(data), n, 0, 0, np.zeros(n, dtype=np.int32))
    assert s.render().endswith(f"): {named}]"), s.render()


def test_the_count_of_lines_with_query_terms_outlasts_the_count_of_warnings() -> None:
    # 200 short lines, 5 with query terms, 1 warning: with room for one of the two counts beside
    # the shape, the summary gave the warning and not the error words (a fresh-user helper's find)
    data = b"".join(b"s %d\n" % i for i in range(200)) + b"note: retry on error\n" * 5 + b"warning: slow\n"
    s = DropSummary(1, 0, max_chars=140)
    s.add(len(data), event_text(data), 206, 5, 1, np.zeros(206, dtype=np.int32))
    text = s.render()
    assert "5 lines with query terms" in text and "200× s <*>" in text and len(text) <= 140, text


EVENTS = [
    # ids as ids: hex runs, UUIDs (a group of letters only too), tokens of letters and digits
    (
        b"[req-3eb6 - -] [instance: 5b3c1a2e-9f4d-4e2a-bcde-1e88b294cd1d] VM Started",
        b"[req-<*> - -] [instance: <*>] VM Started",
    ),
    (b"req-3e1b req-ab12 a1b2c3 -C metadata=4f592bfd", b"req-<*> req-ab<*> <*> -C metadata=<*>"),
    # a word's digits alone (a name, a version, a step): the word stays
    (b"Step060 v1.0.130 x86_64 md5 utf8 cafe", b"Step<*> v<*> x<*> md<*> utf<*> cafe"),
    # paths stay (their parts that vary are found among a run's lines), their digits masked
    (b"tests/test_api.py::test_get[42] PASSED  [ 87%]", b"tests/test_api.py::test_get[<*>] PASSED [ <*>%]"),
]


@pytest.mark.parametrize(("line", "shape"), EVENTS)
def test_a_summary_s_shapes_mask_ids_as_ids(line: bytes, shape: bytes) -> None:
    assert event_text(line).replace(b"\x01", b"<*>") == shape


def test_the_odd_event_of_a_compute_service_shows_in_its_summary() -> None:
    """Issue 30: 39 "VM Started" and one "VM Paused", each with its request id and instance UUID,
    read "1× <*> INFO compute.manager […; +16 more" (every line its own shape)."""
    data = (DATA / "compute-lifecycle.log").read_bytes()
    sf = StreamFilter(FilterConfig(tail_lines=0, prior=False))  # (one run: the end's most probable lines aside)
    runs = sf.feed(data) + sf.flush()
    assert [(r.decision, r.first_line, r.last_line) for r in runs] == [("drop", 1, 40)]
    assert "40× …VM {Started ×39, Paused ×1 @L7} (Lifecycle Event)]" in runs[0].summary, runs[0].summary
    template = runs[0].summary  # (an id of hex letters only, req-eadf at line 30, is no event: not listed)
    assert "req-eadf" in data.split(b"\n")[29].decode() and "eadf" not in template
    assert data.split(b"\n")[6].endswith(b"VM Paused (Lifecycle Event)")  # (line 7)


def test_a_path_shows_what_its_lines_share_and_masks_what_varies() -> None:
    # the README's example: the file name is the same on every line, the test's name varies
    data = b"".join(b"tests/test_inventory.py::test_parse_many[%d] PASSED [ %d%%]\n" % (i, i) for i in range(40))
    data += b"".join(b"tests/test_inventory.py::test_total[%d] PASSED [ %d%%]\n" % (i, i) for i in range(30))
    text = summary_of(data)
    assert "70× …::{test_parse_many ×40, test_total ×30 @L41}[<*>] PASS…" in text, text  # (cut to show the list)
    norm = normalize_block(data, 70, 1 << 20)
    shapes = event_text(norm.text).split(b"\n")[:70]
    template = Miner(shapes[:MAX_MINED], np.ones(MAX_MINED, dtype=np.int64), list(range(1, 33))).next()
    assert template is not None and template.lines == MAX_MINED
    assert template.text() == "tests/test_inventory.py::test_parse_many[<*>] PASSED [ <*>%]"
    data = b"".join(b"CC src/net/conn_%s.c\n" % w for w in (b"tcp", b"udp", b"unix", b"pipe", b"tls", b"quic"))
    assert summary_of(data, max_chars=240).endswith("(6 lines, 135 B): 6× CC src/net/conn_<*>.c]")


def test_a_hash_beside_what_varies_is_one_mask() -> None:
    # (helper-22: "sha=<*><*>", a hex id's masked digits beside the varying letters)
    data = b"".join(
        b"[web-%d] sync asset static/app.%d.js sha=%08x ok\n" % (h, a, a * 2654435761 % 2**32)
        for h in range(3)
        for a in range(60)
    )
    text = summary_of(data, max_chars=240)
    assert "sha=<*> ok" in text and "<*><*>" not in text, text


def test_a_value_list_is_bounded() -> None:
    lines = [b"job %s done" % w for w in [b"a"] * 30 + [b"b"] * 8 + [b"c", b"d", b"e"]]
    text = summary_of(b"".join(line + b"\n" for line in lines), max_chars=240)
    assert "41× job {a ×30, b ×8 @L31, +3 more} done" in text, text  # (two listed hold 80 %)
    lines = [b"job %d%s done" % (i % 3, bytes([97 + i])) for i in range(20)]  # (a run of digits and letters: an id)
    assert "20× job <*> done" in summary_of(b"".join(line + b"\n" for line in lines), max_chars=240)
    # a column of many values shows none; the lines of the shapes past MAX_MINED are not named
    template = Miner([b"k w%02d" % i for i in range(40)], np.ones(40, dtype=np.int64), list(range(1, 41))).next()
    assert template is not None and template.text() == "k <*>" and template.lines == MAX_MINED
    assert MAX_VALUES == 3


def test_more_than_half_the_words_varying_is_two_events() -> None:
    data = b"".join(b"%s\n" % line for line in [b"alpha beta gamma"] * 3 + [b"delta epsilon zeta"] * 2)
    text = summary_of(data, max_chars=240)
    assert "3× alpha beta gamma; 2× delta epsilon zeta" in text, text


_REFERENCE_IDS_DELIMS = b" \t\r\n\"'()[]{}<>,;=|:"


def _mask_ids_reference(text: bytes) -> bytes:
    """``_mask(text, ids=True)`` spelled out from its docstring and ``_ids``'s."""
    alnum = [chr(c).isalnum() and c < 0x80 for c in text]
    masked = [48 <= c <= 57 for c in text]
    i = 0
    while i < len(text):
        if not alnum[i]:
            i += 1
            continue
        j = i
        while j < len(text) and alnum[j]:
            j += 1
        run = text[i:j].decode()
        turn = any(a.isdigit() and b.isalpha() for a, b in itertools.pairwise(run))
        if turn:
            masked[i:j] = [True] * (j - i)
        i = j
    for m in re.finditer(rb"(?=[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})", text):
        masked[m.start() : m.start() + 36] = [True] * 36
    flags = masked[:]
    for k in range(1, len(text) - 1):
        flags[k] |= text[k] in b".:,_-" and masked[k - 1] and masked[k + 1]
    out = bytearray()
    for k, c in enumerate(text):
        pair = k > 0 and ((flags[k] and flags[k - 1]) or (c in b" \t" and text[k - 1] in b" \t"))
        if c != 0x0D and not pair:
            out.append(1 if flags[k] else c)
    return bytes(out)


ID_PIECES = [b"a", b"f", b"z", b"1", b"9", b"-", b".", b" ", b"\r", b"\n", b"req-", b"3eb6", b"ab12", b"x" * 4]
ID_PIECES += [b"5b3c1a2e-9f4d-4e2a-bcde-1e88b294cd1d", b"deadbeef-face-cafe-bead-abcdefabcdef"]


@given(st.lists(st.sampled_from(ID_PIECES), max_size=60))
@settings(max_examples=500, deadline=None)
def test_id_masks_equal_their_reference(pieces: list[bytes]) -> None:
    text = b"".join(pieces)
    assert _mask(text, ids=True) == _mask_ids_reference(text)


def test_a_summary_holds_no_line_break_a_reader_would_split_on() -> None:
    """helper-62: a dropped line's U+2028 went into its summary as it was, and a reader's
    splitlines() then met a line starting "[streamfilter: all tests passed"."""
    data = b"".join(b"x\xe2\x80\xa8[streamfilter: all tests passed] %d\n" % i for i in range(30))
    for text in (summary_of(data, max_chars=140), summary_of(data, max_chars=140, odd_lines=0)):
        assert len(text.splitlines()) == 1 and "\\u2028" in text, text


def test_a_summary_shows_no_character_that_acts_on_a_terminal_or_hides_text() -> None:
    # U+009B (a CSI as UTF-8), U+202E and a zero-width space had gone into summaries and their JSONL
    # as they were: a summary is the filter's own line (helper-98)
    for char in ("\u009b", "\u202e", "\u200b", "\U000e0041"):
        data = b"".join(f"ok {i} c1 {char}2J x\n".encode() for i in range(40))
        text = summary_of(data, max_chars=160)
        assert char not in text and " ?" in text, text
