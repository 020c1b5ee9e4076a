"""``run`` of a command that prints another run's log (``gh run view --log-failed``): it exits 0
whatever that run did, and its output is filtered as a failure's, with no baseline of its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamfilter.live.run import prints_another_runs_log
from tests.conftest import run_cli

# a CI job's log as `gh run view --log-failed` prints it: the line that tells what went wrong
# matches no built-in failure signature and sits 13 lines before the end
FAKE_GH = """#!/bin/sh
i=1; while [ $i -le 200 ]; do echo "build	Run step	2026-01-01T00:00:00Z compiling module_$i"; i=$((i+1)); done
echo "build	Run step	2026-01-01T00:00:00Z the cache server refused the upload of layer 7"
i=1; while [ $i -le 12 ]; do echo "build	Post step	2026-01-01T00:00:00Z cleaning up step $i"; i=$((i+1)); done
exit 0
"""
CAUSE = b"the cache server refused the upload of layer 7"


def _gh_on_path(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "XDG_STATE_HOME": str(tmp_path / "state")}


@pytest.mark.parametrize(
    "argv",
    [
        ["gh", "run", "view", "123", "--log-failed"],
        ["gh", "run", "view", "--log", "123"],
        ["gh", "run", "view", "--job", "456", "--log"],
    ],
)
def test_a_log_read_through_a_command_that_exits_0_is_filtered_as_a_failure(argv: list[str], tmp_path: Path) -> None:
    env = _gh_on_path(tmp_path)
    for budget in (["--budget-tokens", "4000"], []):
        done = run_cli("run", *budget, "--", *argv, env=env)
        assert done.returncode == 0 and b"exited with status 0" in done.stdout.splitlines()[-1]
        assert CAUSE in done.stdout, budget  # a green run's 5-line tail dropped it
    # it is not a green run of the command: no baseline is stored for it
    assert not (tmp_path / "state" / "streamfilter" / "baselines").exists()


def test_only_a_log_of_another_run_is_taken_for_one() -> None:
    assert prints_another_runs_log(["/usr/bin/gh", "run", "view", "1", "--log-failed"])
    assert not prints_another_runs_log(["gh", "run", "view", "1"])  # the run's summary, not its log
    assert not prints_another_runs_log(["gh", "run", "list", "--log"])
    assert not prints_another_runs_log(["make", "--log"])
