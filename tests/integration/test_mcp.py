"""``streamfilter mcp`` in a subprocess, driven by the MCP SDK's own stdio client: every tool on
real commands, files and a real daemon's output; cancellation and stop signals kill the commands."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from streamfilter import __version__
from streamfilter.agents import mcp as mcp_server
from streamfilter.live.expand import Ref
from tests.conftest import ROOT, run_cli
from tests.live.proc import Live

EXAMPLE = ROOT / "examples" / "pytest-failure.log"
CALL_SECONDS = 60  # a tool call's deadline (a whole command run and filtered)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(tmp: Path, *args: str, home: Path | None = None) -> AsyncIterator[ClientSession]:
    """A session with ``streamfilter mcp ARGS`` started now in ``tmp``, its state directory in it
    (``home``: the server's home folder)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "streamfilter", "mcp", *args],
        env={"XDG_STATE_HOME": str(tmp / "state"), **({"HOME": str(home)} if home is not None else {})},
        cwd=str(tmp),
    )
    with errlog_in(tmp) as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(CALL_SECONDS):
                await session.initialize()
            yield session


def errlog_in(tmp: Path) -> TextIO:
    """Where the server's stderr goes (read it when a test fails)."""
    return open(tmp / "server.err", "w")


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    with anyio.fail_after(CALL_SECONDS):
        return await session.call_tool(tool, arguments)


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def facts(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie not yet reaped by init counts as exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def started(pids: Path) -> list[int]:
    """The shell's and its background job's pids, as the command wrote them."""
    return [int(pids.read_text()), int(Path(f"{pids}.bg").read_text())]


@pytest.fixture
def pid_files() -> Iterator[list[Path]]:
    """Files a test's commands write their pids to: a process named there and still running
    at the end is killed (a failed test leaves no ``sleep 300`` behind)."""
    files: list[Path] = []
    yield files
    for file in files:
        if file.exists() and not gone(pid := int(file.read_text())):
            os.kill(pid, signal.SIGKILL)


def wait_until(check: Any, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {check}"
        time.sleep(0.02)


# -- run --------------------------------------------------------------------------------------------
FAILING_SCRIPT = """\
import sys
for i in range(2000):
    print(f"INFO collecting module_{i} ok")
print("Traceback (most recent call last):")
print('  File "tests/test_cart.py", line 42, in test_total', flush=True)
print("AssertionError: expected 3 items, got 4", file=sys.stderr)
sys.exit(1)
"""


@pytest.mark.anyio
async def test_the_tools_are_listed_with_their_parameters(tmp_path: Path) -> None:
    async with connect(tmp_path) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == {"run", "filter", "expand"}  # streams and read come with --config
    params = {name: set(tool.input_schema["properties"]) for name, tool in listed.items()}
    assert params == {
        "run": {"command", "cwd", "query", "budget_tokens", "timeout_seconds"},
        "filter": {"path", "query", "budget_tokens", "failed"},
        "expand": {"ref", "context_lines", "offset"},
    }
    assert listed["run"].input_schema["required"] == ["command"]
    assert listed["run"].input_schema["properties"]["budget_tokens"]["default"] == 4000
    assert all(tool.output_schema is not None for tool in listed.values())
    assert "expand" in (listed["run"].description or "") and "ref" in (listed["filter"].description or "")


@pytest.mark.anyio
async def test_run_returns_the_failure_the_status_and_the_whole_output(tmp_path: Path) -> None:
    script = tmp_path / "failing.py"
    script.write_text(FAILING_SCRIPT)
    async with connect(tmp_path, "--budget-tokens", "400") as session:
        result = await call(session, "run", command=[sys.executable, str(script)])
    check_failing_run(result, tmp_path)


def check_failing_run(result: CallToolResult, tmp_path: Path) -> None:
    found, text = facts(result), text_of(result)
    assert found["status"] == 1 and found["output"] == text
    assert "AssertionError: expected 3 items, got 4" in text
    assert text.splitlines()[-1].endswith(
        f"exited with status 1; whole output (2003 lines, {found['bytes']} bytes): {found['output_path']}]"
    )
    whole = Path(found["output_path"]).read_text()
    assert Path(found["output_path"]).parent == tmp_path / "state" / "streamfilter" / "runs"
    assert [f"INFO collecting module_{i} ok" for i in range(2000)] == whole.splitlines()[:2000]
    assert whole.endswith("AssertionError: expected 3 items, got 4\n") and found["lines"] == 2003
    assert len(text) < len(whole) // 10  # the noise is summarized


CONTROLS_SCRIPT = """\
import sys
out = sys.stdout.buffer
out.write(b"Error: boom \\x1b]0;FAKE TITLE\\x07 \\x1b[31mred\\x1b[0m\\n")
out.write(b"after \\x00 \\xff\\n")
out.write(b"progress 10%\\rprogress 100%\\n")
out.write("bidi \\u202e rlo\\n".encode())
out.write(b"last\\r")
sys.exit(1)
"""


@pytest.mark.anyio
async def test_control_bytes_reach_the_agent_escaped_as_on_a_terminal(tmp_path: Path) -> None:
    """An escape sequence (an OSC title, a colour), a NUL, a byte not UTF-8 and a lone carriage
    return came through raw in the run tool's text (helper-25): they are ``\\xNN``, as a terminal
    shows them; expand says its text is not the bytes exactly."""
    script = tmp_path / "controls.py"
    script.write_text(CONTROLS_SCRIPT)
    async with connect(tmp_path) as session:
        result = await call(session, "run", command=[sys.executable, str(script)])
        found, text = facts(result), text_of(result)
        raw = await anyio.Path(found["output_path"]).read_bytes()
        ref = f"{found['output_path']}:0-{len(raw)}:{zlib.crc32(raw):08x}"
        back = await call(session, "expand", ref=ref)
    assert found["status"] == 1
    assert "Error: boom \\x1b]0;FAKE TITLE\\x07 \\x1b[31mred\\x1b[0m\n" in text
    assert "after \\x00 \\xff\n" in text and "progress 10%\\x0dprogress 100%\n" in text
    # a bidirectional override reorders what a client shows after it; a carriage return that ends
    # the bytes is no line end (helper-28: both came through raw; run ends the last line, a CRLF)
    assert "bidi \\u202e rlo\n" in text and "last\r\n[streamfilter: " in text
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e]|\r(?!\n)", text)
    assert not facts(back)["exact"] and text_of(back).startswith("Error: boom \\x1b]0;FAKE TITLE\\x07")
    assert text_of(back).endswith("last\\x0d")


@pytest.mark.anyio
async def test_a_shell_string_runs_in_cwd_and_a_missing_command_is_a_result(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data.txt").write_text("a\nb\nc\n")
    async with connect(tmp_path) as session:
        counted = await call(session, "run", command="wc -l < data.txt && exit 3", cwd=str(tmp_path / "work"))
        missing = await call(session, "run", command=["no-such-command-here", "--flag"])
        missing_in_shell = await call(session, "run", command="no-such-command-here")
        not_a_folder = await call(session, "run", command="true", cwd=str(tmp_path / "nope"))
        # exec's E2BIG was a bare "Error executing tool run" (helper-50): bash's 126 and words
        too_long = await call(session, "run", command=["echo", *["x" * 1000] * 3000])
    assert facts(counted)["status"] == 3 and text_of(counted).startswith("3\n")
    assert facts(missing) == {
        "command": ["no-such-command-here", "--flag"],
        "status": 127,
        "output": "[streamfilter: no-such-command-here --flag: command not found (status 127)]\n",
        "output_path": None,
        "lines": 0,
        "bytes": 0,
    }
    assert facts(missing_in_shell)["status"] == 127 and "not found" in text_of(missing_in_shell)
    assert not_a_folder.is_error and f"cwd {tmp_path / 'nope'}: not a directory" in text_of(not_a_folder)
    assert facts(too_long)["status"] == 126 and "Argument list too long" in text_of(too_long)


@pytest.mark.anyio
async def test_a_cancelled_run_kills_the_command_and_what_it_started(tmp_path: Path, pid_files: list[Path]) -> None:
    pids = tmp_path / "pids"
    pid_files += [pids, Path(f"{pids}.bg")]
    command = f"sleep 300 & echo $! > {pids}.bg; echo $$ > {pids}.sh; mv {pids}.sh {pids}; wait"
    async with connect(tmp_path) as session:
        with anyio.fail_after(CALL_SECONDS):
            async with anyio.create_task_group() as tg:

                async def cancel_once_started() -> None:
                    await anyio.to_thread.run_sync(wait_until, pids.exists)
                    tg.cancel_scope.cancel()  # the call's task: the client tells the server it is cancelled

                tg.start_soon(cancel_once_started)
                await session.call_tool("run", {"command": command})
        await anyio.to_thread.run_sync(wait_until, lambda: all(gone(pid) for pid in started(pids)))
        # the server goes on serving
        again = await call(session, "run", command="echo still here")
    assert text_of(again).startswith("still here\n")


@pytest.mark.anyio
async def test_a_run_past_its_timeout_is_stopped_and_says_what_it_printed(
    tmp_path: Path, pid_files: list[Path]
) -> None:
    # (an agent's own call timeout gives it nothing, not even the file: helper-96)
    pids = tmp_path / "pids"
    pid_files += [pids, Path(f"{pids}.bg")]
    command = (
        f"sleep 300 & echo $! > {pids}.bg; echo $$ > {pids}.sh; mv {pids}.sh {pids}; "
        "trap 'echo stopping: saved 12 of 40 files; exit 3' TERM; echo started the long step; wait"
    )
    async with connect(tmp_path) as session:
        began = time.monotonic()
        result = await call(session, "run", command=command, timeout_seconds=1.5)
        took = time.monotonic() - began
        await anyio.to_thread.run_sync(wait_until, lambda: all(gone(pid) for pid in started(pids)))
        refused = await call(session, "run", command="echo hi", timeout_seconds=0)
    got, text = facts(result), text_of(result)
    assert got["status"] == mcp_server.TIMED_OUT and 1.5 <= took < 1.5 + 10, (took, text)
    # what it printed before and as it was stopped (its output is read to the end)
    assert "started the long step\n" in text and "stopping: saved 12 of 40 files\n" in text, text
    assert "timed out after 1.5 s" in text and "exited 3" in text, text
    kept = await anyio.Path(got["output_path"]).read_text()
    assert kept == "started the long step\nstopping: saved 12 of 40 files\n"
    assert refused.is_error and "timeout_seconds" in text_of(refused), text_of(refused)


@pytest.mark.anyio
async def test_a_timed_out_shell_s_child_gets_its_grace_to_print_as_it_stops(tmp_path: Path) -> None:
    # the shell the string runs in dies at SIGTERM; its child, printing as it stops, had been killed
    # with it then, not 2 s later, its lines lost from the output and its file (helper-97)
    script = tmp_path / "loud.sh"
    script.write_text(
        "trap 'seq 1 20000 | sed \"s/^/stopping line /\"; echo last line after TERM; exit 0' TERM\n"
        "echo started; while :; do sleep 0.05; done\n"
    )
    script.chmod(0o755)
    async with connect(tmp_path) as session:
        result = await call(session, "run", command=f"{script}; echo not reached", timeout_seconds=1)
    got, text = facts(result), text_of(result)
    kept = await anyio.Path(got["output_path"]).read_bytes()
    assert got["status"] == mcp_server.TIMED_OUT and "sh ended by signal 15" in text, text
    assert kept.startswith(b"started\n") and kept.endswith(b"stopping line 20000\nlast line after TERM\n")
    assert kept.count(b"\n") == got["lines"] >= 20002 and "last line after TERM" in text, text


@pytest.mark.anyio
async def test_a_nul_in_the_command_and_a_number_as_text_are_errors_that_say_so(tmp_path: Path) -> None:
    async with connect(tmp_path) as session:
        shell = await call(session, "run", command="echo a\0b")
        listed = await call(session, "run", command=["echo", "a\0b"])
        as_text = await call(session, "run", command="echo hi", budget_tokens="100")
    for result in (shell, listed):
        assert result.is_error and "NUL" in text_of(result), text_of(result)
    assert as_text.is_error and "budget_tokens" in text_of(as_text), text_of(as_text)


def test_a_stop_signal_kills_the_running_commands_then_the_server(tmp_path: Path, pid_files: list[Path]) -> None:
    """SIGTERM to the server alone (the client's stdin still open, a call in flight)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "streamfilter", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        pid_file = tmp_path / "bg"
        pid_files.append(pid_file)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}
        command = f"sleep 300 & echo $! > {pid_file}.new; mv {pid_file}.new {pid_file}; wait"
        messages = [
            {"method": "initialize", "id": 1, "params": hello},
            {"method": "notifications/initialized"},
            {"method": "tools/call", "id": 2, "params": {"name": "run", "arguments": {"command": command}}},
        ]
        for message in messages:
            server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        wait_until(pid_file.exists)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == -signal.SIGTERM
        wait_until(lambda: gone(int(pid_file.read_text())))
    finally:
        server.kill()
        server.wait()


# -- filter and expand -------------------------------------------------------------------------------
REF = re.compile(r"; ref (\S+)\]$", re.MULTILINE)


@pytest.mark.anyio
async def test_filter_keeps_the_failures_and_expand_gives_the_dropped_bytes_back(tmp_path: Path) -> None:
    whole = EXAMPLE.read_bytes()
    log = tmp_path / "pytest-failure.log"  # (in the folder the server runs in: what these tools read)
    log.write_bytes(whole)
    async with connect(tmp_path) as session:
        result = await call(session, "filter", path=str(log), budget_tokens=500)
        found, text = facts(result), text_of(result)
        refs = REF.findall(text)
        full = refs[0]
        source = full.rsplit(":", 2)[0]
        assert source == str(log.resolve()) == found["path"]
        # the refs as printed: short ones (same source as the one before it) too, and one with the "]"
        assert all(ref.startswith("@") for ref in refs[1:])
        wanted = [full + "]", *refs[1:]]
        expanded = [await call(session, "expand", ref=ref) for ref in wanted]
        with_context = await call(session, "expand", ref=full, context_lines=2)
    assert "FileNotFoundError: [Errno 2] No such file or directory" in text
    assert found["lines"] == whole.count(b"\n") and found["dropped_lines"] > 0 and len(refs) >= 2
    for ref, back in zip(wanted, expanded, strict=True):
        start, end = (int(n) for n in ref.rstrip("]").removeprefix("@").rsplit(":", 2)[-2].split("-"))
        assert facts(back)["exact"] and text_of(back).encode() == whole[start:end]
        assert facts(back)["read_from"] == source and facts(back)["bytes"] == end - start
    start, end = (int(n) for n in full.rsplit(":", 2)[1].split("-"))
    assert start == 0  # (no lines before it) and two more after it
    after = whole[end:].split(b"\n")[:2]
    assert text_of(with_context).encode() == whole[:end] + b"\n".join(after) + b"\n"


# a reconciliation no signature knows: one row drifted, in its own words, mid-way (helper-74's)
LEDGER = b"".join(
    b"row 2437: ledger balance drifted: want 10450 cents, have 10451 cents -- reconciliation aborted\n"
    if i == 2437
    else b"row %d: account acct-%04x balance ok (%d cents)\n" % (i, i, i * 7 % 9973)
    for i in range(1, 5001)
)


@pytest.mark.anyio
async def test_filter_of_a_failed_command_s_output_looks_for_its_failure_as_run_does(tmp_path: Path) -> None:
    """helper-80: `run` kept a failure in a job's own words that the `filter` tool, and `filter` of
    the same bytes, left out: a file's filter does not know the command failed; `failed` says so."""
    (tmp_path / "ledger.log").write_bytes(LEDGER)
    drifted = "row 2437: ledger balance drifted: want 10450 cents, have 10451 cents -- reconciliation aborted\n"
    async with connect(tmp_path) as session:
        plain = text_of(await call(session, "filter", path="ledger.log", budget_tokens=300))
        failed = text_of(await call(session, "filter", path="ledger.log", budget_tokens=300, failed=True))
    assert drifted not in plain and drifted in failed
    assert len(failed.splitlines()) < 30


@pytest.mark.anyio
async def test_a_dropped_run_past_a_mebibyte_comes_back_in_pages_of_whole_lines(tmp_path: Path) -> None:
    # (it had been an error, "more than the 1048576 this tool returns": lost to an agent with MCP alone, helper-68)
    passing = b"".join(b"test_%06d ... ok, all good here\n" % i for i in range(80_000))
    whole = b"FAILED: test_first (AssertionError: 0 != 2)\n" + passing + b"FAILED: test_last (AssertionError: 1 != 2)\n"
    log = tmp_path / "long.log"
    log.write_bytes(whole)
    async with connect(tmp_path) as session:
        text = text_of(await call(session, "filter", path="long.log", budget_tokens=500))
        ref = next(r for r in REF.findall(text) if "-" in r)
        start, end = (int(n) for n in ref.rsplit(":", 2)[-2].split("-"))
        assert end - start > 2 * mcp_server.EXPAND_MAX_BYTES
        pages, offsets, offset = [], [], 0
        while offset is not None:
            page = await call(session, "expand", ref=ref, offset=offset, context_lines=1)
            pages.append(text_of(page).encode())
            offsets.append(offset)
            offset = facts(page)["next_offset"]
        past = await call(session, "expand", ref=ref, offset=end - start)
    assert len(pages) >= 3 and all(len(p) <= mcp_server.EXPAND_MAX_BYTES for p in pages)
    assert all(p.endswith(b"\n") for p in pages)  # (each page whole lines)
    # the pages are the run's bytes in order, the context line before in the first page, the one
    # after in the last (the line before had been left out, helper-97)
    assert start > 0
    before = whole[:start].rsplit(b"\n", 2)[-2] + b"\n"
    after = whole[end:].split(b"\n", 1)[0] + b"\n"
    assert b"".join(pages) == before + whole[start:end] + after and offsets[1] == len(pages[0]) - len(before)
    assert past.is_error and "past its" in text_of(past)


@pytest.mark.anyio
async def test_context_lines_count_toward_a_call_s_mebibyte_nearest_first(tmp_path: Path) -> None:
    # (20,000 context lines had returned 1.4 MB a call, 2,000,000 timed out at 832 MB: helper-96)
    before = b"".join(b"setup step %06d done, nothing to see\n" % i for i in range(60_000))
    middle = b"".join(b"test_%06d ... ok\n" % i for i in range(3_000))
    after = b"".join(b"teardown step %06d done, nothing to see\n" % i for i in range(60_000))
    whole = before + b"ERROR: first\n" + middle + b"ERROR: second\n" + after
    (tmp_path / "ctx.log").write_bytes(whole)

    def span(ref: str) -> tuple[int, int]:
        first, last = re.split(r"[:@]", ref.rsplit(":", 1)[0])[-1].split("-")
        return int(first), int(last)

    async with connect(tmp_path) as session:
        text = text_of(await call(session, "filter", path="ctx.log", query="error", budget_tokens=4000))
        ref = next(r for r in REF.findall(text) if len(before) < span(r)[0] < span(r)[1] < len(whole) - len(after))
        start, end = span(ref)
        got = await call(session, "expand", ref=ref, context_lines=200_000)
    data = text_of(got).encode()
    assert facts(got)["next_offset"] is None and end - start > 10_000
    assert len(data) <= mcp_server.EXPAND_MAX_BYTES and data.endswith(b"\n")
    # the range with whole lines on each side, the nearest ones, about as many bytes each side
    at = whole.find(data)
    assert 0 < at < start and whole[at - 1 : at] == b"\n" and at + len(data) > end
    assert data[start - at : end - at] == whole[start:end]
    lead, trail = start - at, at + len(data) - end
    assert abs(lead - trail) < 100 and lead + trail > mcp_server.EXPAND_MAX_BYTES - (end - start) - 100


@pytest.mark.anyio
async def test_a_tool_error_shows_a_forged_ref_s_escapes_escaped(tmp_path: Path) -> None:
    # expand turns a ref's "\x1b" back into an ESC, and its error had returned it raw (helper-98)
    async with connect(tmp_path) as session:
        got = await call(session, "expand", ref="nope\\x1b]0;TITLE\\x07:0-10:12345678")
    text = text_of(got)
    assert got.is_error and "\x1b" not in text and "\x07" not in text and "\\x1b]0;TITLE\\x07" in text, text


@pytest.mark.anyio
async def test_expand_of_a_file_whose_name_is_not_utf8_answers(tmp_path: Path) -> None:
    # its reply's read_from could not be written: the server died and later calls hung (helper-99)
    log = tmp_path / os.fsdecode(b"raw\x9b\xff.log")
    lines = b"".join(b"INFO step %d\n" % i for i in range(200))
    log.write_bytes(lines + b"ERROR: boom\n")
    ref = str(Ref(str(log), 0, len(lines), f"{zlib.crc32(lines):08x}"))  # (as filter prints it)
    async with connect(tmp_path) as session:
        got = await call(session, "expand", ref=ref)
        missing = await call(session, "expand", ref="nope\\xff.log:0-10:deadbeef")
    assert facts(got)["read_from"].endswith("raw\\x9b\\xff.log") and text_of(got).startswith("INFO step 0\n")
    assert missing.is_error and "nope\\xff.log" in text_of(missing), text_of(missing)


@pytest.mark.anyio
async def test_bad_and_stale_refs_and_unreadable_files_are_tool_errors(tmp_path: Path) -> None:
    log = tmp_path / "copy.log"
    log.write_bytes(EXAMPLE.read_bytes())
    async with connect(tmp_path) as session:
        ref = REF.findall(text_of(await call(session, "filter", path="copy.log", budget_tokens=500)))[0]
        log.write_bytes(EXAMPLE.read_bytes().replace(b"test", b"TEST"))  # rewritten, same length
        stale = await call(session, "expand", ref=ref)
        bad = await call(session, "expand", ref="not a ref")
        short = await call(session, "expand", ref="@0-10:00000000")
        missing = await call(session, "filter", path=str(tmp_path / "nope.log"))
        folder = await call(session, "filter", path=str(tmp_path))
        empty_query = await call(session, "filter", path="copy.log", query="  ")
        # a number past what Python reads was a bare "Error executing tool expand" (helper-50)
        huge = await call(session, "expand", ref=f"/x:{'9' * 100_000}-1:00000000")
        long_path = await call(session, "filter", path="/x" * 1_000_000)  # (echoed whole: 2 MB of error)
    assert stale.is_error and "do not have the ref's checksum (the file was rewritten" in text_of(stale)
    assert bad.is_error and "'not a ref' is not a streamfilter ref" in text_of(bad)
    assert short.is_error and "SOURCE:0-10:00000000" in text_of(short)
    assert missing.is_error and "No such file or directory" in text_of(missing)
    assert folder.is_error and "not a regular file" in text_of(folder)
    assert empty_query.is_error and "query is empty" in text_of(empty_query)
    assert huge.is_error and "is not a streamfilter ref" in text_of(huge) and len(text_of(huge)) < 400
    assert long_path.is_error and "2000000 characters" in text_of(long_path) and len(text_of(long_path)) < 400


# -- streams and read, over a real daemon's output --------------------------------------------------------
def daemon_config(tmp: Path) -> Path:
    """Two file sources, each writing to a shared JSONL sink and a shared text sink."""
    body = "".join(
        f'[[source]]\nname = "{name}"\ntype = "file"\npath = "{tmp}/{name}.log"\nstart_at = "beginning"\n'
        'sinks = ["events", "text"]\n'
        for name in ("app", "other")
    )
    body += f'[[sink]]\nname = "events"\ntype = "file"\npath = "{tmp}/out.jsonl"\nformat = "jsonl"\n'
    body += f'[[sink]]\nname = "text"\ntype = "file"\npath = "{tmp}/out.txt"\n'
    (tmp / "streamfilter.toml").write_text(body)
    return tmp / "streamfilter.toml"


@pytest.mark.anyio
async def test_streams_and_read_give_one_sources_recent_output(tmp_path: Path) -> None:
    for name in ("app", "other"):
        noise = "".join(f"INFO {name} step {i} ok\n" for i in range(300))
        (tmp_path / f"{name}.log").write_text(f"{noise}ERROR {name} failed: disk full\n{noise}")
    config = daemon_config(tmp_path)
    daemon = Live(tmp_path, "daemon", "--config", str(config), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    out = tmp_path / "out.txt"
    daemon.wait_for(lambda: out.exists() and out.read_text().count("failed: disk full") == 2, what="both errors")
    daemon.proc.send_signal(signal.SIGTERM)  # it writes what it holds, then the JSONL end events
    assert daemon.proc.wait(timeout=30) == 0
    async with connect(tmp_path, "--config", str(config)) as session:
        assert {tool.name for tool in (await session.list_tools()).tools} >= {"streams", "read"}
        streams = await call(session, "streams")
        events = await call(session, "read", source="app", sink="events", lines=2000)
        text = await call(session, "read", source="app", sink="text")
        both = await call(session, "read", source="other", lines=3)
        last = await call(session, "read", source="app", sink="events", lines=1)
        unknown = await call(session, "read", source="nope")
        drop = next(json.loads(line) for line in facts(events)["sinks"][0]["text"].splitlines() if '"drop"' in line)
        expanded = await call(session, "expand", ref=drop["ref"])
    listed = facts(streams)
    assert [s["name"] for s in listed["sources"]] == ["app", "other"]
    # (a text sink two sources share is not readable: a line of one may read "==> other <==", helper-42)
    assert listed["sources"][0]["sinks"] == [
        {"name": "events", "type": "file", "path": f"{tmp_path}/out.jsonl", "format": "jsonl", "readable": True},
        {"name": "text", "type": "file", "path": f"{tmp_path}/out.txt", "format": "text", "readable": False},
    ]
    assert "source app: file" in text_of(streams)
    (sink,) = facts(events)["sinks"]
    lines = [json.loads(line) for line in sink["text"].splitlines()]
    assert {e["source"] for e in lines} == {"app"} and lines[-1]["event"] == "end" and sink["count"] == len(lines)
    assert any("ERROR app failed: disk full" in e.get("text", "") for e in lines)
    assert text.is_error and "not read: a text sink that other writes to too" in text_of(text)
    assert [s["count"] for s in facts(both)["sinks"]] == [3, 0]
    assert "not read: a text sink that app writes to too" in text_of(both)
    assert json.loads(facts(last)["sinks"][0]["text"])["event"] == "end"
    assert (
        unknown.is_error
        and "no source named 'nope'" in text_of(unknown)
        and "(sources: app, other)" in text_of(unknown)
    )
    app_log = (tmp_path / "app.log").read_bytes()
    assert text_of(expanded).encode() == app_log[drop["start_byte"] : drop["end_byte"]]


def test_a_bad_config_stops_the_server_before_it_serves(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("[[source]]\n")
    done = run_cli("mcp", "--config", str(tmp_path / "bad.toml"))
    assert done.returncode == 78 and b"source[0].type: missing" in done.stderr and done.stdout == b""


@pytest.mark.anyio
async def test_the_server_names_its_version(tmp_path: Path) -> None:
    """helper-60: its serverInfo's version was empty, where --version says the package's."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "streamfilter", "mcp"], cwd=str(tmp_path))
    with errlog_in(tmp_path) as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(CALL_SECONDS):
                hello = await session.initialize()
    assert hello.server_info.name == "streamfilter" and hello.server_info.version == __version__


@pytest.mark.anyio
async def test_filter_and_expand_read_only_the_project_and_the_state_directory(tmp_path: Path) -> None:
    """helper-62: a forged ref in a log (an empty range's CRC is 00000000; a known first line's CRC
    is known) had the read-only expand tool print ~/.ssh keys and /proc/self/environ, which a
    client may call without asking; so did filter."""
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret").write_text("-----BEGIN KEY-----\nAAAA\n")
    first = f"{zlib.crc32(b'-----BEGIN KEY-----' + bytes([10])):08x}"
    async with connect(project) as session:
        refused = [
            await call(session, "filter", path=str(tmp_path / "secret")),
            await call(session, "expand", ref=f"{tmp_path / 'secret'}:0-20:{first}", context_lines=5),
            await call(session, "expand", ref="/proc/self/environ:0-0:00000000"),
            await call(session, "expand", ref=f"{project}/x.log:3-3:00000000"),
        ]
    for result in refused:
        assert result.is_error and "AAAA" not in text_of(result), text_of(result)
    assert "outside the folder this server runs in" in text_of(refused[0]) + text_of(refused[1])
    assert "names no byte" in text_of(refused[2]) and "names no byte" in text_of(refused[3])


@pytest.mark.anyio
async def test_a_server_started_in_the_home_folder_reads_only_its_state_directory(tmp_path: Path) -> None:
    """helper-114: a client that sets no working folder starts the server in ~ (or /), and the
    read-only tools, which a client may call without asking, read ~/.ssh's keys as the folder's files."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    first = f"{zlib.crc32(b'-----BEGIN OPENSSH PRIVATE KEY-----' + bytes([10])):08x}"
    async with connect(home, home=home) as session:
        refused = [
            await call(session, "filter", path=".ssh/id_ed25519"),
            await call(session, "expand", ref=f"{home}/.ssh/id_ed25519:0-36:{first}", context_lines=5),
        ]
        ran = await call(session, "run", command="seq 1 3000; echo 'error: disk full'; exit 3")
        output = facts(ran)["output_path"]
        allowed = await call(session, "filter", path=output)  # (run's whole output, in the state directory)
    for result in refused:
        assert result.is_error and "AAAA" not in text_of(result), text_of(result)
        assert "which holds the home folder or is the root" in text_of(result), text_of(result)
    assert facts(ran)["status"] == 3 and not allowed.is_error and "error: disk full" in text_of(allowed)
    assert "tools filter and expand read only streamfilter's state directory" in (home / "server.err").read_text()


@pytest.mark.anyio
async def test_expand_reads_no_link_out_of_the_project(tmp_path: Path) -> None:
    """helper-71: a ref whose source is a bare name (no "/") was not checked, and a link in the
    project to a file outside it was read (a checksum oracle on /etc/passwd); nor is a rotation
    that links out read in its place."""
    project = tmp_path / "project"
    project.mkdir()
    secret = tmp_path / "secret"
    secret.write_bytes(b"-----BEGIN KEY-----\nAAAA\n")
    (project / "leak.txt").symlink_to(secret)
    (project / "app.log").write_bytes(b"rewritten\n")
    (project / "app.log.1").symlink_to(secret)
    crc = f"{zlib.crc32(secret.read_bytes()):08x}"
    size = secret.stat().st_size
    async with connect(project) as session:
        refused = [
            await call(session, "expand", ref=f"leak.txt:0-{size}:{crc}"),
            await call(session, "expand", ref=f"{project / 'leak.txt'}:0-{size}:{crc}"),
            await call(session, "expand", ref=f"app.log:0-{size}:{crc}"),
        ]
        (project / "own.log").write_bytes(b"kept\nline two\n")
        allowed = await call(session, "expand", ref=f"own.log:5-14:{zlib.crc32(b'line two' + bytes([10])):08x}")
    for result in refused:
        assert result.is_error and "AAAA" not in text_of(result), text_of(result)
    assert "outside the folder this server runs in" in text_of(refused[0])
    assert not allowed.is_error and text_of(allowed) == "line two\n", text_of(allowed)


@pytest.mark.anyio
async def test_a_misspelt_argument_is_an_error_that_names_it(tmp_path: Path) -> None:
    # (the SDK's argument model dropped names it does not take: `budget_token` ran with the default
    # budget and said nothing, helper-84)
    log = tmp_path / "build.log"
    log.write_text("".join(f"step {i} ok\n" for i in range(500)) + "ERROR: link failed\n")
    async with connect(tmp_path) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert all(tool.input_schema.get("additionalProperties") is False for tool in listed.values())
        result = await call(session, "filter", path=str(log), budget_token=50)
        assert result.is_error and "budget_token" in text_of(result), text_of(result)
        result = await call(session, "run", command="echo hi", cwdd=str(tmp_path))
        assert result.is_error and "cwdd" in text_of(result), text_of(result)
        assert facts(await call(session, "filter", path=str(log), budget_tokens=50))["lines"] == 501
