"""Shared test helpers: the corpus location and a subprocess runner for the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
CASES = SHARED / "cases"


def run_cli(
    *args: str, stdin: bytes | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m streamfilter ARGS`` in a subprocess (``env`` added to ours); return the finished process."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "streamfilter", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def need(path: Path) -> Path:
    """Skip the test when a file from ../shared is missing on this machine."""
    if not path.exists():
        pytest.skip(f"{path} is not present")
    return path


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The CLIs these tests start archive stdin under $XDG_STATE_HOME: keep that out of $HOME."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    os.environ.pop("STATE_DIRECTORY", None)


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    """A daemon or follower a test started does not outlive the test, even when it fails."""
    from tests.live.proc import Live

    yield
    Live.kill_all()
