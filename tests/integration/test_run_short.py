"""``run`` of a command with a short output: written as it is, its baseline still stored; with
``--budget-tokens`` no filter is built for it, and no module of another subcommand loaded; live,
what the filter prints waits for the output's end or its length (or a pause: test_run_world)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from streamfilter.live.run import SHORT_OUTPUT_BYTES
from tests.conftest import run_cli

# 6 lines, 297 bytes: what `make -v` prints
VERSION = (
    "GNU Make 4.3\nBuilt for x86_64-pc-linux-gnu\nCopyright (C) 1988-2020 Free Software Foundation, Inc.\n"
    "License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>\n"
    "This is free software: you are free to change and redistribute it.\n"
    "There is NO WARRANTY, to the extent permitted by law.\n"
)


def test_a_short_output_is_written_whole_and_its_baseline_stored(tmp_path: Path) -> None:
    assert len(VERSION) <= SHORT_OUTPUT_BYTES
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    done = run_cli("run", "--budget-tokens", "4000", "--", "printf", "%s", VERSION, env=env)
    assert done.returncode == 0
    body, last = done.stdout.rsplit(b"\n[streamfilter: ", 1)
    assert body + b"\n" == VERSION.encode()  # (a filter kept the success tail's 5 lines and summarized the 1st)
    assert last.startswith(b"printf %s ") and b"exited with status 0; whole output (6 lines, 297 bytes)" in last
    assert len(list((tmp_path / "state" / "streamfilter" / "baselines").glob("*.shapes"))) == 1
    # a short failure without its last line end: whole too, the status line on a line of its own
    done = run_cli("run", "--budget-tokens", "4000", "--", "sh", "-c", "printf 'E: no\\nE: disk'; exit 3", env=env)
    assert done.returncode == 3 and done.stdout.startswith(b"E: no\nE: disk\n[streamfilter: sh -c ")
    # a longer output: filtered as before (the success tail of 5 lines)
    steps = "".join(f"step {i} ok\n" for i in range(60))
    assert len(steps) > SHORT_OUTPUT_BYTES
    done = run_cli("run", "--budget-tokens", "4000", "--", "printf", "%s", steps, env=env)
    assert done.stdout.startswith(b"[streamfilter: dropped lines 1-55 ")


def _run_loading(tmp_path: Path, *command: str) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    """``run --budget-tokens 4000 -- COMMAND`` through ``main`` in a new Python process: how it
    ended, and the modules that process then held."""
    probe = (
        "import sys; from streamfilter.cli.main import main; "
        f"status = main(['run', '--budget-tokens', '4000', '--', *{list(command)!r}]); "
        "sys.stderr.write(repr(sorted(sys.modules)))"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done, set(ast.literal_eval(done.stderr.decode().splitlines()[-1]))


def test_a_wrapped_command_loads_no_other_subcommand(tmp_path: Path) -> None:
    _, loaded = _run_loading(tmp_path, "true")
    assert sorted(m for m in loaded if m.startswith("streamfilter.cli.")) == [
        "streamfilter.cli.main",
        "streamfilter.cli.options",
        "streamfilter.cli.run",
    ]


def test_a_short_output_loads_no_filter(tmp_path: Path) -> None:
    """A short output, written whole, loads none of the modules of the filter's stages, the live
    stream or the file filter (what their imports cost would be paid by every wrapped command)."""
    done, loaded = _run_loading(tmp_path, "printf", "ok\\n")
    assert done.stdout.startswith(b"ok\n[streamfilter: printf ")
    assert len(list((tmp_path / "state" / "streamfilter" / "baselines").glob("*.shapes"))) == 1
    assert "streamfilter.live.baselines" in loaded  # (the probe sees what the run loaded)
    stages = {f"streamfilter.core.{m}" for m in ("filter", "signatures", "signature_table", "prior", "score", "hits")}
    live = {f"streamfilter.live.{m}" for m in ("batch", "stream", "sinks", "config")}
    others = {"numpy.ma"}  # (np.unique imports it on its first call)
    assert loaded.isdisjoint(stages | live | others), sorted(loaded & (stages | live | others))


def test_the_status_line_of_a_one_line_output_counts_it_in_the_singular(tmp_path: Path) -> None:
    # (it read "whole output (1 lines, 1 bytes)")
    done = run_cli("run", "--budget-tokens", "4000", "--", "printf", "x", env={"XDG_STATE_HOME": str(tmp_path)})
    assert done.returncode == 0 and b"exited with status 0; whole output (1 line, 1 byte): " in done.stdout


def test_a_short_output_is_written_whole_live_too(tmp_path: Path) -> None:
    """Without a budget, a short output is written as it is too (``seq 8``: 16 bytes came out as a
    237-byte summary and 5 lines); one a byte longer is filtered as before."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    done = run_cli("run", "--", "printf", "%s", VERSION, env=env)
    assert done.returncode == 0
    body, last = done.stdout.rsplit(b"\n[streamfilter: ", 1)
    assert body + b"\n" == VERSION.encode()
    assert last.startswith(b"printf %s ") and last.endswith(b" exited with status 0]\n") and b"\n" not in last[:-1]
    assert len(list((tmp_path / "state" / "streamfilter" / "baselines").glob("*.shapes"))) == 1
    done = run_cli("run", "--", "sh", "-c", "printf 'E: no\\nE: disk'; exit 3", env=env)
    assert done.returncode == 3 and done.stdout.startswith(b"E: no\nE: disk\n[streamfilter: sh -c ")
    steps = "".join(f"step {i} ok\n" for i in range(47))
    steps += "x" * (SHORT_OUTPUT_BYTES + 1 - len(steps) - 1) + "\n"
    assert len(steps) == SHORT_OUTPUT_BYTES + 1
    done = run_cli("run", "--", "printf", "%s", steps, env=env)
    assert done.stdout.startswith(b"[streamfilter: dropped lines 1-43 ")
