"""The tail rule: the last T lines are kept up to the first that reports a non-zero exit (the last
found_tail_lines once a failure was found, by a signature or the prior); a short last DROP run
joins the KEEP run before it. And what a window kept for its score alone keeps: its query-term
lines and the continuation lines after them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.core import hits
from streamfilter.core.filter import FilterConfig, Run, StreamFilter

NOISE = b"".join(b"Downloading artifact %d of 400 from cache\n" % i for i in range(400))
BEFORE = b"".join(b"checking module %d\n" % i for i in range(10))
VERDICT = b'The command "make test" exited with 2.\n'
CLEANUP = b"".join(b"uploading cache part %d of 12\n" % i for i in range(12))


def runs_of(data: bytes, chunk: int = 1 << 20, query: str = "nothing", **settings: object) -> list[Run]:
    sf = StreamFilter(FilterConfig(query=query, **settings))  # type: ignore[arg-type]
    runs: list[Run] = []
    for i in range(0, len(data), chunk):
        runs += sf.feed(data[i : i + chunk])
    return runs + sf.flush()


def kept(runs: list[Run]) -> bytes:
    return b"".join(r.data for r in runs if r.decision == "keep")


def test_the_tail_ends_at_the_first_exit_verdict_in_it() -> None:
    data = NOISE + BEFORE + VERDICT + CLEANUP
    runs = runs_of(data, tail_lines=25)
    assert BEFORE + VERDICT in kept(runs)  # the 10 lines before it are tail lines too
    # the cleanup after the verdict's window (a signature keeps its window) is summarized, but for
    # the stream's last 2 lines
    drop, last = runs[-2:]
    assert drop.decision == "drop" and drop.last_line == 421 and drop.first_line > 412
    assert last.decision == "keep" and kept(runs).endswith(
        b"uploading cache part 10 of 12\nuploading cache part 11 of 12\n"
    )
    assert b"uploading cache part 9" not in kept(runs)
    assert sum(r.last_line - r.first_line + 1 for r in runs) == 423
    assert runs_of(data, chunk=7, tail_lines=25) == runs


def test_without_a_verdict_the_whole_tail_is_kept() -> None:
    data = NOISE + BEFORE + b"make: leaving directory\n" + CLEANUP
    assert kept(runs_of(data, tail_lines=25)).endswith(BEFORE + b"make: leaving directory\n" + CLEANUP)


def test_a_zero_exit_or_a_retry_is_no_verdict() -> None:
    for line in (b'The command "make test" exited with 0.\n', b'The command "make" failed. Retrying, 2 of 3.\n'):
        data = NOISE + BEFORE + line + CLEANUP
        assert kept(runs_of(data, tail_lines=25)).endswith(CLEANUP), line


def test_explain_names_tail_lines_up_to_the_verdict_only() -> None:
    data = NOISE + BEFORE + VERDICT + CLEANUP
    runs = runs_of(data, tail_lines=25, explain=True)
    tail = [t for r in runs if r.decision == "keep" for t in r.traces if t.reason == "tail"]
    # up to the verdict (line 411), and the stream's last 2 lines (422-423), not the cleanup between
    assert (
        tail and max(t.last_line for t in tail[:-1]) <= 411 and (tail[-1].first_line, tail[-1].last_line) == (422, 423)
    )
    assert all(t.reason != "tail" for t in runs[-2].traces)


def test_a_short_last_drop_run_joins_the_keep_run_before_it() -> None:
    # the blank line after a kept failure (it starts a window of its own): a summary would be longer
    data = NOISE + BEFORE + VERDICT + b"\n"
    runs = runs_of(data, tail_lines=0)
    assert runs[-1].decision == "keep" and runs[-1].data.endswith(VERDICT + b"\n")
    assert (runs[-1].last_line, runs[-1].end_byte) == (412, len(data))


FAILURE = b"ERROR: could not open config.yaml\n"
TAIL = b"".join(b"finishing step %d\n" % i for i in range(30))


def test_once_a_failure_is_found_the_tail_is_the_found_tail() -> None:
    # the failure a signature keeps came first: the tail need only show how the run ended
    runs = runs_of(NOISE + FAILURE + NOISE + TAIL, tail_lines=25, found_tail_lines=10)
    out = kept(runs)
    assert FAILURE in out
    assert out.endswith(b"".join(b"finishing step %d\n" % i for i in range(20, 30)))
    assert b"finishing step 19\n" not in out
    assert sum(r.last_line - r.first_line + 1 for r in runs) == 831
    assert runs_of(NOISE + FAILURE + NOISE + TAIL, chunk=13, tail_lines=25, found_tail_lines=10) == runs


def test_the_tail_is_the_lines_up_to_the_verdict_not_the_cleanup_after_it() -> None:
    data = NOISE + BEFORE + VERDICT + CLEANUP
    out = kept(runs_of(data, tail_lines=25))
    # the 24 lines before the verdict (14 of NOISE's), not the 12 of cleanup after it
    assert b"Downloading artifact 386 of 400" in out and b"Downloading artifact 385 of 400" not in out
    found = kept(runs_of(NOISE + FAILURE + NOISE + BEFORE + VERDICT + CLEANUP, tail_lines=25, found_tail_lines=5))
    # found: the 5 lines up to the verdict (its window is kept too, as a signature's), not the last 5
    assert b"".join(b"checking module %d\n" % i for i in range(6, 10)) + VERDICT in found
    assert b"uploading cache part 9" not in found


def test_the_last_lines_after_a_retried_commands_verdict_are_kept() -> None:
    # "exited with 1, retrying" in the last lines: the tail ends there, but the run's last words stay
    retry = b"attempt 1: uploader exited with 1, retrying in 2s\n"
    end = b"uploader: server replied 'quota reached'\nattempt 2: giving up\n"
    out = kept(runs_of(NOISE + retry + CLEANUP + end, tail_lines=25))
    assert retry in out and out.endswith(end)
    assert b"uploading cache part 11\n" not in out
    explained = runs_of(NOISE + retry + CLEANUP + end, tail_lines=25, explain=True)
    assert explained[-1].decision == "keep" and explained[-1].traces[-1].reason == "tail"


@pytest.mark.parametrize(
    "line",
    [
        b"rm: cannot remove 'build/x': No such file or directory\n",
        b"fatal: No names found, cannot describe anything.\n",
    ],
)
def test_a_message_a_script_gets_past_is_no_failure_found(line: bytes) -> None:
    # kept, but the whole tail stays: the run's real failure may be in a format no signature knows
    out = kept(runs_of(NOISE + line + NOISE + TAIL, tail_lines=25, found_tail_lines=5))
    assert line in out and out.endswith(b"".join(b"finishing step %d\n" % i for i in range(5, 30)))


def test_a_passed_check_named_for_an_exit_code_is_no_verdict() -> None:
    # in the last 25 lines, before the run's real failure and the 2 last lines
    check = b"check 41: cli returns exit code 2 for a missing file ... ok\n"
    end = b"coverage: 71.3% of statements (required: 80.0%)\n" + b"checks done\nbye\n"
    out = kept(runs_of(NOISE + check + TAIL[: TAIL.index(b"finishing step 15")] + end, tail_lines=25))
    assert out.endswith(check + TAIL[: TAIL.index(b"finishing step 15")] + end)


def test_a_protect_pattern_is_no_failure_found() -> None:
    line = b"Build started for release 4.2\n"
    out = kept(runs_of(line + NOISE + TAIL, tail_lines=25, found_tail_lines=5, protect=("^Build started",)))
    assert out.startswith(line) and out.endswith(b"".join(b"finishing step %d\n" % i for i in range(5, 30)))


def test_an_exit_verdict_alone_is_no_failure_found() -> None:
    # "exited with 2" says that a command failed, not what: the whole tail stays the safety net
    data = NOISE + VERDICT + NOISE + TAIL
    out = kept(runs_of(data, tail_lines=25, found_tail_lines=10))
    assert out.endswith(b"".join(b"finishing step %d\n" % i for i in range(5, 30)))
    assert b"finishing step 4\n" not in out


# the shipped prior rates the first line 0.994 here, the exception's 0.832 (neither known to the signatures, off)
MODULE_ERROR = (
    b"Error: Cannot find module 'left-pad'\n"
    b"    at Function.Module._resolveFilename (module.js:538:15)\n"
    b"    at Function.Module._load (module.js:468:25)\n"
    b"npm ERR! Test failed.  See above for more details.\n"
)
EXCEPTION = b"java.lang.IllegalStateException: pool closed\n\tat com.example.Pool.get(Pool.java:42)\n"


def test_a_line_the_prior_is_sure_of_is_a_failure_found() -> None:
    # rated at PRIOR_SURE or more: the tail need only show how the run ended, as after a signature's
    runs = runs_of(NOISE + MODULE_ERROR + TAIL, signatures=False, tail_lines=25, found_tail_lines=3)
    out = kept(runs)
    assert b"Error: Cannot find module 'left-pad'\n" in out
    assert out.endswith(b"finishing step 27\nfinishing step 28\nfinishing step 29\n")
    assert b"finishing step 26\n" not in out and b"finishing step 10\n" not in out
    assert sum(r.lines for r in runs) == 434
    assert runs_of(NOISE + MODULE_ERROR + TAIL, chunk=13, signatures=False, tail_lines=25, found_tail_lines=3) == runs
    # a line rated under it, or no prior: the whole tail stays the safety net
    whole = b"".join(b"finishing step %d\n" % i for i in range(5, 30))
    assert kept(runs_of(NOISE + EXCEPTION + TAIL, signatures=False, tail_lines=25, found_tail_lines=3)).endswith(whole)
    unrated = kept(
        runs_of(NOISE + MODULE_ERROR + TAIL, signatures=False, prior=False, tail_lines=25, found_tail_lines=3)
    )
    assert unrated.endswith(whole)


SCORE_NOISE = b"".join(b"compiling unit %d of 300 in module core\n" % i for i in range(300))
# one dense window: the query's term in its 4th line, a continuation under it
WINDOW = (
    b"reading cache index\n"
    b"resolving dependency graph\n"
    b"checking lockfile\n"
    b"upload timeout while sending artifact bundle\n"
    b"    retry 1 of 3 scheduled\n"
    b"writing summary report\n"
)


def test_a_scored_window_keeps_its_term_line_and_the_continuation_after_it() -> None:
    # (what the score keeps alone: the learned prior may keep lines of its own)
    runs = runs_of(SCORE_NOISE + b"\n" + WINDOW + b"\n" + SCORE_NOISE, query="timeout", tail_lines=0, prior=False)
    assert kept(runs) == b"upload timeout while sending artifact bundle\n    retry 1 of 3 scheduled\n"
    # the window's other lines are in the DROP runs around it, counted, not lost
    assert sum(r.lines for r in runs) == 300 + 1 + 6 + 1 + 300
    drops = [r for r in runs if r.decision == "drop"]
    assert drops[0].last_line == 300 + 1 + 3 and drops[1].first_line == 300 + 1 + 6
    # explained: the window is "score" where kept, "no-term" where its other lines are dropped
    explained = runs_of(
        SCORE_NOISE + b"\n" + WINDOW + b"\n" + SCORE_NOISE, query="timeout", tail_lines=0, prior=False, explain=True
    )
    window = [(r.decision, t.reason) for r in explained for t in r.traces if t.last_line >= 302 and t.first_line <= 307]
    assert window == [("drop", "no-term"), ("keep", "score"), ("drop", "no-term")]


def test_an_indented_term_line_keeps_the_line_it_continues() -> None:
    window = WINDOW.replace(b"upload timeout while sending artifact bundle\n", b"upload of artifact bundle\n")
    window = window.replace(b"    retry 1 of 3 scheduled\n", b"    gave up after a timeout\n")
    runs = runs_of(SCORE_NOISE + b"\n" + window + b"\n" + SCORE_NOISE, query="timeout", tail_lines=0)
    assert kept(runs) == b"upload of artifact bundle\n    gave up after a timeout\n"


PROSE = b"Allow some information gathering to give useful error messages\n"
FAILURES = b"".join(b"\nstep %d: upload error, server said %d\n" % (i, 500 + i) for i in range(6))


def test_an_early_term_in_prose_is_cut_with_the_windows_that_come_later() -> None:
    # the query's term in a setup line, then the real failures 100 windows on: the first is cut by them
    out = kept(runs_of(PROSE + SCORE_NOISE + FAILURES + SCORE_NOISE, query="error", tail_lines=0))
    assert PROSE not in out and b"step 0: upload error, server said 500\n" in out
    # a term that stays rare: every window with it is kept (two of them here)
    out = kept(runs_of(PROSE + SCORE_NOISE + FAILURES[:60] + SCORE_NOISE, query="error", tail_lines=0))
    assert PROSE in out and b"step 0: upload error" in out


def test_a_window_with_a_failure_signature_keeps_all_its_lines() -> None:
    failing = WINDOW.replace(b"checking lockfile\n", b"Traceback (most recent call last):\n")
    out = kept(runs_of(SCORE_NOISE + b"\n" + failing + b"\n" + SCORE_NOISE, query="timeout", tail_lines=0))
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
    whole = runs_of(data, query="timeout", tail_lines=0)
    assert runs_of(data, chunk=chunk, query="timeout", tail_lines=0) == whole
    assert b"".join(r.data for r in whole if r.decision == "keep") == kept(whole)
    assert sum(r.lines for r in whole) == len(lines)


def live_kept(data: bytes, decided: int, **settings: object) -> set[int]:
    """Lines kept when the first ``decided`` lines come at once and are decided, then the rest a line at
    a time, each followed by a live settle (``decide_before``: none of them decided for their age)."""
    sf = StreamFilter(FilterConfig(query="nothing", **settings))  # type: ignore[arg-type]
    lines = data.splitlines(keepends=True)
    runs = sf.feed(b"".join(lines[:decided])) + sf.settle(partial=True, decide_before=decided)
    for line in lines[decided:]:
        runs += sf.feed(line) + sf.settle(partial=True, decide_before=decided)
    runs += sf.flush()
    return {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}


def batch_kept(data: bytes, **settings: object) -> set[int]:
    return {n for r in runs_of(data, **settings) if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}


def test_a_live_settle_keeps_the_tail_before_a_kept_line_as_if_the_stream_ended_there() -> None:
    # make's line (kept) comes a pause before the runner's verdict: the lines before it are the tail
    noise = b"".join(NOISE.splitlines(keepends=True)[:40])
    make = b"make: *** [all] Error 2\n"
    data = noise + BEFORE + make + VERDICT + CLEANUP
    filtered = batch_kept(data, tail_lines=25)
    assert filtered >= set(range(28, 53))  # the 25 lines up to the verdict (line 52)
    # (before, they were decided when make's line was kept, and dropped)
    assert filtered - live_kept(data, 20, tail_lines=25) == set()
    # once a failure was found, the found tail's T lines before each kept line (the error's window is
    # a pause's in a live stream: line 41 alone)
    found = noise + b"src/a.c:3:1: error: expected ';'\n" + BEFORE + make + VERDICT
    assert set(range(49, 54)) <= batch_kept(found, tail_lines=25, found_tail_lines=5)
    assert live_kept(found, 20, tail_lines=25, found_tail_lines=5) == {*range(37, 42), *range(48, 54)}
    assert live_kept(data, 20, tail_lines=0) == {50, 51, 52}  # (make's line with its context, the verdict)


ROWS = [b"row %d loaded fine from shard %d\n" % (i, i % 13) for i in range(600)]
FATAL_ROWS = b"".join(ROWS[:300]) + b"FATAL: shard 7 checksum mismatch\n" + b"".join(ROWS[300:])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 330), max_size=3))
def test_a_run_s_pauses_do_not_move_the_windows_a_failure_keeps(pauses: list[int]) -> None:
    """helper-77: a run under CPU load paused where its command was only descheduled, and each such
    pause closed the open window: the windows after it fell elsewhere, and the failure's window,
    kept whole, took other lines around it (7 outputs of one command's bytes in 10 runs). A pause
    whose held lines (``hold_lines``, the tail a run keeps for its end) take the open window in
    leaves it open."""
    lines = FATAL_ROWS.splitlines(keepends=True)
    plain = runs_of(FATAL_ROWS, query=FilterConfig().query)
    sf = StreamFilter(FilterConfig())
    runs: list[Run] = []
    at = 0
    for line in sorted(set(pauses)):
        runs += sf.feed(b"".join(lines[at:line])) + sf.settle(hold_lines=25, close_drop=False)
        at = line
    runs += sf.feed(b"".join(lines[at:])) + sf.flush()
    assert b"FATAL: shard 7" in kept(plain)
    # (the same lines; a pause may end a KEEP run where the next one goes on)
    assert kept(runs) == kept(plain)


def test_a_verdict_or_a_signature_s_line_is_no_line_the_prior_is_sure_of(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prior rates make's "*** [all] Error 2" 0.965 and a runner's exit verdict 0.980: at a sure
    line of 0.95 (measured in session 48) they shortened the tail to its found length, and the build's
    last output before them went. A verdict, or a line a signature took (which says itself whether
    it shows what failed), does not make the prior sure."""
    monkeypatch.setattr(hits, "PRIOR_SURE", 0.95)
    build = b"".join(b"  CC       src/module_%d.o\n" % i for i in range(75))
    build += b"".join(b"  LD       lib/part_%d.so (%d symbols)\n" % (i, 100 + i) for i in range(10))
    end = b"make: *** [all] Error 2\nError: Process completed with exit code 1.\nPost job cleanup.\n"
    out = kept(runs_of(build + end, query=FilterConfig().query))
    assert out.endswith(b"".join(b"  LD       lib/part_%d.so (%d symbols)\n" % (i, 100 + i) for i in range(10)) + end)
