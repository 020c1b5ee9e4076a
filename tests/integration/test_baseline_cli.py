"""``run`` stores a green run's baseline and weighs a later failing run of the same command with it;
``filter --baseline GOOD.log`` builds one from files; ``--no-baseline`` turns it off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamfilter.core.filter import StreamFilter
from streamfilter.core.output import render
from streamfilter.live.baselines import baseline_of_files
from tests.conftest import run_cli
from tests.integration.test_daemon import connect_unix, kept, start

GREEN = "".join(f"test_case_{i:02d} ... ok\n" for i in range(60)) + "Ran 60 tests\nOK\n"
RED = GREEN.replace("Ran 60 tests\nOK\n", "test_case_60 ... the disk is full\nRan 61 tests\nFAILED (errors=1)\n")
# one command, whatever the run prints and however it exits: a baseline is per command and directory
COMMAND = ("sh", "-c", "cat out.txt; exit $(cat code.txt)")


def run_here(folder: Path, state: Path, *options: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XDG_STATE_HOME": str(state)}
    argv = [sys.executable, "-m", "streamfilter", "run", "--tee", "tee.log", *options, "--", *COMMAND]
    return subprocess.run(argv, cwd=folder, capture_output=True, timeout=120, env=env, check=False)


def prints(folder: Path, text: str, code: int) -> None:
    (folder / "out.txt").write_text(text)
    (folder / "code.txt").write_text(str(code))


def baselines_in(state: Path) -> list[Path]:
    folder = state / "streamfilter" / "baselines"
    return sorted(folder.glob("*.shapes")) if folder.exists() else []


def test_a_green_run_stores_a_baseline_that_the_next_failing_run_is_weighed_with(tmp_path: Path) -> None:
    state = tmp_path / "state"
    prints(tmp_path, GREEN, 0)
    assert run_here(tmp_path, state).returncode == 0
    assert len(baselines_in(state)) == 1
    prints(tmp_path, RED, 1)
    weighed = run_here(tmp_path, state)
    assert weighed.returncode == 1
    assert b"test_case_59 ... ok" not in weighed.stdout  # in the tail, but the green run printed it
    assert b"the disk is full" in weighed.stdout and b"in the last green run" in weighed.stdout
    # a failing run without a baseline: as before there were baselines, whichever way it has none
    off = run_here(tmp_path, state, "--no-baseline")
    fresh = run_here(tmp_path, tmp_path / "fresh")
    assert off.stdout == fresh.stdout and off.returncode == fresh.returncode == 1
    assert b"test_case_59 ... ok" in off.stdout and b"in the last green run" not in off.stdout
    assert len(weighed.stdout) < len(off.stdout)


def test_a_failing_run_or_one_with_no_baseline_stores_none(tmp_path: Path) -> None:
    state = tmp_path / "state"
    prints(tmp_path, RED, 1)
    run_here(tmp_path, state)
    prints(tmp_path, GREEN, 0)
    run_here(tmp_path, state, "--no-baseline")
    assert baselines_in(state) == []
    run_here(tmp_path, state, "--budget-tokens", "500")  # decided at the end: stored too
    assert len(baselines_in(state)) == 1


def test_filter_baseline_builds_one_from_files(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text(GREEN)
    bad.write_text(RED)
    done = run_cli("filter", "--baseline", str(good), "--baseline", str(good), str(bad))
    assert done.returncode == 0
    sf = StreamFilter(baseline=baseline_of_files([str(good)], 1 << 20))
    runs = sf.feed(bad.read_bytes()) + sf.flush()
    assert [r.decision for r in runs] == ["drop", "keep"]
    assert done.stdout.startswith(render(runs[0], "text", "")[:-2]) and done.stdout.endswith(runs[1].data)
    off = run_cli("filter", "--baseline", str(good), "--no-baseline", str(bad))
    assert off.stdout == run_cli("filter", str(bad)).stdout
    explained = run_cli("filter", "--format", "jsonl", "--explain", "--baseline", str(good), str(bad)).stdout
    assert b'"novel": 2' in explained and b'"reason": "seen"' in explained


def test_filter_baseline_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.log").write_text(RED)
    missing = run_cli("filter", "--baseline", str(tmp_path / "nope.log"), str(tmp_path / "bad.log"))
    assert missing.returncode == 2 and missing.stdout == b"" and b"nope.log" in missing.stderr
    stdin = run_cli("filter", "--baseline", "-", str(tmp_path / "bad.log"))
    assert stdin.returncode == 2 and b"--baseline -" in stdin.stderr
    follow = run_cli("follow", "--baseline", "x", str(tmp_path / "bad.log"))
    assert follow.returncode == 2 and b"an option of filter only" in follow.stderr


@pytest.mark.parametrize("baselines", [True, False])
def test_a_daemons_runs_in_an_envelope_store_and_use_baselines(tmp_path: Path, baselines: bool) -> None:
    sock, out = tmp_path / "in.sock", tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\nbaselines = {str(baselines).lower()}\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    mark = b"\x1estreamfilter "
    head = b'"command": "make test", "cwd": "/src"'
    for run, text, status in (("1", GREEN, 0), ("2", RED, 1)):
        with connect_unix(sock) as client:
            client.sendall(mark + b'{"type": "run-start", "run": "%s", %s}\n' % (run.encode(), head))
            end = b'{"type": "run-end", "run": "%s", "status": %d}\n' % (run.encode(), status)
            client.sendall(text.encode() + mark + end)
        live.wait_for(lambda: sum(e["event"] == "exit" for e in live.events(out)) == int(run), 10)  # noqa: B023
    assert live.stop() == 0
    second = [e for e in live.events(out) if e.get("run") == "2" and e["event"] in ("keep", "drop")]
    summaries = " ".join(e["summary"] for e in second if e["event"] == "drop")
    assert ("in the last green run" in summaries) is baselines
    assert ("test_case_59 ... ok" in kept(second)) is not baselines
    assert len(baselines_in(tmp_path / "state")) == int(baselines)
