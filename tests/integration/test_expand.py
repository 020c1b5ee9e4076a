"""Refs and `streamfilter expand`: exact bytes back from a file or the stdin archive, or a clear error."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pty
import re
import stat
import subprocess
import sys
import time
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.live.expand import (
    RECENT_SOURCES,
    Archive,
    Ref,
    RefError,
    TextRefs,
    archive_refs,
    expand_page,
    parse_ref,
    remember_source,
    state_dirs,
)
from streamfilter.live.run import _copy_notes

LOG = (
    b"INFO start\r\n"
    + b"".join(b"INFO step %d \xff\xfe bad utf8\r\n" % i for i in range(120))
    + b"ERROR: disk quota exceeded\r\n"
    + b"".join(b"INFO after %d\n" % i for i in range(120))
    + b"done"
)


def cli(*args: str, state: Path, stdin: bytes = b"", tmpdir: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "XDG_STATE_HOME": str(state), **({"TMPDIR": str(tmpdir)} if tmpdir else {})}
    env.pop("STATE_DIRECTORY", None)
    return subprocess.run(
        [sys.executable, "-m", "streamfilter", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


def drops(out: bytes) -> list[dict[str, object]]:
    return [e for e in (json.loads(x) for x in out.splitlines()) if e["event"] == "drop"]


NAMES = {"odd name": "build\n: 1-2:00000000.log", "not UTF-8": os.fsdecode(b"build\xff\xfe.log")}


@pytest.mark.parametrize("source", ["file", "stdin", "odd name", "not UTF-8"])
def test_expand_gives_back_exactly_the_dropped_bytes(source: str, tmp_path: Path) -> None:
    log = tmp_path / NAMES.get(source, "build.log")  # a line end and a ref's shape; bytes that are not UTF-8
    log.write_bytes(LOG)
    args = ("filter", "--format", "jsonl", "--head", "0", "--tail", "0")
    proc = cli(*args, str(log), state=tmp_path) if source != "stdin" else cli(*args, state=tmp_path, stdin=LOG)
    assert proc.returncode == 0, proc.stderr
    found = drops(proc.stdout)
    assert len(found) >= 2
    for d in found:
        ref = str(d["ref"])
        assert Ref.parse(ref).source == str(log) if source != "stdin" else ref.startswith("stdin-")
        got = cli("expand", ref, state=tmp_path)
        assert got.returncode == 0, got.stderr
        assert got.stdout == LOG[int(d["start_byte"]) : int(d["end_byte"])]  # type: ignore[call-overload]


@pytest.mark.parametrize("name", ["build.log", "a\nb\\c\td.log", os.fsdecode(b"bad\xff\xfe.log")])
def test_text_summaries_carry_the_ref_too_each_on_one_line(tmp_path: Path, name: str) -> None:
    log = tmp_path / name
    log.write_bytes(LOG)
    proc = cli("filter", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split(b"\n")
    summaries = [x for x in out if x.startswith(b"[streamfilter: dropped")]
    assert len(summaries) == 2 and all(x.endswith(b"]") for x in summaries)
    assert set(out) - set(summaries) - {b""} <= set(LOG.split(b"\n"))  # no piece of a summary on a line of its own
    first = Ref.parse(summaries[0].rsplit(b"; ref ", 1)[1][:-1].decode())
    assert first.source == str(log)
    # the second names the same source: it is written @START-END:CRC, whole with the first's source
    short = summaries[1].rsplit(b"; ref ", 1)[1][:-1].decode()
    assert short.startswith("@")
    for text in (str(first), str(first).rsplit(":", 2)[0] + ":" + short[1:]):
        ref = Ref.parse(text)
        got = cli("expand", text, state=tmp_path)
        assert got.returncode == 0, got.stderr
        assert got.stdout == LOG[ref.start : ref.end]


def test_context_adds_whole_lines_around(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_bytes(LOG)
    proc = cli("filter", "--format", "jsonl", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    second = drops(proc.stdout)[1]
    got = cli("expand", str(second["ref"]), "--context", "2", state=tmp_path)
    assert got.returncode == 0
    lines = LOG.splitlines(keepends=True)  # no lone \r in LOG, so these are its \n-lines
    first_line, last_line = int(second["first_line"]), int(second["last_line"])  # type: ignore[call-overload]
    assert got.stdout == b"".join(lines[max(0, first_line - 3) : last_line + 2])


def test_context_is_read_only_around_whole_lines(tmp_path: Path) -> None:
    """helper-114: a forged ref of a file's first byte (its CRC-32 one of 256) printed the whole file
    with --context; context is read only around whole lines now (a file's end counts as a line's)."""
    secret = tmp_path / "id_ed25519"
    secret.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nBBBB")
    forged = cli("expand", f"{secret}:0-1:{zlib.crc32(b'-'):08x}", "--context", "10", state=tmp_path)
    assert forged.returncode == 1 and forged.stdout == b"", forged
    assert b"not whole lines" in forged.stderr
    plain = cli("expand", f"{secret}:0-1:{zlib.crc32(b'-'):08x}", state=tmp_path)  # (no context: its byte)
    assert plain.returncode == 0 and plain.stdout == b"-"
    last = cli("expand", f"{secret}:41-45:{zlib.crc32(b'BBBB'):08x}", "--context", "1", state=tmp_path)
    assert last.returncode == 0 and last.stdout == b"AAAA\nBBBB", last


def test_a_rewritten_file_is_reported_not_printed(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_bytes(LOG)
    proc = cli("filter", "--format", "jsonl", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    ref = str(drops(proc.stdout)[0]["ref"])
    log.write_bytes(LOG.replace(b"step 3 ", b"step X "))  # same size, other bytes
    got = cli("expand", ref, state=tmp_path)
    assert got.returncode == 1 and got.stdout == b""
    assert b"do not have the ref's checksum (the file was rewritten" in got.stderr and ref.encode() in got.stderr
    log.write_bytes(b"short\n")
    got = cli("expand", ref, state=tmp_path)
    assert got.returncode == 1 and b"shorter" in got.stderr
    log.unlink()
    got = cli("expand", ref, state=tmp_path)
    assert got.returncode == 1 and b"no longer exists" in got.stderr


def test_a_ref_that_names_a_fifo_or_a_device_is_an_error_at_once(tmp_path: Path) -> None:
    """A forged ref naming a FIFO hung expand (and the MCP server's expand tool) until killed,
    waiting for a writer (helper-25); it names no log's bytes: an error, without waiting."""
    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        got = cli("expand", f"{path}:0-10:00000000", state=tmp_path)  # (cli's timeout fails a hang)
        assert got.returncode == 1 and got.stdout == b""
        assert b"is not a regular file" in got.stderr and got.stderr.count(b"\n") == 1


def test_a_ref_into_a_rotated_file_is_read_from_the_file_it_was_rotated_to(tmp_path: Path) -> None:
    """A ref made before ``mv build.log build.log.1`` (a new build.log then written): the bytes
    are found in build.log.1, with a note; a compressed name that does not decompress is passed over."""
    log = tmp_path / "build.log"
    log.write_bytes(LOG)
    proc = cli("filter", "--format", "jsonl", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    first = drops(proc.stdout)[0]
    ref = str(first["ref"])
    (tmp_path / "build.log.2.gz").write_bytes(b"\x1f\x8b not read")
    log.rename(tmp_path / "build.log.1")
    log.write_bytes(LOG.replace(b"INFO", b"WARN"))  # the path's new file: same size, other bytes
    got = cli("expand", ref, state=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout == LOG[int(first["start_byte"]) : int(first["end_byte"])]  # type: ignore[call-overload]
    assert f"read from {tmp_path / 'build.log.1'}".encode() in got.stderr
    (tmp_path / "build.log.1").unlink()
    got = cli("expand", ref, state=tmp_path)
    assert got.returncode == 1 and b"do not have the ref's checksum" in got.stderr and got.stdout == b""


def test_a_short_ref_into_a_rotated_file_is_read_from_the_file_it_was_rotated_to(tmp_path: Path) -> None:
    # (the full ref was read from app.log.4 after four rotations, its short one was "none of the last
    # 64 sources", helper-94)
    log = tmp_path / "build.log"
    log.write_bytes(LOG)
    proc = cli("filter", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    short = re.findall(rb"ref (@\d+-\d+:[0-9a-f]{8})\]", proc.stdout)[0].decode()
    start, end = (int(n) for n in short[1:].split(":")[0].split("-"))
    log.rename(tmp_path / "build.log.1")
    log.write_bytes(LOG.replace(b"INFO", b"WARN"))  # the path's new file: same size, other bytes
    got = cli("expand", short, state=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout == LOG[start:end] and f"read from {tmp_path / 'build.log.1'}".encode() in got.stderr


def test_a_ref_into_a_file_rotated_on_or_to_a_numbered_name_is_read_there(tmp_path: Path) -> None:
    # a ref into app.log.1 once logrotate shifted it to app.log.2, and a ref into app.log once it
    # was renamed app.1.log (a glob's naming): both failed, "no longer exists" (a fresh-user helper's find)
    for before, after in (("app.log.1", "app.log.2"), ("app.log", "app.1.log")):
        log = tmp_path / before
        log.write_bytes(LOG)
        proc = cli("filter", "--format", "jsonl", "--head", "0", "--tail", "0", str(log), state=tmp_path)
        first = drops(proc.stdout)[0]
        log.rename(tmp_path / after)
        got = cli("expand", str(first["ref"]), state=tmp_path)
        assert got.returncode == 0, got.stderr
        assert got.stdout == LOG[int(first["start_byte"]) : int(first["end_byte"])]  # type: ignore[call-overload]
        assert f"read from {tmp_path / after}".encode() in got.stderr
        (tmp_path / after).unlink()


@pytest.mark.parametrize("tool", ["gzip", "bzip2", "xz"])
def test_a_ref_into_a_compressed_rotation_is_read_through_its_decompressor(tool: str, tmp_path: Path) -> None:
    # logrotate's compress: app.log -> app.log.1 -> app.log.1.gz -> app.log.2.gz; its refs had failed,
    # "do not have the ref's checksum" (helper-94); a full ref and a short one, and a zstd file passed over
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    proc = cli("filter", "--format", "jsonl", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    first = drops(proc.stdout)[-1]
    text = cli("filter", "--head", "0", "--tail", "0", str(log), state=tmp_path)
    short = re.findall(rb"ref (@\d+-\d+:[0-9a-f]{8})\]", text.stdout)[-1].decode()
    log.rename(tmp_path / "app.log.1")
    subprocess.run([tool, tmp_path / "app.log.1"], check=True)
    suffix = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz"}[tool]
    (tmp_path / f"app.log.1{suffix}").rename(tmp_path / f"app.log.2{suffix}")
    (tmp_path / "app.log.1.zst").write_bytes(b"\x28\xb5\x2f\xfd not read")
    log.write_bytes(LOG.replace(b"INFO", b"WARN"))
    got = cli("expand", str(first["ref"]), state=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout == LOG[int(first["start_byte"]) : int(first["end_byte"])]  # type: ignore[call-overload]
    assert f"read from {tmp_path / f'app.log.2{suffix}'}".encode() in got.stderr
    start, end = (int(n) for n in short[1:].split(":")[0].split("-"))
    got = cli("expand", "--context", "2", short, state=tmp_path)
    assert got.returncode == 0, got.stderr
    before = LOG[:start].rsplit(b"\n", 3)[-3:]
    assert got.stdout.startswith(b"\n".join(before)) and LOG[start:end] in got.stdout
    # a rotation cut short (a disk that filled as it was compressed) is an error, not short bytes
    rotated = tmp_path / f"app.log.2{suffix}"
    rotated.write_bytes(rotated.read_bytes()[: rotated.stat().st_size // 2])
    got = cli("expand", str(first["ref"]), state=tmp_path)
    assert got.returncode == 1 and got.stdout == b"" and b"checksum" in got.stderr
    # and the error names the rotations it could not read (they had been passed over without a word,
    # helper-104)
    assert (
        f"not read: app.log.1.zst (its compression is not one read here), app.log.2{suffix} (it does not".encode()
        in (got.stderr)
    )


@pytest.mark.parametrize(
    ("bad", "status"),
    [
        ("nonsense", 2),
        ("x:1-2:zz", 2),
        ("x:5-1:00000000", 2),
        ("@1-2:0000000\x1b", 2),  # (not a short ref either: it had exited 1, as an expired one, helper-99)
        ("@0-10:00000000", 1),
        ("stdin-0-0:0-10:00000000", 1),
    ],
)
def test_unknown_or_malformed_refs_are_clear_errors(bad: str, status: int, tmp_path: Path) -> None:
    """Not a ref: a usage error (2); a ref to nothing there (a short one too): 1."""
    got = cli("expand", bad, state=tmp_path)
    assert got.returncode == status and got.stdout == b""
    assert got.stderr.count(b"\n") == 1 and b"streamfilter: error:" in got.stderr
    if bad.startswith("@") and status == 1:  # a short ref that no source named lately holds: say how to make it whole
        assert b"SOURCE:0-10:00000000" in got.stderr


@pytest.mark.parametrize("source", ["file", "stdin", "odd name"])
def test_every_ref_of_a_text_output_expands_as_printed(source: str, tmp_path: Path) -> None:
    log = tmp_path / NAMES.get(source, "build.log")
    log.write_bytes(LOG)
    other = tmp_path / "other.log"  # a later output, of other bytes: a short ref is not read from it
    other.write_bytes(LOG.replace(b"INFO", b"WARN"))
    args = ("filter", "--head", "0", "--tail", "0")
    proc = cli(*args, str(log), state=tmp_path) if source != "stdin" else cli(*args, state=tmp_path, stdin=LOG)
    assert cli(*args, str(other), state=tmp_path).returncode == 0
    refs = [line.rsplit(b"; ref ", 1)[1][:-1].decode() for line in proc.stdout.splitlines() if b"; ref " in line]
    assert len(refs) >= 2 and all(ref.startswith("@") for ref in refs[1:])
    jsonl = drops(cli(*args, "--format", "jsonl", str(log), state=tmp_path, stdin=LOG).stdout)
    for ref, drop in zip(refs, jsonl, strict=True):
        got = cli("expand", ref, state=tmp_path)
        assert got.returncode == 0, got.stderr
        assert got.stdout == LOG[int(drop["start_byte"]) : int(drop["end_byte"])]  # type: ignore[call-overload]


def test_without_a_state_directory_the_sources_are_remembered_in_the_temporary_one(tmp_path: Path) -> None:
    """helper-23: with ``XDG_STATE_HOME`` a file, a short ref was printed that ``expand`` could not
    read (its source was not remembered). Then every ref was whole, and a budget's choice depended on
    the path's length (helper-71); the source is remembered in the temporary directory, as a run's
    output is kept there, and the short refs expand."""
    log = tmp_path / "build.log"
    log.write_bytes(LOG)
    blocked = tmp_path / "blocked"
    blocked.write_bytes(b"a file, not a directory\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = cli("filter", "--head", "0", "--tail", "0", str(log), state=blocked, tmpdir=tmp)
    refs = [line.rsplit(b"; ref ", 1)[1][:-1].decode() for line in proc.stdout.splitlines() if b"; ref " in line]
    assert len(refs) >= 2 and refs[0].startswith(str(log)), refs
    assert all(ref.startswith("@") for ref in refs[1:]), refs
    assert [p.read_text() for p in (tmp / f"streamfilter-{os.getuid()}" / "sources").iterdir()] == [str(log)]
    for ref in refs:
        back = cli("expand", ref, state=blocked, tmpdir=tmp)
        assert back.returncode == 0 and back.stdout and back.stdout in LOG, back.stderr


def test_a_temporary_state_directory_that_is_not_this_user_s_own_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helper-80: ``/tmp/streamfilter-UID`` made first by another user, as a link to a folder of
    theirs, held a run's whole output that an agent is told to read: they could change it. Such a
    folder is passed over (as ssh-agent and tmux refuse one), and one of this user's is made 0700."""
    blocked = tmp_path / "blocked"
    blocked.write_bytes(b"a file, not a directory\n")
    tmp, theirs = tmp_path / "tmp", tmp_path / "theirs"
    tmp.mkdir()
    theirs.mkdir(mode=0o777)
    ours = tmp / f"streamfilter-{os.getuid()}"
    ours.symlink_to(theirs)
    monkeypatch.setenv("XDG_STATE_HOME", str(blocked))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    assert ours not in list(state_dirs())
    proc = cli("run", "--", "sh", "-c", "seq 3000; echo 'error: disk failed'; exit 1", state=blocked, tmpdir=tmp)
    assert proc.returncode == 1 and b"error: disk failed" in proc.stdout
    assert list(theirs.iterdir()) == [], proc.stdout[-400:]  # nothing of the run's went through the link
    ours.unlink()
    ours.mkdir()
    os.chmod(ours, 0o777)  # (past the umask) anyone could have put a link in place of runs/ (helper-81)
    assert ours not in list(state_dirs())
    os.chmod(ours, 0o755)  # (made so before: readable, not writable by others)
    assert ours in list(state_dirs()) and stat.S_IMODE(ours.stat().st_mode) == 0o700
    if os.getuid() == 0:  # another user's own folder (only root can make one here)
        os.chown(ours, 65534, 65534)
        assert ours not in list(state_dirs())


def test_the_sources_remembered_for_short_refs_are_bounded_and_the_newest_holder_wins(tmp_path: Path) -> None:
    logs = [tmp_path / f"run-{i}.log" for i in range(RECENT_SOURCES + 6)]
    for i, log in enumerate(logs):
        log.write_bytes(b"same bytes\n" if i % 2 else b"run %d\n" % i)
        remember_source(str(log), tmp_path)
        name = hashlib.sha256(str(log).encode()).hexdigest()[:32]
        os.utime(tmp_path / "sources" / name, ns=(i, i))  # (in order, whatever the clock's resolution)
    assert len(list((tmp_path / "sources").iterdir())) == RECENT_SOURCES
    same = f"{zlib.crc32(b'same bytes' + bytes([10])):08x}"
    assert parse_ref(f"@0-11:{same}", tmp_path).source == str(logs[-1])
    with pytest.raises(RefError, match="none of the last"):
        parse_ref(f"@0-11:{zlib.crc32(b'other bytes'):08x}", tmp_path)
    # the lines around them asked for: which output's? (the context of one parallel run's short ref
    # was read from another's file, its failure shown as a pass, helper-103)
    with pytest.raises(RefError, match=r"\d+ outputs named lately hold these bytes .*give the full ref"):
        parse_ref(f"@0-11:{same}", tmp_path, unique=True)
    assert parse_ref(f"@0-6:{zlib.crc32(b'run 6' + bytes([10])):08x}", tmp_path, unique=True).source == str(logs[6])


def test_a_long_runs_short_refs_read_back_after_many_other_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run that printed a summary now and then while 64 other outputs named their sources: its
    # source was forgotten, and its later short refs read back from none (helper-103)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    long = tmp_path / "long.log"
    long.write_bytes(b"step 1\nstep 2\n")
    refs = TextRefs()
    assert refs(f"{long}:0-7:{zlib.crc32(b'step 1' + bytes([10])):08x}").startswith(str(long))  # named whole
    for i in range(RECENT_SOURCES + 1):
        remember_source(str(tmp_path / f"other-{i}.log"))
        time.sleep(0.002)  # (remembered in order, whatever the clock's resolution)
    short = refs(f"{long}:7-14:{zlib.crc32(b'step 2' + bytes([10])):08x}")
    assert short.startswith("@") and parse_ref(short).source == str(long)


def test_a_ref_into_another_state_directorys_archive_says_where_it_may_be(tmp_path: Path) -> None:
    """helper-55: a fleet worker's refs name its archive; expanded on another machine they were
    said to be "evicted from the archive", and nothing was: another worker kept them."""
    proc = cli("filter", "--format", "jsonl", "--tail", "0", state=tmp_path / "worker", stdin=LOG)
    ref = str(drops(proc.stdout)[0]["ref"])
    assert cli("expand", ref, state=tmp_path / "worker").returncode == 0
    got = cli("expand", ref, state=tmp_path / "elsewhere")
    assert got.returncode == 1 and got.stdout == b""
    assert b"is not in the archive of" in got.stderr and b"another machine (a fleet's worker)" in got.stderr


def test_archive_evicts_the_oldest_streams_and_stops_at_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))  # (its files named by name, not path)
    monkeypatch.setattr(Archive, "EVICT_SECONDS", -1.0)  # (each new stream scans the folder)
    old = Archive(tmp_path, cap_bytes=1000)
    old.write(b"a" * 400)
    old.close()
    newer = Archive(tmp_path, cap_bytes=1000)
    newer.write(b"b" * 800)  # only half the cap is archived for one stream
    newer.close()
    assert newer.covers(500) and not newer.covers(501)
    small = Archive(tmp_path, cap_bytes=1000)
    small.write(b"s" * 50)
    small.close()
    # the others fit in the cap (950 of 1000): none goes for a new stream (one had, for all a new
    # stream may hold, helper-103; then for its first sixteenth, helper-105)
    third = Archive(tmp_path, cap_bytes=1000)
    assert (tmp_path / "archive" / f"{old.source}.log").exists()
    third.write(b"c" * 100)  # past the cap less a sixteenth, all told: the oldest goes first
    third.close()
    assert not (tmp_path / "archive" / f"{old.source}.log").exists()
    assert (tmp_path / "archive" / f"{newer.source}.log").stat().st_size == 500
    assert (tmp_path / "archive" / f"{small.source}.log").exists()


def test_a_run_past_its_archive_share_says_so_in_its_closing_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helper-48: past its 128 MiB, a run's summaries lost their refs and only stderr's
    archive.full said why; an agent reads stdout."""
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    archive = Archive(tmp_path, cap_bytes=1000)
    archive.write(b"a" * 400)
    assert _copy_notes(None, [SimpleNamespace(archive=archive)]) == []  # type: ignore[list-item]
    archive.write(b"b" * 400)
    stream = SimpleNamespace(archive=archive)
    ((live, note),) = _copy_notes(None, [stream])  # type: ignore[list-item]
    assert "is not kept" in note and note.endswith(
        "the copy holds its first 500 bytes, and each of its summaries has its ref"
    )
    # with --separate, each stream's note goes out with it, under its own header (helper-78)
    other = Archive(tmp_path, cap_bytes=1000)
    other.write(b"c" * 600)
    notes = _copy_notes(None, [stream, SimpleNamespace(archive=other)])  # type: ignore[list-item]
    assert [live.archive for live, _ in notes] == [archive, other] and live is stream
    other.close()
    archive.close()


def test_archive_keeps_at_most_its_cap_of_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1,500 short socket connections left 1,508 archive files: the cap was of bytes only (helper-30)
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    monkeypatch.setattr(Archive, "EVICT_SECONDS", -1.0)  # (each new stream scans the folder)
    made = []
    for i in range(6):
        archive = Archive(tmp_path, cap_files=3)
        archive.write(b"line %d\n" % i)
        archive.close()
        made.append(tmp_path / "archive" / f"{archive.source}.log")
    assert sorted((tmp_path / "archive").iterdir()) == sorted(p for p in made if p.exists())
    assert sum(p.exists() for p in made) == 3 and made[-1].exists() and not made[0].exists()


def test_ref_round_trips_through_text() -> None:
    for path in ("/a:b/c.log", "/a\nb\\x0ac\x7f.log", "C:\\logs\\x.log", os.fsdecode(b"/x\xff\xc3\xa9.log")):
        ref = Ref(path, 10, 20, f"{zlib.crc32(b'x'):08x}")
        assert Ref.parse(str(ref)) == ref and str(ref).isprintable()
    with pytest.raises(RefError):
        Ref.parse("/a.log:20-10:00000000")


def test_drop_runs_past_the_archive_limit_have_no_ref_and_say_why_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    archive, ref = archive_refs("stdin")
    assert archive is not None
    archive.limit = 1000  # (the per-stream limit, 128 MiB by default)
    data = b"".join(b"ERROR: step %04d failed\n" % i if i % 40 == 39 else b"INFO line %04d\n" % i for i in range(300))
    sf = StreamFilter(FilterConfig(window_lines=8, head_lines=0, tail_lines=0))
    runs = []
    for i in range(0, len(data), 512):
        archive.write(data[i : i + 512])
        runs += sf.feed(data[i : i + 512])
    runs += sf.flush()
    archive.close()
    with capture_logs() as logs:
        refs = [ref(run) for run in runs]
    drops = [(run, r) for run, r in zip(runs, refs, strict=True) if run.decision == "drop"]
    assert all(bool(r) == (run.end_byte <= 1000) for run, r in drops)
    without = [run for run, r in drops if not r]
    assert len(without) > 1 and len(without) < len(drops)  # (several DROP runs: some before the limit)
    (full,) = [e for e in logs if e["event"] == "archive.full"]
    assert full["archived_bytes"] == 1000 and full["first_line_without_ref"] == without[0].first_line
    # run's closing note names the first summary without a ref by its line, not the copy's last byte
    # (helper-77: "no refs past byte 1048576" stood under a first summary of lines 1-39999 with none)
    ((_, note),) = _copy_notes(None, [SimpleNamespace(archive=archive)])  # type: ignore[list-item]
    assert note.endswith(
        f"the copy holds its first 1000 bytes: the summaries from line {without[0].first_line} on have no ref"
    )


def test_the_note_names_a_piece_of_a_long_line_s_rest_as_where_refs_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a progress line past the held cap, its pieces' refs up to the archive's limit: "the summaries
    # from line 2 on have no ref" stood under line 2's earlier pieces with refs (helper-89)
    from streamfilter.core import lines

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setattr(lines, "HELD_LINE_BYTES", 300)
    archive, ref = archive_refs("stdin")
    assert archive is not None
    archive.limit = 1000
    data = b"INFO start\n" + b"\r50% x" * 400 + b"\nINFO done\n"
    sf = StreamFilter(FilterConfig(max_line_bytes=64, head_lines=0, tail_lines=0))
    archive.write(data)
    runs = sf.feed(data) + sf.flush()
    archive.close()
    refs = [ref(run) for run in runs]
    drops = [(run, r) for run, r in zip(runs, refs, strict=True) if run.decision == "drop"]
    (first,) = [run for run, r in drops if not r][:1]
    assert first.rest and first.first_line == 2 and any(r and run.rest for run, r in drops)
    ((_, note),) = _copy_notes(None, [SimpleNamespace(archive=archive)])  # type: ignore[list-item]
    assert note.endswith(f"the summaries from the rest of line 2 at byte {first.start_byte} on have no ref"), note


def test_text_refs_name_a_source_once_in_a_row() -> None:
    refs = TextRefs()
    a1, a2 = str(Ref("/logs/a.log", 0, 10, "0000000a")), str(Ref("/logs/a.log", 20, 30, "0000000b"))
    b1 = str(Ref("stdin-1-2", 0, 5, "0000000c"))
    assert [refs(r) for r in (a1, a2, "", b1, a2)] == [a1, "@20-30:0000000b", "", b1, a2]


def test_the_archive_a_run_still_writes_is_not_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # run A archives its output and keeps running; a stream started meanwhile (a small cap, so A's
    # file is over it) evicts the others, not A's: A's refs still expand once it ends
    go = tmp_path / "go"
    noise = "".join(f"INFO step {i}\\n" for i in range(300))
    script = f"printf '{noise}'; echo 'ERROR: disk quota exceeded'; while [ ! -e {go} ]; do sleep 0.05; done"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("STATE_DIRECTORY", None)
    folder = tmp_path / "streamfilter" / "archive"
    folder.mkdir(parents=True)
    older = folder / "stdin-1-1.log"  # a finished stream's archive, older than A's
    older.write_bytes(b"x" * 2000)
    os.utime(older, (1, 1))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "run", "--", "sh", "-c", script], stdout=subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # A's first summary: its bytes are archived
        assert b"dropped lines 1-" in first
        (written,) = [f for f in folder.glob("stdin-*.log") if f != older]
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
        monkeypatch.delenv("STATE_DIRECTORY", raising=False)
        monkeypatch.setattr(Archive, "_last_scan", -1e9)  # (this process scanned lately: scan now)
        with capture_logs() as logs:
            Archive(tmp_path / "streamfilter", cap_bytes=1000).close()
        assert written.exists() and not older.exists()
        # said: the refs into it no longer read back (helper-73: a full disk's eviction was silent)
        (said,) = [e for e in logs if e["event"] == "archive.evicted"]
        assert said["files"] == 1 and said["bytes"] == 2000 and said["oldest"] == "stdin-1-1"
        assert said["log_level"] == "info" and said["reason"] == "the archive's cap"  # (a full disk's: a warning)
    finally:
        go.touch()
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    ref = first.rsplit(b"; ref ", 1)[1][:-2].decode()
    got = cli("expand", ref, state=tmp_path)
    assert got.returncode == 0, got.stderr
    lines = int(first.split(b"dropped lines 1-", 1)[1].split(b" ", 1)[0])
    assert got.stdout == "".join(f"INFO step {i}\n" for i in range(lines)).encode()
    monkeypatch.setattr(Archive, "_last_scan", -1e9)
    Archive(tmp_path / "streamfilter", cap_bytes=1000).close()  # A has ended: its archive is evicted as any
    assert not written.exists()


def test_a_relative_xdg_state_home_is_ignored(tmp_path: Path) -> None:
    """The XDG spec: a relative path there is invalid and ignored. It made ``relstate/`` in the
    working directory, and refs to it that ``expand`` from another directory could not read."""
    work, other, home = tmp_path / "work", tmp_path / "other", tmp_path / "home"
    for folder in (work, other, home):
        folder.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": "relstate", "HOME": str(home)}
    env.pop("STATE_DIRECTORY", None)
    args = [sys.executable, "-m", "streamfilter"]
    done = subprocess.run([*args, "filter"], input=LOG, cwd=work, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0 and not (work / "relstate").exists()
    assert (home / ".local" / "state" / "streamfilter" / "archive").is_dir()
    ref = next(line for line in done.stdout.splitlines() if b"; ref " in line).rsplit(b"; ref ", 1)[1][:-1]
    back = subprocess.run([*args, "expand", ref.decode()], cwd=other, env=env, capture_output=True, timeout=120)
    assert back.returncode == 0, back.stderr
    assert back.stdout and back.stdout in LOG


def test_a_ref_no_output_prints_is_refused(tmp_path: Path) -> None:
    """helper-62: a forged ref with an empty range (its CRC is 00000000 whatever the file) printed
    the lines around it with --context: a .env, a key; and /proc/self/environ passed as a regular
    file. Refs name at least one byte, and never a /proc or /sys file (a /proc input's refs name its
    archived copy)."""
    secret = tmp_path / ".env"
    secret.write_bytes(b"API_KEY=s3cret\n")
    got = cli("expand", "--context", "5", f"{secret}:0-0:00000000", state=tmp_path)
    assert got.returncode != 0 and b"s3cret" not in got.stdout and b"names no byte" in got.stderr
    environ = cli("expand", "/proc/self/environ:0-4:00000000", state=tmp_path)
    assert environ.returncode == 1 and environ.stdout == b"" and b"/proc or /sys file" in environ.stderr


def test_expand_escapes_control_bytes_on_a_terminal_and_names_a_short_refs_source(tmp_path: Path) -> None:
    """helper-62: expand wrote a log's OSC 52 and title sequences to the terminal, which filter and
    run escape there; a short ref's bytes are the latest named source's that match its CRC-32, a
    source a later file could take over: stderr says which was read."""
    log = tmp_path / "esc.log"
    noise = b"".join(b"noise %d\n" % i for i in range(40))
    log.write_bytes(b"a\n\x1b]0;TITLE\x07b\n" + noise + b"error: x\n" + noise + b"error: y\n")
    ref = str(drops(cli("filter", "--format", "jsonl", "--tail", "0", str(log), state=tmp_path).stdout)[0]["ref"])
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    pid, fd = pty.fork()
    if pid == 0:  # (the child: expand with a terminal as its stdout)
        os.execvpe(sys.executable, [sys.executable, "-m", "streamfilter", "expand", ref], env)
    shown = b""
    with contextlib.suppress(OSError):  # (EIO once the child has exited)
        while chunk := os.read(fd, 4096):
            shown += chunk
    os.waitpid(pid, 0)
    assert b"\\x1b]0;TITLE\\x07b" in shown and b"\x1b" not in shown, shown
    assert cli("expand", "--raw", ref, state=tmp_path).stdout.startswith(b"a\n\x1b]0;TITLE\x07b\n")
    text = cli("filter", "--tail", "0", str(log), state=tmp_path).stdout
    short = re.findall(rb"@\d+-\d+:[0-9a-f]{8}", text)[0].decode()
    got = cli("expand", short, state=tmp_path)
    assert got.returncode == 0 and f"{short} read from {log}".encode() in got.stderr


def test_pages_of_a_ref_tile_its_bytes_cut_after_line_ends_or_at_the_limit(tmp_path: Path) -> None:
    data = b"ab\ncd\n" + b"x" * 25 + b"\nend"
    path = tmp_path / "a.log"
    path.write_bytes(data)
    ref = Ref(str(path), 0, len(data), f"{zlib.crc32(data):08x}")
    pages, offsets, offset = [], [], 0
    while offset is not None:
        out = io.BytesIO()
        offset = expand_page(ref, out, offset=offset, limit=10)[1]
        pages.append(out.getvalue())
        offsets.append(offset)
    # whole lines while a line end is in reach; a line past the limit is cut at it
    assert pages == [b"ab\ncd\n", b"x" * 10, b"x" * 10, b"xxxxx\nend"]
    assert offsets == [6, 16, 26, None]
    with pytest.raises(RefError, match="offset 35 is past its 35 bytes"):
        expand_page(ref, io.BytesIO(), offset=35, limit=10)


def test_a_forged_ref_s_escapes_do_not_reach_the_terminal_in_an_error(tmp_path: Path) -> None:
    # a log can print a ref whose path holds "\x1b]52;...": expand turns it back into an ESC, and
    # its error had printed the path raw (OSC 52 wrote the clipboard, CSI 2J cleared the screen,
    # helper-98)
    forged = "/tmp/nope\\x1b]52;c;ZWNobyBoaQ==\\x07\\x1b[2J:0-10:12345678"
    missing = cli("expand", forged, state=tmp_path)
    log = tmp_path / "t\x1b[2Jx.log"
    log.write_bytes(b"0123456789\n")
    escaped = str(log).replace("\x1b", "\\x1b")
    changed = cli("expand", f"{escaped}:0-10:12345678", state=tmp_path)
    for got in (missing, changed):
        assert got.returncode == 1 and b"\x1b" not in got.stderr and b"\x07" not in got.stderr, got.stderr
        assert b"\\x1b" in got.stderr  # (shown, escaped)


def test_a_ref_holds_no_character_that_reorders_or_hides_its_line_and_reads_back() -> None:
    # a file named with U+202E reversed the rest of its summary line, ref and all (helper-98)
    for name in ("bidi\u202eevil.log", "c1\u009b2J.log", "tag\U000e0041.log", "zw\u200bsp.log"):
        ref = Ref(f"/tmp/{name}", 0, 5, "deadbeef")
        text = str(ref)
        assert text.isascii() and Ref.parse(text) == ref, text


def test_an_archived_output_is_its_owner_s_alone(tmp_path: Path) -> None:
    # a command's whole output may hold a token it printed: archive files were 0644 (helper-98)
    proc = cli("filter", "--format", "jsonl", "--head", "0", "--tail", "0", state=tmp_path, stdin=LOG)
    ref = next(str(d["ref"]) for d in drops(proc.stdout) if d.get("ref"))
    (archived,) = (tmp_path / "streamfilter" / "archive").iterdir()
    assert ref.startswith(archived.stem) and stat.S_IMODE(archived.stat().st_mode) == 0o600


def test_a_short_ref_two_outputs_hold_gives_no_context_but_its_own(tmp_path: Path) -> None:
    # two runs of one suite print the same passes: with --context, a short ref of the first had its
    # lines around read from the second's file, its failure shown as the other's (helper-103)
    def log(name: str) -> bytes:
        noise = b"".join(b"INFO test_%d passed\n" % i for i in range(200))
        return noise + f"ERROR test_x failed in run {name}\n".encode() + noise + b"ERROR the end\n"

    outputs = []
    for name in ("A", "B"):
        (tmp_path / f"{name}.log").write_bytes(log(name))
        outputs.append(cli("filter", "--head", "0", "--tail", "0", str(tmp_path / f"{name}.log"), state=tmp_path))
    short = re.findall(rb"ref (@\d+-\d+:[0-9a-f]{8})\]", outputs[0].stdout)[0].decode()
    assert short.encode() in outputs[1].stdout  # (the same bytes at the same place in both)
    got = cli("expand", "--context", "2", short, state=tmp_path)
    assert got.returncode == 1 and got.stdout == b"" and b"2 outputs named lately hold these bytes" in got.stderr
    start, end = (int(n) for n in short[1:].split(":")[0].split("-"))
    got = cli("expand", short, state=tmp_path)  # (the bytes alone are the same whichever file holds them)
    assert got.returncode == 0 and got.stdout == log("A")[start:end]
