"""A real failing pytest and a real failing make, run through the command Claude Code's hook
rewrote them into, as Claude Code runs it (``bash -c`` in the project): the exit status is the
command's, the failure is kept, and the last line names the whole output, byte for byte."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streamfilter.live.expand import Ref


def _hooked(command: str, cwd: Path, env: dict[str, str]) -> str:
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "test"},
        "cwd": str(cwd),
        "permission_mode": "default",
    }
    done = subprocess.run(
        [sys.executable, "-m", "streamfilter", "hook", "claude"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        check=True,
    )
    wrapped: str = json.loads(done.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
    assert wrapped != command
    return wrapped


def _both(command: str, cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """The rewritten command's run, and the original's own output (stdout and stderr merged)."""
    wrapped = _hooked(command, cwd, env)
    twin = cwd.with_name(cwd.name + "-plain")  # (a build leaves objects behind: each run gets its own tree)
    shutil.copytree(cwd, twin)
    done = subprocess.run(["bash", "-c", wrapped], cwd=cwd, env=env, capture_output=True, timeout=300)
    plain = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=twin, env=env, capture_output=True, timeout=300)
    assert done.returncode == plain.returncode
    return done, plain.stdout


def _whole_output(out: bytes) -> Path:
    last = out.splitlines()[-1].decode()
    found = re.search(r"whole output \((\d+) lines, (\d+) bytes\): (.+)\]$", last)
    assert found, last
    return Path(found[3])


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # the venv's python and pytest first
    return {**os.environ, "HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state"),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip


def test_a_failing_pytest_through_the_hook(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "shop"
    (project / "tests").mkdir(parents=True)
    (project / "cart.py").write_text("def total(items):\n    return sum(items) + 1  # the bug\n")
    passing = "".join(f"def test_ok_{i}():\n    assert {i} == {i}\n\n" for i in range(300))
    (project / "tests" / "test_many.py").write_text(passing)
    (project / "tests" / "test_cart.py").write_text(
        "from cart import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
    )
    done, plain = _both("python -m pytest -v -p no:cacheprovider --rootdir .", project, env)
    assert done.returncode == 1
    assert b"assert 4 == 3" in done.stdout and b"FAILED tests/test_cart.py::test_total" in done.stdout
    assert len(done.stdout) < len(plain) / 3
    whole = _whole_output(done.stdout)
    kept = whole.read_bytes()
    assert kept.count(b"\n") == plain.count(b"\n") and b"test_ok_299 PASSED" in kept
    # a summary's ref reads its lines back from the kept output
    ref = re.search(rb"ref (\S+?)\]", done.stdout)
    assert ref is not None
    back = subprocess.run([sys.executable, "-m", "streamfilter", "expand", ref[1].decode()], env=env,
                          capture_output=True, check=True)  # fmt: skip
    parsed = Ref.parse(ref[1].decode())
    assert back.stdout == kept[parsed.start : parsed.end]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="needs make and gcc")
def test_a_failing_make_through_the_hook(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "calc"
    project.mkdir()
    for i in range(60):
        (project / f"unit{i}.c").write_text(f"int unit{i}(int x) {{ return x + {i}; }}\n")
    (project / "main.c").write_text('#include <stdio.h>\nint main(void) {\n  printf("%d\\n", missing_value);\n}\n')
    objects = " ".join(f"unit{i}.o" for i in range(60))
    (project / "Makefile").write_text(
        f"all: calc\ncalc: {objects} main.o\n\tgcc -o $@ $^\n%.o: %.c\n\tgcc -Wall -c $< -o $@\n"
    )
    done, plain = _both("make -k", project, env)
    assert done.returncode == 2
    assert b"missing_value" in done.stdout and b"undeclared (first use in this function)" in done.stdout
    assert b"exited with status 2" in done.stdout.splitlines()[-1]
    assert _whole_output(done.stdout).read_bytes() == plain
