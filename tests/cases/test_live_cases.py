"""Field cases that unfold in time, run with their own ``steps.sh`` against the real CLI."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import CASES, ROOT, need, run_cli
from tests.live.proc import Live


def steps(case: str, directory: Path, *phase: str, **env: str) -> None:
    script = need(CASES / case / "steps.sh")
    subprocess.run(["sh", str(script), str(directory), *phase], check=True, env={**os.environ, **env}, timeout=120)


def kept_lines(events: list[dict[str, Any]]) -> list[str]:
    return "".join(e["text"] for e in events if e["event"] == "keep").splitlines()


def follow_B04(tmp_path: Path, sleep_s: str) -> tuple[Live, list[str]]:
    """Follow an empty test.log while B04's steps append and truncate it; the kept lines once it stopped."""
    log = tmp_path / "test.log"
    log.write_bytes(b"")
    live = Live(tmp_path, "follow", str(log), "-q", "Append Overwrite", "--format", "jsonl", "--head", "100000")
    live.log_event("daemon.ready")
    steps("B04", tmp_path, SLEEP_S=sleep_s)
    live.wait_for(lambda: "Overwrite: 50" in kept_lines(live.events()), 10)
    assert live.stop() == 0
    return live, kept_lines(live.events())


def test_B04_truncation_by_redirect_between_appends_paced(tmp_path: Path) -> None:
    live, lines = follow_B04(tmp_path, "0.1")
    numbers = sorted(int(line.split(": ")[1]) for line in lines)
    assert numbers == list(range(1, 51))  # every number once
    assert all(re.fullmatch(r"(Append|Overwrite): \d+", line) for line in lines)
    markers = [e for e in live.events() if e["event"] == "marker"]
    assert len(markers) == 5 and all("truncated after it was read to offset" in m["text"] for m in markers)
    assert sum(e.get("event") == "file.truncated" for e in live.logs()) == 5


def test_B04_tight_truncations_never_duplicate_or_fragment_a_line(tmp_path: Path) -> None:
    live, lines = follow_B04(tmp_path, "0")
    assert all(re.fullmatch(r"(Append|Overwrite): \d+", line) for line in lines), lines
    numbers = [int(line.split(": ")[1]) for line in lines]
    assert len(numbers) == len(set(numbers))
    truncations = sum(e.get("event") in ("file.truncated", "file.rewritten") for e in live.logs())
    assert sum(e["event"] == "marker" for e in live.events()) == truncations


def test_B16_file_mode_keeps_the_final_record_at_eof() -> None:
    log = need(CASES / "B16" / "input.log")
    done = run_cli("filter", "--query", "no space left", "--format", "jsonl", "--head", "0", "--tail", "0", str(log))
    assert done.returncode == 0
    kept = {
        n
        for e in map(json.loads, done.stdout.splitlines())
        if e["event"] == "keep"
        for n in range(e["first_line"], e["last_line"] + 1)
    }
    assert {2, 3, 4} <= kept  # the ERROR record, at EOF; line 1 shares its window


def test_B16_follow_mode_with_the_case_steps(tmp_path: Path) -> None:
    steps("B16", tmp_path, "setup")
    live = Live(tmp_path, "follow", str(tmp_path / "job.log"), "-q", "no space left", "--format", "jsonl")
    live.log_event("daemon.ready")
    steps("B16", tmp_path, "run")
    live.wait_for(lambda: "    at writer.flush (writer.py:88)" in kept_lines(live.events()), 2.5)
    assert live.proc.poll() is None
    assert live.stop() == 0


def test_B28_a_blocked_sink_pauses_reading_and_nothing_is_lost(tmp_path: Path) -> None:
    steps("B28", tmp_path, "setup")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamfilter",
            "follow",
            str(tmp_path / "burst.log"),
            "-q",
            "aborted",
            "--head",
            "100000",
        ],
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "err.txt", "wb"),
    )
    try:
        time.sleep(1.0)
        steps("B28", tmp_path, "burst")
        time.sleep(2.5)  # the reader of stdout sleeps: the 1 MB of kept output cannot all go out
        assert b"reading.paused" in (tmp_path / "err.txt").read_bytes()
        out = bytearray()
        assert proc.stdout is not None
        while b"L10001 <ERROR> commit aborted" not in out:
            out += proc.stdout.read1(4096)  # type: ignore[attr-defined]
            time.sleep(0.001)
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
    out += rest
    assert proc.returncode == 0
    numbers = re.findall(rb" L(\d{5}) ", bytes(out))
    assert [int(n) for n in numbers] == list(range(1, 10002))  # all of them, once, in order
    log = (tmp_path / "err.txt").read_bytes()
    assert b"reading.resumed" in log


def test_B33_daemon_logs_reach_a_pipe_at_once_and_never_stdout(tmp_path: Path) -> None:
    config = tmp_path / "sf.toml"
    config.write_text(f'[[source]]\nname = "ci"\ntype = "file"\npath = "{tmp_path}/*.log"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "daemon", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None and proc.stdout is not None
    try:
        seen = bytearray()
        deadline = time.monotonic() + 20
        while b"daemon.ready" not in seen and time.monotonic() < deadline:
            if select.select([proc.stderr], [], [], 0.1)[0]:
                seen += os.read(proc.stderr.fileno(), 65536)
        (tmp_path / "new.log").write_bytes(b"ERROR appeared\n")
        created = time.monotonic()
        while b"file.found" not in seen and time.monotonic() - created < 5:
            if select.select([proc.stderr], [], [], 0.05)[0]:
                seen += os.read(proc.stderr.fileno(), 65536)
        assert b"file.found" in seen and time.monotonic() - created < 2.0
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    assert b"ERROR appeared" in out and b'"event"' not in out  # filtered output only on stdout
    unit = (ROOT / "systemd" / "streamfilter.service").read_text()
    assert "Environment=PYTHONUNBUFFERED=1" in unit
    assert "journalctl -u streamfilter -o json" in (ROOT / "systemd" / "README.md").read_text()


def _follow_on_a_terminal(tmp_path: Path, *extra: str) -> bytes:
    log = tmp_path / "job_43.log"
    log.write_bytes(b"\x1b]0;owned\x07\x1b[2J\x1b[1;1HERROR forged status line\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "follow", str(log), "-q", "ERROR SECRET", *extra],
        stdout=slave,
        stderr=subprocess.DEVNULL,
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 15
    try:
        while b"forged status line" not in out and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                out += os.read(master, 65536)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        os.close(master)
    return bytes(out)


def test_B35_control_bytes_are_escaped_on_a_terminal_unless_raw(tmp_path: Path) -> None:
    escaped = _follow_on_a_terminal(tmp_path)
    assert b"ERROR forged status line" in escaped
    assert b"\x1b" not in escaped and b"\x07" not in escaped
    assert b"\\x1b]0;owned\\x07" in escaped
    raw = _follow_on_a_terminal(tmp_path, "--raw")
    assert b"\x1b]0;owned\x07" in raw
