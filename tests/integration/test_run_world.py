"""``run`` keeps the command's world (issue 38): pipes, signals, full disks, sandboxes, and errors
shown while it runs. Each test is one way a wrapper could change what the command or its reader sees."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import io
import itertools
import json
import os
import pty
import shlex
import shutil
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SF = [sys.executable, "-m", "streamfilter"]
BASH = shutil.which("bash") or "/bin/bash"


def _state(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}


def _sf(args: list[str], tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """``streamfilter ARGS`` to its end (within ``timeout`` s), its state directory under ``tmp_path``."""
    return subprocess.run([*SF, *args], capture_output=True, env=_state(tmp_path), timeout=timeout, check=False)


def _finish(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """Its output once it ends within ``timeout`` s; else its whole process group is killed and the test fails."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"still running after {timeout} s")


def _started(args: list[str], marker: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``streamfilter ARGS`` in a session of its own, once its command touched ``marker``."""
    proc = subprocess.Popen(
        [*SF, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    _wait_for(marker, time.monotonic() + 60, proc)
    assert marker.exists(), proc.communicate()
    return proc


def _wait_for(marker: Path, deadline: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Until ``marker`` exists, the monotonic clock passes ``deadline``, or ``proc`` ended."""
    while not marker.exists() and time.monotonic() < deadline and (proc is None or proc.poll() is None):
        time.sleep(0.02)


def _cleaned_up_and_exited_0(proc: subprocess.Popen[bytes], out: bytes, err: bytes) -> None:
    """``CLEANS_UP`` took one stop signal: it cleaned up, and it and run exited 0."""
    assert proc.returncode == 0 and b"Traceback" not in err, err
    lines = out.decode().splitlines()
    assert "cleanup, exit 0" in lines and b"KeyboardInterrupt" not in out, out
    assert " exited with status 0" in lines[-1], lines[-1]


def _pipeline(script: str, env: dict[str, str], timeout: float = 30) -> list[str]:
    """``bash -c SCRIPT`` whose last command prints its ``${PIPESTATUS[*]}``; those statuses."""
    proc = subprocess.Popen(
        [BASH, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    out, err = _finish(proc, timeout)
    assert b"Traceback" not in err, err
    return out.decode().split()


# -- 1. a reader that goes away: the command sees it as it would without run ------------------------------------
@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_when_the_reader_goes_away_the_command_gets_sigpipe_as_in_a_pipeline(tmp_path: Path, budget: list[str]) -> None:
    # prints for ever, as `yes` does, lines that run shows at once (kept: its reader has them soon)
    loop = "sh -c 'i=0; while :; do i=$((i+1)); echo \"ERROR: failure number $i\"; done'"
    # within a budget nothing is printed before the end: a reader that reads nothing and exits
    reader = "true" if budget else "head -3 >/dev/null"
    bare = _pipeline(f"{loop} | {reader}; echo ${{PIPESTATUS[*]}}", _state(tmp_path))
    wrapped = f"{sys.executable} -m streamfilter run {' '.join(budget)} -- {loop}"
    assert bare == ["141", "0"]
    assert _pipeline(f"{wrapped} | {reader}; echo ${{PIPESTATUS[*]}}", _state(tmp_path)) == ["141", "0"]


# -- 2. a process the command left running does not hold run -----------------------------------------------------
@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_process_left_running_with_the_pipe_does_not_hold_run(tmp_path: Path, budget: list[str]) -> None:
    pid_file = tmp_path / "server.pid"
    script = f"sleep 60 & echo $! > {pid_file}; echo 'server started'; echo 'ERROR: one test failed'; exit 1"
    start = time.monotonic()
    proc = subprocess.Popen(
        [*SF, "run", *budget, "--", "sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_state(tmp_path),
        start_new_session=True,
    )
    try:
        out, err = _finish(proc, 30)
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert time.monotonic() - start < 15  # not the 60 s of the server
    assert proc.returncode == 1 and b"Traceback" not in err, err
    lines = out.decode().splitlines()
    assert "server started" in lines and "ERROR: one test failed" in lines
    assert "left running holds its output open" in lines[-2] and "exited with status 1" in lines[-1]
    # (what its file holds is what was read: not the whole output, helper-106)
    if budget:
        assert "; output up to 0.5 s after the exit (2 lines, " in lines[-1] and "whole" not in lines[-1]


def _holders(link: str) -> list[str]:
    """The processes that have an fd open on ``link`` (``pipe:[INODE]``)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                    pids.append(pid)
                    break
            except OSError:
                continue
    return pids


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_process_left_running_goes_on_printing_after_run_returns(tmp_path: Path, budget: list[str]) -> None:
    # run's end of the pipe closed at its return: the server's next write killed it (SIGPIPE), where
    # without run it goes on. It prints once run has returned (`go`), then finishes its work (`done`)
    go, done, pipe = tmp_path / "go", tmp_path / "done", tmp_path / "pipe"
    server = (
        f"readlink /proc/self/fd/2 > {pipe}; i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); "
        f"done; echo late; echo 'ERROR: late too' >&2; echo finished > {done}"
    )
    start = time.monotonic()
    proc = subprocess.Popen(
        [*SF, "run", *budget, "--", "sh", "-c", f"({server}) & echo started"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_state(tmp_path),
        start_new_session=True,
    )
    out, err = _finish(proc, 30)  # (what run started in the background holds neither its stdout nor stderr)
    assert time.monotonic() - start < 15  # not the 30 s the server may wait
    assert proc.returncode == 0 and b"Traceback" not in err, err
    lines = out.decode().splitlines()
    assert "started" in lines and "late" not in out.decode()
    assert "what it prints more than 0.5 s after the command's exit is read and discarded" in lines[-2]
    go.touch()
    deadline = time.monotonic() + 20
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.read_text() == "finished\n"
    # what read the pipe for run ends with the server: nothing holds the pipe any longer
    link = pipe.read_text().strip()
    assert link.startswith("pipe:")
    while _holders(link) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _holders(link)


# -- 3. a command's own time to stop, and the signals it was given --------------------------------------------
@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_command_that_cleans_up_slowly_after_a_stop_signal_is_waited_for(
    tmp_path: Path, budget: list[str], signum: signal.Signals
) -> None:
    # a migration or terraform may take long to leave things whole: run waits, as its shell would
    marker = tmp_path / "began"
    cleanup = "echo cleaning; sleep 3; echo cleanup complete; exit 0"
    script = f"trap '{cleanup}' TERM INT; touch {marker}; while :; do sleep 0.1; done"
    proc = _started(["run", *budget, "--", "sh", "-c", script], marker, _state(tmp_path))
    sent = time.monotonic()
    proc.send_signal(signum)
    out, err = _finish(proc, 30)
    assert time.monotonic() - sent >= 3
    assert proc.returncode == 0 and b"Traceback" not in err, err
    lines = out.decode().splitlines()
    assert "cleanup complete" in lines and " exited with status 0" in lines[-1], lines


def _ignoring(*signums: signal.Signals) -> Callable[[], None]:
    """A ``preexec_fn`` that ignores ``signums``, as ``nohup`` or a shell's background job does, in a
    session of its own (the test's signals go to it alone)."""

    def ignore() -> None:
        os.setsid()
        for signum in signums:
            signal.signal(signum, signal.SIG_IGN)

    return ignore


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_signal_ignored_when_run_starts_stays_ignored(tmp_path: Path, budget: list[str]) -> None:
    # `nohup streamfilter run -- CMD`: a SIGHUP neither stops run nor reaches CMD, which inherits the
    # ignored SIGHUP and SIGINT, as from `nohup CMD`
    marker = tmp_path / "began"
    script = f"grep SigIgn /proc/self/status; touch {marker}; sleep 1; echo survived"
    proc = subprocess.Popen(
        [*SF, "run", *budget, "--", "sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_state(tmp_path),
        preexec_fn=_ignoring(signal.SIGHUP, signal.SIGINT),
    )
    _wait_for(marker, time.monotonic() + 60, proc)
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGINT)
    out, err = _finish(proc, 30)
    assert proc.returncode == 0 and b"Traceback" not in err, (out, err)
    lines = out.decode().splitlines()
    assert "survived" in lines and " exited with status 0" in lines[-1], lines
    ignored = int(next(line for line in lines if line.startswith("SigIgn:")).split()[1], 16)
    assert ignored >> (signal.SIGHUP - 1) & 1 and ignored >> (signal.SIGINT - 1) & 1, hex(ignored)


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
@pytest.mark.parametrize(
    ("signum", "to"), [(signal.SIGQUIT, "group"), (signal.SIGQUIT, "run"), (signal.SIGUSR1, "run")]
)
def test_sigquit_and_sigusr1_reach_the_command_and_run_waits(
    tmp_path: Path, budget: list[str], signum: signal.Signals, to: str
) -> None:
    # ^\ (a hung `go test` dumps its goroutines), a daemon's "reopen your log": the command's to
    # handle; they killed run alone, and the output with it
    marker = tmp_path / "began"
    trap = f"trap 'echo got {signum.name}; exit 0' {signum.name[3:]}"
    script = f"{trap}; echo started; touch {marker}; while :; do sleep 0.1; done"
    proc = _started(["run", *budget, "--", "sh", "-c", script], marker, _state(tmp_path))
    if to == "group":
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    out, err = _finish(proc, 30)
    assert proc.returncode == 0 and b"Traceback" not in err, (out, err)
    lines = out.decode().splitlines()
    assert "started" in lines and f"got {signum.name}" in lines and " exited with status 0" in lines[-1], lines
    assert lines.count(f"got {signum.name}") == 1


# -- 4. the status when the whole process group is stopped -------------------------------------------------------
REPEAT = """
import collections, sys
from streamfilter.cli.main import main
sig, count = sys.argv[1], int(sys.argv[2])
got = collections.Counter(main(["run", "--", "sh", "-c", f"kill -{sig} 0; sleep 5"]) for _ in range(count))
print(dict(got), file=sys.stderr)
"""


@pytest.mark.parametrize(("sig", "status"), [("TERM", 143), ("INT", 130)])
def test_a_stop_signal_to_the_whole_group_gives_128_plus_n_every_time(tmp_path: Path, sig: str, status: int) -> None:
    # the command signals its whole process group, run too, as an agent's timeout or a ^C does; on
    # Python 3.11/3.12 asyncio's child watcher lost the child to the subprocess module about 4 runs in
    # 10 and said 255. Each repetition is one `run` (its command line, in one process: cheap to repeat)
    count = 200
    proc = subprocess.Popen(
        [sys.executable, "-c", REPEAT, sig, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_state(tmp_path),
        start_new_session=True,
    )
    out, err = _finish(proc, 240)
    assert proc.returncode == 0, err
    assert err.decode().splitlines()[-1] == str({status: count}), err[-2000:]
    assert b"Unknown child process" not in err
    assert out.count(b"was killed by signal") == count and b"status 255" not in out


def test_a_command_a_signal_killed_kills_run_with_it_so_xargs_stops(tmp_path: Path) -> None:
    """helper-57: run exited 143 where its command died of SIGTERM; xargs (and a shell's loop at a
    Ctrl-C) goes on after a command that exited, and stops after one a signal killed."""
    command = [sys.executable, "-m", "streamfilter", "run", "--", "sh", "-c", "echo job $0; kill -TERM $$"]
    done = subprocess.run(
        ["xargs", "-n1", *command], input=b"1\n2\n3\n", capture_output=True, env=_state(tmp_path), timeout=60
    )
    assert done.returncode == 125 and [line for line in done.stdout.splitlines() if line.startswith(b"job ")] == [
        b"job 1"
    ], done
    assert b"terminated by signal 15" in done.stderr
    # a command that exits 130 (it handled the signal) is a status, as it was
    handled = _sf(["run", "--", "sh", "-c", "exit 130"], tmp_path, 30)
    assert handled.returncode == 130
    # no core file of run's own for a command that dumped one
    quit_ = subprocess.run([*command[:5], "sh", "-c", "kill -QUIT $$"], capture_output=True, cwd=tmp_path,
                           env=_state(tmp_path), timeout=30)  # fmt: skip
    assert quit_.returncode == -signal.SIGQUIT and not list(tmp_path.glob("core*"))
    # and of SIGKILL, which has no handler to reset (run exited 137, helper-68: an OOM kill)
    killed = subprocess.run([*command[:5], "sh", "-c", "kill -KILL $$"], capture_output=True, env=_state(tmp_path),
                            timeout=30)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL and b"was killed by signal 9" in killed.stdout, killed


CLEANS_UP = """
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM raises KeyboardInterrupt too
try:
    pathlib.Path(sys.argv[1]).touch()
    time.sleep(60)
except KeyboardInterrupt:
    pathlib.Path(sys.argv[2]).touch()
    time.sleep(1)  # cleaning up: a second signal now would interrupt it
    print("cleanup, exit 0")
    sys.exit(0)
"""


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("to", ["group", "run, then group", "run"])
def test_a_command_that_handles_a_stop_signal_and_exits_0_exits_0(
    tmp_path: Path, budget: list[str], signum: signal.Signals, to: str
) -> None:
    # a signal to the whole group (^C, an agent's group kill) reaches the command itself; passed on
    # too, it came twice and killed the command in its cleanup (130/143 where it exits 0). `timeout`
    # sends one to its child, then one to the group. Here run takes its signal late, as on a loaded
    # machine: stopped until the command has taken the group's
    began, cleaning = tmp_path / "began", tmp_path / "cleaning"
    argv = ["run", *budget, "--", sys.executable, "-c", CLEANS_UP, str(began), str(cleaning)]
    proc = _started(argv, began, _state(tmp_path))
    os.kill(proc.pid, signal.SIGSTOP)
    if to != "group":
        proc.send_signal(signum)
    if to != "run":
        os.killpg(proc.pid, signum)
        _wait_for(cleaning, time.monotonic() + 30)
    os.kill(proc.pid, signal.SIGCONT)
    out, err = _finish(proc, 30)
    _cleaned_up_and_exited_0(proc, out, err)


LEAVES_THE_GROUP = """
import os, pathlib, sys, time
os.setpgrp()  # as coreutils' timeout does (and any command that calls setpgid or setsid)
pathlib.Path(sys.argv[1]).touch()
time.sleep(30)
"""


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_group_signal_reaches_a_command_that_left_the_group(
    tmp_path: Path, budget: list[str], signum: signal.Signals
) -> None:
    # run passed on no signal sent to its whole group, taking the command for a member; a command
    # that made a group of its own (`timeout 300 pytest`, which the agents' hook wraps) never got
    # it and ran to its end (helper-35)
    began = tmp_path / "began"
    proc = _started(["run", *budget, "--", sys.executable, "-c", LEAVES_THE_GROUP, str(began)], began, _state(tmp_path))
    os.killpg(proc.pid, signum)
    out, err = _finish(proc, 15)
    assert proc.returncode == -signum, (out, err)  # (run dies of its command's signal, as timeout does)
    assert f"was killed by signal {signum}".encode() in out, out


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_terminal_s_ctrl_c_reaches_the_command_once(tmp_path: Path, budget: list[str]) -> None:
    # ^C goes to the terminal's foreground process group: run's and the command's
    began, cleaning = tmp_path / "began", tmp_path / "cleaning"
    master, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*SF, "run", *budget, "--", sys.executable, "-c", CLEANS_UP, str(began), str(cleaning)],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_state(tmp_path),
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # the terminal is its session's
    )
    os.close(terminal)
    try:
        deadline = time.monotonic() + 60
        _wait_for(began, deadline, proc)
        os.kill(proc.pid, signal.SIGSTOP)  # run takes its SIGINT once the command has taken its own
        os.write(master, b"\x03")
        _wait_for(cleaning, deadline)
        os.kill(proc.pid, signal.SIGCONT)
        out, err = _finish(proc, 30)
    finally:
        os.close(master)
    _cleaned_up_and_exited_0(proc, out, err)


# -- 5. the command's output is a pipe, and the whole output is exact --------------------------------------------
@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "4000"]])
def test_the_command_writes_to_a_pipe_and_the_whole_output_is_byte_exact(tmp_path: Path, budget: list[str]) -> None:
    tee = tmp_path / "whole.log"
    # `> /dev/stderr` opens the command's stderr again, truncating it when it is a regular file
    script = (
        "stat -L -c %F /dev/stdout /dev/stderr; "
        'for i in $(seq 1 60); do echo "gcc -c unit_$i.c"; done; '
        "echo 'unit_61.c:3:1: error: unknown type name foo' > /dev/stderr; exit 1"
    )
    done = _sf(["run", *budget, "--tee", str(tee), "--", "sh", "-c", script], tmp_path, 60)
    assert done.returncode == 1
    expected = b"fifo\nfifo\n" + b"".join(b"gcc -c unit_%d.c\n" % i for i in range(1, 61))
    assert tee.read_bytes() == expected + b"unit_61.c:3:1: error: unknown type name foo\n"
    assert b"error: unknown type name foo" in done.stdout


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "4000"]])
def test_a_tee_file_that_cannot_be_made_is_not_taken_for_the_command_s_status(
    tmp_path: Path, budget: list[str]
) -> None:
    """``run`` exits 125, as ``env`` and ``timeout`` do when they fail themselves, without running
    CMD: it exited 1, which read as CMD's own failure (a fresh-user helper's find). A file that is
    not a regular one neither: ``--tee /dev/null`` with a budget reported an empty output, the
    error in it lost, and refs into it could not be read back (helper-29)."""
    marker = tmp_path / "ran"
    for tee, why in ((str(tmp_path / "missing" / "whole.log"), b"No such file"), ("/dev/null", b"not a regular file")):
        done = _sf(["run", *budget, "--tee", tee, "--", "touch", str(marker)], tmp_path, 60)
        assert done.returncode == 125 and not marker.exists()
        assert done.stdout == b""
        assert b"cannot write --tee file" in done.stderr and b"CMD was not run" in done.stderr
        assert why in done.stderr


# -- 6. a full disk ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _small_disk(folder: Path, size: str) -> Iterator[Path]:
    """``folder``, made a tmpfs of ``size`` (``512k``) while the block runs; skips without mount."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small filesystem cannot be mounted here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)  # (lazy: a file a failed test left open)


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_full_disk_never_fails_the_command(tmp_path: Path, budget: list[str]) -> None:
    with _small_disk(tmp_path / "full", "512k") as full:
        script = (
            'for i in $(seq 1 40000); do echo "INFO compiling unit $i of the big module"; done; '  # 1.7 MB
            "echo 'error: the final step failed'; exit 3"
        )
        done = subprocess.run(
            [*SF, "run", *budget, "--", "sh", "-c", script],
            capture_output=True,
            env={**os.environ, "XDG_STATE_HOME": str(full), "TMPDIR": str(tmp_path)},
            timeout=120,
            check=False,
        )
        left = list((full / "streamfilter").glob("archive/*"))
    assert done.returncode == 3 and b"Traceback" not in done.stderr, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "error: the final step failed" in lines and "INFO compiling unit 40000 of the big module" in lines
    assert "exited with status 3" in lines[-1]
    if budget:  # the whole output moves to the temporary directory, and says so
        (note,) = [line for line in lines if "kept in" in line]
        assert "No space left on device" in note
        return
    # a plain run's archive moves there too (its summaries had no ref from where the disk filled on,
    # helper-101): every summary's ref reads back the lines it counts, and the full disk keeps none
    assert not [line for line in lines if "could not be kept" in line] and b"archive.elsewhere" in done.stderr
    summaries = [line for line in lines if line.startswith("[streamfilter: dropped")]
    assert summaries and all(" ref " in line for line in summaries), summaries
    got = subprocess.run(
        [*SF, "expand", summaries[0].rsplit(" ref ", 1)[1].rstrip("]")], capture_output=True, check=True
    ).stdout
    first, last = (int(n) for n in summaries[0].split(" (", 1)[0].rsplit(" ", 1)[1].split("-"))
    assert got == b"".join(b"INFO compiling unit %d of the big module\n" % i for i in range(first, last + 1))
    assert left == []


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_state_directory_removed_while_the_command_runs_is_said(tmp_path: Path, budget: list[str]) -> None:
    """The state directory removed mid-run: a plain run printed refs into its unlinked archive,
    none readable, with no word of it; a budgeted run lost the whole report ("No such file or
    directory", helper-41). Now the plain run says its refs cannot be read back, and the budgeted
    one filters the output from memory and says why."""
    state = tmp_path / "state"
    script = (
        'for i in $(seq 1 300); do echo "step $i ok"; done; sleep 0.5; rm -rf "$XDG_STATE_HOME"; '
        'for i in $(seq 1 300); do echo "step $i again"; done; echo "error: boom"; exit 1'
    )
    done = subprocess.run(
        [*SF, "run", "--no-baseline", *budget, "--", "sh", "-c", script],
        capture_output=True,
        env={**os.environ, "XDG_STATE_HOME": str(state), "TMPDIR": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "error: boom" in lines and "exited with status 1" in lines[-1]
    if budget:
        assert "was removed while the command ran): filtered from memory, without refs" in lines[-2]
        assert " ref " not in done.stdout.decode()
    else:
        assert lines[-2].endswith("was removed while CMD ran: no ref can be read back]"), lines[-2]
        # a summary written after the removal gives no ref it cannot keep (helper-48)
        (summary,) = [line for line in lines if line.startswith("[streamfilter: dropped")]
        assert "again" in summary and "ref" not in summary, summary


def test_a_tee_file_on_a_full_disk_keeps_what_it_holds(tmp_path: Path) -> None:
    """With a budget, the --tee file is the whole output's copy: on a full disk the copy goes on in
    memory, and the user's file was removed with the 512 KiB it held (helper-41). It stays, as
    ``cmd | tee``'s would, and the line that says why names where it stopped."""
    with _small_disk(tmp_path / "full", "512k") as full:
        script = 'for i in $(seq 1 40000); do echo "INFO compiling unit $i"; done; echo "error: boom"; exit 3'
        done = subprocess.run(
            [*SF, "run", "--budget-tokens", "300", "--tee", str(full / "tee.log"), "--", "sh", "-c", script],
            capture_output=True,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TMPDIR": str(tmp_path)},
            timeout=120,
            check=False,
        )
        kept, mode = (full / "tee.log").read_bytes(), (full / "tee.log").stat().st_mode
    assert done.returncode == 3, done.stderr
    whole = b"".join(b"INFO compiling unit %d\n" % i for i in range(1, 40001)) + b"error: boom\n"
    assert len(kept) > 100_000 and whole.startswith(kept)
    assert mode & 0o777 == 0o666 & ~_umask()  # (as tee makes it, helper-45)
    (note,) = [line for line in done.stdout.decode().splitlines() if "could not be kept" in line]
    assert "No space left on device" in note and f"after {len(kept)} bytes" in note, note


def test_a_source_remembered_on_a_full_disk_leaves_no_file_behind(tmp_path: Path) -> None:
    # the name of a text output's source, written to a temporary file then renamed: on a full disk
    # the write failed and the empty temporary file stayed (helper-45)
    from streamfilter.live.expand import remember_source

    with _small_disk(tmp_path / "full", "64k") as full:
        (full / "sources").mkdir()
        with open(full / "filler", "wb", buffering=0) as filler:
            with contextlib.suppress(OSError):
                while True:
                    filler.write(b"x" * 4096)
        remembered = remember_source("/some/log/" + "x" * 8192, full)
        left = sorted((full / "sources").iterdir())
    assert not remembered and left == []


def test_a_full_state_directory_makes_room_or_moves_to_the_temporary_directory(tmp_path: Path) -> None:
    """A run that filled the state directory's disk left its archive there, and every later run's
    archive then failed at once: no refs until someone cleaned up by hand. A budgeted run's whole
    output went to memory although the temporary directory could be written (helper-35). Now the
    older archives make room, and the whole output moves to the temporary directory."""
    full, tmp = tmp_path / "full", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(full), "TMPDIR": str(tmp)}

    def run(budget: list[str], lines: int) -> subprocess.CompletedProcess[bytes]:
        script = f'for i in $(seq 1 {lines}); do echo "INFO compiling unit $i"; done; echo "error: boom"; exit 3'
        return subprocess.run(
            [*SF, "run", *budget, "--", "sh", "-c", script], capture_output=True, env=env, timeout=120
        )

    with _small_disk(full, "256k"):
        big, small, budgeted = run([], 40000), run([], 3000), run(["--budget-tokens", "300"], 40000)
        archives = sorted((full / "streamfilter" / "archive").iterdir())
    assert [done.returncode for done in (big, small, budgeted)] == [3, 3, 3]
    first = small.stdout.decode().splitlines()[0]
    assert first.startswith("[streamfilter: dropped lines 1-") and " ref stdin-" in first, first
    assert len(archives) == 1 and archives[0].stem in first  # the big run's archive made room for it
    lines = budgeted.stdout.decode().splitlines()
    assert "error: boom" in lines and not [line for line in lines if "could not be kept" in line]
    (moved,) = [line for line in lines if "the whole output is kept in" in line]
    assert "No space left on device" in moved and str(tmp / f"streamfilter-{os.getuid()}" / "runs") in moved
    kept = Path(lines[-1].rsplit("): ", 1)[1].rstrip("]"))
    assert kept.read_bytes() == b"".join(b"INFO compiling unit %d\n" % i for i in range(1, 40001)) + b"error: boom\n"


def test_an_output_past_the_file_cap_is_filtered_from_its_end_in_memory(tmp_path: Path) -> None:
    # a looping test under an agent's hook printed 380 MB a second into runs/: one run's file takes
    # at most RUN_FILE_BYTES (128 MiB), then the end of the output is held in memory, as on a full disk
    script = (
        "import sys\n"
        "line = b'INFO step of the loop that never ends, printed again and again\\n'\n"
        "block = line * 20000\n"
        "for _ in range(140_000_000 // len(block)): sys.stdout.buffer.write(block)\n"
        "sys.stdout.buffer.write(b'error: the loop gave up\\n'); sys.exit(4)\n"
    )
    done = _sf(["run", "--budget-tokens", "300", "--", sys.executable, "-c", script], tmp_path, 300)
    assert done.returncode == 4 and b"Traceback" not in done.stderr, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "error: the loop gave up" in lines
    (note,) = [line for line in lines if "could not be kept" in line]
    assert "it passed the 128 MiB a run's file may take" in note and "the last 64 MiB are held" in note
    line = b"INFO step of the loop that never ends, printed again and again\n"
    blocks = 140_000_000 // (len(line) * 20000)
    size = blocks * 20000 * len(line) + len(b"error: the loop gave up\n")
    assert lines[-1].endswith(f"status 4; whole output ({blocks * 20000 + 1} lines, {size} bytes) not kept]"), lines[-1]
    assert not list((tmp_path / "state").rglob("*.log"))  # the file went


# -- 7. a sandbox where only the project is writable -------------------------------------------------------------
def _temporary_directories() -> str:
    """The temporary directories a sandbox test mounts read-only (skipped when the checkout or its
    venv is under one of them, which the sandbox would hide)."""
    tmps = " ".join(d for d in ("/tmp", "/var/tmp", "/usr/tmp") if os.path.isdir(d))
    here = (os.path.realpath(sys.prefix), os.path.realpath(Path(__file__).parents[2]))
    if any(p == d or p.startswith(d + "/") for p in here for d in tmps.split()):
        pytest.skip("the checkout or its venv is under a temporary directory, which the sandbox hides")
    return tmps


def test_a_sandbox_gets_no_file_in_the_working_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    # a mount namespace: the temporary directories (and the state directory, under /tmp) read-only,
    # the project, seen at /mnt, writable
    tmps = _temporary_directories()
    inner = (
        f"mount --bind {project} /mnt && for d in {tmps}; do mount -t tmpfs -o ro tmpfs $d || exit 99; done && "
        f"cd /mnt && exec {sys.executable} -m streamfilter run --budget-tokens 300 -- "
        "sh -c 'echo building; echo \"main.c:1:1: error: boom\"; exit 1'"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    env["XDG_STATE_HOME"] = "/tmp/no-such-state"
    done = subprocess.run(["unshare", "-m", "sh", "-c", inner], capture_output=True, env=env, timeout=60, check=False)
    if done.returncode in (99,) or b"unshare:" in done.stderr or b"mount:" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.decode().strip()}")
    assert sorted(p.name for p in project.iterdir()) == ["main.c"]  # nothing written into the project
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "main.c:1:1: error: boom" in lines
    (note,) = [line for line in lines if "could not be kept" in line]  # said once
    assert "Read-only file system" in note and "filtered from memory" in note
    assert lines[-1].endswith("exited with status 1; whole output (2 lines, 33 bytes) not kept]")


def test_a_plain_run_in_a_sandbox_says_on_stdout_that_its_summaries_have_no_refs(tmp_path: Path) -> None:
    """helper-71: without a budget, the only word that no directory could keep the whole output was
    archive.unavailable, a JSON line on stderr: an agent read summaries without refs and no why."""
    tmps = _temporary_directories()
    inner = (
        f"for d in {tmps}; do mount -t tmpfs -o ro tmpfs $d || exit 99; done && "
        f"exec {sys.executable} -m streamfilter run -- sh -c 'seq 300; echo \"error: boom\"; exit 1'"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    env["XDG_STATE_HOME"] = "/tmp/no-such-state"
    done = subprocess.run(["unshare", "-m", "sh", "-c", inner], capture_output=True, env=env, timeout=60, check=False)
    if done.returncode in (99,) or b"unshare:" in done.stderr or b"mount:" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.decode().strip()}")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "error: boom" in lines and any(line.startswith("[streamfilter: dropped lines 1-") for line in lines)
    note = "the whole output could not be kept (no state or temporary directory can be written): no refs"
    assert lines[-2] == f"[streamfilter: {note}]"
    assert lines[-1].endswith("exited with status 1]")


def test_a_state_directory_that_cannot_be_written_still_gives_refs_that_expand(tmp_path: Path) -> None:
    """The archive of a plain run goes to the temporary directory: its summaries kept no ref, so
    their lines could not be read back (``--budget-tokens`` already fell back so)."""
    (tmp_path / "state").write_text("a file, not a directory")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TMPDIR": str(tmp_path)}
    script = 'for i in $(seq 1 300); do echo "step $i ok"; done; echo "error: boom"; exit 1'
    done = subprocess.run([*SF, "run", "--", "sh", "-c", script], capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 1
    first = done.stdout.decode().splitlines()[0]
    assert first.startswith("[streamfilter: dropped lines 1-") and " ref " in first, first
    ref = first.rsplit(" ref ", 1)[1].rstrip("]")
    last = int(first.split("dropped lines 1-", 1)[1].split(" ", 1)[0])
    back = subprocess.run([*SF, "expand", ref], capture_output=True, env=env, timeout=60, check=False)
    assert back.returncode == 0, back.stderr
    assert back.stdout == b"".join(b"step %d ok\n" % i for i in range(1, last + 1))
    assert b"archive.elsewhere" in done.stderr


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_an_executable_script_without_a_shebang_runs_as_a_shell_script(tmp_path: Path, budget: list[str]) -> None:
    # bash and env run it with the shell (execvp's ENOEXEC rule); run said "Exec format error" and
    # exited 1 without its output (helper-37)
    script = tmp_path / "show.sh"
    script.write_text('echo "hello $1"; exit 4\n')
    script.chmod(0o755)
    done = _sf(["run", *budget, "--", str(script), "world"], tmp_path, 60)
    assert done.returncode == 4, done.stderr
    assert done.stdout.decode().splitlines()[0] == "hello world"


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_a_binary_for_another_machine_is_not_run_as_a_shell_script(tmp_path: Path, budget: list[str]) -> None:
    # exec says ENOEXEC for it too: its lines ran as shell commands and run exited 0 (helper-41);
    # bash and dash refuse a file with a NUL byte in its first line, status 126
    binary = tmp_path / "armbin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\n" + f"touch {tmp_path / 'ran'}\n".encode())
    binary.chmod(0o755)
    done = _sf(["run", *budget, "--", str(binary)], tmp_path, 60)
    assert done.returncode == 126, done.stderr
    assert b"cannot execute binary file: Exec format error" in done.stdout + done.stderr
    assert not (tmp_path / "ran").exists()
    # a script whose #! interpreter is not there: bash's words, 127 (it said "command not found")
    script = tmp_path / "bad.sh"
    script.write_text("#!/nonexistent/interp\necho hi\n")
    script.chmod(0o755)
    done = _sf(["run", *budget, "--", str(script)], tmp_path, 60)
    assert done.returncode == 127, done.stderr
    assert b"cannot execute: required file not found" in done.stdout + done.stderr


@pytest.mark.parametrize("empty", [False, True])
def test_a_home_that_is_not_there_is_not_made(tmp_path: Path, empty: bool) -> None:
    """HOME=/nonexistent (Debian's nobody): run made it, parents and all, for its state directory;
    state goes to the temporary directory instead, as for a state directory that cannot be written
    (helper-35). ``HOME=`` names no home either: state went to ``/.local/state`` (helper-63)."""
    home = tmp_path / "nonexistent" / "x"
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_STATE_HOME", "STATE_DIRECTORY")}
    env |= {"HOME": "" if empty else str(home), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    script = 'for i in $(seq 1 300); do echo "step $i ok"; done; echo "error: boom"; exit 1'
    done = subprocess.run([*SF, "run", "--", "sh", "-c", script], capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert not (tmp_path / "nonexistent").exists()
    first = done.stdout.decode().splitlines()[0]
    ref = first.rsplit(" ref ", 1)[1].rstrip("]")
    assert ref.startswith(str(tmp_path / "tmp")), ref
    assert b"archive.elsewhere" in done.stderr and b"is not there" in done.stderr  # (said, helper-36)
    back = subprocess.run([*SF, "expand", ref], capture_output=True, env=env, timeout=60, check=False)
    assert back.returncode == 0 and back.stdout.startswith(b"step 1 ok\n"), back.stderr
    passed = subprocess.run([*SF, "run", "--", "true"], capture_output=True, env=env, timeout=60, check=False)
    assert passed.returncode == 0 and not (tmp_path / "nonexistent").exists()  # (its baseline is kept elsewhere)


# -- 8. an error shown while the command still runs --------------------------------------------------------------
def _running(script: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    """``run -- sh -c SCRIPT`` in a session of its own, its stdin a pipe the test holds."""
    return subprocess.Popen(
        [*SF, "run", "--", "sh", "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_state(tmp_path),
        start_new_session=True,
    )


def _read_until(proc: subprocess.Popen[bytes], wanted: bytes, seconds: float) -> bytes:
    """What ``proc`` printed once ``wanted`` came (within ``seconds``); the test fails if it had ended by then."""
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline and proc.poll() is None:
        seen += proc.stdout.read() or b""
        time.sleep(0.05)
    assert proc.poll() is None and wanted in seen, seen
    os.set_blocking(proc.stdout.fileno(), True)
    return seen


def _shown_while_running(script: str, wanted: bytes, tmp_path: Path, seconds: float) -> bytes:
    """What ``run -- sh -c SCRIPT`` printed once ``wanted`` came (within ``seconds``); the test
    fails if the command had ended by then."""
    proc = _running(script, tmp_path)
    try:
        return _read_until(proc, wanted, seconds)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def test_an_error_before_a_pause_is_shown_while_the_command_runs(tmp_path: Path) -> None:
    script = (
        'for i in $(seq 1 200); do echo "INFO compiling unit $i"; done; '
        "echo 'main.c:12:5: error: expected ; before }'; echo 'make: *** Waiting for unfinished jobs....'; "
        "sleep 60; exit 2"
    )
    # HOLD_SECONDS is 3: the error comes after 3 s of quiet
    _shown_while_running(script, b"main.c:12:5: error: expected ; before }\n", tmp_path, 20)


def test_a_short_output_before_a_pause_is_shown_while_the_command_runs(tmp_path: Path) -> None:
    """What the filter prints of a short output (``run.ShortOutput``) goes out when the stream lets
    its held lines out, 3 s after the command's last output (helper-24: at 6.4 s, the 3 s counted
    from the first write held)."""
    printed = tmp_path / "printed"
    script = f"echo 'connecting to db'; echo 'error: connection refused'; date +%s.%N > {printed}; sleep 60"
    _shown_while_running(script, b"error: connection refused\n", tmp_path, 30)
    shown = time.time()  # (_shown_while_running polls every 50 ms)
    assert shown - float(printed.read_text()) < 5.0  # HOLD_SECONDS 3, and room for a loaded machine


def test_a_prompt_the_command_waits_at_is_shown(tmp_path: Path) -> None:
    """A command quiet for HOLD_SECONDS may wait for its user: the lines the tail rule would keep,
    and an unterminated prompt, are shown then (helper-29: `Continue? [y/N]` and `Name? ` showed
    only once the input came, the command looking hung)."""
    script = "seq 1 300; printf 'Continue? [y/N] '; read answer; echo \"answered $answer\""
    proc = _running(script, tmp_path)
    seen = _read_until(proc, b"Continue? [y/N] ", 30)
    assert seen.endswith(b"299\n300\nContinue? [y/N] "), seen
    out, err = proc.communicate(b"y\n", timeout=30)
    assert proc.returncode == 0 and b"Traceback" not in err, err
    lines = (seen + out).decode().splitlines()
    assert "Continue? [y/N] answered y" in lines and " exited with status 0" in lines[-1], lines
    dropped = [line for line in lines if line.startswith("[streamfilter: dropped lines ")]
    assert dropped[-1].startswith("[streamfilter: dropped lines ") and "-276 " in dropped[-1]  # 277-300 shown


def test_output_without_a_pause_is_decided_as_before(tmp_path: Path) -> None:
    # the same lines printed at once, or with a pause after the error: the error's context is the same,
    # and the lines after the pause are decided as without it (the tail rule at the end)
    lines = "".join(f"INFO compiling unit {i}\\n" for i in range(1, 61))
    outputs = []
    for pause in ("", "sleep 4; "):
        script = (
            f"printf '{lines}'; echo 'main.c:12:5: error: expected ;'; {pause}echo 'make: *** [all] Error 1'; exit 2"
        )
        done = _sf(["run", "--no-baseline", "--", "sh", "-c", script], tmp_path, 60)
        assert done.returncode == 2
        outputs.append(collections.Counter(line for line in done.stdout.decode().splitlines() if "ref" not in line))
    assert outputs[0] == outputs[1]


def test_every_line_is_accounted_for_however_the_output_is_paced(tmp_path: Path) -> None:
    # bursts and pauses: a read the filter's timer interrupts must not lose the bytes it took (a
    # chunk of 64 KiB went missing so once in a few runs of a large log while this change was made)
    script = (
        "import sys, time\n"
        "for i in range(1, 300001):\n"
        "    sys.stdout.write(f'L{i:06d} compiling unit {i % 977} of the module\\n')\n"
        "    if i % 15000 == 0:\n"
        "        sys.stdout.flush(); time.sleep(0.06)\n"
        "sys.exit(1)\n"
    )
    done = _sf(["run", "--format", "jsonl", "--", sys.executable, "-c", script], tmp_path, 120)
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stdout.splitlines()]
    runs = [e for e in events if e["event"] in ("keep", "drop")]
    assert runs[0]["first_line"] == 1 and runs[-1]["last_line"] == 300000
    assert all(b["first_line"] == a["last_line"] + 1 for a, b in itertools.pairwise(runs))
    assert sum(e["end_byte"] - e["start_byte"] for e in runs) == sum(
        len(f"L{i:06d} compiling unit {i % 977} of the module\n") for i in range(1, 300001)
    )


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "4000"]])
def test_the_command_gets_the_environment_as_given(tmp_path: Path, budget: list[str]) -> None:
    """streamfilter's own numpy runs OpenBLAS on one thread (``cli.main``); the command does not see it."""
    env = {k: v for k, v in _state(tmp_path).items() if k != "OPENBLAS_NUM_THREADS"}
    show = ["--", "sh", "-c", "echo threads=${OPENBLAS_NUM_THREADS-unset}"]
    for given, seen in ((None, b"threads=unset\n"), ("3", b"threads=3\n")):
        done = subprocess.run(
            [*SF, "run", *budget, *show],
            env=env if given is None else {**env, "OPENBLAS_NUM_THREADS": given},
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(seen), done.stdout


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_the_command_gets_the_descriptors_it_was_given(tmp_path: Path, budget: list[str]) -> None:
    """A descriptor past stderr that run was given is the command's too (a harness's ``5>log``), and
    none of run's own: the same set as without run."""
    log = tmp_path / "five.log"
    script = "ls /proc/self/fd | sort -n | tr '\\n' ' '; echo; echo written >&5"
    outputs = []
    for wrapper in ([], [*SF, "run", *budget, "--"]):
        done = subprocess.run(
            [BASH, "-c", f"exec 5>>{log}; exec {shlex.join([*wrapper, BASH, '-c', script])}"],
            env=_state(tmp_path),
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.splitlines()[0])
    assert outputs[0] == outputs[1] and b" 5 " in outputs[0], outputs
    assert log.read_bytes() == b"written\nwritten\n"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_a_recursive_make_under_run_keeps_the_jobserver(tmp_path: Path) -> None:
    """``make -j4`` hands a sub-make its jobserver as two descriptors; under run the sub-make still
    has them (no "jobserver unavailable: using -j1")."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "Makefile").write_text("all:\n\t@echo flags=$(MAKEFLAGS)\n")
    run = " ".join(shlex.join([*SF, "run", "--"]).split())
    (tmp_path / "Makefile").write_text(f"all:\n\t+{run} $(MAKE) --no-print-directory -C sub\n")
    done = subprocess.run(
        ["make", "-j4", "--no-print-directory", "-C", str(tmp_path)],
        env=_state(tmp_path),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"jobserver unavailable" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert b"jobserver-auth=" in done.stdout, done.stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts no thread of its own on one core")
def test_numpy_computes_on_one_thread(tmp_path: Path) -> None:
    """OpenBLAS starts a thread per core as numpy loads, spinning for work (about 100 ms of CPU of
    a wrapped command); streamfilter multiplies no matrices, and its process has no such thread."""
    log = tmp_path / "build.log"
    log.write_bytes(b"step ok\n" * 50 + b"error: boom\n")
    probe = (
        "import os, sys; from streamfilter.cli.main import main; main(['filter', sys.argv[1]]); "
        "sys.stderr.write(f'threads={len(os.listdir(\"/proc/self/task\"))}')"
    )
    env = {k: v for k, v in _state(tmp_path).items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", probe, str(log)], env=env, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert b"error: boom" in done.stdout
    assert done.stderr.decode().splitlines()[-1] == "threads=1"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("budget", [[], ["--budget-tokens", "300"]])
def test_with_its_standard_output_closed_run_still_runs_the_command(tmp_path: Path, budget: list[str]) -> None:
    """helper-57: `run -- CMD >&-` said "standard output is closed", exited 1 and never ran CMD (a
    job started with its descriptors closed); without run, CMD runs."""
    marker = tmp_path / "ran"
    inner = shlex.join(
        [sys.executable, "-m", "streamfilter", "run", *budget, "--", "sh", "-c", f"touch {marker}; echo hi; exit 3"]
    )
    done = subprocess.run(["sh", "-c", f"{inner} >&-"], capture_output=True, env=_state(tmp_path), timeout=60)
    assert done.returncode == 3 and marker.exists(), done
    assert b"standard output is closed: CMD runs" in done.stderr


def test_a_stop_signal_as_run_starts_stops_it_before_cmd_or_is_passed_on(tmp_path: Path) -> None:
    # a ^C while run's event loop started (before it took the signals) cancelled the run as its
    # command started: run exited 130 with nothing said and the command ran on (helper-101). The
    # signal is sent at delays swept over run's start-up, measured first: each time, either the
    # command never started or it got the signal and run says so, and run dies of it
    marker = tmp_path / "started"
    started = time.monotonic()
    proc = _started(["run", "--", "sh", "-c", f'touch "{marker}"; exec sleep 60'], marker, _state(tmp_path))
    startup = time.monotonic() - started
    proc.send_signal(signal.SIGINT)
    _finish(proc, 30)
    for i in range(24):
        marker = tmp_path / f"started{i}"
        # (a sleep of its own length: pgrep tells this command from the others)
        command = ["run", "--", "sh", "-c", f'touch "{marker}"; exec sleep 6{i}.5']
        pipe = subprocess.PIPE
        proc = subprocess.Popen([*SF, *command], stdout=pipe, stderr=pipe, env=_state(tmp_path), start_new_session=True)
        time.sleep(startup * (0.4 + 0.8 * i / 23))
        proc.send_signal(signal.SIGINT)
        out, err = _finish(proc, 30)
        time.sleep(0.05)
        left = subprocess.run(["pgrep", "-f", f"sleep 6{i}.5"], capture_output=True, text=True, check=False).stdout
        for pid in left.split():
            os.kill(int(pid), signal.SIGKILL)
        assert not left, f"run exited {proc.returncode} and left its command running: {out!r} {err!r}"
        # and run dies of it, as a program without a handler does, so a shell's loop stops (it had
        # exited 130 before its command started, and the loop went on, helper-104); but for Python's
        # own start, which a ^C may fail before any of ours runs (exit 1, "init_import_site")
        assert proc.returncode == -signal.SIGINT or b"KeyboardInterrupt" in err, (proc.returncode, out, err)
        if marker.exists():
            assert b"was killed by signal 2 (SIGINT)" in out, (out, err)


@pytest.mark.parametrize("ignored", [False, True])
def test_a_sigint_before_a_subcommand_takes_it_kills_the_program_not_python(ignored: bool) -> None:
    # a ^C in run's first tenth of a second came as Python's KeyboardInterrupt in the middle of an
    # import: a traceback and exit 1, or numpy half loaded, "cannot load module more than once per
    # process" (helper-113). As the program, main leaves SIGINT at its default until a subcommand
    # takes it (ignored stays ignored: a shell's background job); called with arguments, it does not
    script = (
        "import signal, sys\n"
        f"if {ignored}: signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "from streamfilter.cli import main as m\n"
        "seen = []\n"
        "m._main = lambda argv, program: seen.append(signal.getsignal(signal.SIGINT)) or 0\n"
        "m.main(['--version'])\n"
        "sys.argv = ['streamfilter', '--version']\n"
        "m.main()\n"
        "print(*(h == signal.SIG_DFL for h in seen), *(h == signal.SIG_IGN for h in seen))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    dfl_ign = ["False", "False", "True", "True"] if ignored else ["False", "True", "False", "False"]
    assert done.stdout.split() == dfl_ign


def test_an_archive_moved_off_a_full_disk_reads_back_the_refs_given_before_from_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # parallel runs on a full state directory: one run's refs named its first archive file, left
    # there when it moved to the temporary directory, and another run's full disk evicted that file,
    # the refs failing though their bytes were in the copy (helper-104, helper-105). The copy has
    # the file's name, the file goes, and expand finds the copy
    from streamfilter.core.filter import FilterConfig, StreamFilter
    from streamfilter.live.expand import archive_refs, expand, parse_ref

    with _small_disk(tmp_path / "full", "256k") as full:
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        monkeypatch.setenv("XDG_STATE_HOME", str(full))
        monkeypatch.setenv("TMPDIR", str(tmp))
        monkeypatch.delenv("STATE_DIRECTORY", raising=False)
        archive, ref = archive_refs("stdin")
        assert archive is not None
        data = b"".join(
            b"ERROR: step %05d failed\n" % i if i % 500 == 499 else b"INFO line %05d\n" % i for i in range(30000)
        )
        sf = StreamFilter(FilterConfig(head_lines=0, tail_lines=0))
        refs = []
        for i in range(0, len(data), 4096):
            archive.write(data[i : i + 4096])
            refs += [(run, ref(run)) for run in sf.feed(data[i : i + 4096])]
        refs += [(run, ref(run)) for run in sf.flush()]
        drops = [(run, r) for run, r in refs if run.decision == "drop"]
        assert all(r for _, r in drops) and archive.source.startswith(str(tmp))  # (moved, each with its ref)
        assert any(r.startswith("stdin-") for _, r in drops)  # (and some name the first file)
        assert [p.name for p in (full / "streamfilter" / "archive").iterdir()] == []  # (its bytes given back)
        other, _ = archive_refs("stdin")  # another run, on the full disk: it moves too
        assert other is not None
        other.write(b"x" * 300_000)
        other.close()
        archive.close()
        for run, r in drops:
            out = io.BytesIO()
            expand(parse_ref(r), out)
            assert out.getvalue() == data[run.start_byte : run.end_byte]
