"""``streamfilter run -- CMD`` and ``send`` with real subprocesses and a real daemon."""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.live.proc import Live


def events(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def kept(evs: list[dict[str, Any]], source: str | None = None) -> str:
    return "".join(e["text"] for e in evs if e["event"] == "keep" and (source is None or e["source"] == source))


def started(script: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    """``run -- sh -c SCRIPT``, once SCRIPT has begun (so run's signal handlers are in place: a
    fixed sleep raced with a slow start on a loaded machine, and run holds its output back)."""
    marker = tmp_path / "began"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "run", "--", "sh", "-c", f"touch {marker}; {script}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the signal receiver starts right after the command
    return proc


@pytest.mark.parametrize("code", [0, 1, 2])
def test_exit_status_is_the_commands_and_is_printed_last(code: int) -> None:
    done = run_cli("run", "--", sys.executable, "-c", f"print('hello'); raise SystemExit({code})")
    assert done.returncode == code
    assert done.stdout.splitlines()[-1].endswith(f"exited with status {code}]".encode())
    evs = events(run_cli("run", "--format", "jsonl", "--", "sh", "-c", f"exit {code}").stdout)
    assert evs[-1]["event"] == "exit" and evs[-1]["status"] == code


def test_killed_by_a_signal_gives_128_plus_n() -> None:
    # run dies of the signal itself, as timeout does (it exited 137 for SIGKILL, helper-68): a shell
    # sees 128 + N either way
    run = [sys.executable, "-m", "streamfilter", "run", "--", "sh", "-c", "echo before; kill -9 $$"]
    done = run_cli(*run[3:])
    assert done.returncode == -9
    assert b"killed by signal 9 (SIGKILL)" in done.stdout and b"before" in done.stdout
    shell = subprocess.run(["sh", "-c", f'{shlex.join(run)}; echo "status $?"'], capture_output=True, timeout=60)
    assert shell.stdout.endswith(b"status 137\n"), shell


def test_a_failing_command_keeps_its_failure_and_its_last_lines() -> None:
    script = (
        'for i in $(seq 1 400); do echo "INFO compiling unit $i"; done; '
        "echo 'ERROR: test_parse failed: expected 3, got 4' >&2; "
        'for i in $(seq 1 40); do echo "INFO cleanup step $i"; done; exit 1'
    )
    done = run_cli("run", "--format", "jsonl", "--", "sh", "-c", script)
    assert done.returncode == 1
    evs = events(done.stdout)
    text = kept(evs)
    assert "ERROR: test_parse failed" in text
    # the failure was found: the last 3 lines (--found-tail) are kept, not the last 25 (--tail)
    assert all(f"INFO cleanup step {i}\n" in text for i in range(38, 41))
    assert "INFO cleanup step 37\n" not in text
    assert "INFO cleanup step 20\n" not in text
    assert sum(e["lines"] for e in evs if e["event"] in ("keep", "drop")) == 441
    wide = kept(events(run_cli("run", "--format", "jsonl", "--found-tail", "25", "--", "sh", "-c", script).stdout))
    assert all(f"INFO cleanup step {i}\n" in wide for i in range(16, 41))
    # the same output from a command that succeeds keeps only --success-tail lines of its end
    ok = events(run_cli("run", "--format", "jsonl", "--", "sh", "-c", script.replace("exit 1", "exit 0")).stdout)
    assert "INFO cleanup step 30\n" not in kept(ok) and "INFO cleanup step 40\n" in kept(ok)
    assert "ERROR: test_parse failed" in kept(ok)  # a failure signature is kept either way


def test_a_command_that_trickles_gets_a_summary_a_second_not_one_a_line() -> None:
    # a line every 70 ms: each comes after a pause, and each pause settles the stream
    script = "import time\nfor i in range(40):\n    print('compiling module', i, flush=True)\n    time.sleep(0.07)"
    start = time.monotonic()
    evs = events(run_cli("run", "--format", "jsonl", "--", sys.executable, "-c", script).stdout)
    seconds = time.monotonic() - start
    drops = [e for e in evs if e["event"] == "drop"]
    assert sum(e["lines"] for e in evs if e["event"] in ("keep", "drop")) == 40
    assert 1 <= len(drops) <= seconds + 1 and len(drops) < 20  # DROP_SUMMARY_SECONDS: 1


def test_a_slow_printer_gets_no_summaries_longer_than_its_output(tmp_path: Path) -> None:
    """An ``ok`` every 70 ms, after a pause each: a summary a second stood for 45 bytes and took some
    75, the output grew past the command's own. A summary closed before its end now takes at most
    half its bytes, so they pay for the one note on refs too. (Past 512 bytes: a shorter output is
    written as it is, test_run_short.py.)"""
    script = "import time\nfor i in range(160):\n    print(f'ok {i:04d}', flush=True)\n    time.sleep(0.07)"
    done = run_cli("run", "--", sys.executable, "-c", script, env={"XDG_STATE_HOME": str(tmp_path)})
    assert done.returncode == 0
    body, _, status = done.stdout.rstrip(b"\n").rpartition(b"\n")
    assert status.startswith(b"[streamfilter: ") and b"exited with status 0" in status
    assert body.count(b"[streamfilter: dropped lines ") >= 2  # (summaries as it goes: one came early)
    assert len(body) + 1 <= len(b"ok 0000\n" * 160)


def test_stdout_and_stderr_interleave_or_stay_apart() -> None:
    script = "for i in 1 2 3; do echo out $i; echo err $i >&2; done; exit 1"
    merged = events(run_cli("run", "--format", "jsonl", "--head", "100", "--", "sh", "-c", script).stdout)
    assert kept(merged) == "out 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3\n"
    apart = events(run_cli("run", "--separate", "--format", "jsonl", "--head", "100", "--", "sh", "-c", script).stdout)
    assert kept(apart, "stdout") == "out 1\nout 2\nout 3\n" and kept(apart, "stderr") == "err 1\nerr 2\nerr 3\n"


def test_separate_streams_in_text_are_labelled_at_each_switch() -> None:
    # how the two interleave depends on timing; each line must sit under its own stream's label
    script = "for i in 1 2 3; do echo out $i; sleep 0.1; echo err $i >&2; sleep 0.1; done; exit 1"
    out = run_cli("run", "--separate", "--head", "100", "--", "sh", "-c", script).stdout.decode()
    under: dict[str, list[str]] = {}
    label = None
    for line in out.splitlines():
        if line.startswith("==> "):
            label = line
        elif line and not line.startswith("[streamfilter:"):
            under.setdefault(str(label), []).append(line)
    assert under == {"==> stdout <==": ["out 1", "out 2", "out 3"], "==> stderr <==": ["err 1", "err 2", "err 3"]}


def test_sigterm_is_forwarded_to_the_command(tmp_path: Path) -> None:
    script = "trap 'echo ERROR got TERM; exit 143' TERM; echo started; while :; do sleep 0.05; done"
    proc = started(script, tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143
    assert b"ERROR got TERM" in out and b"exited with status 143" in out
    assert err == b""


def test_tee_keeps_the_raw_output_and_refs_point_into_it(tmp_path: Path) -> None:
    tee = tmp_path / "full.log"
    script = "for i in $(seq 1 300); do echo \"INFO step $i ok\"; done; echo 'ERROR: boom'; exit 1"
    done = run_cli("run", "--tee", str(tee), "--format", "jsonl", "--", "sh", "-c", script)
    assert done.returncode == 1
    raw = tee.read_bytes()
    assert raw.count(b"\n") == 301 and raw.endswith(b"ERROR: boom\n")
    drop = next(e for e in events(done.stdout) if e["event"] == "drop")
    assert drop["ref"].startswith(str(tee.resolve()) + ":")
    back = run_cli("expand", drop["ref"])
    assert back.returncode == 0 and back.stdout == raw[drop["start_byte"] : drop["end_byte"]]


def test_no_command_and_a_missing_command() -> None:
    assert run_cli("run").returncode == 2
    missing = run_cli("run", "--", "no-such-command-xyz")
    assert missing.returncode == 127 and b"command not found" in missing.stderr
    empty = run_cli("run", "--", "")  # as a shell says of `""` (it was "permission denied", 126)
    assert empty.returncode == 127 and b"command not found" in empty.stderr
    # a path that names nothing is no command to look up: bash's words (helper-45)
    path = run_cli("run", "--", "./no-such-script.sh")
    assert path.returncode == 127 and b"./no-such-script.sh: No such file or directory" in path.stderr
    # a shell's own word is no program: said so (helper-48), still 127 as `env cd` gives
    for word in ("cd", "type", "[["):  # (type and [[ too, helper-53)
        builtin = run_cli("run", "--", word, "/tmp")
        assert builtin.returncode == 127, word
        assert f"{word}: command not found (a shell builtin: run it in a shell".encode() in builtin.stderr


def test_a_directory_or_a_file_that_is_not_executable_as_the_command(tmp_path: Path) -> None:
    # both fail exec with EACCES; a directory was "permission denied" (a fresh-user helper's find)
    (tmp_path / "notes.txt").write_bytes(b"hello\n")
    for command, reason in ((f"{tmp_path}/", "is a directory"), (f"{tmp_path}/notes.txt", "permission denied")):
        done = run_cli("run", "--", command)
        assert done.returncode == 126, done.stderr
        assert done.stdout == f"[streamfilter: {command}: {reason} (status 126)]\n".encode()
        assert done.stderr == f"streamfilter: error: {command}: {reason}\n".encode()


# -- envelopes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_send_runs_are_kept_apart_with_their_own_queries_and_statuses(tmp_path: Path, transport: str) -> None:
    out = tmp_path / "out.jsonl"
    if transport == "unix":
        address = str(tmp_path / "tools.sock")
        source = f'type = "unix"\npath = "{address}"\n'
    else:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            address = f"127.0.0.1:{probe.getsockname()[1]}"
        source = f'type = "tcp"\naddress = "{address}"\n'
    config = tmp_path / "sf.toml"
    config.write_text(
        f'[[source]]\nname = "tools"\n{source}sinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    daemon = Live(tmp_path, "daemon", "--config", str(config))
    daemon.log_event("daemon.ready")
    a_script = "for i in $(seq 1 200); do echo \"A noise $i\"; sleep 0.001; done; echo 'A zebra broke'; exit 3"
    b_script = "for i in $(seq 1 200); do echo \"B noise $i\"; sleep 0.001; done; echo 'B all good'; exit 0"
    results: dict[str, int] = {}

    def send(run: str, query: str, script: str) -> None:
        done = run_cli("send", "--socket", address, "--run-id", run, "-q", query, "--", "sh", "-c", script)
        results[run] = done.returncode

    threads = [
        threading.Thread(target=send, args=("a", "zebra", a_script)),
        threading.Thread(target=send, args=("b", "unrelated", b_script)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {"a": 3, "b": 0}
    daemon.wait_for(lambda: sum(e["event"] == "exit" for e in daemon.events(out)) == 2, 10)
    assert daemon.stop() == 0
    evs = daemon.events(out)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for e in evs:
        by_run.setdefault(e.get("run", ""), []).append(e)
    assert set(by_run) == {"a", "b"}
    for run, letter in (("a", "A"), ("b", "B")):
        runs = [e for e in by_run[run] if e["event"] in ("keep", "drop")]
        assert sum(e["lines"] for e in runs) == 201 and runs[0]["first_line"] == 1
        assert all(letter + " " in e.get("text", letter + " ") for e in runs)
    exits = {e["run"]: e["status"] for e in evs if e["event"] == "exit"}
    assert exits == {"a": 3, "b": 0}
    assert "A zebra broke" in kept(by_run["a"])  # its own query, and a failed run keeps its tail
    b_kept = kept(by_run["b"])
    assert "B all good" in b_kept and "B noise 190\n" not in b_kept  # success: a short tail


def test_after_sigterm_run_exits_although_a_grandchild_holds_the_pipe(tmp_path: Path) -> None:
    proc = started("echo start; sleep 30; echo after", tmp_path)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert time.monotonic() - sent < 5  # not the 30 s of the orphaned sleep
    assert proc.returncode == -signal.SIGTERM and b"start" in out and b"killed by signal 15" in out
    # no complaint from the pipes' transport at exit (it printed a RuntimeError traceback)
    assert b"Traceback" not in err and b"Exception ignored" not in err, err


def run_into_head(command: str, lines: int) -> subprocess.CompletedProcess[bytes]:
    """``streamfilter run -- COMMAND | head -LINES`` in bash; its status is run's."""
    return subprocess.run(
        f"{sys.executable} -m streamfilter run -- {command} | head -{lines}; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        timeout=120,
    )


def test_a_reader_that_goes_away_does_not_change_the_status() -> None:
    # the command is done writing when the reader goes (its lines fit in the pipe, then it closes its
    # output): no write of it fails, its own status stands (a write after that fails: test_run_world)
    script = 'for i in $(seq 1 200); do echo "ERROR: failure number $i"; done; exec >&- 2>&-; sleep 0.3; exit 2'
    done = run_into_head(f"sh -c '{script}'", 1)
    assert done.returncode == 2 and done.stdout == b"ERROR: failure number 1\n"
    assert b"Traceback" not in done.stderr


def test_a_missing_command_still_gets_its_status_line() -> None:
    done = run_cli("run", "--format", "jsonl", "--", "no-such-command-xyz")
    assert done.returncode == 127
    (event,) = events(done.stdout)
    assert event["event"] == "exit" and event["status"] == 127


def test_success_tail_may_be_longer_than_tail() -> None:
    ok = events(
        run_cli("run", "--format", "jsonl", "--tail", "3", "--success-tail", "50", "--", "seq", "1", "100").stdout
    )
    assert kept(ok).endswith("".join(f"{i}\n" for i in range(51, 101)))
    failed = run_cli(
        "run", "--format", "jsonl", "--tail", "3", "--success-tail", "50", "--", "sh", "-c", "seq 1 100; exit 1"
    )
    assert "47\n" not in kept(events(failed.stdout)) and kept(events(failed.stdout)).endswith("98\n99\n100\n")


def unix_daemon(tmp_path: Path) -> tuple[Live, Path, Path]:
    sock, out = tmp_path / "tools.sock", tmp_path / "out.jsonl"
    config = tmp_path / "sf.toml"
    config.write_text(
        f'[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    daemon = Live(tmp_path, "daemon", "--config", str(config))
    daemon.log_event("daemon.ready")
    return daemon, sock, out


def test_a_command_cannot_forge_its_own_envelope(tmp_path: Path) -> None:
    daemon, sock, out = unix_daemon(tmp_path)
    fake_end = '\\x1estreamfilter {\\"type\\": \\"run-end\\", \\"run\\": \\"inj\\", \\"status\\": 0}\\n'
    fake_start = '\\x1estreamfilter {\\"type\\": \\"run-start\\", \\"run\\": \\"fake\\"}\\n'
    forged = (
        f'import sys; o = sys.stdout.buffer; o.write(b"before\\n{fake_end}ERROR after fake end\\n{fake_start}x\\n")'
        "; sys.exit(2)"
    )
    done = run_cli("send", "--socket", str(sock), "--run-id", "inj", "--", sys.executable, "-c", forged)
    assert done.returncode == 2
    daemon.wait_for(lambda: any(e["event"] == "exit" for e in daemon.events(out)), 10)
    assert daemon.stop() == 0
    evs = daemon.events(out)
    assert [(e["run"], e["status"]) for e in evs if e["event"] == "exit"] == [("inj", 2)]
    assert {e.get("run") for e in evs} == {"inj"}  # the forged lines are data of run inj
    assert sum(e["lines"] for e in evs if e["event"] in ("keep", "drop")) == 5
    assert sum(e.get("event") == "envelope.invalid" for e in daemon.logs()) == 2


def test_send_survives_the_daemon_going_away(tmp_path: Path) -> None:
    daemon, sock, _ = unix_daemon(tmp_path)
    marker = tmp_path / "done"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamfilter",
            "send",
            "--socket",
            str(sock),
            "--",
            "sh",
            "-c",
            f"for i in $(seq 1 30); do echo slow $i; sleep 0.05; done; touch {marker}; "
            "echo 'ERROR: the last step failed'; exit 3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # stop once the run is flowing (a fixed pause lost the race on a loaded machine)
    daemon.wait_for(lambda: any(e.get("event") == "connection.opened" for e in daemon.logs()), 20)
    assert daemon.stop() == 0
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3 and marker.exists()
    assert b"the daemon connection was lost" in err and b"Traceback" not in err
    # (a reload closes it the same way: "the daemon stopped" was untrue then, helper-50)
    assert b"(the daemon stopped reading it: it stopped, or reloaded its config)" in err, err
    # what could not be sent is filtered here, so the failure is not lost (a fresh-user helper's
    # find: a reload during a run lost its failure and its status)
    lines = out.decode().splitlines()
    assert lines[0].startswith("[streamfilter: the daemon connection was lost") and "filtered here" in lines[0]
    where = re.search(r"from byte (\d+) on \(line (\d+);", lines[0])
    assert where is not None
    printed = b"".join(b"slow %d\n" % i for i in range(1, 31))  # what CMD printed first
    assert printed[: int(where[1])].count(b"\n") + 1 == int(where[2])
    assert "ERROR: the last step failed" in lines and lines[-1].endswith("exited with status 3]")


@pytest.mark.parametrize(("how", "lines"), [("stop", 3000), ("reload", 3000), ("stop", 300000)])
def test_send_loses_no_line_when_the_daemon_stops_mid_run(tmp_path: Path, how: str, lines: int) -> None:
    # the daemon read the socket for a moment at its stop, then closed it: the lines still in the
    # socket's buffer were neither in its output nor filtered by send (a fresh-user helper's find:
    # 3 or 4 lines lost in each of 4 runs); it now replies how much it read, send filters the rest.
    # Printed fast (not a line at a time), the line the daemon had begun was cut in two, its
    # start there and its end here (the next helper's find): it is filtered here whole
    daemon, sock, out = unix_daemon(tmp_path)
    pace = "    time.sleep(0.001)\n" if lines < 10000 else ""
    script = (
        "import sys, time\n"
        f"for i in range(1, {lines + 1}):\n"
        f"    print(f'L{{i:06d}} step ok' if i % 500 else f'L{{i:06d}} ERROR: step failed', flush={bool(pace)})\n"
        f"{pace}"
        "sys.exit(2)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "send", "--socket", str(sock), "--", sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    daemon.wait_for(lambda: any(e.get("event") == "keep" for e in daemon.events(out)), 20)
    if how == "reload":
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.log_event("daemon.reloaded", 20)
    else:
        assert daemon.stop() == 0
    here, err = proc.communicate(timeout=60)
    if how == "reload":
        assert daemon.stop() == 0
    assert proc.returncode == 2 and b"Traceback" not in err, err
    runs = [e for e in daemon.events(out) if e["event"] in ("keep", "drop") and "/" in e["source"]]
    assert [e["first_line"] for e in runs] == [1] + [e["last_line"] + 1 for e in runs[:-1]]
    first = here.decode().splitlines()[0]
    where = re.search(r"from byte \d+ on \(line (\d+);", first)
    assert where is not None, first
    assert int(where[1]) == runs[-1]["last_line"] + 1  # the daemon's lines, then send's, no gap
    local = here.decode().splitlines()[1:-1]  # after the first line; the last states the status
    counted = sum(
        int(m[1])
        for line in local
        if (m := re.match(r"\[streamfilter: dropped (?:lines \S+|line \d+) \((\d+) lines?", line))
    )
    shown = [line for line in local if not line.startswith("[streamfilter:")]
    assert counted + len(shown) == lines - runs[-1]["last_line"]
    assert shown == [] or shown[0].startswith(f"L{int(where[1]):06d} ") or counted > 0


def test_send_does_not_hang_on_a_daemon_that_stopped_reading(tmp_path: Path) -> None:
    # SIGSTOP stands for a daemon that does not read: send's write waited for it for good, after
    # its stop signal had ended CMD too (a fresh-user helper's find: 10 minutes)
    daemon, sock, _ = unix_daemon(tmp_path)
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        script = "import sys\nfor i in range(10**7):\n    print(f'L{i:08d} step ok')\n"
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamfilter", "send", "--socket", str(sock), "--", sys.executable, "-c", script],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(3)  # the socket's buffers are full by now
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGTERM, err  # (send dies of its command's signal, as run)
        assert b"the daemon did not read for 5 s" in err and b"Traceback" not in err, err
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    assert daemon.stop() == 0


def test_send_counts_the_bytes_of_cmds_output_it_handed_over_not_its_control_lines(tmp_path: Path) -> None:
    sock = tmp_path / "fake.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            got = b""
            while got.count(b"\n") < 2:  # the run-start line and CMD's first line
                got += conn.recv(4096)

    thread = threading.Thread(target=serve)
    thread.start()
    script = "for i in $(seq 1 20); do echo line $i; sleep 0.05; done"  # 171 bytes in all
    done = run_cli("send", "--socket", str(sock), "--", "sh", "-c", script)
    thread.join(10)
    server.close()
    assert done.returncode == 0
    sent = re.search(rb"output from byte (\d+) on was not sent", done.stderr)
    assert sent is not None, done.stderr
    assert 7 <= int(sent.group(1)) < 171  # a run-start line alone is some 200 bytes
    assert b"Error)" not in done.stderr  # no exception class name as the reason


STEADY = (
    "import sys, time\n"
    "for i in range({n}):\n"
    "    sys.stdout.write('INFO processing item, still working\\n')\n"
    "    sys.stdout.flush()\n"
    "    time.sleep(0.003)\n"
)


def test_a_command_that_prints_steadily_gets_its_summaries_as_it_goes(tmp_path: Path) -> None:
    """A command that never pauses 50 ms showed nothing until it paused or ended: its DROP run
    stayed open. Now a summary comes once the run is a second old, the lines decided so far; the
    summaries tile the output and their refs read it back."""
    script, tee = tmp_path / "steady.py", tmp_path / "out.log"
    script.write_text(STEADY.format(n=2000))  # about 6 s or more
    command = [sys.executable, str(script)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "run", "--format", "jsonl", "--tee", str(tee), "--", *command],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    shown = time.monotonic()
    rest, _ = proc.communicate(timeout=120)
    assert time.monotonic() - shown > 2  # the command went on for seconds after it
    assert proc.returncode == 0 and first["event"] == "drop"
    runs = [first, *(e for e in events(rest) if e["event"] in ("keep", "drop"))]
    assert sum(e["event"] == "drop" for e in runs) >= 3
    assert [e["first_line"] for e in runs] == [1] + [e["last_line"] + 1 for e in runs[:-1]]
    assert runs[-1]["last_line"] == 2000
    back = run_cli("expand", first["ref"]).stdout
    assert back == tee.read_bytes()[: len(back)] and back.count(b"\n") == first["last_line"]


def test_a_reader_that_goes_away_ends_a_steady_command_at_once(tmp_path: Path) -> None:
    """``run -- CMD | head -3`` of a command that prints steadily, its lines all dropped: head gets
    its three summary lines within seconds, then CMD's next write fails (SIGPIPE), as without run
    (it took minutes: nothing came out until CMD paused)."""
    script = tmp_path / "steady.py"
    script.write_text(STEADY.format(n=100_000))  # about 5 minutes
    began = time.monotonic()
    done = run_into_head(f"{sys.executable} {script}", 3)
    assert time.monotonic() - began < 60
    assert done.stdout.count(b"[streamfilter: dropped line") == 3
    assert done.returncode == 1  # python's: its write failed with EPIPE (it ignores SIGPIPE)


NODE_TESTS = """const test = require('node:test');
const assert = require('node:assert');
{before}
test('fails one', () => {{ assert.strictEqual(1, 2); }});
test('fails two', () => {{ assert.deepStrictEqual({{ a: 1 }}, {{ a: 2 }}); }});
{after}
"""


def _run_in(folder: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """``streamfilter run -- ARGV`` in ``folder``, its state in ``folder/state``."""
    return subprocess.run(
        [sys.executable, "-m", "streamfilter", "run", "--", *argv],
        cwd=folder,
        capture_output=True,
        env={**os.environ, "XDG_STATE_HOME": str(folder / "state")},
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("passing", ["before", "after"])
def test_node_tests_counts_are_kept_with_its_plan(passing: str, tmp_path: Path) -> None:
    """A failed ``node --test`` (TAP): its counts were kept but for ``# tests 62`` and the plan
    ``1..62`` before them, summarized (``1× <*>..<*>; 1× # tests <*>``) beside ``# pass 60`` and
    ``# fail 2``; the counts of a failed run are kept as one, as jest's are."""
    loop = "for (let i = 0; i < 60; i++) test(`passes ${i}`, () => { assert.strictEqual(i, i); });"
    loops = {side: loop if side == passing else "" for side in ("before", "after")}
    (tmp_path / "a.test.js").write_text(NODE_TESTS.format(**loops))
    done = _run_in(tmp_path, "node", "--test")
    assert done.returncode == 1
    assert b"\n1..62\n# tests 62\n# suites 0\n# pass 60\n# fail 2\n" in done.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_tests_counts_stay_with_its_plan_when_a_pause_splits_them(tmp_path: Path) -> None:
    """Node writes its counts a line at a time: a loaded machine paused between them, a pause
    closes the open window, and ``# tests 62`` with the plan went to a window of their own, dropped."""
    loop = "for (let i = 0; i < 60; i++) test(`passes ${i}`, () => { assert.strictEqual(i, i); });"
    (tmp_path / "a.test.js").write_text(NODE_TESTS.format(before="", after=loop))
    raw = subprocess.run(["node", "--test"], cwd=tmp_path, capture_output=True, timeout=120, check=False).stdout
    head, counts = raw.split(b"\n# suites ", 1)
    (tmp_path / "head.log").write_bytes(head + b"\n")
    (tmp_path / "counts.log").write_bytes(b"# suites " + counts)
    script = "cat head.log; sleep 0.3; cat counts.log; exit 1"
    done = _run_in(tmp_path, "sh", "-c", script)
    assert done.returncode == 1
    assert b"\n1..62\n# tests 62\n# suites 0\n# pass 60\n# fail 2\n" in done.stdout


SLOW_SUITE = """
import sys, time
print("collecting ... " + "x" * 600, flush=True)
print("FAILED tests/test_x.py::test_two - AssertionError: assert 2 != 2", flush=True)
for i in range(60):
    time.sleep(0.1)
    print(f"tests/test_slow.py::test_slow[{i}] PASSED", flush=True)
    with open(sys.argv[1], "a") as progress:
        progress.write(f"{i}\\n")
print("==== 1 failed, 60 passed in 6.1s ====", flush=True)
sys.exit(1)
"""


def test_a_failure_found_early_shows_while_the_command_goes_on(tmp_path: Path) -> None:
    """A run holds its last lines for the tail rule at its end; once a failure signature has kept a
    line that tail is 3 lines, but 25 were held: a slow suite's first FAILED line showed 25 tests
    later, 15 s on a line every 0.6 s (helper-41). It shows within a few lines now."""
    progress = tmp_path / "progress"
    live = Live(tmp_path, "run", "--no-baseline", "--", sys.executable, "-c", SLOW_SUITE, str(progress),
                env={"XDG_STATE_HOME": str(tmp_path / "state")})  # fmt: skip
    deadline = time.monotonic() + 60
    while b"FAILED tests/test_x.py" not in live.output() and live.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    printed = progress.read_text().count("\n") if progress.exists() else 0
    assert live.proc.wait(timeout=60) == 1
    assert b"FAILED tests/test_x.py" in live.output()
    assert printed < 15, printed  # (lines the suite had printed after it when it showed)
    assert b"==== 1 failed, 60 passed in 6.1s ====" in live.output()


def test_a_quiet_command_after_a_line_past_the_held_cap_leaves_the_cpu_idle(tmp_path: Path) -> None:
    """A line let out at 8 MiB (``lines.HELD_LINE_BYTES``), its rest held: a run's pauses waited on
    that rest, which a settle holding the run's tail could not let out, and the loop spun at 100 %
    CPU while the command slept (helper-82's worker stopped reading its NATS messages so)."""
    script = "import sys, time; sys.stdout.write('x' * 9_000_000); sys.stdout.flush(); time.sleep(3); print('done')"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "streamfilter", "run", "--", sys.executable, "-c", script],
        capture_output=True,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        timeout=60,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0 and b"exited with status 0" in done.stdout
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 2.0, cpu  # (about 0.5 s of work, the rest of the 3 s asleep: 3 s and more when it spun)


def test_the_status_line_names_each_argument_as_a_shell_reads_it_back(tmp_path: Path) -> None:
    """helper-86: ``'a\\tb'`` stood for an argument with a tab and for one with a backslash and a t
    alike (inside single quotes no escape is read); one with a control character is in bash's
    ``$'...'`` now, so the line can be pasted back."""
    argv = ["printf", "%s|", "a\tb", "e\\tf", "new\nline"]
    done = subprocess.run(
        [sys.executable, "-m", "streamfilter", "run", "--", *argv],
        capture_output=True,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        timeout=60,
    )
    status = done.stdout.splitlines()[-1].decode()
    assert status == "[streamfilter: printf '%s|' $'a\\tb' 'e\\tf' $'new\\nline' exited with status 0]", status
    command = status.removeprefix("[streamfilter: ").removesuffix(" exited with status 0]")
    again = subprocess.run(["bash", "-c", command], capture_output=True, timeout=60)
    assert again.stdout == b"a\tb|e\\tf|new\nline|"  # (the same arguments, read back by bash)


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "4000"]])
def test_a_full_disk_under_run_s_output_lets_the_command_end_and_says_its_status(
    tmp_path: Path, budget: list[str]
) -> None:
    """stdout on /dev/full (ENOSPC at every write): run had exited 1 at its first write, its command
    left running on its own, and the command's status said nowhere (helper-89)."""
    marker = tmp_path / "ended"
    script = f"for i in $(seq 1 20000); do echo line $i; done; sleep 1; touch {shlex.quote(str(marker))}; exit 3"
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "streamfilter", "run", *budget, "--", "sh", "-c", script],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 1 and marker.exists()  # (run waited for it)
    error = [line for line in proc.stderr.decode().splitlines() if line.startswith("streamfilter: error:")]
    assert len(error) == 1 and error[0].endswith("... exited with status 3")
    assert error[0].startswith("streamfilter: error: cannot write output: No space left on device; sh -c 'for i in")
