"""Nothing is lost, and the same bytes give the same answer however they are chunked."""

from __future__ import annotations

import itertools
import json
import random
import zlib
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamfilter.core import lines
from streamfilter.core.filter import MAX_TRACES, FilterConfig, StreamFilter
from streamfilter.core.records import Run
from tests.conftest import CORPUS, need

FRAGMENTS = [
    b"INFO starting job 42\n",
    b"   Compiling serde v1.0.1\n",
    b"tests/test_x.py::test_a PASSED [ 10%]\n",
    b"ERROR: build failed\n",
    b"Traceback (most recent call last):\n",
    b'  File "x.py", line 3, in f\n',
    b"ValueError: bad value\n",
    b"\tat com.example.Foo.bar(Foo.java:12)\n",
    b"Caused by: java.io.IOException: disk\n",
    b"\n",
    b"\r\n",
    b"   \n",
    b"\x1b[31mred error\x1b[0m\n",
    b"progress 1%\rprogress 50%\rprogress 100%\n",
    b"bad \xff\xfe utf8 \x00 nul\n",
    b"windows line\r\n",
    b"lone cr at end\r",
    b"x" * 300 + b"\n",
    b"npm ERR! code 1\n",
    b"warning: unused variable\n",
    b"no newline at all",
    b"\x1b[0m",  # a line that is only an escape sequence (empty once normalized), maybe the last
    # column-0 trace lines (Pester, Ruby, rustc's gutter), which continue a trace across a chunk boundary
    b"[-] adds numbers 10ms\n",
    b"Expected: 'a'\n",
    b"at <ScriptBlock>, <No file>:1\n",
    b"app/models/x.rb:12:in `save'\n",
    b"70 |     let x = 1;\n",
]

CONFIGS = [
    FilterConfig(
        query="error failed",
        window_lines=3,
        window_chars=200,
        head_lines=1,
        tail_lines=2,
        context_lines=1,
        extend_lines=4,
        group_windows=2,
        max_keep_event_bytes=256,
    ),
    FilterConfig(query="value disk", window_lines=8, tail_lines=0, head_lines=0, group_windows=4),
    FilterConfig(),
]

streams = st.lists(st.sampled_from(FRAGMENTS), max_size=80).map(b"".join)


def run_filter(data: bytes, cuts: list[int], config: FilterConfig, mine_rare: bool = False) -> list[Run]:
    sf = StreamFilter(config, mine_rare=mine_rare)
    runs: list[Run] = []
    prev = 0
    for cut in sorted(set(c % (len(data) + 1) for c in cuts)):
        runs += sf.feed(data[prev:cut])
        prev = cut
    runs += sf.feed(data[prev:])
    runs += sf.flush()
    return runs


def input_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.lists(st.integers(min_value=0, max_value=10_000), max_size=12), st.sampled_from(range(len(CONFIGS))))
def test_runs_tile_the_input_and_keep_runs_are_verbatim(data: bytes, cuts: list[int], which: int) -> None:
    runs = run_filter(data, cuts, CONFIGS[which])
    expect_line, expect_byte = 1, 0
    for run in runs:
        assert run.first_line == expect_line and run.start_byte == expect_byte
        assert run.last_line >= run.first_line
        if run.decision == "keep":
            assert run.data == data[run.start_byte : run.end_byte]
        else:
            where = f"line {run.first_line}" if run.lines == 1 else f"lines {run.first_line}-{run.last_line}"
            assert run.summary.startswith(f"[streamfilter: dropped {where} ")
            assert f"({run.lines} line" in run.summary
        expect_line, expect_byte = run.last_line + 1, run.end_byte
    assert expect_line == input_lines(data) + 1
    assert expect_byte == len(data)
    # consecutive runs always differ in decision, except a KEEP run split at the size cap
    for a, b in itertools.pairwise(runs):
        assert a.decision != b.decision or (a.decision == "keep" and a.n_bytes >= CONFIGS[which].max_keep_event_bytes)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20), st.sampled_from(range(len(CONFIGS))))
def test_any_chunking_gives_the_same_runs(data: bytes, cuts: list[int], which: int) -> None:
    whole = run_filter(data, [], CONFIGS[which])
    assert run_filter(data, cuts, CONFIGS[which]) == whole


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.integers(1, 5), st.sampled_from(range(len(CONFIGS))))
def test_blocks_of_a_few_lines_give_the_same_runs(data: bytes, most: int, which: int) -> None:
    whole = run_filter(data, [], CONFIGS[which])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "MAX_BLOCK_LINES", most)  # (each read's lines in blocks of at most this many)
        assert run_filter(data, [], CONFIGS[which]) == whole


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20), st.sampled_from(range(len(CONFIGS))))
def test_mining_for_rare_lines_changes_nothing_else_however_chunked(data: bytes, cuts: list[int], which: int) -> None:
    """``mine_rare`` (a failed command's first reading) gives each DROP run the rare lines of the
    summary's own templates at least, the same however the bytes came, and changes no other field."""
    plain = run_filter(data, [], CONFIGS[which])
    mined = run_filter(data, cuts, CONFIGS[which], mine_rare=True)
    assert [replace(r, rare_lines=()) for r in mined] == [replace(r, rare_lines=()) for r in plain]
    assert all(a.rare_lines in ((), b.rare_lines) for a, b in zip(plain, mined, strict=True))
    assert run_filter(data, [], CONFIGS[which], mine_rare=True) == mined


def kept_lines(runs: list[Run]) -> set[int]:
    return {line for run in runs if run.decision == "keep" for line in range(run.first_line, run.last_line + 1)}


# streams past the look-ahead, so that feed decides lines: a fragment repeated, in stretches
long_streams = st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.integers(1, 60)), max_size=40).map(
    lambda parts: b"".join(fragment * n for fragment, n in parts)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    long_streams,
    st.integers(min_value=1, max_value=500),
    st.lists(st.booleans(), min_size=1, max_size=8),
    st.sampled_from(range(len(CONFIGS))),
)
@example(  # a short DROP run after a KEEP run, at a close: it must wait, the next KEEP run takes it in
    b"windows line\r\n" * 42
    + b"ERROR: build failed\n" * 24
    + (b"x" * 300 + b"\n") * 22
    + b"70 |     let x = 1;\n" * 36
    + b'  File "x.py", line 3, in f\n' * 35,
    7,
    [True],
    1,
)
def test_closing_drop_runs_as_a_steady_stream_goes_changes_no_decision(
    data: bytes, step: int, closes: list[bool], which: int
) -> None:
    """``close_drop`` after chunks of ``step`` bytes (a live stream that prints steadily, its DROP
    runs summarized as it goes): the runs still tile the input, and the same lines are kept; only
    summaries split."""
    sf = StreamFilter(CONFIGS[which])
    runs: list[Run] = []
    for i, a in enumerate(range(0, len(data), step)):
        runs += sf.feed(data[a : a + step])
        if closes[i % len(closes)]:
            runs += sf.close_drop()
    runs += sf.flush()
    expect_line, expect_byte = 1, 0
    for run in runs:
        assert (run.first_line, run.start_byte) == (expect_line, expect_byte)
        assert run.decision == "drop" or run.data == data[run.start_byte : run.end_byte]
        expect_line, expect_byte = run.last_line + 1, run.end_byte
    assert (expect_line, expect_byte) == (input_lines(data) + 1, len(data))
    assert kept_lines(runs) == kept_lines(run_filter(data, [], CONFIGS[which]))


def test_byte_at_a_time_equals_whole() -> None:
    data = b"".join(FRAGMENTS) * 5
    config = CONFIGS[0]
    assert run_filter(data, list(range(len(data))), config) == run_filter(data, [], config)


def test_a_hit_at_the_end_of_a_long_window_protects_all_of_it_however_chunked() -> None:
    # the window's first lines are a full look-ahead away from the end of the input before the
    # hit's own reach is: fed line by line, they must still wait for the hit
    noise = b"".join(b"INFO step %d ok\n" % i for i in range(200))
    job = b"Running job 7\n" + b"".join(b"  stage %d done\n" % i for i in range(15)) + b"  ERROR: job 7 failed\n"
    data = noise + job + noise
    lines = [len(line) + 1 for line in data.split(b"\n")[:-1]]
    by_line = list(itertools.accumulate(lines))
    config = FilterConfig(query="zzzz", head_lines=0, tail_lines=0)  # kept by its signature alone
    whole = run_filter(data, [], config)
    assert run_filter(data, by_line, config) == whole
    kept = b"".join(r.data for r in whole if r.decision == "keep")
    assert job in kept


def test_explanations_do_not_depend_on_chunking_either() -> None:
    # two hits in one window (applied together, or one feed apart) and windows cut by runs
    noise = b"".join(b"INFO step %d ok\n" % i for i in range(200))
    trace = b"Traceback (most recent call last):\n" + b'  File "x.py", line 3, in f\n    g()\n' * 6
    data = noise + trace + b"ValueError: boom\n" + noise + b"ERROR: late\n" + noise
    lines = [len(line) + 1 for line in data.split(b"\n")[:-1]]
    config = FilterConfig(query="step ok", head_lines=0, tail_lines=0, explain=True)
    assert run_filter(data, list(itertools.accumulate(lines)), config) == run_filter(data, [], config)


@pytest.mark.parametrize(
    "case",
    [
        "logchunks__powershell__pester__Pester__562258202",  # a Pester frame opening a block was not a frame
        "logchunks__rust__jwilm__alacritty__566679217",  # a window's trace continued past a short gap
    ],
)
def test_corpus_logs_give_the_same_runs_and_traces_in_small_chunks(case: str) -> None:
    log = need(CORPUS / f"{case}.log")
    data = log.read_bytes()
    config = FilterConfig(query=json.loads(log.with_suffix(".json").read_text())["query"], explain=True)
    cuts = list(range(997, len(data), 997))
    assert run_filter(data, cuts, config) == run_filter(data, [], config)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
# a KEEP run split at the size cap inside a window: each piece lists the window, with its lines there
@example(
    b"INFO starting job 42\n" * 8
    + b"Traceback (most recent call last):\n\x1b[31mred error\x1b[0m\nno newline at all"
    + b"INFO starting job 42\n" * 2
    + b'  File "x.py", line 3, in f\n\tat com.example.Foo.bar(Foo.java:12)\n'
    + b"INFO starting job 42\n" * 2
    + b"ERROR: build failed\n"
    + b"INFO starting job 42\n" * 3,
    [],
)
def test_explaining_changes_no_decision(data: bytes, cuts: list[int]) -> None:
    from dataclasses import replace

    plain = run_filter(data, cuts, CONFIGS[0])
    explained = run_filter(data, cuts, replace(CONFIGS[0], explain=True))
    assert [replace(r, traces=(), traces_omitted=0) for r in explained] == plain
    # every run lists its own windows, each piece of a KEEP run split at the size cap too (a window two
    # pieces share is in both); a window's lines are those in its run, no two windows share a line,
    # every line is in one, and chunking changes no trace
    for run in explained:
        assert run.traces and len(run.traces) <= MAX_TRACES
        for t in run.traces:
            assert run.first_line <= t.first_line <= t.last_line <= run.last_line
        assert all(x.last_line < y.first_line for x, y in itertools.pairwise(run.traces))
        if not run.traces_omitted:
            covered = {n for t in run.traces for n in range(t.first_line, t.last_line + 1)}
            assert covered >= set(range(run.first_line, run.last_line + 1))
    assert run_filter(data, [], replace(CONFIGS[0], explain=True)) == explained


def test_each_piece_of_a_keep_run_split_at_the_cap_lists_its_own_windows_however_chunked() -> None:
    # a new user's report: every line kept (head), cut into pieces at the cap; the first piece listed
    # and counted the second's windows of the same batch, the second only those of later batches
    data = b"".join(b"step %05d of the build is fine and long enough\n" % i for i in range(8000))
    # pieces of 2,731 lines: more windows than MAX_TRACES in each, so each counts some as omitted
    config = FilterConfig(head_lines=8000, max_keep_event_bytes=1 << 17, explain=True)
    runs = run_filter(data, [], config)
    assert [r.decision for r in runs] == ["keep"] * 3
    for run in runs:
        # lines of 48 characters: every window has 8 lines, the stream's first is window 0
        windows = (run.last_line - 1) // 8 - (run.first_line - 1) // 8 + 1
        assert len(run.traces) == MAX_TRACES and len(run.traces) + run.traces_omitted == windows
        assert run.traces[0].first_line == run.first_line
        assert all(t.last_line - t.first_line == 7 for t in run.traces[1:])
        assert all(r.reason == "head" for r in run.traces)
    # a window cut by the split is listed in both pieces, with its lines in each
    for a, b in itertools.pairwise(runs):
        if a.last_line % 8:
            assert b.traces[0].first_line == a.last_line + 1 and b.traces[0].last_line == (a.last_line // 8 + 1) * 8
    # the same bytes in other chunks (64 KiB, as the CLI reads; an odd size; lines cut mid-way) give the same traces
    assert run_filter(data, list(range(1 << 16, len(data), 1 << 16)), config) == runs
    assert run_filter(data, list(range(9973, len(data), 9973)), config) == runs


# a live stream: chunks with pauses between them; settle() decides at each pause
ops = st.lists(
    st.one_of(
        st.tuples(st.just("feed"), st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map(b"".join)),
        st.tuples(
            st.sampled_from(
                ["settle", "settle-partial", "settle-open", "settle-hold", "settle-release", "settle-live"]
            ),
            st.just(b""),
        ),
        st.tuples(st.just("split"), st.sampled_from(FRAGMENTS)),
    ),
    max_size=40,
)


def run_live(steps: list[tuple[str, bytes]], config: FilterConfig) -> tuple[bytes, list[Run]]:
    sf = StreamFilter(config)
    data, runs = bytearray(), []
    for op, chunk in steps:
        if op == "feed":
            runs += sf.feed(chunk)
        elif op == "split":  # a line written in two parts with a pause between them
            half = len(chunk) // 2
            runs += sf.feed(chunk[:half]) + sf.settle(partial=True) + sf.feed(chunk[half:])
        elif op == "settle-open":  # as follow does while the stream flows: a DROP run stays open
            runs += sf.settle(close_drop=False)
        elif op == "settle-hold":  # as run does: the last lines wait for the exit status
            runs += sf.settle(hold_lines=3, close_drop=False)
        elif op == "settle-release":  # as run does after 3 s of quiet: the tail and a prompt shown
            runs += sf.settle(partial=True, close_drop=False, decide_before=0, tail_now=True)
        elif op == "settle-live":  # as follow does at a pause: lines fed lately stay undecided
            runs += sf.settle(partial=True, close_drop=False, decide_before=0)
        else:
            runs += sf.settle(partial=op == "settle-partial")
        data += chunk
    return bytes(data), runs + sf.flush()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.sampled_from(range(len(CONFIGS))))
def test_settling_loses_nothing_and_keeps_the_error(steps: list[tuple[str, bytes]], which: int) -> None:
    data, runs = run_live(steps, CONFIGS[which])
    expect_line, expect_byte = 1, 0
    for run in runs:
        if run.rest:
            # the rest of a line that settle(partial=True) let out: same line, next bytes
            assert run.first_line == expect_line - 1 == run.last_line and run.start_byte == expect_byte
        else:
            assert run.first_line == expect_line and run.start_byte == expect_byte
            assert not run.rest
        if run.decision == "keep":
            assert run.data == data[run.start_byte : run.end_byte]
        elif run.checksum:  # (what a ref is checked by)
            assert run.checksum == f"{zlib.crc32(data[run.start_byte : run.end_byte]):08x}"
        expect_line, expect_byte = run.last_line + 1, run.end_byte
    assert expect_line == input_lines(data) + 1
    assert expect_byte == len(data)  # every byte in exactly one run, line ends of let-out lines too
    # the fragment as a line of its own (after "no newline at all" it is the end of another line)
    first_error = (b"\n" + data).find(b"\nERROR: build failed")
    if first_error >= 0:
        assert any(r.decision == "keep" and r.start_byte <= first_error < r.end_byte for r in runs)


def test_a_line_let_out_at_a_pause_is_decided_before_its_rest_even_when_dropped() -> None:
    """helper-67: follow let a line cut by a pause out (its start has a signature) while the lines
    before it stayed undecided; the line, a repeat past the signature's cap, was then dropped with
    them, and its rest came out first, at the offset of the first undecided line: every later ref
    pointed at the wrong bytes (each run still tiled the input)."""
    data = b"".join(b"error: thing %d\n" % i if i % 3 == 0 else b"ok line %d\n" % i for i in range(1500))[:20000]
    rng = random.Random(0)
    sf, runs, at = StreamFilter(FilterConfig()), [], 0
    while at < len(data):  # (pieces as a slow writer's, a pause after some: follow's settles)
        piece = data[at : at + rng.randint(1, 40)]
        at += len(piece)
        runs += sf.feed(piece)
        if rng.random() < 0.3:
            runs += sf.settle(partial=True, close_drop=False, rest=False, decide_before=0)
    runs += sf.flush()
    assert any(r.rest and r.decision == "drop" for r in runs)
    check_tiles(data, runs)


def check_tiles(data: bytes, runs: list[Run]) -> None:
    """Each run holds the next bytes of ``data``, and its own: a KEEP run's text, a DROP run's CRC-32."""
    at = 0
    for run in runs:
        assert run.start_byte == at, run
        piece = data[run.start_byte : run.end_byte]
        assert run.data == piece if run.decision == "keep" else run.checksum == f"{zlib.crc32(piece):08x}", run
        at = run.end_byte
    assert at == len(data)


def test_a_drop_run_a_settle_left_open_is_closed_at_the_end() -> None:
    # follow settles with close_drop=False while the stream flows; a stop right after must not lose it
    data = b"".join(b"INFO step %d ok\n" % i for i in range(40))
    sf = StreamFilter(FilterConfig(tail_lines=0))
    runs = sf.feed(data) + sf.settle(close_drop=False)
    runs += sf.flush()
    assert [(r.decision, r.first_line, r.last_line) for r in runs] == [("drop", 1, 40)]
    assert sf.stats.dropped_lines == 40


def test_an_unterminated_line_that_does_not_matter_waits_for_its_end_and_is_judged_whole() -> None:
    sf = StreamFilter(FilterConfig(tail_lines=0))
    runs = sf.feed(b"INFO step ok\n" * 5 + b"ERRO") + sf.settle(partial=True)
    assert runs[-1].last_line == 5 and not any(r.rest for r in runs)  # "ERRO" says nothing yet: held
    for piece in (b"R: build", b" fail"):  # written piece by piece, a pause after each
        runs += sf.feed(piece) + sf.settle(partial=True)
    runs += sf.feed(b"ed\n") + sf.flush()
    assert b"ERROR: build failed\n" in b"".join(r.data for r in runs if r.decision == "keep")
    assert all(r.decision == "keep" for r in runs if r.last_line == 6)  # no piece of it summarized


def test_settle_lets_a_quiet_error_out_and_its_record_goes_on() -> None:
    # (no prior: "7 failed" ends the stream in a failure, and the lines it rates most probable at the
    # end are its own, kept with the lines after them; the runs here are the query's and the record's)
    config = FilterConfig(query="capture declined", head_lines=0, tail_lines=0, context_lines=0, prior=False)
    sf = StreamFilter(config)
    noise = b"".join(b"INFO order %d ok\n" % i for i in range(40))
    assert sf.feed(noise + b"ERROR order 7 failed\n  at step one\n    at step two: capture declined") == []
    runs = sf.settle(partial=True)
    kept = [r for r in runs if r.decision == "keep"]
    assert len(kept) == 1 and kept[0].data.startswith(b"ERROR order 7 failed\n")
    assert kept[0].data.endswith(b"at step two: capture declined")
    # the terminator completes the kept line; a later frame continues the kept record
    later = sf.feed(b"\n    at step three\nINFO next order\nINFO order after it\n") + sf.flush()
    assert later[0] == Run("keep", 43, 43, kept[0].end_byte, kept[0].end_byte + 1, b"\n", rest=True)
    assert later[1] == Run("keep", 44, 44, kept[0].end_byte + 1, kept[0].end_byte + 19, b"    at step three\n")
    assert [(r.decision, r.first_line, r.last_line) for r in later[2:]] == [("drop", 45, 46)]


RUST_PANIC = (
    b"""thread 'main' (2309) panicked at src/main.rs:4:15:
called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }
""",
    b"""stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   4: rpanic::parse
             at ./src/main.rs:4:15
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
""",
)


def test_a_backtrace_that_comes_after_a_pause_joins_its_panic_over_a_short_gap() -> None:
    """Rust prints the panic's message, then (once symbolized) "stack backtrace:" and the frames;
    settled in between, the frames were summarized away (a fresh-user helper found it with
    follow). The gap line and the frames are kept, as protected_ranges bridges them in a file."""
    sf = StreamFilter(FilterConfig(tail_lines=0))
    noise = b"".join(b"INFO [svc] request %d handled in 3ms\n" % i for i in range(40))
    message, backtrace = RUST_PANIC
    runs = sf.feed(noise + message) + sf.settle(partial=True)
    runs += sf.feed(backtrace) + sf.settle(partial=True) + sf.feed(noise) + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert message + b"stack backtrace:\n" in kept
    assert b"   4: rpanic::parse\n             at ./src/main.rs:4:15\n" in kept


hold_ops = st.lists(
    st.one_of(
        st.tuples(st.just("feed"), st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map(b"".join)),
        st.tuples(st.just("settle-hold"), st.just(b"")),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hold_ops, st.sampled_from([0, 2]))
def test_settling_a_run_keeps_its_tail_for_the_end(steps: list[tuple[str, bytes]], which: int) -> None:
    """A command's run settles with ``hold_lines=T``: its last T lines are still kept at its end
    (T whether or not a failure was found, here)."""
    config = replace(CONFIGS[which], found_tail_lines=CONFIGS[which].tail_lines)
    sf = StreamFilter(config)
    data, runs = bytearray(), []
    for op, chunk in steps:
        runs += sf.feed(chunk) if op == "feed" else sf.settle(hold_lines=config.tail_lines)
        data += chunk
    runs += sf.flush()
    expect_line, expect_byte = 1, 0
    for run in runs:
        assert (run.first_line, run.start_byte) == (expect_line, expect_byte)
        if run.decision == "keep":
            assert run.data == bytes(data[run.start_byte : run.end_byte])
        expect_line, expect_byte = run.last_line + 1, run.end_byte
    n_lines = input_lines(bytes(data))
    assert expect_line == n_lines + 1 and expect_byte == len(data)
    kept = {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    lengths = [len(x) for x in bytes(data).split(b"\n")]
    tail = {n for n in range(max(1, n_lines - config.tail_lines + 1), n_lines + 1)}
    # over-long and redrawn lines are the documented exception to the tail rule
    weak = {
        n for n in tail if lengths[n - 1] > config.max_line_bytes or bytes(data).split(b"\n")[n - 1].count(b"\r") > 9
    }
    assert tail - weak <= kept


def test_a_line_with_query_terms_paused_before_its_signature_is_judged_whole() -> None:
    # "failed with exit " has query terms but no signature yet; the pause split "exit code 3"
    # (exit-status): let out alone it was summarized, and its rest too (a fresh-user helper's
    # follow and daemon runs lost the line)
    sf = StreamFilter(FilterConfig(tail_lines=0))
    noise = b"".join(b"W1 L%05d info: compiling unit %d ok\n" % (i, i) for i in range(40))
    runs = sf.feed(noise + b"W1 L00040 step 40 failed with exit ") + sf.settle(partial=True)
    assert not any(r.rest for r in runs) and runs[-1].last_line == 40  # held: it waits for its end
    runs += sf.feed(b"code 3 in module_1\n" + noise) + sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    assert b"W1 L00040 step 40 failed with exit code 3 in module_1\n" in kept
    assert not any(r.rest for r in runs)


PYTEST_FAILURES = b"""collected 3 items
tests/t.py::test_a PASSED
tests/t.py::test_x FAILED
=================================== FAILURES ===================================
____________________________________ test_x ____________________________________
    def test_x():
        data = load()
>       assert data["qty"] == 3
E       KeyError: 'qty'
tests/t.py:7: KeyError
----------------------------- Captured stdout call -----------------------------
loading fixture from /srv/data.json
connected to db on attempt 2
=========================== short test summary info ============================
FAILED tests/t.py::test_x - KeyError: 'qty'
"""


def test_a_section_written_line_by_line_keeps_its_lines_to_its_stop() -> None:
    """pytest's FAILURES section written a line at a time, settled after each (follow of a slow
    writer): its head was applied with no line after it, so the test's name and source and its
    captured output were summarized (a fresh-user helper's find); the lines to come are the
    section's up to its stop, as when the section is read whole."""
    sf = StreamFilter(FilterConfig(tail_lines=0))
    noise = b"".join(b"post step %d ok\n" % i for i in range(40))
    runs: list[Run] = []
    for line in PYTEST_FAILURES.splitlines(keepends=True) + noise.splitlines(keepends=True):
        runs += sf.feed(line) + sf.settle(partial=True)
    runs += sf.flush()
    kept = b"".join(r.data for r in runs if r.decision == "keep")
    section = PYTEST_FAILURES[PYTEST_FAILURES.index(b"====") : PYTEST_FAILURES.index(b"=" * 27 + b" short")]
    assert section in kept and b"connected to db on attempt 2\n" in section
    assert b"post step 3 ok" not in kept


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(["ERROR: café failed ", "日本語 ", "naïve 🙂 ", "ok ", "\n", "  at é.f()\n"]), max_size=12
    ),
    st.lists(st.integers(min_value=1, max_value=200), max_size=10),
)
def test_a_line_let_out_at_pauses_is_never_cut_inside_a_character(pieces: list[str], cuts: list[int]) -> None:
    # follow let a kept line out at a pause in the middle of "é": its JSONL text and its rest's
    # each got U+FFFD (a fresh-user helper's find); the pieces now end on whole characters
    data = ("INFO start\n" + "".join(pieces)).encode()
    sf = StreamFilter(FilterConfig(tail_lines=0, query="failed"))
    runs: list[Run] = []
    at = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        runs += sf.feed(data[at:cut]) + sf.settle(partial=True)
        at = max(at, cut)
    runs += sf.flush()
    assert [r.start_byte for r in runs] == [0] + [r.end_byte for r in runs[:-1]] and runs[-1].end_byte == len(data)
    for r in runs:
        data[r.start_byte : r.end_byte].decode("utf-8")  # each run's bytes are whole characters
        assert r.decision == "drop" or r.data == data[r.start_byte : r.end_byte]


HELD = 300  # the cap of the tests below (``lines.HELD_LINE_BYTES``): a line past it is let out in pieces
LONG_PIECES = ["x" * 97, "é" * 40, "\r50% ", "ERROR: failed ", "ok ", "\n", "日本語 "]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(LONG_PIECES), st.integers(1, 12)), max_size=20),
    st.lists(st.integers(min_value=0, max_value=20_000), max_size=12),
    st.sampled_from(range(len(CONFIGS))),
)
def test_a_line_past_the_held_cap_is_let_out_in_pieces_at_the_same_bytes_however_chunked(
    parts: list[tuple[str, int]], cuts: list[int], which: int
) -> None:
    # a progress bar redrawn for an hour, with no newline, was held whole: memory grew with the stream
    data = b"INFO start\n" + "".join(piece * n for piece, n in parts).encode()
    config = replace(CONFIGS[which], max_line_bytes=64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "HELD_LINE_BYTES", HELD)
        whole = run_filter(data, [], config)
        assert run_filter(data, cuts, config) == whole
        # fed 7 bytes at a time: once a line reaches the cap, at most the cap's bytes (and the last
        # bytes of a character, and of the feed) are held
        sf, out = StreamFilter(config), 0
        for i in range(0, len(data), 7):
            out += sum(r.n_bytes for r in sf.feed(data[i : i + 7]))
            fed = i + len(data[i : i + 7])
            held_line = fed - (data.rfind(b"\n", 0, fed) + 1)
            assert held_line < HELD or fed - out < HELD + 10
    assert [r.start_byte for r in whole] == [0] + [r.end_byte for r in whole[:-1]] and whole[-1].end_byte == len(data)
    for r in whole:
        piece = data[r.start_byte : r.end_byte]
        piece.decode("utf-8")  # never cut inside a character
        assert r.decision == "drop" or r.data == piece
        assert not r.rest or len(piece) <= HELD  # a rest in pieces of the cap at most


def test_a_long_line_s_pieces_take_its_decision_on_its_first_bytes() -> None:
    # (judged on its first bytes as any line: a failure word in a later piece had kept that piece
    # and every one after it, a 24 MB progress bar printed under a budget, helper-81)
    start = len(b"INFO start\n")
    for line, decision in (
        (b"ERROR: disk failed " + b"y" * 2000 + b"\n", "keep"),
        (b"x" * 905 + b" ERROR: disk failed " + b"y" * 1096 + b"\n", "drop"),
    ):
        data = b"INFO start\n" + line + b"INFO done\n"
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lines, "HELD_LINE_BYTES", HELD)
            runs = run_filter(data, [], FilterConfig(max_line_bytes=64, tail_lines=0, head_lines=0))
        pieces = [r for r in runs if r.end_byte > start and r.start_byte < start + len(line)]
        # its first 300 bytes let out, then its rest in pieces of 300 bytes at most
        sizes = [min(r.end_byte, start + len(line)) - max(r.start_byte, start) for r in pieces]
        assert sizes == [300] * (len(line) // 300) + [len(line) % 300]
        assert [r.rest for r in pieces] == [False] + [True] * (len(pieces) - 1)
        assert all(r.first_line == r.last_line == 2 for r in pieces[1:])
        assert {r.decision for r in pieces} == {decision}


@pytest.mark.parametrize("chunk", [1 << 16, 7, 301])
def test_the_last_frame_of_a_progress_line_past_the_held_cap_is_judged_on_its_own(chunk: int) -> None:
    # what a terminal shows when the line ends: the bar's frames went with its first bytes' decision,
    # and "error: checksum mismatch" with them (helper-89); a CRLF ends no frame
    bar = "".join(f"\r[{'#' * (i // 10):<20}] {i}/200" for i in range(200)).encode()
    for last, kept in ((b"\rerror: checksum mismatch for artifact.tar.gz\r\n", True), (b"\rdone\n", False)):
        data = b"INFO start\n" + bar + last + b"INFO done\n"
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lines, "HELD_LINE_BYTES", HELD)
            config = FilterConfig(max_line_bytes=64, tail_lines=0, head_lines=0)
            runs = run_filter(data, list(range(chunk, len(data), chunk)), config)
        start, end = len(b"INFO start\n"), data.index(b"INFO done")
        line = [r for r in runs if r.end_byte > start and r.start_byte < end]
        assert len(line) > 2 and all(r.decision == "drop" for r in line[:-1])
        assert (line[-1].decision == "keep") is kept
        if kept:
            assert line[-1].data == last and line[-2].end_byte == line[-1].start_byte == data.index(last)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=12)), max_size=60).map(b"".join),
    st.sampled_from(range(len(CONFIGS))),
)
def test_a_jsonl_keep_event_gives_its_exact_bytes_back(data: bytes, which: int) -> None:
    # "text" replaces bytes that are not UTF-8; "data_base64" had not been there, so a JSONL reader (a
    # fleet's consumer) could not have them (helper-82)
    import base64

    from streamfilter.core.output import render

    for run in run_filter(data, [], CONFIGS[which]):
        if run.decision != "keep":
            continue
        event = json.loads(render(run, "jsonl", "s"))
        exact = base64.b64decode(event["data_base64"]) if "data_base64" in event else event["text"].encode()
        assert exact == data[run.start_byte : run.end_byte]
        assert ("data_base64" in event) == (event["text"].encode() != run.data)  # (only where text is not exact)
