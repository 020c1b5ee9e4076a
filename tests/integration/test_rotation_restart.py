"""A daemon restarted after its file was rotated while it was down: every line once, across both lives."""

from __future__ import annotations

import gzip
import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_daemon import file_to_jsonl, glob_to_jsonl, kept, runs, start


def lines(generation: str, first: int, count: int) -> bytes:
    """``count`` numbered lines of a generation, each one unique (``gen2 0007``)."""
    return b"".join(b"%s %04d\n" % (generation.encode(), i) for i in range(first, first + count))


def test_a_file_rotated_twice_while_down_has_every_generation_read_once_oldest_first(tmp_path: Path) -> None:
    """Down (killed): gen1 got more lines and became app.log.1, gen2 was written to app.log, then
    app.log.1 -> app.log.2, app.log -> app.log.1 and gen3 to app.log. The rest of gen1 was read, then
    gen3: gen2, with its failure line, was never read (a fresh user's find: 1,608 of 9,000 lines lost)."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'protect = ["gen"]\ntail_lines = 0\n')
    log.write_bytes(lines("gen1", 0, 50))
    live = start(tmp_path, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 50, 10)
    time.sleep(0.3)  # (the checkpoint after the write)
    live.stop(signal.SIGKILL)
    with log.open("ab") as f:
        f.write(lines("gen1", 50, 10))
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(lines("gen2", 0, 20) + b"gen2 ERROR: the failure in the middle generation\n")
    (tmp_path / "app.log.1").rename(tmp_path / "app.log.2")
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(lines("gen3", 0, 30))
    second = start(tmp_path, body)
    second.wait_for(lambda: "gen3 0029" in kept(second.events(out)), 15)
    assert second.stop() == 0
    text = kept(second.events(out))
    every = [*lines("gen1", 0, 60).decode().splitlines(), *lines("gen2", 0, 20).decode().splitlines()]
    every += ["gen2 ERROR: the failure in the middle generation", *lines("gen3", 0, 30).decode().splitlines()]
    assert [line for line in every if text.count(line + "\n") != 1] == []
    assert text.index("gen1 0059") < text.index("gen2 0000") < text.index("gen2 ERROR") < text.index("gen3 0000")
    numbered = sorted((e["first_line"], e["last_line"]) for e in runs(second.events(out)))
    assert numbered[0][0] == 1 and numbered[-1][1] == 111  # one stream: 60 + 21 + 30 lines, each once
    for (_, last), (first, _) in itertools.pairwise(numbered):
        assert first == last + 1
    queued = [e["file"] for e in second.logs() if e.get("event") == "checkpoint.rotated_file"]
    assert queued == [str(tmp_path / "app.log.2"), str(tmp_path / "app.log.1")]


def test_compressed_and_older_generations_are_not_read_and_equal_times_go_by_number(tmp_path: Path) -> None:
    """Later generations are the path's rotated names modified after the checkpointed file (by
    number when the times are equal): a compressed one is warned of as not read, an older one
    (there before the checkpoint) is not read again."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'protect = ["gen"]\ntail_lines = 0\n')
    older = tmp_path / "app.log.4"
    older.write_bytes(lines("gen0", 0, 5))
    log.write_bytes(lines("gen1", 0, 5))
    live = start(tmp_path, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 5, 10)
    assert live.stop() == 0
    with log.open("ab") as f:
        f.write(lines("gen1", 5, 5))
    log.rename(tmp_path / "app.log.3")
    (tmp_path / "app.log.2.gz").write_bytes(gzip.compress(lines("gen2", 0, 5)))
    (tmp_path / "app.log.1").write_bytes(gzip.compress(lines("gen3", 0, 5)))  # (compressed, by its bytes)
    (tmp_path / "app.log-20261206").write_bytes(lines("gen4", 0, 5))  # (a date: newer than .1 at an equal time)
    log.write_bytes(lines("gen5", 0, 5))
    same = time.time_ns()
    for name in ("app.log.4", "app.log.3", "app.log.2.gz", "app.log.1", "app.log-20261206"):
        os.utime(tmp_path / name, ns=(same, same))
    second = start(tmp_path, body)
    second.wait_for(lambda: "gen5 0004" in kept(second.events(out)), 15)
    assert second.stop() == 0
    logs = second.logs()
    assert [e["file"] for e in logs if e.get("event") == "checkpoint.rotated_file"] == [
        str(tmp_path / "app.log.3"),
        str(tmp_path / "app.log-20261206"),
    ]
    (skipped,) = [e for e in logs if e.get("event") == "checkpoint.rotated_compressed"]
    assert skipped["files"] == [str(tmp_path / "app.log.2.gz"), str(tmp_path / "app.log.1")]
    assert skipped["level"] == "warning"
    text = kept(second.events(out))
    assert "gen0" not in text
    expected = [*lines("gen1", 0, 10).decode().splitlines(), *lines("gen4", 0, 5).decode().splitlines()]
    expected += lines("gen5", 0, 5).decode().splitlines()
    assert [line for line in expected if text.count(line + "\n") != 1] == []
    assert text.index("gen1 0009") < text.index("gen4 0000") < text.index("gen5 0000")


@pytest.mark.parametrize("start_at", ["beginning", "end"])
def test_a_glob_resumes_a_file_rotated_while_down_to_a_name_it_also_matches(tmp_path: Path, start_at: str) -> None:
    """``logs/*.log``, app.log renamed to app.1.log while the daemon was down: app.1.log was read
    from byte 0 (``start_at = "beginning"``: its first lines twice) or from its end (``"end"``: the
    lines written while down lost), as a file without a checkpoint; it goes on from app.log's."""
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    log = logs / "app.log"
    body = glob_to_jsonl(logs, out, f'start_at = "{start_at}"\nprotect = ["gen"]\ntail_lines = 0\n')
    log.write_bytes(b"")
    live = start(tmp_path, body)
    live.log_event("source.opened")
    with log.open("ab") as f:
        f.write(lines("gen1", 0, 30))
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 30, 10)
    assert live.stop() == 0
    with log.open("ab") as f:
        f.write(lines("gen1", 30, 20))
    log.rename(logs / "app.1.log")
    log.write_bytes(lines("gen2", 0, 25))
    second = start(tmp_path, body)
    second.wait_for(lambda: "gen2 0024" in kept(second.events(out)) and "gen1 0049" in kept(second.events(out)), 15)
    time.sleep(1.5)  # (a rescan, and any late read of app.1.log from its start)
    assert second.stop() == 0
    events = second.events(out)
    text = kept(events)
    expected = [*lines("gen1", 0, 50).decode().splitlines(), *lines("gen2", 0, 25).decode().splitlines()]
    assert [line for line in expected if text.count(line + "\n") != 1] == []
    # app.1.log's stream goes on with app.log's line numbers, from the checkpoint's offset
    (resumed,) = [e for e in second.logs() if e.get("event") == "checkpoint.resumed"]
    assert resumed["path"] == str(logs / "app.1.log") and resumed["rotated_from"] == str(log)
    assert resumed["line"] == 31
    assert [(e["first_line"], e["last_line"]) for e in runs(events, f"ci:{logs}/app.1.log")] == [(31, 50)]


def test_a_file_made_while_the_daemon_was_down_is_read_from_its_start_whatever_start_at(tmp_path: Path) -> None:
    """helper-73: with ``start_at = "end"`` (the default, and the shipped systemd config's), a job's
    log made while the daemon restarted was read from its end: its 44 lines, the compiler's error
    among them, were in no output and no summary. start_at is for a source's first start; a file
    present then is still read from its end."""
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    body = glob_to_jsonl(logs, out, 'start_at = "end"\nprotect = ["gen"]\ntail_lines = 0\n')
    (logs / "old.log").write_bytes(lines("gen0", 0, 10))  # (there at the first start: not replayed)
    (logs / "job-1.log").write_bytes(b"")
    live = start(tmp_path, body)
    live.log_event("source.opened")
    with (logs / "job-1.log").open("ab") as f:
        f.write(lines("gen1", 0, 5))
    live.wait_for(lambda: "gen1 0004" in kept(live.events(out)), 10)
    time.sleep(0.3)  # (the checkpoint after the write)
    live.stop(signal.SIGKILL)
    (logs / "job-2.log").write_bytes(lines("gen2", 0, 20) + b"gen2 error: 'undefined_var' undeclared\n")
    second = start(tmp_path, body)
    second.wait_for(lambda: "gen2 error" in kept(second.events(out)), 15)
    with (logs / "job-2.log").open("ab") as f:
        f.write(lines("gen2", 20, 1))
    second.wait_for(lambda: "gen2 0020" in kept(second.events(out)), 15)
    assert second.stop() == 0
    events = second.events(out)
    text = kept(events)
    expected = [*lines("gen2", 0, 20).decode().splitlines(), "gen2 error: 'undefined_var' undeclared", "gen2 0020"]
    assert [line for line in expected if text.count(line + "\n") != 1] == []
    assert "gen0" not in text and text.count("gen1 0000") == 1  # (job-1.log resumed, old.log never replayed)
    assert runs(events, f"ci:{logs}/job-2.log")[0]["first_line"] == 1


def ten_lines_read(tmp: Path) -> tuple[Path, Path, str]:
    """``app.log``'s 10 ``gen1`` lines read by a daemon now stopped: the file, the JSONL output and
    the config (every line kept, no tail)."""
    log, out = tmp / "app.log", tmp / "out.jsonl"
    body = file_to_jsonl(log, out, 'protect = ["gen"]\ntail_lines = 0\n')
    log.write_bytes(lines("gen1", 0, 10))
    live = start(tmp, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 10, 10)
    assert live.stop() == 0
    return log, out, body


def test_a_file_moved_to_another_folder_while_down_is_warned_of(tmp_path: Path) -> None:
    """helper-73: logrotate's ``olddir`` moved app.log to old/ while the daemon was down, after more
    lines were written to it: those lines were never read, and the only trace was checkpoint.stale
    at info. It is a warning now; a rotation in the folder (read, not lost) is not."""
    log, out, body = ten_lines_read(tmp_path)
    with log.open("ab") as f:
        f.write(b"gen1 ZeroDivisionError: division by zero\n")
    (tmp_path / "old").mkdir()
    log.rename(tmp_path / "old" / "app.log-20261206")
    log.write_bytes(lines("gen2", 0, 5))
    second = start(tmp_path, body)
    second.wait_for(lambda: "gen2 0004" in kept(second.events(out)), 15)
    assert second.stop() == 0
    (stale,) = [e for e in second.logs() if e.get("event") == "checkpoint.stale"]
    assert stale["level"] == "warning" and stale["offset"] == len(lines("gen1", 0, 10)) and "not read" in stale["hint"]
    # and the output says so where its lines start again at line 1 (helper-94)
    (marker,) = [e for e in second.events(out) if e["event"] == "marker"]
    assert marker["offset"] == len(lines("gen1", 0, 10)) and "(line 11), was rotated or removed" in marker["text"]
    # a rotation in the folder is read: no warning
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(lines("gen3", 0, 5))
    third = start(tmp_path, body)
    third.wait_for(lambda: "gen3 0004" in kept(third.events(out)), 15)
    assert third.stop() == 0
    assert [e for e in third.logs() if e.get("level") == "warning"] == []


def test_a_file_rotated_and_compressed_while_down_is_named_where_its_lines_are_lost(tmp_path: Path) -> None:
    # logrotate's compress without delaycompress while the daemon was down: app.log.1.gz holds the
    # lines past the checkpoint, which are not read; the output went from line 10 to line 1 without a
    # word, and the log said the file was "moved out of its folder or removed" (helper-94)
    log, out, body = ten_lines_read(tmp_path)
    (tmp_path / "app.log.1.gz").write_bytes(gzip.compress(log.read_bytes() + b"gen1 ERROR lost\n"))
    (tmp_path / "app.log.new").write_bytes(lines("gen2", 0, 5))  # (made first: another inode)
    (tmp_path / "app.log.new").rename(log)
    second = start(tmp_path, body)
    second.wait_for(lambda: "gen2 0004" in kept(second.events(out)), 15)
    assert second.stop() == 0
    (stale,) = [e for e in second.logs() if e.get("event") == "checkpoint.stale"]
    assert stale["level"] == "warning" and stale.get("compressed") == ["app.log.1.gz"], stale
    (marker,) = [e for e in second.events(out) if e["event"] == "marker"]
    assert "compressed rotations are not read: app.log.1.gz" in marker["text"], marker


def test_a_file_made_while_down_is_read_whole_when_the_source_had_no_file_before(tmp_path: Path) -> None:
    """helper-75: a source whose glob matched nothing at its last run had no checkpoint, so the
    first file made while the daemon was down was read from its end, its error lost; the source's
    lock file says it was followed before."""
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    body = glob_to_jsonl(logs, out, 'start_at = "end"\nprotect = ["job"]\ntail_lines = 0\n')
    live = start(tmp_path, body)
    live.log_event("daemon.ready")
    assert live.stop() == 0
    (logs / "j1.log").write_bytes(b"job 1 start\nERROR: job 1 failed\n")
    second = start(tmp_path, body)
    second.wait_for(lambda: "ERROR: job 1 failed" in kept(second.events(out)), 15)
    assert second.stop() == 0
    assert kept(second.events(out)).count("job 1 start\n") == 1


LOGROTATE = shutil.which("logrotate") or "/usr/sbin/logrotate"


@pytest.mark.skipif(not os.path.exists(LOGROTATE), reason="needs logrotate")
@pytest.mark.parametrize("pattern", ["app.log", "app.log*"])
def test_copytruncate_s_copy_gives_the_lines_past_the_offset_and_is_not_read_again(
    tmp_path: Path, pattern: str
) -> None:
    # real logrotate copytruncate, three times, while a writer appends: the lines written past what
    # was read before the truncation are read from the copy (they were lost, helper-94), and a glob
    # that matches the copies does not read them again from byte 0 (2381 lines twice, helper-94)
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(b"")
    conf, state = tmp_path / "lr.conf", tmp_path / "lr.state"
    conf.write_text(f"{log} {{\n  copytruncate\n  rotate 5\n  missingok\n}}\n")
    body = (
        f'[defaults]\nprotect = ["seq"]\ntail_lines = 0\n[[source]]\nname = "app"\ntype = "file"\n'
        f'path = "{logs}/{pattern}"\nstart_at = "beginning"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    live = start(tmp_path, body)
    with log.open("ab", buffering=0) as writer:  # (O_APPEND: after a truncation it writes at the end)
        for seq in range(3000):
            writer.write(b"seq %05d of a busy writer's lines\n" % seq)
            if seq % 700 == 699:
                subprocess.run([LOGROTATE, "-s", str(state), "-f", str(conf)], check=True)
            time.sleep(0.0005)
    on_disk = set()
    for file in logs.iterdir():
        on_disk |= {int(line.split()[1]) for line in file.read_text().splitlines()}
    live.wait_for(lambda: f"seq {max(on_disk):05d}" in kept(live.events(out)), 15)
    time.sleep(1.0)  # (what a glob would read of the copies by now)
    assert live.stop() == 0
    seqs = [int(m) for m in re.findall(r"seq (\d{5})", kept(live.events(out)))]
    assert len(seqs) == len(set(seqs)), f"{len(seqs) - len(set(seqs))} lines twice"
    assert on_disk <= set(seqs), f"{len(on_disk - set(seqs))} lines on disk not read"
    copied = [e for e in live.logs() if e.get("event") == "file.copy_read"]
    assert copied and all(e["copy"] == f"{logs}/app.log.1" for e in copied), copied


def test_a_rotated_file_with_the_same_first_bytes_is_not_taken_for_a_copy(tmp_path: Path) -> None:
    # a service's banner longer than the fingerprint starts every generation: app.log.1, rotated by
    # rename an hour ago and shorter than app.log, is not a copytruncate copy of it, and is read
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    banner = b"".join(b"banner line %02d of the service, the same at every start\n" % i for i in range(40))
    (logs / "app.log.1").write_bytes(banner + b"old run ERROR one\n" + b"".join(b"old %d\n" % i for i in range(50)))
    hour_ago = time.time() - 3600
    os.utime(logs / "app.log.1", (hour_ago, hour_ago))
    (logs / "app.log").write_bytes(banner)  # (app.log.1 begins with all of it)
    live = start(
        tmp_path,
        f'[defaults]\nquery = "ERROR"\n[[source]]\nname = "app"\ntype = "file"\npath = "{logs}/app.log*"\n'
        f'start_at = "beginning"\nsinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\n'
        'format = "jsonl"\n',
    )
    live.wait_for(lambda: "old run ERROR one" in kept(live.events(out)), 10)
    # and app.log truncated at once after more lines: app.log.1 is not its copy (helper-99: its
    # lines came out as app.log's, "read from its copy")
    with (logs / "app.log").open("ab") as f:
        f.write(b"".join(b"new run ERROR %d\n" % i for i in range(5)))
    (logs / "app.log").write_bytes(b"RESTART ERROR\n")
    live.wait_for(lambda: "RESTART ERROR" in kept(live.events(out)), 10)
    assert live.stop() == 0
    assert not [e for e in live.logs() if e.get("event") in ("file.refused", "file.copy_read")]
    assert kept(live.events(out)).count("old run ERROR one") == 1
