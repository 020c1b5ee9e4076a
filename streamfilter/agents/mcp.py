"""``streamfilter mcp``: a stdio MCP server, on the official SDK (``mcp``, its ``MCPServer``).

Tools, each returning text (what an agent reads) and the same facts as structured content:

* ``run``: a command run to its end, its output filtered within a token budget, its exit
  status, and the file that holds its whole output (``live.run.capture_command`` awaited on
  the server's event loop, then ``live.run.report_run`` in a worker thread);
* ``filter``: a file filtered within a token budget (``live.batch.filter_input``);
* ``expand``: the exact bytes a DROP summary's ref names (``live.expand.expand``);
* with a daemon config (``--config``), ``streams`` (its sources and where their output goes)
  and ``read`` (the last lines or events a source wrote to its file sinks, read from the end).

A tool's anticipated failure (a bad ref, a file that cannot be read) is a tool error whose
text says what is wrong; a command that cannot be started is a result (status 127 or 126).
A cancelled ``run`` kills its command and what the command started. The server's own logs go
to stderr; stdout is the protocol.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import signal
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from ..core.errors import StreamfilterError
from ..core.filter import DEFAULT_QUERY, MAX_COUNT, FilterConfig, StreamFilter
from ..core.words import counted
from ..live.batch import filter_input
from ..live.config import DaemonConfig, SinkConfig, SourceConfig
from ..live.envelope import status_of
from ..live.expand import RefError, expand_page, parse_ref, ref_path, shown, state_dir, state_dirs
from ..live.process import KILL_GRACE_SECONDS
from ..live.run import (
    LEFT_OPEN,
    CommandError,
    OutputCopy,
    capture_command,
    let_go_filter,
    not_started_event,
    report_run,
)
from ..live.terminal import escape_control_text, escape_controls
from .defaults import DEFAULT_BUDGET_TOKENS

__all__ = (
    "EXPAND_MAX_BYTES",
    "READ_LINES",
    "READ_MAX_LINES",
    "READ_SCAN_BYTES",
    "ExpandResult",
    "FilterResult",
    "ReadResult",
    "RunResult",
    "SinkInfo",
    "SinkTail",
    "StreamInfo",
    "StreamfilterMCP",
    "StreamsResult",
    "shared_text",
    "tail_sink",
    "too_broad",
)

TIMED_OUT = 124  # the run tool's status for a command its timeout stopped (timeout(1)'s)
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600.0
EXPAND_MAX_BYTES = 1 << 20  # most bytes of a ref's range the expand tool returns a call (the CLI has no cap)
READ_LINES = 50  # read: lines (text sink) or events (JSONL sink) returned when the caller names no count
READ_MAX_LINES = 2000  # read: the most it returns per sink
# read: most bytes looked at from a sink file's end (a source that wrote little lately among
# others that wrote much gets fewer lines than asked)
READ_SCAN_BYTES = 16 << 20
_BLOCK = 1 << 16  # read: bytes read per step back from a file's end

_INSTRUCTIONS = """\
streamfilter cuts build logs and test output down to what matters: error and failure lines, \
their context and the lines matching a query are kept verbatim; the rest is replaced by one-line \
summaries such as `[streamfilter: dropped lines 1-81 (81 lines, 6.0 KiB): ...; ref SOURCE:START-END:CRC]`. \
Use `run` instead of a plain shell for builds, tests, linters and installs whose output is long, \
`filter` for a log file, and `expand` with a summary's ref to get those exact lines back."""

# -- the tools' parameters (module-level: the SDK builds each tool's input schema from its signature)
Command = Annotated[
    str | list[str],
    Field(
        description="A shell command line (run by `sh -c`: pipes, `&&` and globs work), or a list of the "
        "program and its arguments (run directly, no shell)."
    ),
]
Cwd = Annotated[
    str | None, Field(description="The working directory to run it in (default: the server's working directory).")
]
Query = Annotated[
    str,
    Field(
        description="Words for what matters (BM25): lines matching them are kept besides errors and failures.",
        min_length=1,
    ),
]
Budget = Annotated[int, Field(description="About how many tokens the returned output may take.", ge=1, le=MAX_COUNT)]
Timeout = Annotated[
    float | None,
    Field(
        description="Seconds after which the command's process group is sent SIGTERM (SIGKILL "
        f"{KILL_GRACE_SECONDS:g} s later to what is left) and the output, up to then and as it stopped, is "
        "returned with status 124, as `timeout` gives (default: none). Set it below your own call's timeout: "
        "a call that times out or is cancelled returns nothing.",
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
    ),
]
Failed = Annotated[
    bool,
    Field(
        description="The file is the output of a command that failed (a failed CI job's log): its lines that may be "
        "the failure in the tool's own words (the rare ones, the most probable by the learned prior) are looked for "
        "wherever they are, as `run` does for a command that fails."
    ),
]
FilePath = Annotated[
    str, Field(description="The log file to filter (a relative path starts from the server's working directory).")
]
RefText = Annotated[
    str,
    Field(
        description="The ref after `ref ` in a summary line, SOURCE:START-END:CRC, or a short one, "
        "@START-END:CRC, as printed (read against the sources outputs named lately; if that fails, put "
        "the SOURCE of the full ref above it in the same output in front)."
    ),
]
ContextLines = Annotated[
    int, Field(description="Whole lines also returned before and after the dropped ones.", ge=0, le=MAX_COUNT)
]
PageOffset = Annotated[
    int,
    Field(
        description="Bytes past the ref's start (context lines not counted) to return from: the `next_offset` of "
        "the page before (default 0).",
        ge=0,
    ),
]
SourceName = Annotated[str, Field(description="A source's name, as `streams` lists it.")]
LineCount = Annotated[
    int,
    Field(
        description="How many of the last lines (text sink) or events (JSONL sink) to return.",
        ge=1,
        le=READ_MAX_LINES,
    ),
]
SinkName = Annotated[
    str | None, Field(description="Read only this file sink of the source (default: each of its file sinks).")
]


# -- the tools' structured results
class RunResult(BaseModel):
    """What the ``run`` tool returns besides its text (the same output)."""

    command: list[str] = Field(description="The argv that was run (a shell string as sh -c STRING).")
    status: int = Field(
        description="The exit status: 0 success; 127 not found, 126 not executable (it did not start); "
        "128+N killed by signal N."
    )
    output: str = Field(description="The filtered output; its last line names the status and output_path.")
    output_path: str | None = Field(
        description="The file holding the whole output (refs in `output` point into it); null when it did not start."
    )
    lines: int = Field(description="Lines of the whole output.")
    bytes: int = Field(description="Bytes of the whole output.")


class FilterResult(BaseModel):
    """What the ``filter`` tool returns besides its text (the same output)."""

    path: str = Field(description="The file's absolute path (the SOURCE of the output's refs).")
    output: str = Field(description="The filtered output.")
    lines: int = Field(description="Lines of the file.")
    bytes: int = Field(description="Bytes of the file read.")
    kept_lines: int = Field(description="Lines returned verbatim.")
    dropped_lines: int = Field(description="Lines replaced by summaries (their refs give them back).")


class ExpandResult(BaseModel):
    """What the ``expand`` tool returns besides its text (the same bytes)."""

    ref: str = Field(description="The ref, whole.")
    text: str = Field(description="The bytes, as UTF-8 (control characters and any other byte written as \\xNN).")
    bytes: int = Field(description="How many bytes were read (context lines included).")
    exact: bool = Field(description="Whether `text` is the bytes exactly (valid UTF-8, no control character).")
    read_from: str = Field(description="The file read: the ref's own, or a file it was rotated to.")
    next_offset: int | None = Field(
        description="Where the next page of the ref's bytes starts (pass it as `offset`), or null: this was the last."
    )


class SinkInfo(BaseModel):
    """A sink of a source, as ``streams`` lists it."""

    name: str = Field(description="The sink's name in the config.")
    type: str = Field(description="stdout, file (appended) or unix (subscribers connect).")
    path: str = Field(description="The file or socket path ('' for stdout).")
    format: str = Field(description="text or jsonl.")
    readable: bool = Field(description="Whether `read` can read it (file sinks).")


class StreamInfo(BaseModel):
    """A source of the daemon config, as ``streams`` lists it."""

    name: str = Field(description="The source's name (what `read` takes).")
    type: str = Field(description="file, unix, tcp or stdin.")
    where: str = Field(description="Its path or glob (file, unix), address (tcp), or '' (stdin).")
    query: str = Field(description="Its filter's query.")
    sinks: list[SinkInfo] = Field(description="Where its filtered output goes.")


class StreamsResult(BaseModel):
    """What the ``streams`` tool returns besides its text."""

    config: str = Field(description="The daemon config file.")
    sources: list[StreamInfo] = Field(description="Its sources, in config order.")


class SinkTail(BaseModel):
    """The end of one file sink, as far as one source wrote it."""

    sink: str = Field(description="The sink's name.")
    path: str = Field(description="Its file.")
    format: str = Field(description="text or jsonl.")
    count: int = Field(description="Lines (text) or events (jsonl) returned.")
    text: str = Field(description="Those lines, or the events as JSON lines, oldest first.")


class ReadResult(BaseModel):
    """What the ``read`` tool returns besides its text."""

    source: str = Field(description="The source's name.")
    sinks: list[SinkTail] = Field(description="Each file sink read.")


def _text(data: bytes) -> str:
    """Bytes as the text an agent reads, as a terminal shows them (``terminal.escape_controls``): UTF-8,
    control characters (an escape sequence's ESC, NUL, a lone carriage return) and any byte that is
    not UTF-8 written as ``\\xNN``, bidirectional overrides as ``\\uNNNN``: a command's output cannot
    act on the client that shows it."""
    text = escape_controls(data).decode("utf-8")
    # (a carriage return at the very end: none of its line follows, here none ever will)
    return text[:-1] + "\\x0d" if text.endswith("\r") else text


def _result(text: str, facts: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=facts.model_dump(mode="json")
    )


def _filter_config(query: str) -> FilterConfig:
    """Raises ToolError for a query without a word (it would match nothing)."""
    if not query.split():
        raise ToolError("query is empty: give at least one word")
    config = FilterConfig(query=query)
    StreamFilter(config)  # checks the settings before anything runs or is read
    return config


def _directory(cwd: str | None) -> str | None:
    """``cwd`` made absolute; ToolError unless it is a directory (else a missing one would be
    reported as the command not being found)."""
    if cwd is None:
        return None
    where = os.path.abspath(os.path.expanduser(cwd))
    if not os.path.isdir(where):
        raise ToolError(f"cwd {shown(cwd)}: not a directory")
    return where


def too_broad(root: Path) -> bool:
    """Whether ``root``, its links followed, is ``/`` or holds the home folder (``~`` or one of its
    parents): a folder whose files a client may not read without asking (``~/.ssh``, ``/etc``)."""
    real = Path(os.path.realpath(root))
    return real == Path(real.anchor) or Path(os.path.realpath(Path.home())).is_relative_to(real)


def _reaches(path: str | Path, root: Path) -> bool:
    """Whether ``path`` (a relative one from the working directory), its links followed, is in the
    server's working folder ``root`` (the project it was started in; not one ``too_broad``) or a
    streamfilter state directory (``state_dirs``: run's outputs and archives)."""
    real = Path(os.path.realpath(path))
    folders = (*(() if too_broad(root) else (root,)), *state_dirs())
    return any(real.is_relative_to(os.path.realpath(d)) for d in folders)


def _within_reach(path: str, root: Path) -> None:
    """ToolError unless ``path`` is within reach (``_reaches``). ``filter`` and ``expand`` are
    read-only tools a client may call without asking: a forged ref in a log had them read ~/.ssh or
    /proc/self/environ (helper-62), and a ref to a link in the project, /etc/passwd (helper-71); a
    server started in ``/`` or the home folder (a client that sets no working folder) had read
    /etc/shadow and ~/.ssh's keys as files of its folder (helper-114)."""
    if _reaches(path, root):
        return
    if too_broad(root):
        raise ToolError(
            f"{shown(path)}: this server runs in {shown(str(root))}, which holds the home folder or is the root,"
            " so these tools read only streamfilter's state directory (start the server in a project's folder,"
            ' e.g. the client\'s "cwd" setting; `streamfilter filter` and `expand` on the command line read any file)'
        )
    raise ToolError(
        f"{shown(path)} is outside the folder this server runs in ({shown(str(root))}) and streamfilter's state"
        " directory: these tools read no other file (`streamfilter filter` and `expand` on the command line do)"
    )


def _regular_file(path: str) -> str:
    """``path`` made absolute; ToolError unless it is a readable regular file. A FIFO or a device
    is refused: reading one could wait for ever on a thread a cancel cannot stop."""
    name = os.path.abspath(os.path.expanduser(path))
    try:
        info = os.stat(name)
    except OSError as exc:
        raise ToolError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"cannot read {shown(path)}: not a regular file")
    if not os.access(name, os.R_OK):
        raise ToolError(f"cannot read {shown(path)}: Permission denied")
    return name


class _Running:
    """The commands ``run`` calls have running: a stop signal waits until they are stopped."""

    def __init__(self) -> None:
        self.count = 0
        self._none: anyio.Event | None = None  # set when the count drops to 0

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        """Count one command while the block runs."""
        if self.count == 0:
            self._none = anyio.Event()
        self.count += 1
        try:
            yield
        finally:
            self.count -= 1
            if self.count == 0 and self._none is not None:
                self._none.set()

    async def stopped(self) -> None:
        """Return once no command is running."""
        if self.count and self._none is not None:
            await self._none.wait()


async def _run(
    argv: list[str],
    cwd: str | None,
    config: FilterConfig,
    budget_tokens: int,
    running: _Running,
    stop_after: float | None = None,
) -> CallToolResult:
    """The ``run`` tool's work: the command awaited on the event loop (it writes its output to a
    file itself), then that file filtered in a worker thread (CPU-bound work off the event loop).
    A command stopped after ``stop_after`` seconds ends with status ``TIMED_OUT`` and a note that says so."""
    let_go = let_go_filter(argv, config, "text", budget_tokens)
    copy = await anyio.to_thread.run_sync(OutputCopy.create, argv, let_go)  # (in memory where no file can be made)
    try:
        with running.one():
            captured = await capture_command(argv, copy, cwd, detached=True, stop_after=stop_after)
    except CommandError as exc:
        copy.discard()  # (empty: nothing to keep)
        text = _text(not_started_event(argv, exc, "text"))
        return _result(
            text, RunResult(command=argv, status=exc.exit_code, output=text, output_path=None, lines=0, bytes=0)
        )
    finally:
        copy.close()
    out = io.BytesIO()
    notes = [LEFT_OPEN] if captured.left_open else []
    returncode = captured.returncode
    if captured.timed_out:  # (an agent's own call timeout returns nothing at all: helper-96)
        ended = f"ended by signal {-returncode}" if returncode < 0 else f"exited {returncode}"
        notes.append(
            f"timed out after {stop_after:g} s: its process group was sent SIGTERM, and SIGKILL "
            f"{KILL_GRACE_SECONDS:g} s later to what was left ({argv[0]} {ended}); status {TIMED_OUT}, "
            "as timeout(1) gives"
        )
        returncode = TIMED_OUT
    try:
        done = await anyio.to_thread.run_sync(
            lambda: report_run(argv, returncode, copy, config, "text", budget_tokens, out, notes=notes)
        )
    except (StreamfilterError, OSError) as exc:
        raise ToolError(f"cannot filter {copy.path}: {getattr(exc, 'strerror', None) or exc}") from None
    if done is not None and done.changed is not None:  # something rewrote the file meanwhile
        out.write(f"[streamfilter: {done.changed}]\n".encode())
    text = _text(out.getvalue())
    lines, size = copy.counts(done)
    facts = RunResult(
        command=argv,
        status=status_of(returncode),
        output=text,
        output_path=str(copy.path) if copy.path is not None else None,
        lines=lines,
        bytes=size,
    )
    return _result(text, facts)


# -- read: the end of a sink file, one source's share of it
def _lines_from_end(path: str, scan_bytes: int) -> Iterator[bytes]:
    """The lines of the file ``path`` from its last back, without their line ends, read in
    ``_BLOCK``-byte steps from the end; at most its last ``scan_bytes`` bytes are read (a line
    cut there is not given).

    Raises:
        OSError: the file cannot be opened or read.
    """
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        stop = max(0, end - scan_bytes - 1)  # (and the byte before: a line end there says a line starts)
        pos, rest, last = end, b"", True
        while pos > stop:
            step = min(_BLOCK, pos - stop)
            pos -= step
            handle.seek(pos)
            pieces = (handle.read(step) + rest).split(b"\n")
            rest = pieces[0]  # (its start may be in the block before)
            for piece in reversed(pieces[1:]):
                if last and not piece:  # the file ends with a line end: no line after it
                    last = False
                    continue
                last = False
                yield piece
        if pos == 0 and (rest or not last):
            yield rest


def _of_source(stream: str, source: str) -> bool:
    """Whether the stream named ``stream`` in a sink is one of source ``source``'s: the source
    itself, one file of its glob (``NAME:PATH``), a connection or run (``NAME#K``, ``NAME#K/RUN``),
    or a rotated file read on (``NAME@INODE``). Source names have none of ``:#@``."""
    return stream == source or (stream.startswith(source) and stream[len(source)] in ":#@")


def tail_sink(sink: SinkConfig, source: str, count: int, scan_bytes: int = READ_SCAN_BYTES) -> list[bytes]:
    """The last ``count`` lines (text) or events (JSONL) that source ``source`` wrote to the file
    sink ``sink``, oldest first, without line ends; read from the file's end, at most
    ``scan_bytes`` bytes of it.

    A JSONL event is the source's when its ``source`` field names one of its streams. A text sink
    is read whole as the source's: only one only this source writes to (``shared_text``) is read.

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError: not written yet).
    """
    found: list[bytes] = []
    for line in _lines_from_end(sink.path, scan_bytes):
        if len(found) >= count:
            break
        if sink.format == "jsonl":
            try:
                event = json.loads(line)
            except ValueError:  # (a line the daemon was still writing)
                continue
            if isinstance(event, dict) and _of_source(str(event.get("source", "")), source):
                found.append(line)
        else:
            found.append(line)
    return found[:count][::-1]


def shared_text(config: DaemonConfig, source: SourceConfig, sink: SinkConfig) -> list[str]:
    """The other sources that write to ``sink`` when it is a text sink, whose lines ``read`` cannot
    tell from ``source``'s: the daemon names the stream before each switch (``==> NAME <==``), but a
    source's own output may hold such lines, and gave its lines to another source (helper-42)."""
    if sink.format != "text":
        return []
    return [other.name for other in config.sources if other is not source and sink.name in other.sinks]


def _file_sinks(config: DaemonConfig, source: SourceConfig) -> list[SinkConfig]:
    return [s for s in config.sinks if s.name in source.sinks and s.type == "file"]


_SHARED_TEXT = (
    "not read: a text sink that {others} {write} to too, whose lines cannot be told apart truthfully (a "
    "source may print a line like the ==> NAME <== line the daemon writes before another's output); "
    "read a jsonl file sink, whose events name their source"
)


def _shared_note(others: Sequence[str]) -> str:
    """Why a text sink ``others`` write to too is not read (``shared_text``)."""
    return _SHARED_TEXT.format(others=", ".join(others), write="writes" if len(others) == 1 else "write")


def _read(config: DaemonConfig, source_name: str, count: int, sink_name: str | None) -> CallToolResult:
    """The ``read`` tool's work (blocking file reads: run in a worker thread)."""
    source = next((s for s in config.sources if s.name == source_name), None)
    if source is None:
        names = ", ".join(s.name for s in config.sources)
        raise ToolError(f"no source named {shown(source_name)!r} in {config.path} (sources: {names})")
    sinks = _file_sinks(config, source)
    if sink_name is not None:
        sinks = [s for s in sinks if s.name == sink_name]
        if not sinks:
            files = ", ".join(s.name for s in _file_sinks(config, source)) or "none"
            raise ToolError(
                f"source {source_name!r} writes to no file sink named {shown(sink_name)!r} (its file sinks: {files})"
            )
        if others := shared_text(config, source, sinks[0]):
            raise ToolError(f"sink {sink_name!r}: {_shared_note(others)}")
    if not sinks:
        raise ToolError(
            f"source {source_name!r} writes to no file sink (its sinks: {', '.join(source.sinks)}): "
            "only a file sink's output can be read back"
        )
    tails, parts = [], []
    for sink in sinks:
        unit = "event" if sink.format == "jsonl" else "line"
        try:
            if others := shared_text(config, source, sink):
                lines, note = [], _shared_note(others)
            else:
                lines = tail_sink(sink, source.name, count)
                note = f"the last {counted(len(lines), unit)} of {source.name}"
            body = b"".join(line + b"\n" for line in lines)
        except FileNotFoundError:
            lines, body, note = [], b"", "not written yet"
        except OSError as exc:
            raise ToolError(f"sink {sink.name!r}: cannot read {sink.path}: {exc.strerror or exc}") from None
        tails.append(SinkTail(sink=sink.name, path=sink.path, format=sink.format, count=len(lines), text=_text(body)))
        parts.append(f"[streamfilter: sink {sink.name} ({sink.format}) {sink.path}: {note}]\n{_text(body)}")
    return _result("".join(parts), ReadResult(source=source.name, sinks=tails))


def _streams(config: DaemonConfig) -> CallToolResult:
    """The ``streams`` tool's work."""
    sources, lines = [], [f"daemon config {config.path}:"]
    for source in config.sources:
        where = source.path or source.address
        sinks = []
        lines.append(f"source {source.name}: {source.type} {where}".rstrip() + f", query {source.filter.query!r}")
        for name in source.sinks:
            sink = next(s for s in config.sinks if s.name == name)  # (load_config checked the names)
            readable = sink.type == "file" and not shared_text(config, source, sink)
            sinks.append(
                SinkInfo(name=sink.name, type=sink.type, path=sink.path, format=sink.format, readable=readable)
            )
            place = {"stdout": "the daemon's standard output", "unix": f"subscribers of {sink.path}"}
            what = place.get(sink.type, sink.path)
            lines.append(f"  sink {sink.name}: {what} ({sink.format}){', readable with read' if readable else ''}")
        sources.append(
            StreamInfo(name=source.name, type=source.type, where=where, query=source.filter.query, sinks=sinks)
        )
    return _result("\n".join(lines) + "\n", StreamsResult(config=config.path, sources=sources))


class StreamfilterMCP:
    """The MCP server and its tools (``streams`` and ``read`` only with a daemon ``config``).

    Args:
        config: a loaded daemon config (``live.config.load_config``), or None.
        query: the filter's query when a call names none.
        budget_tokens: the output budget, in estimated tokens, when a call names none.

    Attributes:
        server: the SDK's server with the tools (``serve`` runs it over stdio).

    Raises:
        StreamfilterError: ``query`` has no word.
    """

    def __init__(
        self, config: DaemonConfig | None = None, query: str = DEFAULT_QUERY, budget_tokens: int = DEFAULT_BUDGET_TOKENS
    ) -> None:
        if not query.split():
            raise StreamfilterError("--query is empty: give at least one word")
        self._running = _Running()
        tools = self._tools(query, budget_tokens) + (_daemon_tools(config) if config is not None else [])
        self.server: MCPServer[Any] = MCPServer(
            "streamfilter", instructions=_INSTRUCTIONS, log_level="WARNING", version=__version__, tools=tools
        )

    def _tools(self, query: str, budget_tokens: int) -> list[Tool]:
        """``run``, ``filter`` and ``expand``, their parameters' defaults ``query`` and ``budget_tokens``."""
        running, root = self._running, Path.cwd()

        async def run(
            command: Command,
            cwd: Cwd = None,
            query: Query = query,
            budget_tokens: Budget = budget_tokens,
            timeout_seconds: Timeout = None,
        ) -> Annotated[CallToolResult, RunResult]:
            argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
            if not argv or not argv[0]:
                raise ToolError("command is empty")
            if any("\0" in arg for arg in argv):  # (exec refuses it: a traceback had said only "Error", helper-96)
                raise ToolError("command holds a NUL character, which no program argument can")
            config = _filter_config(query)
            return await _run(argv, _directory(cwd), config, budget_tokens, running, timeout_seconds)

        async def filter_file(
            path: FilePath, query: Query = query, budget_tokens: Budget = budget_tokens, failed: Failed = False
        ) -> Annotated[CallToolResult, FilterResult]:
            settings, name = _filter_config(query), _regular_file(path)
            _within_reach(name, root)
            out = io.BytesIO()
            filtered = functools.partial(filter_input, budget_tokens=budget_tokens, failed=failed)
            try:
                done = await anyio.to_thread.run_sync(filtered, name, settings, "text", out)
            except (StreamfilterError, OSError) as exc:
                raise ToolError(f"cannot filter {path}: {getattr(exc, 'strerror', None) or exc}") from None
            if done.changed is not None:
                raise ToolError(str(done.changed))
            text, stats = _text(out.getvalue()), done.stats
            facts = FilterResult(
                path=escape_control_text(name).decode(),
                output=text,
                lines=stats.lines,
                bytes=stats.bytes,
                kept_lines=stats.kept_lines,
                dropped_lines=stats.dropped_lines,
            )
            return _result(text, facts)

        async def expand_ref(
            ref: RefText, context_lines: ContextLines = 0, offset: PageOffset = 0
        ) -> Annotated[CallToolResult, ExpandResult]:
            try:
                # a ref ends with its CRC's hex digits: a "]" after it was copied from the summary's end
                # (a short ref is looked for in the sources outputs named lately: files are read)
                # (with context lines, one that several outputs hold is refused: their context may differ)
                given = ref.strip().removesuffix("]")
                parsed = await anyio.to_thread.run_sync(parse_ref, given, None, context_lines > 0)
            except RefError as exc:
                raise ToolError(str(exc)) from None
            # (the file the ref names, whatever its name's form: a bare name is read from the folder)
            _within_reach(str(ref_path(parsed, state_dir())), root)
            out = io.BytesIO()
            try:
                # (a range past EXPAND_MAX_BYTES comes in pages: it had been an error, and an agent with
                # this tool alone could not read those lines back, helper-68)
                rotated, next_offset = await anyio.to_thread.run_sync(
                    expand_page, parsed, out, context_lines, None, offset, EXPAND_MAX_BYTES, lambda p: _reaches(p, root)
                )
            except RefError as exc:
                raise ToolError(str(exc)) from None
            except OSError as exc:  # (checked, then unreadable: an I/O error)
                raise ToolError(f"ref {parsed}: cannot read {parsed.source}: {exc.strerror or exc}") from None
            data = out.getvalue()
            text = _text(data)
            exact = text.encode() == data  # (nothing was escaped)
            # (as a terminal shows a name: one not UTF-8 had crashed the server's reply, helper-99)
            read_from = escape_control_text(str(rotated) if rotated is not None else parsed.source).decode()
            facts = ExpandResult(
                ref=str(parsed), text=text, bytes=len(data), exact=exact, read_from=read_from, next_offset=next_offset
            )
            return _result(text, facts)

        summaries = (
            "Lines left out are replaced by one-line summaries, `[streamfilter: dropped lines A-B (N lines, SIZE): "
            "what they held; ref REF]`: pass REF to `expand` for those exact lines (a short ref, @START-END:CRC, "
            "as it is)."
        )
        return [
            _strict(
                run,
                name="run",
                title="Run a command, read what matters",
                description=(
                    "Run a command to its end and return its output cut down to what matters: errors, failures and "
                    "their context, and lines matching `query`, kept verbatim, within about `budget_tokens` tokens "
                    f"(default {budget_tokens}; query default {query!r}). Use it instead of a plain shell for builds, "
                    "tests, linters and installs whose output is long. On failure the last lines are kept too; on "
                    f"success the output is terse. {summaries} The last line gives the exit status and the file "
                    "holding the whole output (`output_path`: refs point into it). Returns `status` (127: not found, "
                    "126: not executable, 128+N: killed by signal N; a command that cannot start is a result, not an "
                    "error; 124: stopped by `timeout_seconds`), `output_path`, `lines`, `bytes`. Stdin is empty. "
                    "Cancelling the call kills the command and what it started, and returns nothing."
                ),
                annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
            ),
            _strict(
                filter_file,
                name="filter",
                title="Filter a log file",
                description=(
                    "Return a log file (a build log, test output) cut down to what matters: errors, failures and "
                    "their context, and lines matching `query`, kept verbatim, within about `budget_tokens` tokens "
                    f"(default {budget_tokens}; query default {query!r}). {summaries} Refs point into the file itself "
                    "(SOURCE is its absolute path). With `failed`, the file is a failed command's output, read as "
                    "`run` reads one. Returns the text and `lines`, `bytes`, `kept_lines`, `dropped_lines` of the file."
                ),
                annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
            ),
            _strict(
                expand_ref,
                name="expand",
                title="Get dropped lines back",
                description=(
                    "Return exactly the lines a summary's ref names (`[streamfilter: dropped lines ...; ref REF]` in "
                    "the output of `run`, `filter` or `read`), checked by CRC-32, with `context_lines` more lines "
                    f"before and after (default 0); at most {EXPAND_MAX_BYTES} bytes a call, cut after a whole line (a "
                    "longer line at the limit): a longer range comes in pages (pass `next_offset` as `offset`); "
                    "context lines count toward it, the nearest first, those past it left out. A ref "
                    "whose file was deleted, rewritten or evicted is an error that says so (run or filter again for "
                    "fresh refs)."
                ),
                annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
            ),
        ]

    async def serve(self) -> int:
        """Serve the tools over stdin and stdout until the client closes stdin; return 0.

        On SIGTERM, SIGINT or SIGHUP the calls in flight are cancelled, the commands ``run``
        started are stopped (they have process groups of their own, which a signal to the
        server's group does not reach; see ``live.run.capture_command``), and the server then
        dies of that signal as it would without a handler (the SDK's stdio transport reads stdin
        in a thread that no cancel can stop).
        """

        async def stop_on_signal(serving: anyio.CancelScope) -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                signum = await anext(signals)
            serving.cancel()
            await self._running.stopped()  # each within live.run.KILL_GRACE_SECONDS
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        async with anyio.create_task_group() as tg:
            serving = anyio.CancelScope()
            tg.start_soon(stop_on_signal, serving)
            with serving:
                await self.server.run_stdio_async()
            tg.cancel_scope.cancel()
        return 0


def _strict(fn: Callable[..., Any], **fields: Any) -> Tool:
    """The SDK's tool of ``fn`` (``Tool.from_function`` with ``fields``), whose arguments are checked
    for names it does not take: a misspelt one (``budget_token``) had been dropped without a word, and
    the call run with the default (helper-84). Its input schema says so too (``additionalProperties``).
    Types are strict too: ``"100"`` is not a number of tokens (it had been taken for one, helper-96).
    Its errors' text has control characters escaped, as its results' has."""

    @functools.wraps(fn)
    async def shown_errors(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except ToolError as exc:  # (a forged ref's ESC had reached the client raw, helper-98)
            raise ToolError(escape_control_text(str(exc)).decode()) from None

    tool = Tool.from_function(shown_errors, **fields)
    loose = tool.fn_metadata.arg_model
    config = ConfigDict(**{**loose.model_config, "extra": "forbid", "strict": True})
    strict = cast("type[ArgModelBase]", type(loose.__name__, (loose,), {"model_config": config}))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def _daemon_tools(daemon: DaemonConfig) -> list[Tool]:
    """``streams`` and ``read`` over the daemon config ``daemon`` (as loaded at start)."""

    async def streams() -> Annotated[CallToolResult, StreamsResult]:
        return _streams(daemon)

    async def read(
        source: SourceName, lines: LineCount = READ_LINES, sink: SinkName = None
    ) -> Annotated[CallToolResult, ReadResult]:
        return await anyio.to_thread.run_sync(_read, daemon, source, lines, sink)

    return [
        _strict(
            streams,
            name="streams",
            title="The daemon's streams",
            description=(
                f"List the sources of the streamfilter daemon config {daemon.path} (files, sockets a build sends "
                "its output to) and where each one's filtered output goes: file sinks (their paths and formats, "
                "text or jsonl; `read` reads them), the daemon's stdout, unix-socket subscribers."
            ),
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
        ),
        _strict(
            read,
            name="read",
            title="Recent filtered output of a stream",
            description=(
                "Return the recent filtered output of a daemon source: the last `lines` lines (text sink) or events "
                f"(jsonl sink; the source's own, by their `source` field) of each of its file sinks, oldest first "
                f"(default {READ_LINES}, at most {READ_MAX_LINES}; only the last {READ_SCAN_BYTES >> 20} MiB of a "
                "file are looked at). Text output keeps the lines that matter verbatim and summarizes the rest: "
                "pass a summary's ref (jsonl: an event's `ref`) to `expand` for the exact lines."
            ),
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
    ]
