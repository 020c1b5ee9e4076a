"""The MCP server's ``read``: one source's last lines or events of a sink file, read from its end;
and the SDK loads only for ``streamfilter mcp``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from streamfilter.agents.mcp import tail_sink
from streamfilter.live.config import SinkConfig


def sink_file(tmp_path: Path, data: bytes, fmt: str = "text") -> SinkConfig:
    path = tmp_path / f"out.{fmt}"
    path.write_bytes(data)
    return SinkConfig("out", "file", str(path), format=fmt)


def test_a_sink_of_one_source_is_all_its_own_and_read_from_the_end(tmp_path: Path) -> None:
    lines = [f"line {i} " + "x" * (i % 300) for i in range(3000)]  # several read blocks, lines across them
    sink = sink_file(tmp_path, "\n".join(lines).encode() + b"\n")
    assert tail_sink(sink, "app", 2500) == [line.encode() for line in lines[-2500:]]
    unended = sink_file(tmp_path, b"a\nb\nlet out at a pause")
    assert tail_sink(unended, "app", 2) == [b"b", b"let out at a pause"]
    assert tail_sink(unended, "app", 10) == [b"a", b"b", b"let out at a pause"]


def test_no_more_than_the_scan_limit_is_read(tmp_path: Path) -> None:
    sink = sink_file(tmp_path, b"first line\nsecond\nthird\n")
    assert tail_sink(sink, "app", 10, scan_bytes=13) == [b"second", b"third"]  # "line\n" cut: left out


def test_a_jsonl_sink_gives_the_sources_events(tmp_path: Path) -> None:
    events = [
        {"event": "keep", "source": "app", "text": "1"},
        {"event": "keep", "source": "other", "text": "2"},
        {"event": "keep", "source": "app#3/r1", "text": "3"},  # a run sent over app's socket
        {"event": "keep", "source": "appx", "text": "4"},
        {"event": "drop", "source": "app@1234", "ref": "r"},  # a rotated file read on
    ]
    data = b"".join(json.dumps(e).encode() + b"\n" for e in events) + b'{"event": "keep", "sou'
    sink = sink_file(tmp_path, data, "jsonl")
    found = [json.loads(line) for line in tail_sink(sink, "app", 10)]
    assert found == [events[0], events[2], events[4]]


def test_the_mcp_sdk_loads_only_for_the_mcp_subcommand() -> None:
    code = "import sys; from streamfilter.cli.main import _parser; _parser(); print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stdout == b"False\n"
