"""The tail rule: the last T lines are kept up to the first that reports a non-zero exit; a short
last DROP run joins the KEEP run before it."""

from __future__ import annotations

from streamfilter.filter import FilterConfig, Run, StreamFilter

NOISE = b"".join(b"Downloading artifact %d of 400 from cache\n" % i for i in range(400))
BEFORE = b"".join(b"checking module %d\n" % i for i in range(10))
VERDICT = b'The command "make test" exited with 2.\n'
CLEANUP = b"".join(b"uploading cache part %d of 12\n" % i for i in range(12))


def runs_of(data: bytes, chunk: int = 1 << 20, **settings: object) -> list[Run]:
    sf = StreamFilter(FilterConfig(query="nothing", **settings))  # type: ignore[arg-type]
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
    # the cleanup after the verdict's window (a signature keeps its window) is summarized
    last = runs[-1]
    assert last.decision == "drop" and last.last_line == 423 and last.first_line > 412
    assert b"uploading cache part 11" not in kept(runs)
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
    assert tail and max(t.last_line for t in tail) <= 411
    assert all(t.reason != "tail" for t in runs[-1].traces)


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


def test_an_exit_verdict_alone_is_no_failure_found() -> None:
    # "exited with 2" says that a command failed, not what: the whole tail stays the safety net
    data = NOISE + VERDICT + NOISE + TAIL
    out = kept(runs_of(data, tail_lines=25, found_tail_lines=10))
    assert out.endswith(b"".join(b"finishing step %d\n" % i for i in range(5, 30)))
    assert b"finishing step 4\n" not in out
