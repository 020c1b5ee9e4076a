"""``run --budget-tokens N``: the output decided when the command ends, within the budget, with the
whole output kept on disk and named on the last line (what an agent reads)."""

from __future__ import annotations

import fcntl
import io
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

from streamfilter.core.budget import estimate_tokens
from streamfilter.core.filter import FilterConfig
from streamfilter.live.batch import LetGoFilter, filter_input
from streamfilter.live.stops import StopSignals
from tests.conftest import ROOT, run_cli

NOISY_FAILURE = (
    'for i in $(seq 1 3000); do echo "INFO compiling module_$i.c with flags -O2 -Wall"; done; '
    "echo 'tests/test_cart.py:42: AssertionError: expected 3 items, got 4' >&2; "
    'for i in $(seq 1 200); do echo "INFO cleanup step $i"; done; exit 1'
)


# a test harness no signature knows: its one failure, in plain words, mid-stream, far from the end
HARNESS = (
    "import sys\n"
    "print('harness v0.3 starting, 400 checks')\n"
    "for i in range(1, 401):\n"
    "    print(f'[{i}/400] loading fixture fx_{i}.json')\n"
    "    print('CHECK widget_total ... MISMATCH (want 3, have 4)' if i == 173 else f'CHECK item_{i} ... ok')\n"
    "print('harness: 399 ok, 1 differ')\n"
    "sys.exit(int(sys.argv[1]))\n"
)


# an ETL job no signature knows: one shard rejected in its own words, 600 lines before its end
PIPELINE = (
    "import sys\n"
    "print('etl: loading 900 shards')\n"
    "for i in range(900):\n"
    "    if i == 301:\n"
    "        print('shard-0301: rejected by loader - checksum 9f2c11aa != manifest 9f2c11ab, shard quarantined')\n"
    "    print(f'shard-{i:04d}: read {37 * i + 11} rows, validated, loaded into staging.events_p{i % 4}')\n"
    "print('etl: swapping staging -> prod')\n"
    "sys.exit(int(sys.argv[1]))\n"
)


# a harness of five kinds of passing check and one mismatch: its summary names one template and
# "+118 other lines" (its templates do not take in every line), a fresh user's
HARNESS5 = (
    "import sys\n"
    "kinds = ['ok ({} ms)', 'ok (cached)', 'SKIP (needs gpu)', 'ok after retry {}', 'ok [slow: {} s]']\n"
    "for i in range(2000):\n"
    "    if i == 900:\n"
    "        print('CHECK widget_total ... MISMATCH (want 3, have 4)')\n"
    "    else:\n"
    "        k = kinds[0] if i % 10 else kinds[(i // 10) % 5]\n"
    "        print(f'CHECK item_{i:04d} ... ' + k.format(i % 7))\n"
    "print('harness: 2000 checks run')\n"
    "sys.exit(int(sys.argv[1]))\n"
)


# an access log of 6000 requests, ids and numbers in every line, and one invalid webhook mid-way
ACCESS = (
    "import random, sys\n"
    "random.seed(7)\n"
    "paths = ['/api/items', '/api/users', '/health', '/api/orders', '/static/app.js', '/login', '/api/cart']\n"
    "for i in range(6000):\n"
    "    ts = f'2026-12-05T09:{(i // 60) % 60:02d}:{i % 60:02d}.{random.randint(0, 999):03d}Z'\n"
    "    if i == 3100:\n"
    "        print(f'{ts} worker-3 payment webhook signature invalid for order 8812; refund not issued')\n"
    "        continue\n"
    "    p = random.choice(paths)\n"
    "    ip = f'10.0.{random.randint(0, 255)}.{random.randint(0, 255)}'\n"
    "    n = random.randint(1, 99999)\n"
    "    size, ms, req = random.randint(100, 9000), random.random() * 100, random.getrandbits(32)\n"
    "    print(f'{ts} {ip} \"GET {p}/{n} HTTP/1.1\" 200 {size} {ms:.1f}ms req-{req:08x}')\n"
    "print('e2e: 1 assertion failed: expected refund for order 8812')\n"
    "sys.exit(int(sys.argv[1]))\n"
)


def _state(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def _started_until(tmp_path: Path, args: list[str], marker: Path) -> subprocess.Popen[bytes]:
    """``streamfilter run ARGS`` started, once its command has made ``marker`` (60 s at most)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **_state(tmp_path)},
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc


def test_a_failure_is_kept_within_the_budget_and_the_last_line_names_the_whole_output(tmp_path: Path) -> None:
    done = run_cli("run", "--budget-tokens", "400", "--", "sh", "-c", NOISY_FAILURE, env=_state(tmp_path))
    assert done.returncode == 1
    assert b"AssertionError: expected 3 items, got 4" in done.stdout
    last = done.stdout.splitlines()[-1].decode()
    assert last.startswith("[streamfilter: sh -c") and "exited with status 1" in last
    path = Path(last.rsplit(": ", 1)[1].rstrip("]"))
    assert path.parent == tmp_path / "state" / "streamfilter" / "runs"
    whole = path.read_bytes()
    assert whole.count(b"\n") == 3201 and "3201 lines" in last
    body = done.stdout[: -len(done.stdout.splitlines()[-1]) - 1]
    assert estimate_tokens(body) <= 400 * 1.05  # the budget (the estimate's own rounding aside)


def test_refs_read_back_from_the_kept_output(tmp_path: Path) -> None:
    done = run_cli(
        "run", "--budget-tokens", "400", "--format", "jsonl", "--", "sh", "-c", NOISY_FAILURE, env=_state(tmp_path)
    )
    evs: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    assert evs[-1]["event"] == "exit" and evs[-1]["status"] == 1
    whole = Path(evs[-1]["output"]).read_bytes()
    drops = [e for e in evs if e["event"] == "drop"]
    assert drops
    for drop in drops:
        back = run_cli("expand", drop["ref"])
        assert back.returncode == 0 and back.stdout == whole[drop["start_byte"] : drop["end_byte"]]
    # nothing lost: the runs cover every line once, in order
    runs = [e for e in evs if e["event"] in ("keep", "drop")]
    assert runs[0]["first_line"] == 1 and runs[-1]["last_line"] == 3201
    assert all(b["first_line"] == a["last_line"] + 1 for a, b in itertools.pairwise(runs))


def test_success_is_terse_and_the_status_is_kept(tmp_path: Path) -> None:
    script = 'for i in $(seq 1 2000); do echo "INFO step $i ok"; done; echo "all 2000 steps passed"'
    done = run_cli("run", "--budget-tokens", "2000", "--", "sh", "-c", script, env=_state(tmp_path))
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert b"all 2000 steps passed" in done.stdout and len(lines) < 20


def test_tee_names_where_the_whole_output_goes(tmp_path: Path) -> None:
    tee = tmp_path / "out.log"
    done = run_cli("run", "--budget-tokens", "300", "--tee", str(tee), "--", "sh", "-c", "echo hi; exit 4")
    assert done.returncode == 4
    assert tee.read_bytes() == b"hi\n"
    assert done.stdout.splitlines()[-1].endswith(f"{tee.resolve()}]".encode())


def test_a_missing_command_is_127_with_its_status_line(tmp_path: Path) -> None:
    done = run_cli("run", "--budget-tokens", "300", "--", "no-such-command-here", env=_state(tmp_path))
    assert done.returncode == 127
    assert b"command not found (status 127)" in done.stdout


def test_sigterm_reaches_the_command_and_what_it_printed_is_still_filtered(tmp_path: Path) -> None:
    marker = tmp_path / "began"
    script = f"trap 'echo ERROR got TERM; exit 143' TERM; echo started; touch {marker}; while :; do sleep 0.05; done"
    proc = _started_until(tmp_path, ["--budget-tokens", "300", "--", "sh", "-c", script], marker)
    time.sleep(0.3)  # run's signal receiver starts right after the command
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert b"ERROR got TERM" in out and b"exited with status 143" in out


def test_an_output_a_run_still_writes_is_never_evicted(tmp_path: Path) -> None:
    from streamfilter.live.run import output_file

    folder = tmp_path / "runs"
    folder.mkdir()
    old = folder / "old.log"
    old.write_bytes(b"x" * 2000)
    busy = folder / "busy.log"
    busy.write_bytes(b"y" * 2000)
    for path in (old, busy):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    with open(busy, "rb") as held:  # as capture_command holds it while its command runs
        fcntl.flock(held.fileno(), fcntl.LOCK_SH)
        made = output_file(["make"], folder, cap_bytes=1000)
    assert not old.exists() and busy.exists() and made.exists()


def test_a_state_directory_that_cannot_be_written_still_runs_the_command(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    done = run_cli(
        "run", "--budget-tokens", "300", "--", "sh", "-c", f"touch {ran}; echo hi; exit 3",
        env={"XDG_STATE_HOME": "/dev/null/state"},
    )  # fmt: skip
    assert done.returncode == 3 and ran.exists()
    assert b"/streamfilter-" in done.stdout.splitlines()[-1]


def test_output_that_would_not_be_shorter_than_the_input_is_the_input(tmp_path: Path) -> None:
    # a green pytest -q with a warning: 8 lines, 360 bytes; its first 3 lines summarized (the
    # success tail keeps 5) made it 437 bytes, the summary's ref and note longer than the lines
    small = tmp_path / "test_small.py"
    small.write_text('import warnings\n\n\ndef test_a():\n    warnings.warn("old api")\n\n\ndef test_b():\n    pass\n')
    tee = tmp_path / "out.log"
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(small)]
    done = run_cli("run", "--budget-tokens", "4000", "--tee", str(tee), "--", *pytest, env=_state(tmp_path))
    assert done.returncode == 0
    body, _, status = done.stdout.rstrip(b"\n").rpartition(b"\n")
    assert b"2 passed, 1 warning" in body and body + b"\n" == tee.read_bytes()
    assert status.startswith(b"[streamfilter: ") and b"exited with status 0" in status


CARGO_GREEN = (
    "printf '   Compiling geom v0.1.0\\n     Running unittests src/lib.rs\\n\\nrunning 43 tests\\n'; "
    'for i in $(seq 1 43); do echo "test tests::case_$i ... ok"; done; '
    "printf '\\ntest result: ok. 43 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\\n\\n'; "
    "printf '     Running tests/integration.rs\\n\\nrunning 4 tests\\n'; "
    'for i in 1 2 3 4; do echo "test flow_$i ... ok"; done; '
    "printf '\\ntest result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\\n\\n'; "
    "printf '   Doc-tests geom\\n\\nrunning 0 tests\\n\\n'; "
    "printf 'test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\\n\\n'"
)


def test_a_green_run_keeps_every_test_targets_result_line(tmp_path: Path) -> None:
    done = run_cli("run", "--budget-tokens", "4000", "--", "sh", "-c", CARGO_GREEN, env=_state(tmp_path))
    assert done.returncode == 0
    results = [line for line in done.stdout.splitlines() if line.startswith(b"test result: ")]
    counts = [r.split(b";")[0].removeprefix(b"test result: ok. ") for r in results]
    assert counts == [b"43 passed", b"4 passed", b"0 passed"]
    assert b"test tests::case_7 ... ok" not in done.stdout  # still terse: the passing tests are summarized


NODE_TAP = (
    "for i in $(seq 1 3000); do echo \"ok $i - adds $i\"; echo '  ---'; echo '  duration_ms: 0.1'; echo '  ...'; done; "
    "echo 'not ok 3001 - sum is wrong'; echo '  ---'; echo \"  error: 'Expected values to be strictly equal'\"; "
    "echo '  ...'; echo '1..3001'; echo '# tests 3001'; echo '# suites 0'; echo '# pass 3000'; echo '# fail 1'; "
    "echo '# cancelled 0'; echo '# skipped 0'; echo '# todo 0'; echo '# duration_ms 812.5'; exit 1"
)
GO_PACKAGES = (
    "echo '--- FAIL: TestTotal (0.00s)'; echo '    cart_test.go:12: got 4, want 3'; echo FAIL; "
    "printf 'FAIL\\texample.com/shop/cart\\t0.012s\\n'; "
    "for p in $(seq 1 40); do printf 'ok  \\texample.com/shop/pkg%d\\t0.0%02ds\\n' $p $p; done; exit 1"
)


def test_a_small_budget_keeps_the_result_line_that_reports_the_failure(tmp_path: Path) -> None:
    """Under a small budget the verdict is kept alone: the last result line, which was node's
    ``# todo 0`` (its ``# fail 1`` dropped) and a later go package's ``ok`` (helper-41)."""
    node = run_cli("run", "--budget-tokens", "100", "--", "sh", "-c", NODE_TAP, env=_state(tmp_path))
    assert node.returncode == 1
    assert b"\n# fail 1\n" in node.stdout, node.stdout.decode()
    go = run_cli("run", "--budget-tokens", "100", "--", "sh", "-c", GO_PACKAGES, env=_state(tmp_path))
    assert go.returncode == 1
    assert b"\nFAIL\texample.com/shop/cart\t0.012s\n" in go.stdout, go.stdout.decode()


PARAMETRIZED_FAILURES = (
    "import pytest\n\n\n"
    '@pytest.mark.parametrize("n", range(30))\n'
    "def test_fail(n):\n    expected = -1\n"
    '    assert n == expected, f"value {n} did not match"\n\n\n'
    "def test_unique():\n"
    '    raise RuntimeError("database connection pool exhausted after 5 retries")\n'
)


def test_a_distinct_failure_s_summary_line_beats_near_duplicates(tmp_path: Path) -> None:
    # pytest's short summary: 30 like FAILED lines, then test_unique's, then the verdict, in one unit
    # with the last of them. Chosen first for the verdict, that unit had counted as chosen: a slot of
    # the FAILED lines' shape spent, never weighed again, test_unique's line dropped while 29 like
    # ones were kept
    (tmp_path / "test_x.py").write_text(PARAMETRIZED_FAILURES)
    pytest = f"cd {shlex.quote(str(tmp_path))} && {shlex.quote(sys.executable)} -m pytest -p no:cacheprovider test_x.py"
    done = run_cli(
        "run", "--budget-tokens", "2000", "--", "sh", "-c", pytest, env={**_state(tmp_path), "COLUMNS": "80"}
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert any(line.startswith(b"FAILED ") and b"::test_unique - RuntimeError" in line for line in lines)
    assert any(b" 31 failed in " in line for line in lines)  # the verdict
    body = done.stdout[: -len(lines[-1]) - 1]
    assert estimate_tokens(body) <= 2000 * 1.05


def test_a_failure_line_longer_than_the_budget_is_named_by_its_start(tmp_path: Path) -> None:
    # a 200 KB failure line (a minified bundle's parse error) can never fit 4000 tokens: it had been
    # "1 failure line" in a summary of lines 1-228, its text nowhere; it is a DROP run of its own now,
    # its summary naming its start and its ref reading back the whole line
    start = "Error: unexpected token } in expression at position 17: "
    long = start + "x" * 200_000
    script = (
        'for i in $(seq 1 200); do echo "step $i compiling unit_$i"; done; '
        f"printf '{start}'; head -c 200000 /dev/zero | tr '\\0' x; echo; "
        'for i in $(seq 1 30); do echo "after $i"; done; exit 1'
    )
    done = run_cli("run", "--budget-tokens", "4000", "--", "sh", "-c", script, env=_state(tmp_path))
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    named = [line for line in lines if line.startswith("[streamfilter: dropped line 201 ")]
    assert len(named) == 1, done.stdout[:2000]
    assert "it starts: Error: unexpected token } in expression at position 17: xxx" in named[0]
    assert "x…; ref @" in named[0] and len(named[0]) < 400  # cut, and marked as cut
    whole = lines[-1].rsplit(": ", 1)[1].rstrip("]")
    back = run_cli("expand", whole + ":" + named[0].rsplit("; ref @", 1)[1].rstrip("]"))
    assert back.returncode == 0 and back.stdout == long.encode() + b"\n"
    assert estimate_tokens(done.stdout[: -len(lines[-1]) - 1]) <= 4000 * 1.05


def test_a_long_line_that_stops_a_failures_cut_is_named_too(tmp_path: Path) -> None:
    """helper-67: a traceback's 100 KB exception message; its head was kept and the message was "1
    failure-like line" in a summary of 98 passing lines, its text nowhere in the output."""
    log = tmp_path / "tb.log"
    log.write_bytes(
        b"ok\n" * 100
        + b"Traceback (most recent call last):\n"
        + b"ValueError: "
        + b"B" * 100_000
        + b"\n"
        + b"ok\n" * 100
    )
    done = run_cli("filter", "--budget-tokens", "4000", str(log))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "Traceback (most recent call last):" in lines
    (named,) = [line for line in lines if line.startswith("[streamfilter: dropped line 102 ")]
    assert "it starts: ValueError: BBB" in named and len(named) < 400
    assert estimate_tokens(done.stdout) <= 4000 * 1.05


def test_a_failure_line_over_the_pools_memory_cap_is_named_too(tmp_path: Path) -> None:
    """helper-67: a 50 MB exception message was never named, "1 failure-like line" with its text
    nowhere: the pool counted a unit by its bytes, and forgot one over 4 MiB (it holds only ~17 bytes
    a line); its per-byte token sums took 1.5 GB (``benchmarks/throughput.py`` measures that)."""
    log = tmp_path / "tb.log"
    log.write_bytes(b"ok\n" * 100 + b"Traceback (most recent call last):\nValueError: " + b"B" * (5 << 20) + b"\nok\n")
    done = run_cli("filter", "--budget-tokens", "4000", str(log))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "Traceback (most recent call last):" in lines
    (named,) = [line for line in lines if line.startswith("[streamfilter: dropped line 102 ")]
    assert "it starts: ValueError: BBB" in named and "5.0 MiB" in named


def test_a_budget_holds_millions_of_blank_lines_to_it(tmp_path: Path) -> None:
    """helper-70: 3 million blank lines around a failure were estimated at no tokens, so the whole
    input "fit" a budget of 4000 tokens: 4 MB of empty lines for the agent."""
    log = tmp_path / "blank.log"
    log.write_bytes(b"\n" * 3_000_000 + b"E   ValueError: boom in parse\n" + b"\n" * 1_000_000 + b"ok\n" * 1000)
    done = run_cli("filter", "--budget-tokens", "4000", str(log))
    assert done.returncode == 0, done.stderr
    assert b"E   ValueError: boom in parse\n" in done.stdout and len(done.stdout) < 16_000


def test_a_progress_line_past_the_held_cap_with_an_error_word_late_in_it_stays_within_the_budget(
    tmp_path: Path,
) -> None:
    """helper-81: a 24 MB carriage-return progress line let out in pieces of 8 MiB, with "network
    error" in its second piece, printed that piece and every one after it (16 MB under a budget of
    4000 tokens): a line's pieces take its decision, made on its first bytes."""
    bar = tmp_path / "bar.log"
    frames = b"\rDownloading 42%" * (9_000_000 // 16)
    bar.write_bytes(b"fetching\n" + frames + b"\rnetwork error, retrying" + frames * 2 + b"\ndone\n")
    for args in (("filter", "--budget-tokens", "4000", str(bar)), ("filter", str(bar))):
        done = run_cli(*args, env=_state(tmp_path), timeout=120)
        assert done.returncode == 0 and len(done.stdout) < 4000, done.stdout[:300]
        assert b"dropped the rest of line 2" in done.stdout or b"; ref " in done.stdout


def test_a_failed_commands_line_of_millions_of_words_is_read_again_in_seconds(tmp_path: Path) -> None:
    """helper-68/69: a failed command's one 60 MB line, read again as one of its likeliest, took
    minutes: --explain's reasons named every word of it (the heaviest few are shown), of the whole
    line (its features are of its first and last max_line_bytes / 2)."""
    line = tmp_path / "line.txt"
    line.write_bytes(b"abc 12 xyz, data " * 1_200_000 + b"Error: something broke\n")
    done = run_cli(
        "run", "--budget-tokens", "4000", "--", "sh", "-c", f"cat {line}; exit 1", env=_state(tmp_path), timeout=60
    )
    assert done.returncode == 1, done.stderr
    # (let out at 8 MiB, its rest in pieces of 8 MiB at most: lines.HELD_LINE_BYTES)
    assert b"[streamfilter: dropped line 1 (1 line, 8.0 MiB; 1 over-long line)" in done.stdout
    assert done.stdout.count(b"[streamfilter: dropped the rest of line 1 (") == 2
    # the warning says the line was let out at its first 8 MiB, not that it is 8 MiB long
    assert b'"bytes": 8388608, "count": 1, "rest_follows": true' in done.stderr


def test_a_failed_commands_most_probable_line_is_kept_wherever_it_is(tmp_path: Path) -> None:
    """The harness's mismatch is under the prior's cut, 450 lines before the end: the output is read
    again with the most probable lines the first reading left out; a run that passed is not."""
    failed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", HARNESS, "1", env=_state(tmp_path))
    assert failed.returncode == 1
    assert b"CHECK widget_total ... MISMATCH (want 3, have 4)\n" in failed.stdout
    assert b"harness: 399 ok, 1 differ\n" in failed.stdout
    body = failed.stdout[: -len(failed.stdout.splitlines()[-1]) - 1]
    assert len(body.splitlines()) < 80  # (the lines around it, not the whole output)
    passed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", HARNESS, "0", env=_state(tmp_path))
    assert passed.returncode == 0
    # (not a line of the output: a summary may name it, the line itself as a template of one line)
    assert b"CHECK widget_total ... MISMATCH (want 3, have 4)" not in passed.stdout.splitlines()


def test_a_failed_ci_steps_most_probable_line_is_kept_under_its_closing_line(tmp_path: Path) -> None:
    """helper-107: a CI step's last line ("##[error]Process completed with exit code 1.") raises
    the lines above it, which the tail keeps: the most probable lines had all been kept, so the
    step's output (ldd over 20 programs, real) was not read again for its one missing library."""
    log = ROOT / "tests" / "data" / "ldd-ci-step.log"
    assert log.read_bytes().endswith(b"\n##[error]Process completed with exit code 1.\n")
    done = run_cli("filter", "--budget-tokens", "4000", "--failed", str(log), env=_state(tmp_path))
    assert done.returncode == 0
    assert b"\tlibpktutil.so.2 => not found\n" in done.stdout
    assert len(done.stdout.splitlines()) < 60


def test_a_failed_commands_rare_line_is_kept_wherever_it_is(tmp_path: Path) -> None:
    """The rejected shard: not among the output's most probable lines, but the one line of its
    template among 900 of another, 600 lines before the end; kept when the job failed."""
    rejected = b"shard-0301: rejected by loader - checksum 9f2c11aa != manifest 9f2c11ab, shard quarantined\n"
    failed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", PIPELINE, "3", env=_state(tmp_path))
    assert failed.returncode == 3 and rejected in failed.stdout
    assert len(failed.stdout.splitlines()) < 80
    passed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", PIPELINE, "0", env=_state(tmp_path))
    assert passed.returncode == 0 and rejected not in passed.stdout


# a reconciliation of 5000 rows, one drifted in its own words mid-way (helper-74's)
LEDGER = (
    "import sys\n"
    "for i in range(1, 5001):\n"
    "    if i == 2437:\n"
    "        print('row 2437: ledger balance drifted: want 10450 cents, have 10451 cents -- reconciliation aborted')\n"
    "    else:\n"
    "        print(f'row {i}: account acct-{i:04x} balance ok ({i * 7 % 9973} cents)')\n"
    "print('done: 5000 rows checked')\n"
    "sys.exit(3)\n"
)


def test_a_failed_commands_rare_line_beats_lines_the_prior_finds_unlikely(tmp_path: Path) -> None:
    """helper-74: at 300 tokens, rows where the cents wrap (the output's most probable lines by the
    prior, at 0.06) were read again for and kept, the one drifted row not: the most probable lines
    are read again for only when the prior finds them likely (``hits.PRIOR_FLOOR``)."""
    done = run_cli("run", "--budget-tokens", "300", "--", sys.executable, "-c", LEDGER, env=_state(tmp_path))
    assert done.returncode == 3
    assert b"row 2437: ledger balance drifted" in done.stdout


def test_filter_of_a_failed_command_s_saved_output_looks_for_its_failure_as_run_does(tmp_path: Path) -> None:
    """helper-80: the same bytes kept the drifted row through `run` and not through `filter`, which
    does not know the command failed; `--failed` says so (and needs a budget: a stream keeps no
    line it dropped to read again)."""
    log = tmp_path / "ledger.log"
    log.write_bytes(subprocess.run([sys.executable, "-c", LEDGER], capture_output=True).stdout)
    drifted = b"row 2437: ledger balance drifted"
    plain = run_cli("filter", "--budget-tokens", "300", str(log), env=_state(tmp_path))
    failed = run_cli("filter", "--budget-tokens", "300", "--failed", str(log), env=_state(tmp_path))
    assert plain.returncode == failed.returncode == 0
    assert drifted not in plain.stdout and drifted in failed.stdout
    unbudgeted = run_cli("filter", "--failed", str(log), env=_state(tmp_path))
    assert unbudgeted.returncode == 2 and b"--failed needs --budget-tokens" in unbudgeted.stderr


# a harness whose one failure is a header and its indented details, then a cleanup of 30 lines (a
# fresh user's): no word of it is one the prior knows, and it is 6 rare lines, one block of them
HARNESS_BLOCK = """
import sys
for i in range(400):
    if i == 237:
        print("case 0237 checkout_flow/discount_stacking ........ MISMATCH")
        print("    request:  POST /cart/apply codes=SPRING10,VIP5")
        print("    want:     total=84.15 currency=EUR lines=3")
        print("    got:      total=89.10 currency=EUR lines=3")
        print("    note:     second code ignored when first is percentage-based")
        print("    fixture:  fixtures/carts/stack_03.json")
    else:
        print(f"case {i:04d} suite_{i % 9}/check_{i % 17} ........ ok ({(i * 7) % 90} ms)")
print("cleanup: removing temp dirs")
for i in range(30):
    print(f"  rm -rf /tmp/h-{i:03d}")
print("summary: 399 ok, 1 mismatch")
sys.exit(int(sys.argv[1]))
"""


def test_a_failed_commands_block_of_rare_lines_is_kept_whole(tmp_path: Path) -> None:
    """The failure's header and its five details, each a template of its own, are one block of rare
    lines: read again for from the block's first line, kept with its details when the job failed."""
    block = b"".join(
        line + b"\n"
        for line in (
            b"case 0237 checkout_flow/discount_stacking ........ MISMATCH",
            b"    want:     total=84.15 currency=EUR lines=3",
            b"    got:      total=89.10 currency=EUR lines=3",
            b"    note:     second code ignored when first is percentage-based",
            b"    fixture:  fixtures/carts/stack_03.json",
        )
    )
    failed = run_cli(
        "run", "--budget-tokens", "4000", "--", sys.executable, "-c", HARNESS_BLOCK, "3", env=_state(tmp_path)
    )
    assert failed.returncode == 3
    kept = failed.stdout.replace(b"    request:  POST /cart/apply codes=SPRING10,VIP5\n", b"")
    assert block in kept
    passed = run_cli(
        "run", "--budget-tokens", "4000", "--", sys.executable, "-c", HARNESS_BLOCK, "0", env=_state(tmp_path)
    )
    assert passed.returncode == 0 and b"    want:     total=84.15" not in passed.stdout


def test_a_failed_commands_rare_line_is_kept_when_the_summary_does_not_name_every_line(tmp_path: Path) -> None:
    """A harness of five kinds of check (the summary names one, and "+118 other lines"), and an access
    log of ids and numbers (one template, "+117 other lines"): each one odd line is still found among
    the templates of its DROP run, read again for and kept, its refs read back."""
    mismatch = b"CHECK widget_total ... MISMATCH (want 3, have 4)\n"
    webhook = b" worker-3 payment webhook signature invalid for order 8812; refund not issued\n"
    for program, odd in ((HARNESS5, mismatch), (ACCESS, webhook)):
        failed = run_cli(
            "run", "--budget-tokens", "4000", "--", sys.executable, "-c", program, "1", env=_state(tmp_path)
        )
        assert failed.returncode == 1 and odd in failed.stdout
        assert len(failed.stdout.splitlines()) < 80
        # the same as events: every line kept or in a summary whose ref reads its bytes back
        done = run_cli(
            "run",
            "--budget-tokens",
            "4000",
            "--format",
            "jsonl",
            "--",
            sys.executable,
            "-c",
            program,
            "1",
            env=_state(tmp_path),
        )
        evs: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
        whole = Path(evs[-1]["output"]).read_bytes()
        runs = [e for e in evs if e["event"] in ("keep", "drop")]
        assert runs[0]["first_line"] == 1 and runs[-1]["last_line"] == whole.count(b"\n")
        assert all(b["first_line"] == a["last_line"] + 1 for a, b in itertools.pairwise(runs))
        for run in runs:
            if run["event"] == "drop":
                back = run_cli("expand", run["ref"])
                assert back.returncode == 0 and back.stdout == whole[run["start_byte"] : run["end_byte"]]
        assert any(run["event"] == "keep" and odd.decode() in run["text"] for run in runs)


DOWNLOADS = r"""
import sys
w = sys.stdout.write
for f in range(300):
    for p in range(0, 101, 5):
        w(f"\rpkg-{f:03d}.tar.zst [{'=' * (p // 5):<20}] {p:3d}%")
        if f == 141 and p == 65:
            w(f"\rpkg-{f:03d}.tar.zst: digest does not match the lockfile; file left in quarantine/\n")
            break
    else:
        w(f"\rpkg-{f:03d}.tar.zst [{'=' * 20}] 100% {f * 13 % 900 + 100} KiB\n")
print("fetched 299/300 packages, 1 quarantined")
sys.exit(1)
"""


def test_a_failed_downloads_line_whose_last_frame_is_its_failure_is_kept(tmp_path: Path) -> None:
    """A fresh user's downloader: 300 lines of progress frames, one whose last frame (what a terminal
    shows) is why it failed. A progress display is never the prior's line, but the one read again
    for is: it is kept, byte for byte (helper-20: "300 progress lines: 6293 frames collapsed; 2
    shapes", and the reason nowhere)."""
    done = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", DOWNLOADS, env=_state(tmp_path))
    assert done.returncode == 1
    kept = [line for line in done.stdout.splitlines() if not line.startswith(b"[streamfilter: ")]
    assert any(
        line.endswith(b"pkg-141.tar.zst: digest does not match the lockfile; file left in quarantine/") for line in kept
    )


def test_a_passing_commands_output_is_not_read_again_for_rare_lines(tmp_path: Path) -> None:
    """The harness of five kinds passing: its output is as before rare lines were mined for, the
    mismatch in a summary (a run that passed is not read again)."""
    passed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", HARNESS5, "0", env=_state(tmp_path))
    assert passed.returncode == 0
    *body, last = passed.stdout.decode().splitlines(keepends=True)
    assert last.endswith(" exited with status 0; whole output (2001 lines, 60884 bytes): " + last.rsplit(": ", 1)[1])
    path = last.rsplit(": ", 1)[1].rstrip("]\n")
    assert "".join(body).replace(path, "OUT") == (  # (as written before: the same bytes)
        "[streamfilter: dropped lines 1-1996 (1996 lines, 59.3 KiB): 1875× CHECK item_<*> ... {ok ×1835, SKIP ×40 @L21}"
        " (<*>…; +121 other lines; to see them: streamfilter expand REF (an @REF is in the file named before); "
        "ref OUT:0-60739:82a1df1a]\n"
        + "".join(f"CHECK item_{i} ... ok ({i % 7} ms)\n" for i in range(1996, 2000))
        + "harness: 2000 checks run\n"
    )


def test_a_dump_after_the_verdict_leaves_the_failure_and_the_last_lines_in(tmp_path: Path) -> None:
    """A failing harness that ends with a 50 KB state dump: once a single summary line. The
    rescued mismatch (a line of the prior, with no query term) is chosen within the budget, and
    the tail's lines before the dump; the dump is in a summary of its own (one of the end's most
    probable lines by the prior, where no failure was found: its summary counts it failure-like)."""
    dump = HARNESS.replace(
        "print('harness: 399 ok, 1 differ')\n", "print('harness: 399 ok, 1 differ')\nprint('state: ' + 'x' * 50000)\n"
    )
    done = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", dump, "1", env=_state(tmp_path))
    assert done.returncode == 1
    assert b"CHECK widget_total ... MISMATCH (want 3, have 4)\n" in done.stdout
    assert b"harness: 399 ok, 1 differ\n" in done.stdout
    assert b"dropped line 803 (1 line, 48.8 KiB" in done.stdout and b"x" * 1000 not in done.stdout
    log = tmp_path / "dump.log"
    log.write_bytes(subprocess.run([sys.executable, "-c", dump, "0"], capture_output=True).stdout)
    plain = run_cli("filter", "--budget-tokens", "4000", str(log))
    assert b"harness: 399 ok, 1 differ\n" in plain.stdout and b"x" * 1000 not in plain.stdout


@pytest.mark.parametrize("kept", [True, False])
def test_a_stop_while_the_output_is_filtered_writes_what_was_read_and_the_last_line(tmp_path: Path, kept: bool) -> None:
    """SIGINT once the command has ended, while its 60 MB output is filtered (an agent's tool
    timeout): what was read, a line saying where the filtering stopped, and the last line with the
    command's status and the whole output's counts and file; run exits 130. Once nothing. When the
    whole output is not kept (its state directory removed: filtered from memory), the rest is said
    to be nowhere: "the rest is in the whole output only" was untrue (helper-53)."""
    marker = tmp_path / "ended"
    script = (
        "import shutil, sys\n"
        "w = sys.stdout.write\n"
        "for i in range(2_000_000):\n"
        "    w(f'step {i} of the migration ok\\n')\n"
        "sys.stdout.flush()\n"
        + ("" if kept else f"shutil.rmtree({str(tmp_path / 'state')!r})\n")
        + f"open({str(marker)!r}, 'w').close()\n"
        "sys.exit(5)\n"
    )
    proc = _started_until(tmp_path, ["--budget-tokens", "4000", "--", sys.executable, "-c", script], marker)
    time.sleep(1.5)  # (the command has exited; its output is being filtered, about 10 s of work)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT  # (it dies of the signal that stopped it, as timeout does)
    lines = out.splitlines()
    stopped = next(line for line in lines if line.startswith(b"[streamfilter: filtering stopped by SIGINT after line "))
    rest = b"the rest is in the whole output only]" if kept else b"the rest is not shown]"
    assert stopped.endswith(rest), stopped
    # every line written is whole: the line being read when the signal came is left out, not cut
    shown = [line for line in lines[:-2] if not line.startswith(b"[streamfilter: ")]
    assert shown and all(re.fullmatch(rb"step \d+ of the migration ok", line) for line in shown), shown[-3:]
    assert (
        lines[-1].startswith(b"[streamfilter: ") and b"exited with status 5; whole output (2000000 lines," in lines[-1]
    )
    assert out.startswith(b"[streamfilter: dropped lines 1-")


class _StopAfter(StopSignals):
    """A stop signal that comes after the first ``chunks`` reads (no handler installed)."""

    def __init__(self, chunks: int) -> None:
        self.received, self.waiting, self._left = None, False, chunks

    def read(self, handle: IO[bytes], size: int) -> bytes:
        if self._left == 0:
            self.received = signal.SIGINT
        self._left -= 1
        return super().read(handle, size)


@pytest.mark.parametrize("budget", [300, 4000])
def test_a_stop_leaves_the_line_being_read_out_of_every_pass_under_a_budget(tmp_path: Path, budget: int) -> None:
    """helper-113: a stop while a failed command's output was filtered under a budget ended its
    output in a cut line ("compiling module_960.c ..."): the first pass left the line being read
    out, and the passes after it read it again, cut, as a whole line."""
    log = tmp_path / "build.log"
    log.write_bytes(b"".join(b"compiling module_%d.c ... done in %dms\n" % (i, i % 997) for i in range(90_000)))
    out = io.BytesIO()
    done = filter_input(str(log), FilterConfig(), "text", out, _StopAfter(2), budget_tokens=budget, failed=True)
    lines = out.getvalue().splitlines()
    shown = [line for line in lines if not line.startswith(b"[streamfilter: ")]
    assert shown and all(re.fullmatch(rb"compiling module_\d+\.c \.\.\. done in \d+ms", x) for x in shown), shown[-3:]
    last = done.stats.lines
    assert 0 < last < 90_000 and shown[-1] == b"compiling module_%d.c ... done in %dms" % (last - 1, (last - 1) % 997)


# a migration that fails in the middle, its failure a table in its own words, then its cleanup (a
# fresh user's): about 2,000 tokens in all
MIGRATION = """
import sys
for i in range(1, 121):
    print(f"applying {i:04d}_auto_{i * 7 % 97}.sql ... done ({i * 13 % 90} ms)")
print("applying 0121_unique_sku.sql ... could not be applied")
print("  table     | rows | reason")
print("  products  | 3    | violate the new constraint uq_products_sku")
for i in range(1, 41):
    print(f"  release lock table_{i}")
print("closing pool (12 connections)")
sys.exit(int(sys.argv[1]))
"""


def test_an_output_within_the_budget_is_written_whole_unless_its_command_passed(tmp_path: Path) -> None:
    """A budget with room for the whole output leaves nothing out: `filter` of the log and a failed
    `run` write it as it is; a passing `run` is terse as before."""
    log = tmp_path / "migrate.log"
    log.write_bytes(subprocess.run([sys.executable, "-c", MIGRATION, "0"], capture_output=True, check=True).stdout)
    whole = run_cli("filter", "--budget-tokens", "4000", str(log), env=_state(tmp_path))
    assert whole.returncode == 0 and whole.stdout == log.read_bytes()
    tight = run_cli("filter", "--budget-tokens", "500", str(log), env=_state(tmp_path))
    assert len(tight.stdout) < len(log.read_bytes()) // 2  # (past the budget: chosen, as before)
    failed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", MIGRATION, "4", env=_state(tmp_path))
    assert failed.returncode == 4 and failed.stdout.startswith(log.read_bytes())
    assert failed.stdout.count(b"\n") == log.read_bytes().count(b"\n") + 1  # (and the status line)
    passed = run_cli("run", "--budget-tokens", "4000", "--", sys.executable, "-c", MIGRATION, "0", env=_state(tmp_path))
    assert passed.returncode == 0 and b"applying 0050_auto" not in passed.stdout
    # JSONL's events are that output's runs: KEEP runs of every line (they were the unbudgeted
    # filter's, with DROP runs the text did not make, helper-60)
    budget = ["--budget-tokens", "4000", "--format", "jsonl"]
    for argv in (["filter", *budget, str(log)], ["run", *budget, "--", sys.executable, "-c", MIGRATION, "4"]):
        events = [json.loads(line) for line in run_cli(*argv, env=_state(tmp_path)).stdout.splitlines()]
        runs = [e for e in events if e["event"] in ("keep", "drop")]
        assert {e["event"] for e in runs} == {"keep"}, argv
        assert "".join(e["text"] for e in runs).encode() == log.read_bytes(), argv
        end = next(e for e in events if e["event"] == "end")
        assert end["dropped_lines"] == 0 and end["kept_lines"] == log.read_bytes().count(b"\n"), argv


@pytest.mark.parametrize("tokens", ["300", "1000"])
def test_the_same_output_wherever_the_state_directory_is(tmp_path: Path, tokens: str) -> None:
    """helper-71: a ref's source (the run's output file) was counted at its length in every summary, so
    a longer state directory (or a pid of more digits) kept fewer lines of the same bytes (44 lines
    against 51 of this log at 1000 tokens); and where the state directory cannot be written, short
    refs were not remembered (in the temporary directory), so every ref was whole."""
    log = Path(__file__).parent.parent / "data" / "pytest-q-79-failed.log"
    homes = [tmp_path / "s", tmp_path / ("a-rather-long-state-directory-name" * 3) / "and-one-level-more"]
    outputs = []
    for home in homes:
        cmd = ["run", "--budget-tokens", tokens, "--", "sh", "-c", f"cat {shlex.quote(str(log))}; exit 1"]
        done = run_cli(*cmd, env={"XDG_STATE_HOME": str(home)})
        assert done.returncode == 1
        outputs.append(done.stdout.replace(str(home).encode(), b"HOME"))
    # (the run's file has its time and pid in its name)
    same = [re.sub(rb"runs/[^:\]]*", b"runs/RUN", out) for out in outputs]
    assert same[0] == same[1]
    assert outputs[0].count(b"; ref @") == outputs[0].count(b"; ref ") - 1 > 0  # later refs are short
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fallback = run_cli(*cmd, env={"XDG_STATE_HOME": "/proc/streamfilter-nowhere", "TMPDIR": str(tmp)})
    lines = fallback.stdout.splitlines()
    assert b"cannot be written" in lines[-2]  # (the line that says where the output went instead)
    moved = b"\n".join(lines[:-2] + lines[-1:]) + b"\n"
    assert re.sub(rb"runs/[^:\]]*", b"runs/RUN", moved.replace(str(tmp).encode(), b"HOME")) == same[0].replace(
        b"HOME/streamfilter", b"HOME/streamfilter-" + str(os.getuid()).encode()
    )
    last = re.findall(rb"; ref ([^\]]+)\]", fallback.stdout)[-1]
    back = run_cli("expand", last.decode(), env={"XDG_STATE_HOME": "/proc/streamfilter-nowhere", "TMPDIR": str(tmp)})
    assert back.returncode == 0 and back.stdout and back.stdout in log.read_bytes()


def test_a_budget_too_small_for_a_line_beside_a_summary_still_shows_the_error(tmp_path: Path) -> None:
    """helper-71: at 80 tokens the output was one summary of all 301 lines (about 300 bytes), and
    "error: boom" (12 bytes) was in it: a budget is raised to the room for a line between two summaries."""
    done = run_cli(
        "run", "--budget-tokens", "80", "--", "sh", "-c", "seq 300; echo error: boom; exit 1", env=_state(tmp_path)
    )
    assert done.returncode == 1
    assert b"\nerror: boom\n" in done.stdout
    assert b"[streamfilter: dropped lines " in done.stdout  # (not the whole output)
    body = done.stdout[: -len(done.stdout.splitlines()[-1]) - 1]
    assert estimate_tokens(body) <= 200


def _under_a_file_size_limit(tmp_path: Path, error_after: int, fmt: str = "text") -> subprocess.CompletedProcess[bytes]:
    """``run --budget-tokens 4000`` under ``ulimit -f 1024`` (1 MiB) of a command that prints 50,000
    lines of 55 bytes, an error line after line ``error_after`` (0-based), and exits 2."""
    import resource

    script = (
        "import sys\n"
        "for i in range(50000):\n"
        "    print(f'INFO step {i:06d} compiled unit ok, nothing to see here')\n"
        f"    if i == {error_after}:\n"
        "        print('ERROR linker failed: undefined symbol frobnicate')\n"
        "sys.exit(2)\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    run = [sys.executable, "-m", "streamfilter", "run", "--format", fmt, "--budget-tokens", "4000", "--"]
    return subprocess.run(
        [*run, sys.executable, "-c", script],
        capture_output=True,
        timeout=120,
        env={**os.environ, **_state(tmp_path)},
        preexec_fn=limit,
        check=False,
    )


def test_under_a_file_size_limit_the_lines_filtered_from_memory_are_said_to_be_the_last_ones(tmp_path: Path) -> None:
    """``ulimit -f 1024`` (1 MiB) holds the anonymous file the memory's copy is filtered from too: it
    had kept the output's first MiB and said nothing of the rest, its last 30,000 lines and the
    failure among them (helper-89). Now the last lines that fit, from a line start, are filtered, and
    the note says which."""
    proc = _under_a_file_size_limit(tmp_path, error_after=45000)
    assert proc.returncode == 2, proc.stderr
    assert b"ERROR linker failed: undefined symbol frobnicate\n" in proc.stdout
    assert b"INFO step 049999 compiled unit ok, nothing to see here\n" in proc.stdout
    note = next(line for line in proc.stdout.splitlines() if b"were filtered as they passed" in line)
    first = int(re.search(rb"its first (\d+) lines \((\d+) bytes\) were filtered", note)[1])  # type: ignore[index]
    assert note.endswith(b"(a copy to filter holds at most 1048576 bytes: File too large)]")
    # (the lines let go were filtered as they passed: their summary, then the held lines', numbered as they are)
    summaries = re.findall(rb"dropped lines (\d+)-(\d+) ", proc.stdout)
    assert summaries[0][0] == b"1" and int(summaries[0][1]) == first
    assert int(summaries[1][0]) == first + 1
    # (in 1 MiB: the error line's 49 bytes and the last 19,064 of the lines of 55)
    assert 50001 - first == 19065 and 49 + 19064 * 55 <= 1 << 20 < 49 + 19065 * 55
    assert b"whole output (50001 lines, 2750049 bytes) not kept]" in proc.stdout.splitlines()[-1]


def test_a_failure_in_the_lines_let_go_from_memory_is_kept_and_numbered_as_it_is(tmp_path: Path) -> None:
    """Past a file size limit only the output's last lines are held to filter: the first ones had
    been let go unfiltered, so a failure among them was not shown, and the held lines' summaries
    counted from line 1 (helper-109: an ERROR 111 MB into 223 MB, under --budget-tokens). Now the
    lines let go are filtered as they pass, without refs, before the held ones, numbered as they are."""
    proc = _under_a_file_size_limit(tmp_path, error_after=2000)
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout.splitlines()
    error = out.index(b"ERROR linker failed: undefined symbol frobnicate")
    assert out[error - 1] == b"INFO step 002000 compiled unit ok, nothing to see here"
    assert out[0].startswith(b"[streamfilter: dropped lines 1-2000 (2000 lines, ")
    # every line counted once, in order: the summaries' ranges and the kept lines between them
    seen = 0
    for line in out[:-2]:
        got = re.match(rb"\[streamfilter: dropped lines (\d+)-(\d+) ", line)
        if got is None:
            seen += 1
            continue
        assert int(got[1]) == seen + 1, line
        seen = int(got[2])
    assert seen == 50001
    assert b"its first " in out[-2] and b" were filtered as they passed " in out[-2]
    assert b"whole output (50001 lines, 2750049 bytes) not kept]" in out[-1]


def test_the_jsonl_events_of_an_output_let_go_in_part_name_the_command_and_count_every_line(tmp_path: Path) -> None:
    """In JSONL the events of the lines held had named the anonymous file they were filtered from
    (``/proc/self/fd/3``) and the end event counted those lines alone (helper-111): they name the
    command, cover every line once, in order, and the end event counts the whole output."""
    proc = _under_a_file_size_limit(tmp_path, error_after=2000, fmt="jsonl")
    assert proc.returncode == 2, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    runs = [e for e in events if e["event"] in ("keep", "drop")]
    assert {e["source"] for e in events} == {os.path.basename(sys.executable)}
    assert [e["first_line"] for e in runs] == [1] + [e["last_line"] + 1 for e in runs[:-1]]
    assert runs[-1]["last_line"] == 50001 and runs[-1]["end_byte"] == 2750049
    assert any(e["event"] == "keep" and "ERROR linker failed" in e["text"] for e in runs)
    (end,) = [e for e in events if e["event"] == "end"]
    assert end["lines"] == 50001 and end["bytes"] == 2750049
    assert end["kept_lines"] + end["dropped_lines"] == 50001


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_the_filter_of_the_lines_let_go_holds_at_most_its_bytes_and_counts_the_rest(fmt: str) -> None:
    """What ``LetGoFilter`` holds to write stays within its bytes however many failures pass (its
    memory does not grow with the output); after them one summary counts every line left, and the
    ones the filter kept among them, so each line is in a run once, in order."""
    data = b"".join(
        (b"error: unit %d failed to link\n" % i) if i % 50 == 0 else (b"compiled unit %d\n" % i) for i in range(20000)
    )
    let_go = LetGoFilter(FilterConfig(tail_lines=0), fmt, "cmd", 3000)
    for at in range(0, len(data), 4096):
        let_go.feed(data[at : at + 4096])
    out = let_go.finish()
    *shown, last = out.splitlines()
    assert sum(len(line) + 1 for line in shown) <= 3000
    if fmt == "text":
        assert b"error: unit 0 failed to link" in shown
        got = re.match(rb"\[streamfilter: dropped lines (\d+)-20000 \((\d+) lines, [^)]*\): (\d+) lines among", last)
        assert got is not None and int(got[2]) == 20001 - int(got[1]) and int(got[3]) > 0
        assert last.endswith(b"past the 3000 bytes shown of the output's first part, which was not kept]")
        return
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["first_line"] for e in events] == [1] + [e["last_line"] + 1 for e in events[:-1]]
    assert events[-1]["last_line"] == 20000 and events[-1]["end_byte"] == len(data)
    assert events[-1]["event"] == "drop" and "among them the filter kept" in events[-1]["summary"]
    assert any(e["event"] == "keep" and "error: unit 0 failed to link" in e["text"] for e in events)


def test_a_ref_into_an_evicted_runs_output_says_it_was_evicted(tmp_path: Path) -> None:
    # it said "no longer exists (deleted or rotated)", as of a log file (helper-103)
    script = "for i in $(seq 1 2000); do echo INFO step $i; done; echo 'error: boom'; exit 1"
    done = run_cli("run", "--budget-tokens", "300", "--", "sh", "-c", script, env=_state(tmp_path))
    assert done.returncode == 1
    kept = Path(done.stdout.decode().splitlines()[-1].rsplit("): ", 1)[1].rstrip("]"))
    ref = re.findall(rb"ref (\S+):(\d+-\d+:[0-9a-f]{8})\]", done.stdout)[0]
    assert kept.parent.name == "runs" and ref[0].decode() == str(kept)
    kept.unlink()  # (as the oldest are when newer runs need the room)
    got = run_cli("expand", b":".join(ref).decode(), env=_state(tmp_path))
    assert got.returncode == 1 and b"no longer exists: evicted (the oldest runs' outputs go" in got.stderr
