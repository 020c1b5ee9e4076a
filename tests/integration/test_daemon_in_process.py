"""The daemon run in-process (``run_daemon`` under anyio), with a real file and a real socket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamfilter.live.config import load_config
from streamfilter.live.daemon import run_daemon


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


async def until(check: Any, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not check():  # noqa: ASYNC110 - the daemon's output file is polled, as a reader would
            await anyio.sleep(0.02)


def one_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, fmt: str, defaults: str = ""
) -> tuple[Path, Path]:
    """A config of one source (its ``[[source]]`` table's lines) into one file sink of ``fmt``;
    returns (config path, output file). ``defaults``: more ``[defaults]`` lines."""
    out = tmp_path / f"out.{fmt}"
    config_path = tmp_path / "sf.toml"
    config_path.write_text(
        f'[defaults]\n{defaults}sinks = ["out"]\n[[source]]\n{source}'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "{fmt}"\n'
    )
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return config_path, out


def socket_to_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, defaults: str) -> tuple[Path, Path, Path]:
    """A config of one unix socket source ("tools") into one file sink of ``fmt``; returns
    (config path, socket, output file). ``defaults``: more ``[defaults]`` lines."""
    sock = tmp_path / "in.sock"
    source = f'name = "tools"\ntype = "unix"\npath = "{sock}"\n'
    config_path, out = one_source(tmp_path, monkeypatch, source, fmt, defaults)
    return config_path, sock, out


@pytest.mark.anyio
async def test_in_process_file_and_socket_sources_until_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, sock, out = tmp_path / "build.log", tmp_path / "in.sock", tmp_path / "out.jsonl"
    log.write_bytes(b"".join(b"INFO step %d\n" % i for i in range(100)))
    config_path = tmp_path / "sf.toml"
    config_path.write_text(
        f'[defaults]\nquery = "failed"\nsinks = ["out"]\n'
        f'[[source]]\nname = "build"\ntype = "file"\npath = "{log}"\nstart_at = "beginning"\ncheckpoint = false\n'
        f'[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_daemon, load_config(config_path), stop)
        await until(sock.exists)
        with log.open("ab") as f:
            f.write(b"ERROR: step 100 failed\n")
        async with await anyio.connect_unix(sock) as client:
            await client.send(b"tool says hello\nassert x == 1 failed")
        await until(lambda: "step 100 failed" in json.dumps(events(out)))
        await until(lambda: any(e["event"] == "end" and e["source"] == "tools#1" for e in events(out)))
        stop.set()
    evs = events(out)
    build = [e for e in evs if e["source"] == "build" and e["event"] in ("keep", "drop")]
    assert sum(e["lines"] for e in build) == 101 and build[0]["first_line"] == 1
    tools = [e for e in evs if e["source"] == "tools#1"]
    assert "".join(e.get("text", "") for e in tools).endswith("assert x == 1 failed")
    assert any(e["event"] == "end" and e["source"] == "build" for e in evs)  # the stop flushed it
    assert not sock.exists()


@pytest.mark.anyio
async def test_a_run_end_with_a_bad_status_is_data_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_path, sock, out = socket_to_file(tmp_path, monkeypatch, "jsonl", 'query = "error"\n')
    mark = b"\x1estreamfilter "
    bad = mark + b'{"type": "run-end", "run": "A", "status": 300}\n'
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_daemon, load_config(config_path), stop)
        await until(sock.exists)
        async with await anyio.connect_unix(sock) as client:
            await client.send(mark + b'{"type": "run-start", "run": "A", "command": "make"}\n' + b"step 1 error\n")
            await client.send(bad + b"step 2 error\n" + mark + b'{"type": "run-end", "run": "A", "status": 1}\n')
        await until(lambda: any(e["event"] == "exit" for e in events(out)))
        await until(lambda: any(e["event"] == "end" and e["source"] == "tools#1/A" for e in events(out)))
        stop.set()
    run = [e for e in events(out) if e["source"] == "tools#1/A"]
    lines = sum(e["lines"] for e in run if e["event"] in ("keep", "drop"))
    text = "".join(e.get("text", "") for e in run if e["event"] == "keep")
    assert lines == 3 and bad.decode() in text and "step 2 error" in text  # the bad line is the run's data
    assert [e["status"] for e in run if e["event"] == "exit"] == [1]
    assert not [e for e in events(out) if e["source"] == "tools#1"]  # no plain stream: nothing was outside the run


@pytest.mark.anyio
async def test_a_line_let_out_at_a_pause_never_shares_a_line_with_another_streams_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two connections of one source write to one text sink: A's unterminated line is let out at
    # a pause, then B writes a whole line, then A finishes its line (a fresh-user helper's find:
    # "ERROR: build A is still writERROR: build B failed")
    config_path, sock, out = socket_to_file(tmp_path, monkeypatch, "text", "")
    stop = anyio.Event()
    text = lambda: out.read_bytes() if out.exists() else b""  # noqa: E731
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_daemon, load_config(config_path), stop)
        await until(sock.exists)
        async with await anyio.connect_unix(sock) as a:
            await a.send(b"ERROR: build A is still writ")
            await until(lambda: text().endswith(b"still writ"))
            async with await anyio.connect_unix(sock) as b:
                await b.send(b"ERROR: build B failed\n")
            await until(lambda: b"B failed" in text())
            await a.send(b"ing its line\n")
            await until(lambda: text().endswith(b"its line\n"))
        stop.set()
    # each switch of stream is labelled, as tail labels several files
    assert text() == (
        b"==> tools#1 <==\nERROR: build A is still writ\n"
        b"\n==> tools#2 <==\nERROR: build B failed\n"
        b"\n==> tools#1 <==\ning its line\n"
    )


@pytest.mark.anyio
async def test_a_text_sink_of_two_file_sources_says_whose_lines_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fresh-user helper's find: two sources into one text sink interleave without labels, so
    # a reader cannot tell which build failed; a sink of one file source stays unlabelled
    a, b, out, alone = (tmp_path / n for n in ("a.log", "b.log", "out.txt", "alone.txt"))
    a.write_bytes(b"")
    b.write_bytes(b"")
    config_path = tmp_path / "sf.toml"
    config_path.write_text(
        '[defaults]\nstart_at = "beginning"\ncheckpoint = false\n'
        f'[[source]]\nname = "a"\ntype = "file"\npath = "{a}"\nsinks = ["out", "alone"]\n'
        f'[[source]]\nname = "b"\ntype = "file"\npath = "{b}"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\n'
        f'[[sink]]\nname = "alone"\ntype = "file"\npath = "{alone}"\n'
    )
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    text = lambda: out.read_bytes() if out.exists() else b""  # noqa: E731
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_daemon, load_config(config_path), stop)
        for path, line in ((a, b"ERROR: a one failed\n"), (b, b"ERROR: b one failed\n"), (a, b"ERROR: a two failed\n")):
            with path.open("ab") as f:
                f.write(line)
            await until(lambda line=line: line in text())  # one at a time
        stop.set()
    assert text() == (
        b"==> a <==\nERROR: a one failed\n\n==> b <==\nERROR: b one failed\n\n==> a <==\nERROR: a two failed\n"
    )
    assert alone.read_bytes() == b"ERROR: a one failed\nERROR: a two failed\n"
    # started again, appending to the same sink (as after a restart or a reload): a blank line first
    before = text()
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_daemon, load_config(config_path), stop)
        with b.open("ab") as f:
            f.write(b"ERROR: b two failed\n")
        await until(lambda: b"b two" in text())
        stop.set()
    again = text().removeprefix(before)  # (the files are read again from their start)
    assert again.startswith(b"\n==> a <==\nERROR: a one failed\n") and again.endswith(b"ERROR: b two failed\n")


@pytest.mark.anyio
async def test_a_globs_deleted_files_are_let_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a glob of per-job logs kept a follower, with its filter, for every file it ever matched: 245 KB
    # each, never given back (helper-42). A deleted file's stream ends once its name stays empty;
    # a file made there later is a new stream, from its line 1
    import streamfilter.live.files as files

    monkeypatch.setattr(files, "GONE_SECONDS", 0.3, raising=False)
    logs = tmp_path / "logs"
    logs.mkdir()
    source = f'name = "jobs"\ntype = "file"\npath = "{logs}/*.log"\nstart_at = "beginning"\ncheckpoint = false\n'
    config_path, out = one_source(tmp_path, monkeypatch, source, "jsonl")
    ended = lambda name: [e for e in events(out) if e["event"] == "end" and e["source"] == f"jobs:{logs / name}"]  # noqa: E731
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_daemon, load_config(config_path), stop)
        for k in range(3):
            (logs / f"job{k}.log").write_bytes(b"ERROR: job %d failed\n" % k)
        await until(lambda: all(f"job {k} failed" in json.dumps(events(out)) for k in range(3)))
        for k in range(3):
            (logs / f"job{k}.log").unlink()
        await until(lambda: all(ended(f"job{k}.log") for k in range(3)), seconds=20)
        (logs / "job0.log").write_bytes(b"ERROR: job 0 again failed\n")
        await until(lambda: "job 0 again" in json.dumps(events(out)), seconds=20)
        stop.set()
    again = [e for e in events(out) if e["event"] == "keep" and "again" in e["text"]]
    assert again[0]["first_line"] == 1 and again[0]["source"] == f"jobs:{logs / 'job0.log'}"
