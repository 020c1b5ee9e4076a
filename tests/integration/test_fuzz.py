"""Random bad input through the real CLI and the daemon's socket source: no crash, nothing lost, KEEP verbatim."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.live.proc import Live

PIECES = [
    b"\xff\xfe\xc3",  # invalid UTF-8 (and a cut multi-byte start)
    b"\x00",
    b"\r",
    b"\r\n",
    b"\n",
    b"\x1b[31m",
    b"\x1b]0;title\x07",
    b"\x1b[2J",
    b"ERROR: failed",
    b"  at frame()",
    b"Traceback (most recent call last):",
    b"....",
    b"\t",
    b"word",
]
inputs = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=200).map(b"".join),
    st.binary(max_size=2000),
    st.just(b""),
    st.just(b"\n\n\n"),
    st.just(b"#%&*()" * 50),  # no words at all
)


def split_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def check(data: bytes, events: list[dict[str, Any]]) -> None:
    lines = split_lines(data)
    runs = [e for e in events if e["event"] in ("keep", "drop")]
    expect, at = 1, 0
    for run in runs:
        # (the rest of a line let out before its end, past lines.HELD_LINE_BYTES: that line again)
        assert run["first_line"] == (expect - 1 if run.get("rest") else expect)
        assert run["start_byte"] == at
        expect, at = run["last_line"] + 1, run["end_byte"]
        if run["event"] == "keep":
            assert run["text"] == data[run["start_byte"] : run["end_byte"]].decode("utf-8", "replace")
    assert expect == len(lines) + 1 and at == len(data)
    end = [e for e in events if e["event"] == "end"]
    assert len(end) == 1 and end[0]["lines"] == len(lines) and end[0]["bytes"] == len(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs)
def test_filter_cli_on_random_bad_input(data: bytes) -> None:
    done = run_cli("filter", "--format", "jsonl", stdin=data)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    check(data, [json.loads(x) for x in done.stdout.splitlines()])
    text = run_cli("filter", stdin=data)
    assert text.returncode == 0


def test_filter_cli_on_a_10_mb_line() -> None:
    data = b"start\n" + b"x" * (10 << 20) + b" ERROR: failed\nend\n"
    done = run_cli("filter", "--format", "jsonl", stdin=data)
    assert done.returncode == 0
    check(data, [json.loads(x) for x in done.stdout.splitlines()])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Live]]:
    tmp = tmp_path_factory.mktemp("fuzzd")
    sock, out = tmp / "in.sock", tmp / "out.jsonl"
    config = tmp / "sf.toml"
    config.write_text(
        f'[defaults]\nmax_line_bytes = 1048576\n[[source]]\nname = "f"\ntype = "unix"\npath = "{sock}"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    live = Live(tmp, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp / "state")})
    Live.running.remove(live)  # it outlives each test: stopped here, not by the per-test cleanup
    try:
        live.log_event("daemon.ready")
        yield sock, out, live
    finally:
        assert live.stop() == 0
    assert b"Traceback" not in live.err_path.read_bytes()


counter = iter(range(1, 10**6))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(inputs, st.integers(1, 64))
def test_socket_source_on_random_bad_input(daemon: tuple[Path, Path, Live], data: bytes, chunk: int) -> None:
    sock, out, live = daemon
    stream = f"f#{next(counter)}"
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(sock))
    for i in range(0, len(data), chunk):
        client.sendall(data[i : i + chunk])
    client.close()

    def mine() -> list[dict[str, Any]]:
        return [e for e in live.events(out) if e.get("source") == stream]

    if data:
        events = live.wait_for(lambda: [e for e in mine() if e["event"] == "end"] and mine(), 20)
        check(data, events)
