"""``streamfilter follow`` in a subprocess against real files changed under it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from streamfilter.live.stream import HOLD_SECONDS
from tests.conftest import CASES, need
from tests.live.proc import Live


def kept_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["event"] == "keep")


def follow(tmp_path: Path, path: Path, *args: str) -> Live:
    live = Live(tmp_path, "follow", str(path), "--format", "jsonl", *args)
    live.log_event("daemon.ready")
    return live


def check_tiling(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Runs of each generation (split at end events) cover lines 1..n once, in order; return them."""
    generations: list[list[dict[str, Any]]] = [[]]
    for e in events:
        if e["event"] in ("keep", "drop"):
            generations[-1].append(e)
        elif e["event"] == "end":
            runs = generations[-1]
            expect = 1
            for run in runs:
                if run["first_line"] == expect - 1 == run["last_line"]:
                    continue  # the rest of a line let out while the file was quiet
                assert run["first_line"] == expect, runs
                expect = run["last_line"] + 1
            assert expect == e["lines"] + 1
            generations.append([])
    return generations[:-1]


def test_B16_follow_append_then_quiet_shows_the_error_record_without_a_successor(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(b"".join(b"INFO step %d ok\n" % i for i in range(60)))
    live = follow(tmp_path, log, "-q", "no space left")
    with log.open("ab") as f:
        f.write(b"ERROR writing artifact\n  caused by: no space left on device\n  at upload()\n")
    start = time.monotonic()
    live.wait_for(lambda: "no space left on device" in kept_text(live.events()), 5, "the error record")
    assert time.monotonic() - start < 2.0  # idle flush, not the end of the stream
    assert live.proc.poll() is None  # still following
    assert live.stop() == 0
    (gen,) = check_tiling(live.events())
    assert "ERROR writing artifact\n  caused by: no space left on device\n  at upload()\n" in kept_text(gen)


def test_a_kept_line_written_a_byte_at_a_time_is_a_few_runs_not_one_a_byte(tmp_path: Path) -> None:
    # its first bytes are let out at a pause (they hold a signature); the rest came out at every
    # pause after that, a JSONL event a byte (a fresh-user helper's find: 28 for one line); it now
    # comes at most once a second until the line's end
    log = tmp_path / "job.log"
    log.write_bytes(b"INFO start\n")
    live = follow(tmp_path, log, "--tail", "0")
    line = b"ERROR: upload failed after 3 retries\n"
    with log.open("ab", buffering=0) as f:
        for i in range(len(line)):
            f.write(line[i : i + 1])
            time.sleep(0.07)  # (longer than the idle time: a pause after every byte)
    live.wait_for(lambda: line.decode() in kept_text(live.events()), 10)
    assert live.stop() == 0
    # (line 1 waits, undecided, for what comes after it: the error line's context, it is kept with it)
    pieces = [e for e in live.events() if e["event"] == "keep" and e["last_line"] == 2]
    assert "".join(e["text"] for e in pieces) == "INFO start\n" + line.decode()
    assert 2 <= len(pieces) <= 6  # (the line took about 2.6 s)


def test_B06_unterminated_last_line_goes_out_once_and_its_newline_completes_it(tmp_path: Path) -> None:
    """B06 with its steps.sh: the ERROR record with an unterminated last line is one KEEP run while the
    writer is quiet; the late newline completes that line and adds no line of its own."""
    steps = need(CASES / "B06" / "steps.sh")
    subprocess.run(["sh", str(steps), str(tmp_path), "setup"], check=True)
    # (no prior: the line after the record, next to the query's line, may be the prior's, and this
    # is about the lines dropped after it)
    live = follow(tmp_path, tmp_path / "app.log", "-q", "capture declined", "--head", "0", "--tail", "0", "--no-prior")
    writer = subprocess.Popen(["sh", str(steps), str(tmp_path), "run"], env={**os.environ, "QUIET_S": "2"})
    try:
        live.wait_for(lambda: "capture declined" in kept_text(live.events()), 1.5)
        (record,) = [e for e in live.events() if e["event"] == "keep"]
        assert record["first_line"] == 1 and record["last_line"] == 3
        assert record["text"].endswith("    at step two: capture declined")
        assert writer.wait(10) == 0
        # (the dropped lines after it wait for what comes after them, HOLD_SECONDS at most)
        live.wait_for(
            lambda: any(e["event"] == "drop" and e["first_line"] == 4 for e in live.events()), HOLD_SECONDS + 5
        )
    finally:
        writer.kill()
    assert live.stop() == 0
    events = live.events()
    assert kept_text(events).count("capture declined") == 1
    (gen,) = check_tiling(events)
    rest = [e for e in gen if e["first_line"] == 3 == e["last_line"] and e["event"] == "keep"]
    assert rest[-1]["text"] == "\n"  # the newline that came 2 s later completes line 3


def test_B01_rename_rotation_is_one_stream_and_reads_the_old_file_to_its_end(tmp_path: Path) -> None:
    """B01: a line written just before the rename is read from the renamed file; numbering goes on."""
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "-q", "L070 L071 L072 L073")
    with log.open("ab") as f:
        f.write(b"L070 written before the idle period\n")
    time.sleep(1.5)  # longer than the idle flush and the quiet stat interval
    with log.open("ab") as f:
        f.write(b"L071 appended just before rotation\n")
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(b"L072 first line of the new app.log\n")
    time.sleep(0.5)
    with log.open("ab") as f:
        f.write(b"L073 second line of the new app.log, exit code 1")  # no newline: let out (a signature)
    live.wait_for(lambda: "L073" in kept_text(live.events()), 5)
    assert live.stop() == 0
    events = live.events()
    text = kept_text(events)
    for tag in ("L070", "L071", "L072", "L073"):
        assert text.count(tag) == 1
    assert text.index("L070") < text.index("L071") < text.index("L072") < text.index("L073")
    assert len(check_tiling(events)) == 1  # one stream: one end event
    assert any(e.get("event") == "file.rotated" for e in live.logs())


def test_lines_written_to_the_renamed_file_after_the_rotation_are_read_before_the_new_file(tmp_path: Path) -> None:
    """logrotate renames, the program reopens the path a moment later (SIGHUP): what it wrote to
    its open file in between (the renamed one) is read, before the new file, in order, once."""
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "--start-at", "beginning", "-q", "late failed finished", "--tail", "0")
    with log.open("ab", buffering=0) as old:
        old.write(b"".join(b"old %d\n" % i for i in range(100)))
        live.wait_for(lambda: sum(e["lines"] for e in live.events() if e["event"] == "drop") == 100, HOLD_SECONDS + 5)
        log.rename(tmp_path / "app.log.1")
        with log.open("ab", buffering=0) as new:
            for i in range(10):  # not reopened yet: it writes to the renamed file for over a second
                old.write(b"old-late %d ERROR: late failed %d\n" % (i, i))
                time.sleep(0.12)  # (longer than the quiet stat interval: the rotation is seen meanwhile)
            old.close()
            new.write(b"".join(b"new %d\n" % i for i in range(50)) + b"new last: all finished\n")
    live.wait_for(lambda: "all finished" in kept_text(live.events()), 15, "the new file's last line")
    assert live.stop() == 0
    events = live.events()
    (gen,) = check_tiling(events)  # one stream, lines 1..161 once each, in order
    assert gen[-1]["last_line"] == 161
    text = kept_text(events)
    for i in range(10):
        assert text.count(f"late failed {i}\n") <= 1  # (the repeat cap may drop some: none twice)
    late = [e for e in gen if e["first_line"] >= 101 and e["last_line"] <= 110]
    assert sum(e["lines"] for e in late) == 10 and "old-late 0 ERROR" in text  # read from the renamed file
    assert text.index("old-late 0") < text.index("new last")
    (rotated,) = [e for e in live.logs() if e.get("event") == "file.rotated"]
    assert rotated["late_bytes"] > 0


def test_a_path_rotated_several_times_a_second_loses_no_file(tmp_path: Path) -> None:
    """helper-50: each rotation waited for a second of quiet, one after the other, so a path renamed
    three times a second filled the queue of 8 and lost whole files ("file.replacement_skipped")."""
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "--start-at", "beginning", "--protect", ".")
    n = 0
    for k in range(24):  # a writer that rotates its own log every 20 lines, 4 times a second
        with log.open("ab", buffering=0) as f:
            for _ in range(20):
                f.write(b"line %d\n" % n)
                n += 1
                time.sleep(0.0125)
        log.rename(tmp_path / f"app.log.{k}")
    log.write_bytes(b"last line\n")
    live.wait_for(lambda: "last line" in kept_text(live.events()), 30, "the last file's line")
    assert live.stop() == 0
    text = kept_text(live.events())
    assert all(text.count(f"line {i}\n") == 1 for i in range(n)), [i for i in range(n) if f"line {i}\n" not in text]
    assert not [e for e in live.logs() if e.get("event") == "file.replacements_skipped"]


@pytest.mark.parametrize("how", ["truncate-shorter", "rewrite-same-size", "rewrite-grown"])
def test_truncation_and_rewrite_in_place_start_a_marked_new_generation(tmp_path: Path, how: str) -> None:
    log = tmp_path / "build.log"
    first = b"run 1 compiling\nrun 1 ERROR: build failed\n"
    log.write_bytes(first)
    live = follow(tmp_path, log, "-q", "build failed")
    live.wait_for(lambda: "run 1 ERROR" in kept_text(live.events()), 5)
    inode = log.stat().st_ino
    new = {
        "truncate-shorter": b"run 2 ERROR: build failed\n",
        "rewrite-same-size": b"run 2 compiling\nrun 2 ERROR: build failed\n",
        "rewrite-grown": b"run 2 compiling\nrun 2 ERROR: build failed\nrun 2 ERROR: build failed again\n",
    }[how]
    assert (len(new) < len(first)) == (how == "truncate-shorter")
    with log.open("r+b") as f:  # in place: same inode (like `cmd > build.log`)
        f.truncate(0)
        f.write(new)
    assert log.stat().st_ino == inode
    live.wait_for(lambda: "run 2 ERROR: build failed\n" in kept_text(live.events()), 5)
    assert live.stop() == 0
    events = live.events()
    markers = [e for e in events if e["event"] == "marker"]
    assert len(markers) == 1 and "reading it again from byte 0" in markers[0]["text"]
    old, fresh = check_tiling(events)
    # the new generation is kept whole: its failure, and "run 2 compiling" (no query term) as the tail
    # that filter keeps of these bytes, released by the failure line at the pause
    assert "run 2" not in kept_text(old) and kept_text(fresh) == new.decode()
    assert fresh[0]["first_line"] == 1 and fresh[0]["start_byte"] == 0
    assert any(e.get("event") in ("file.truncated", "file.rewritten") for e in live.logs())


@pytest.mark.parametrize("gap", [0.3, 0.0])
def test_B29_atomic_replaces_are_followed_every_line_once(tmp_path: Path, gap: float) -> None:
    """B29: the path is re-resolved after each replace (the watch is on the directory).

    With no pause, a generation can be replaced before anyone could open it (it lives a few
    milliseconds, then its inode is unreachable): what is read is still in order, once, and the
    last generation is whole.
    """
    log = tmp_path / "app.log"
    log.write_bytes(b"G0 initial content\n")
    live = follow(tmp_path, log, "-q", "G0 G1 G2 G3", "--head", "100")
    for g in (1, 2, 3):
        tmp = tmp_path / ".app.log.tmp"
        tmp.write_bytes(b"G%d replaced content line 1\nG%d replaced content line 2\n" % (g, g))
        os.replace(tmp, log)
        time.sleep(gap)
        with log.open("ab") as f:
            f.write(b"G%d appended after replace\n" % g)
        time.sleep(gap)
    live.wait_for(lambda: "G3 appended" in kept_text(live.events()), 10)
    assert live.stop() == 0
    lines = kept_text(live.events()).splitlines()
    what = ("replaced content line 1", "replaced content line 2", "appended after replace")
    expect = ["G0 initial content"] + [f"G{g} {w}" for g in (1, 2, 3) for w in what]
    if gap:
        assert lines == expect
    else:
        assert lines == [x for x in expect if x in lines] and lines[-3:] == expect[-3:]


def test_delete_and_recreate_continues_and_a_tiny_file_without_newline_is_shown(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    log.write_bytes(b"first life ERROR one\n")
    live = follow(tmp_path, log, "-q", "error")
    live.wait_for(lambda: "ERROR one" in kept_text(live.events()), 5)
    log.unlink()
    time.sleep(0.3)
    log.write_bytes(b"ERROR: second life two")  # one line, no newline (a signature: let out at a pause)
    live.wait_for(lambda: "second life two" in kept_text(live.events()), 5)
    assert live.stop() == 0
    (gen,) = check_tiling(live.events())
    assert kept_text(gen) == "first life ERROR one\nERROR: second life two"
    assert [e["event"] for e in live.logs() if e.get("event") in ("file.deleted", "file.renamed")] == ["file.deleted"]


def test_a_deleted_file_is_read_until_quiet_then_its_unterminated_last_line_is_ended(tmp_path: Path) -> None:
    """Deleted with no file made again: what its writer still writes meanwhile is read, then the
    last line (no newline, no query term: a live stream waits for its end) is decided and written."""
    log = tmp_path / "svc.log"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "-q", "failed", "--tail", "0")
    with log.open("ab", buffering=0) as out:
        out.write(b"x1\nERROR: zz failed\n")
        live.wait_for(lambda: "zz failed" in kept_text(live.events()), 5)
        log.unlink()
        live.log_event("file.deleted")
        out.write(b"written after the delete: yy failed\nunterminated tail here")
    live.wait_for(lambda: sum(e["lines"] for e in live.events() if e["event"] in ("keep", "drop")) == 4, 10)
    assert live.stop() == 0
    (gen,) = check_tiling(live.events())
    assert gen[-1]["last_line"] == 4
    assert "yy failed" in kept_text(gen)


def test_a_path_renamed_away_is_logged_as_renamed_with_its_new_name_and_read_on(tmp_path: Path) -> None:
    """logrotate's rename, with the new file a while later: not 'deleted'; the lines written to
    the renamed file meanwhile are read, then the new file's."""
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "-q", "failed")
    with log.open("ab", buffering=0) as old:
        old.write(b"before the rename\n")
        log.rename(tmp_path / "app.log.1")
        live.wait_for(lambda: any(e.get("event") == "file.renamed" for e in live.logs()), 5, "file.renamed")
        old.write(b"written to the renamed file: step failed\n")
    log.write_bytes(b"the new file: job failed\n")
    live.wait_for(lambda: "job failed" in kept_text(live.events()), 10, "the new file's line")
    assert live.stop() == 0
    (renamed,) = [e for e in live.logs() if e.get("event") == "file.renamed"]
    assert renamed["names"] == [str(tmp_path / "app.log.1")]
    assert not [e for e in live.logs() if e.get("event") == "file.deleted"]
    text = kept_text(live.events())
    assert text.index("step failed") < text.index("job failed")


def test_sigterm_decides_and_writes_everything_pending(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    lines = b"".join(b"INFO record %d fine\n" % i for i in range(3000)) + b"ERROR final verdict"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "-q", "verdict", "--idle-ms", "60000")
    log.write_bytes(lines)
    time.sleep(1.0)
    assert live.stop(signal.SIGTERM) == 0
    (gen,) = check_tiling(live.events())
    assert gen[-1]["event"] == "keep" and gen[-1]["text"].endswith("ERROR final verdict")
    assert sum(e["lines"] for e in gen) == 3001


def test_a_let_out_unterminated_line_does_not_run_into_the_rotated_files_first_line(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"".join(b"INFO compiling module %d ok\n" % i for i in range(10)))
    live = follow(tmp_path, log, "-q", "partial")
    with log.open("ab") as f:
        f.write(b"partial no newline, exit code 1")
    live.wait_for(lambda: "partial no newline" in json.dumps(live.events()), 5)  # let out while quiet: a signature
    log.rename(tmp_path / "a.log.1")
    log.write_bytes(b"".join(b"INFO compiling module %d ok\n" % i for i in range(5)) + b"ERROR: B failed\n")
    live.wait_for(lambda: "ERROR: B failed" in kept_text(live.events()), 5)
    assert live.stop() == 0
    (gen,) = check_tiling(live.events())
    assert not [e for e in gen if "rest of line" in e.get("summary", "")]
    assert gen[-1]["last_line"] == 17  # 10 lines, the unterminated one, then 6 from the new file
    assert all(e.get("ref") for e in gen if e["event"] == "drop")  # no run spans the two files


def test_in_text_a_kept_unterminated_last_line_ends_before_the_rotated_files_first_line(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"INFO start\nERROR: A failed (no newline)")
    live = Live(tmp_path, "follow", str(log), "--format", "text", "-q", "failed")
    live.log_event("daemon.ready")
    live.wait_for(lambda: b"(no newline)" in live.output(), 5)
    log.rename(tmp_path / "a.log.1")
    log.write_bytes(b"ERROR: B failed\n")
    live.wait_for(lambda: b"B failed" in live.output(), 5)
    assert live.stop() == 0
    assert b"ERROR: A failed (no newline)\nERROR: B failed\n" in live.output()


def test_a_proc_file_is_refused_not_read_as_truncated_again_and_again(tmp_path: Path) -> None:
    """Its size reads 0 whatever it holds: it was taken as truncated after every read (about
    100 markers a second). (`follow` refuses it at once; a daemon's file source logs it.)"""
    config = tmp_path / "sf.toml"
    config.write_text('[[source]]\nname = "p"\ntype = "file"\npath = "/proc/self/status"\nstart_at = "beginning"\n')
    live = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    refused = live.log_event("file.refused")
    assert "/proc or /sys" in refused["reason"]
    time.sleep(0.3)
    assert live.stop() == 0
    assert not [e for e in live.events() if e["event"] in ("keep", "drop", "marker")]


def test_a_missing_path_is_not_logged_as_found_until_it_is_opened(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    live = follow(tmp_path, log)
    assert live.log_event("file.missing")["path"] == str(log)  # said once: it is waited for
    time.sleep(0.3)
    assert not [e for e in live.logs() if e.get("event") == "file.found"]
    log.write_bytes(b"ERROR: it came\n")
    assert live.log_event("source.opened")["ino"] == log.stat().st_ino
    live.wait_for(lambda: "ERROR: it came" in kept_text(live.events()), 5)
    assert live.stop() == 0


def test_a_path_in_a_missing_directory_is_warned_about_and_still_waited_for(tmp_path: Path) -> None:
    log = tmp_path / "later" / "x.log"
    live = follow(tmp_path, log)
    assert live.log_event("source.directory_missing")["directory"] == str(tmp_path / "later")
    assert live.stop() == 0


def test_follow_ends_when_its_reader_goes_away(tmp_path: Path) -> None:
    """``follow FILE | head -2``: once standard output has no reader, follow stops (as ``tail -F``
    does), and does not read on until killed."""
    log = tmp_path / "h.log"
    log.write_bytes(b"".join(b"ERROR %d failed\n" % i for i in range(50)))
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "follow", str(log)], stdout=write, stderr=subprocess.PIPE
    )
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        assert reader.readline().startswith(b"ERROR 0 failed")
    # the reader is gone: the next write fails, and follow ends
    with log.open("ab") as f:
        f.write(b"".join(b"ERROR more %d failed\n" % i for i in range(2000)))
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert b'"sink.closed"' in err and b'"signal": "SIGPIPE"' in err


def test_refs_of_lines_read_before_a_rotation_name_the_file_they_are_in_now(tmp_path: Path) -> None:
    """Lines read from app.log, summarized after it was renamed app.log.1: the ref names app.log.1
    (it named app.log, the new file, and expand could not give them back)."""
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    live = follow(tmp_path, log, "-q", "failed")
    with log.open("ab") as f:
        f.write(b"".join(b"INFO line %d\n" % i for i in range(100)))
    time.sleep(0.5)
    log.rename(tmp_path / "app.log.1")
    with (tmp_path / "app.log.1").open("ab") as f:
        f.write(b"ERROR: step failed\n")  # ends the DROP run of the 100 lines, after the rename
    time.sleep(0.3)
    log.write_bytes(b"".join(b"INFO new %d\n" % i for i in range(5)))
    live.wait_for(lambda: any(e.get("event") == "file.rotated" for e in live.logs()), 10, "the rotation")
    assert live.stop() == 0
    refs = [e["ref"] for e in live.events() if e["event"] == "drop" and e.get("ref")]
    assert refs and refs[0].startswith(str(tmp_path / "app.log.1") + ":")
    for ref in refs:
        out = subprocess.run([sys.executable, "-m", "streamfilter", "expand", ref], capture_output=True, check=False)
        assert out.returncode == 0, out.stderr
    first = subprocess.run([sys.executable, "-m", "streamfilter", "expand", refs[0]], capture_output=True, check=True)
    # (lines 99-100 waited, undecided, for what came after it: the error line released them, and they
    # are kept as the found tail (3 lines, the error's among them) would the stream end there)
    assert first.stdout == b"".join(b"INFO line %d\n" % i for i in range(98))


def test_a_file_name_that_is_not_utf8_beside_the_followed_file_does_not_stop_it(tmp_path: Path) -> None:
    """watchfiles cannot decode such a name: its error ended follow (exit 1) and the lines after."""
    log = tmp_path / "app.log"
    log.write_bytes(b"a ok\n")
    live = follow(tmp_path, log, "-q", "failed")
    (tmp_path / os.fsdecode(b"z\xfe.txt")).write_bytes(b"junk\n")
    failed = live.log_event("source.watch_failed")
    assert "decode" in failed["error"]
    with log.open("ab") as f:
        f.write(b"ERROR: app failed\n")
    live.wait_for(lambda: "app failed" in kept_text(live.events()), 10, "the line after it")
    assert live.stop() == 0


def test_a_fifo_a_directory_or_a_proc_file_is_refused_at_once(tmp_path: Path) -> None:
    # a FIFO or /proc/self/status was refused as a file (file.refused) and follow then waited
    # forever, printing nothing (fresh-user helpers' finds); `filter` reads them
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, reason in (
        (fifo, "not a regular file (read it with `streamfilter filter`)"),
        (tmp_path, "Is a directory"),
        (
            Path("/proc/self/status"),
            "a /proc or /sys file, whose size is not known (read it with `streamfilter filter`)",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "streamfilter", "follow", str(path)], capture_output=True, timeout=60
        )
        assert done.returncode == 2 and done.stdout == b"", done.stderr
        assert done.stderr == f"streamfilter: error: cannot follow {path}: {reason}\n".encode()


# a failing pytest job's last lines, as a GitHub Actions runner writes them
FAILURE_TAIL = b"""tests/test_mod.py::test_parse FAILED                                   [ 97%]
tests/test_mod.py::test_render PASSED                                  [100%]

=================================== FAILURES ===================================
_________________________________ test_parse ___________________________________

    def test_parse():
        data = load("sample.txt")
>       assert parse(data) == {"a": 1}
E       AssertionError: assert {'a': 2} == {'a': 1}
E         Differing items:
E         {'a': 2} != {'a': 1}

tests/test_mod.py:12: AssertionError
=========================== short test summary info ============================
FAILED tests/test_mod.py::test_parse - AssertionError: assert {'a': 2} == {'a': 1}
========================= 1 failed, 41 passed in 0.52s =========================
Error: Process completed with exit code 1.
Post job cleanup.
Cleaning up orphan processes
"""


def append_and_compare(tmp_path: Path, head: bytes, lines: list[bytes], pause: float) -> tuple[set[int], set[int]]:
    """Follow a file holding ``head``, append ``lines`` one at a time with ``pause`` seconds after each
    (the last holds an exit verdict), stop with SIGINT; the lines follow kept and those filter keeps
    on the same bytes."""
    from streamfilter.core.filter import StreamFilter

    log = tmp_path / "job.log"
    log.write_bytes(head)
    live = follow(tmp_path, log)
    time.sleep(0.5)  # (the first lines read and settled)
    with log.open("ab", buffering=0) as f:
        for line in lines:
            f.write(line)
            time.sleep(pause)  # (longer than the idle time: a pause after every line)
    live.wait_for(lambda: "exit code 1" in live.output().decode(), 10, "the exit verdict")
    time.sleep(0.3)
    assert live.stop(signal.SIGINT) == 0
    (gen,) = check_tiling(live.events())
    followed = {n for e in gen if e["event"] == "keep" for n in range(e["first_line"], e["last_line"] + 1)}
    sf = StreamFilter()
    runs = sf.feed(head + b"".join(lines)) + sf.flush()
    filtered = {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    return followed, filtered


def test_issue30_a_failure_appended_a_line_at_a_time_keeps_what_filter_keeps(tmp_path: Path) -> None:
    """Issue 30, item 4: 20 lines appended one at a time, a pause after each, had 4 to 8 of them
    summarized that ``filter`` keeps on the same bytes (each pause decided the lines it held
    without the look-ahead ``filter`` has: the context before a later failure line, the tail)."""
    head = b"".join(b"tests/test_mod.py::test_case_%d PASSED [ %d%%]\n" % (i, 2 * i) for i in range(40))
    lines = FAILURE_TAIL.splitlines(keepends=True)
    assert len(lines) == 20
    followed, filtered = append_and_compare(tmp_path, head, lines, 0.15)
    assert filtered >= set(range(41, 61)) - {42, 43}  # (the failure is kept whole by filter)
    # (line 42, a passed test, is kept by filter as the window-mate of the FAILED line 41; a pause
    # closes a live stream's window, so there it starts a window of its own and is summarized)
    assert sorted(filtered - followed) in ([], [42])


def test_a_command_s_last_output_before_its_exit_verdict_is_kept_as_filter_keeps_it(tmp_path: Path) -> None:
    """Issue 30, item 4: a build's last lines, then make's error and the runner's exit verdict,
    appended a line at a time. ``filter`` keeps the lines before the verdict by the tail rule; a
    pause after make's line (kept) used to decide the lines waiting before it as dropped, before the
    verdict came: they are kept now, as the tail rule would keep them if the stream ended there."""
    head = b"".join(b"  CC       src/module_%d.o\n" % i for i in range(60))
    lines = [b"  CC       src/late_%d.o\n" % i for i in range(15)]
    lines += [b"  LD       lib/part_%d.so (%d symbols)\n" % (i, 100 + i) for i in range(10)]  # its last output
    lines += [b"make: *** [all] Error 2\n", b"Error: Process completed with exit code 1.\n", b"Post job cleanup.\n"]
    followed, filtered = append_and_compare(tmp_path, head, lines, 0.07)
    assert filtered >= set(range(76, 88))  # (the last output, make's line, the verdict, by the tail rule)
    assert sorted(filtered - followed) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_quiet_file_s_last_lines_wait_for_the_end_and_the_tail_rule(tmp_path: Path, sig: int) -> None:
    """helper-23: a harness's failure and verdict in no known wording, in its last 25 lines; a pause
    longer than ``HOLD_SECONDS`` used to decide them as dropped before the reader's Ctrl-C, so
    ``follow`` showed one summary where ``filter`` keeps them by the tail rule. They wait now."""
    log = tmp_path / "checks.log"
    lines = [b"check %d: ok\n" % i for i in range(1, 301)]
    lines += [b"check 301: mismatch in column total (got 17, want 18)\n"]
    lines += [b"check %d: ok\n" % i for i in range(302, 311)] + [b"Result: NOT OK (1 of 310 checks did not pass)\n"]
    log.write_bytes(b"")
    live = follow(tmp_path, log)
    log.write_bytes(b"".join(lines))
    live.wait_for(lambda: live.events(), 10, "the first summary")
    time.sleep(HOLD_SECONDS + 1)
    assert "mismatch" not in json.dumps(live.events())  # (waiting: not decided, nor written)
    assert live.stop(sig) == 0
    assert len(check_tiling(live.events())) == 1  # (every line once)
    kept = kept_text(live.events())
    assert "check 301: mismatch in column total" in kept and kept.endswith("did not pass)\n"), kept
    done = subprocess.run(
        [sys.executable, "-m", "streamfilter", "filter", "--format", "jsonl", str(log)],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert kept_text([json.loads(x) for x in done.stdout.splitlines()]) == kept
