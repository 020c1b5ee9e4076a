"""``streamfilter daemon`` and ``check-config`` in a subprocess, with real files and sockets."""

from __future__ import annotations

import grp
import gzip
import hashlib
import itertools
import json
import os
import re
import resource
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from streamfilter.core.records import Run
from streamfilter.core.settings import FilterConfig
from streamfilter.live.config import SinkConfig, Timing
from streamfilter.live.expand import Ref
from streamfilter.live.sinks import FileSink
from streamfilter.live.stream import LiveStream
from tests.conftest import run_cli
from tests.live.proc import Live, jsonl_events


def write_config(tmp: Path, body: str) -> Path:
    path = tmp / "streamfilter.toml"
    path.write_text(body)
    return path


def start(tmp: Path, body: str) -> Live:
    live = Live(tmp, "daemon", "--config", str(write_config(tmp, body)), env={"XDG_STATE_HOME": str(tmp / "state")})
    live.log_event("daemon.ready")
    return live


def file_to_jsonl(log: Path, out: Path, defaults: str) -> str:
    """A config with one file source ``app`` (``log``, read from its start) and a JSONL file sink."""
    return (
        f'[defaults]\n{defaults}[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\n'
        f'start_at = "beginning"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )


def glob_to_jsonl(logs: Path, out: Path, defaults: str = 'start_at = "beginning"\n') -> str:
    """A config with one file source ``ci`` on ``logs/*.log`` and a JSONL file sink."""
    return (
        f'[defaults]\n{defaults}[[source]]\nname = "ci"\ntype = "file"\npath = "{logs}/*.log"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )


def runs(events: list[dict[str, Any]], stream: str | None = None) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] in ("keep", "drop") and (stream is None or e["source"] == stream)]


def kept(events: list[dict[str, Any]], stream: str | None = None) -> str:
    return "".join(e["text"] for e in runs(events, stream) if e["event"] == "keep")


def connect_unix(path: Path) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(path))
    return client


# -- config --------------------------------------------------------------------------------------
def resolved_source(tmp_path: Path, body: str) -> dict[str, Any]:
    """The one source of config ``body`` as ``check-config`` prints it resolved."""
    done = run_cli("check-config", str(write_config(tmp_path, body)))
    assert done.returncode == 0, done.stderr
    (source,) = json.loads(done.stdout)["sources"]
    return source  # type: ignore[no-any-return]


def test_check_config_prints_the_resolved_config(tmp_path: Path) -> None:
    source = resolved_source(
        tmp_path,
        f'[defaults]\nquery = "error failed"\n[[source]]\nname = "ci"\ntype = "file"\npath = "{tmp_path}/*.log"\n',
    )
    assert source["filter"]["query"] == "error failed" and source["filter"]["window_lines"] == 8
    assert source["start_at"] == "end" and source["roots"] == [str(tmp_path.resolve())]
    assert source["timing"]["idle_seconds"] == 0.05
    # a table shows its type's keys (helper-26: a nats source showed a path, a file mode, start_at)
    assert not {"mode", "group", "address", "servers", "tail_at_end"} & set(source)
    done = run_cli(
        "check-config",
        str(
            write_config(
                tmp_path,
                '[[source]]\nname = "fleet"\ntype = "nats"\nservers = ["nats://127.0.0.1:4222"]\nsinks = ["out"]\n'
                '[[sink]]\nname = "out"\ntype = "nats"\nservers = ["nats://127.0.0.1:4222"]\n',
            )
        ),
    )
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    (nats_source,) = config["sources"]
    assert not {"path", "start_at", "roots", "checkpoint", "mode"} & set(nats_source)
    assert nats_source["partitions"] == 8
    assert [sink["name"] for sink in config["sinks"]] == ["out"]  # (the built-in stdout: no source writes to it)
    assert "path" not in config["sinks"][0] and config["sinks"][0]["stream"] == "STREAMFILTER_OUT"


def test_relative_paths_in_a_config_start_from_its_directory(tmp_path: Path) -> None:
    # (a fresh-user helper's find: they started from the daemon's working directory, "/" under systemd)
    done = run_cli(
        "check-config",
        str(write_config(tmp_path, '[[source]]\nname = "ci"\ntype = "file"\npath = "logs/*.log"\nroots = ["."]\n')),
    )
    assert done.returncode == 0, done.stderr
    (source,) = json.loads(done.stdout)["sources"]
    assert Path.cwd() != tmp_path  # (run_cli keeps ours)
    assert source["path"] == f"{tmp_path}/logs/*.log" and source["roots"] == [str(tmp_path.resolve())]


def test_a_defaults_max_line_bytes_caps_a_socket_sources_lines_too(tmp_path: Path) -> None:
    # the socket's line cap took only a per-source value; [defaults] set the filter's alone
    source = resolved_source(
        tmp_path,
        f'[defaults]\nmax_line_bytes = 1000\n[[source]]\nname = "u"\ntype = "unix"\npath = "{tmp_path}/u.sock"\n',
    )
    assert source["max_line_bytes"] == 1000 == source["filter"]["max_line_bytes"]


def test_config_errors_name_the_file_and_the_dotted_key_and_exit_78(tmp_path: Path) -> None:
    file = '[[source]]\ntype = "file"\npath = "/x.log"\n'
    cases = {
        file + 'quer = "error"\n': "source[0].quer: unknown key (did you mean 'query'?)",
        file + 'window_lines = "8"\n': "source[0].window_lines: must be a whole number",
        file + "window_lines = 0\n": "source[0].window_lines: must be 1 to 1099511627776, not 0",
        file + "context_lines = 99999999999999999999\n": "source[0].context_lines: must be 0 to 1099511627776",
        file + "max_line_bytes = 1\n": "source[0].max_line_bytes: must be 64 to 1099511627776, not 1",
        '[[source]]\ntype = "tcp"\naddress = "localhost"\n': "source[0].address: must be HOST:PORT",
        '[[source]]\ntype = "tcp"\naddress = ":99999"\n': "source[0].address: the port must be 0-65535, not 99999",
        # a key of another type of source was silently ignored (a fresh-user helper's find)
        file + 'address = ":9000"\n': "source[0].address: only a tcp source has one, not file",
        '[[source]]\ntype = "tcp"\naddress = ":9000"\nstart_at = "beginning"\n': (
            "source[0].start_at: only a file source has one, not tcp"
        ),
        '[[source]]\ntype = "unix"\npath = "/run/a.sock"\nroots = ["/run"]\n': (
            "source[0].roots: only a file source has one, not unix"
        ),
        '[[source]]\ntype = "unix"\naddress = ":9000"\n': "source[0].address: only a tcp source has one, not unix",
        '[[source]]\ntype = "stdin"\n[[sink]]\nname = "o"\ntype = "file"\npath = "/o.jsonl"\nqueue_events = 8\n': (
            "sink[0].queue_events: only a unix sink has one, not file"
        ),
        '[[source]]\ntype = "file"\npath = ""\n': "source[0].path: must not be empty",
        '[[source]]\ntype = "stdin"\n[[sink]]\nname = "o"\ntype = "file"\npath = " "\n': (
            "sink[0].path: must not be empty"
        ),
        '[[source]]\ntype = "file"\npath = "/x.log"\nsinks = ["nope"]\n': "source[0].sinks[0]: no sink named 'nope'",
        '[[source]]\ntype = "socket"\n': "source[0].type: must be one of file, unix, tcp, stdin",
        '[defaults]\nstart_at = "middle"\n' + file: "defaults.start_at: must be one of beginning, end, not 'middle'",
        '[defaults]\nsinks = ["nope"]\n' + file: "defaults.sinks[0]: no sink named 'nope'",
        # a key of a source or a sink, put in a table that has none: said as such (helper-34)
        '[defaults]\nmode = "0660"\n' + file: (
            "defaults.mode: unknown key here: it is a key of a [[source]] or a [[sink]] of type unix"
        ),
        # (it said "did you mean 'section_lines'?", helper-36)
        "[defaults]\nbaselines = false\n" + file: (
            "defaults.baselines: unknown key here: it is a key of a [[source]] of type tcp or unix"
        ),
        '[[source]]\ntype = "stdin"\n[[sink]]\nname = "o"\ntype = "file"\npath = "/o.jsonl"\nstart_at = "end"\n': (
            "sink[0].start_at: unknown key here: it is a key of a [[source]] of type file"
        ),
        file + "sinks = []\n": "source[0].sinks: is empty: the output would go nowhere",
        '[defaults]\nidle_seconds = -1\n[[source]]\ntype = "stdin"\n': "defaults.idle_seconds: must be more than 0",
        file + "poll_seconds = 1e300\n": "source[0].poll_seconds: must be more than 0 and at most 86400",
        file + "k1 = 1e308\n": "source[0].k1: must be 0 to 100, not 1e+308",
        file + "b = 1.5\n": "source[0].b: must be 0 to 1, not 1.5",
        file + "delta = -1\n": "source[0].delta: must be 0 to 100, not -1",
        file + "min_score = nan\n": "source[0].min_score: must be a finite number, not nan",
        '[[source]]\ntype = "file"\npath = "/x.log"\nprotect = ["("]\n': "source[0].protect[0]: not a valid regex",
        "[[source]\n": "not valid TOML",
        '[[source]]\ntype = "unix"\npath = "/tmp/x.sock"\n[[source]]\ntype = "unix"\npath = "/tmp/x.sock"\n': (
            "source[1].path: /tmp/x.sock is also source[0]'s"
        ),
        # two names of one socket, which the daemon then died on: "Address already in use" (helper-64)
        '[[source]]\ntype = "tcp"\naddress = "localhost:19600"\n'
        '[[source]]\ntype = "tcp"\naddress = "127.0.0.1:19600"\n': (
            "source[1].address: 127.0.0.1:19600 is also source[0]'s (localhost:19600)"
        ),
        '[[source]]\ntype = "tcp"\naddress = "0.0.0.0:19601"\n'
        '[[source]]\ntype = "tcp"\naddress = "127.0.0.1:19601"\n': (
            "source[1].address: 127.0.0.1:19601 is also source[0]'s (0.0.0.0:19601)"
        ),
        '[[source]]\ntype = "file"\npath = "/tmp/sf/*.log"\nsinks = ["o"]\n'
        '[[sink]]\nname = "o"\ntype = "file"\npath = "/tmp/sf/out.log"\n': (
            "sink[0].path: /tmp/sf/out.log is read by source[0] (the daemon would read its own output)"
        ),
        "": "source: no sources",
        '[[source]]\ntype = "unix"\npath = "/tmp/x.sock"\ngroup = "no-such-group-here"\n': (
            "source[0].group: no group named 'no-such-group-here' on this machine"
        ),
        file + 'group = "nogroup"\n': "source[0].group: only a unix source has one, not file",
        file + "prior = 1\n": "source[0].prior: must be true or false, not int 1",
        # one bracket for two: a table, not an array of tables (helper-23: "must be a list, not dict")
        '[source]\ntype = "file"\npath = "/x.log"\n': "source: must be an array of tables: write [[source]]",
        file + '[sink]\nname = "o"\ntype = "file"\npath = "/o.log"\n': (
            "sink: must be an array of tables: write [[sink]]"
        ),
        file + '[[sink]]\nname = "stdout"\ntype = "file"\npath = "/o.log"\n': "sink[0].name: 'stdout' is built in",
        '[[source]]\ntype = "stdin"\n[[sink]]\nname = "o"\ntype = "unix"\npath = "/tmp/o.sock"\ngroup = -1\n': (
            "sink[0].group: must be a group name or an id 0 to 4294967295, not -1"
        ),
    }
    for body, message in cases.items():
        config = write_config(tmp_path, body)
        for args in (("check-config", str(config)), ("daemon", "--config", str(config))):
            done = run_cli(*args)
            assert done.returncode == 78, (body, done.stderr)
            assert f"{config}: {message}".encode() in done.stderr, (body, done.stderr)
            assert done.stdout == b""


def test_two_names_of_one_socket_are_refused_and_two_sockets_are_not(tmp_path: Path) -> None:
    """A unix socket named through a linked folder, as the daemon then died on ("already in use by
    a live listener", helper-64); two addresses of one port, and port 0 twice, are two sockets."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    body = f'[[source]]\ntype = "unix"\npath = "{tmp_path}/real/s.sock"\n'
    body += f'[[source]]\ntype = "unix"\npath = "{tmp_path}/link/s.sock"\n'
    done = run_cli("check-config", str(write_config(tmp_path, body)))
    assert done.returncode == 78 and f"{tmp_path}/link/s.sock is also source[0]'s".encode() in done.stderr
    for a, b in (("127.0.0.1:19602", "127.0.0.2:19602"), ("127.0.0.1:0", "127.0.0.1:0")):
        body = f'[[source]]\ntype = "tcp"\naddress = "{a}"\n[[source]]\ntype = "tcp"\naddress = "{b}"\n'
        done = run_cli("check-config", str(write_config(tmp_path, body)))
        assert done.returncode == 0, done.stderr


def test_a_file_source_that_names_no_file_is_warned_of(tmp_path: Path) -> None:
    """A typo in a source's path (``*.lgo``, ``lgos/``) passed check-config silently, and the
    daemon waited for it forever (helper-69); a warning now, no error: logs may come later."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "app.log").write_bytes(b"ok\n")
    paths = ("logs/*.lgo", "lgos/app.log", "logs", "logs/*.log")
    body = "".join(f'[[source]]\ntype = "file"\npath = "{tmp_path}/{path}"\n' for path in paths)
    done = run_cli("check-config", str(write_config(tmp_path, body)))
    assert done.returncode == 0, done.stderr
    warnings = done.stderr.decode().splitlines()
    assert [w.split(".toml: ", 1)[1] for w in warnings] == [
        f"source[0].path: {tmp_path}/logs/*.lgo: names no file now: the daemon reads one when it appears",
        f"source[1].path: {tmp_path}/lgos/app.log: its directory {tmp_path}/lgos does not exist: "
        "nothing is read until it is made",
        f"source[2].path: {tmp_path}/logs: is a directory: the daemon follows files "
        f"({tmp_path}/logs/*.log reads its logs)",
    ], warnings


def test_a_sink_in_a_linked_folder_that_a_source_reads_is_refused(tmp_path: Path) -> None:
    # lnk -> logs: a sink at lnk/out.txt passed the check that logs/out.txt fails, and the daemon
    # read its own output back, the same failure line again and again (helper-30)
    logs = tmp_path / "logs"
    logs.mkdir()
    (tmp_path / "lnk").symlink_to(logs)
    config = write_config(
        tmp_path,
        f'[[source]]\ntype = "file"\npath = "{logs}/*"\nsinks = ["o"]\n'
        f'[[sink]]\nname = "o"\ntype = "file"\npath = "{tmp_path}/lnk/out.txt"\n',
    )
    done = run_cli("check-config", str(config))
    assert done.returncode == 78
    assert b"sink[0].path: " + f"{tmp_path}/lnk/out.txt is read by source[0]".encode() in done.stderr


def test_a_symlink_made_to_a_sink_at_run_time_is_not_followed(tmp_path: Path) -> None:
    # logs/*.log and a sink at logs/filtered.txt pass the check; `ln -s filtered.txt logs/x.log`
    # then fed the daemon its own output, one failure line 52 times in 6 s (helper-34)
    logs, out = tmp_path / "logs", tmp_path / "logs" / "filtered.txt"
    logs.mkdir()
    (logs / "app.log").write_bytes(b"ERROR: failed one\n")
    live = start(
        tmp_path,
        f'[defaults]\nstart_at = "beginning"\n[[source]]\nname = "ci"\ntype = "file"\npath = "{logs}/*.log"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\n',
    )
    live.wait_for(lambda: out.exists() and b"ERROR: failed one" in out.read_bytes(), 10)
    (logs / "x.log").symlink_to("filtered.txt")
    refused = live.wait_for(lambda: [e for e in live.logs() if e.get("event") == "file.refused"], 10)
    assert "own output" in refused[0]["reason"]
    time.sleep(1.5)
    assert live.stop() == 0
    assert out.read_bytes().count(b"ERROR: failed one") == 1


def test_a_source_or_sink_that_cannot_be_opened_is_named_with_its_path_and_the_reason(tmp_path: Path) -> None:
    """These pass check-config (the paths may exist later), which warns of the missing directory; the
    daemon says which one failed, exit 1."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    missing = tmp_path / "no-such-dir"
    unix = '[[source]]\nname = "s"\ntype = "unix"\npath = "{}"\n'
    cases = {
        unix.format(missing / "s.sock"): f"source 's': cannot listen on {missing}/s.sock: No such file or directory",
        f'[[source]]\nname = "t"\ntype = "tcp"\naddress = "127.0.0.1:{port}"\n': (
            f"source 't': cannot listen on 127.0.0.1:{port}: Address already in use"
        ),
        unix.format(tmp_path / "s.sock")
        + f'sinks = ["o"]\n[[sink]]\nname = "o"\ntype = "file"\npath = "{missing}/out.txt"\n': (
            f"sink 'o': cannot open {missing}/out.txt: No such file or directory"
        ),
        # a path taken by a file: the message named no sink or source (a fresh-user helper's find)
        unix.format(tmp_path / "s.sock")
        + f'sinks = ["u"]\n[[sink]]\nname = "u"\ntype = "unix"\npath = "{tmp_path}/plain"\n': (
            f"sink 'u': {tmp_path}/plain exists and is not a socket; refusing to replace it"
        ),
        unix.format(
            tmp_path / "plain"
        ): f"source 's': {tmp_path}/plain exists and is not a socket; refusing to replace it",
    }
    (tmp_path / "plain").write_bytes(b"")
    with taken:
        for body, message in cases.items():
            done = run_cli("daemon", "--config", str(write_config(tmp_path, body)))
            assert done.returncode == 1, (body, done.stderr)
            assert f"streamfilter: error: {message}\n".encode() in done.stderr, (body, done.stderr)
            checked = run_cli("check-config", str(write_config(tmp_path, body)))
            assert checked.returncode == 0 and json.loads(checked.stdout)["sources"], checked.stderr
            said = f"its directory {missing} does not exist; the daemon would fail to open it now\n"
            assert (said.encode() in checked.stderr) == ("no-such-dir" in body), (body, checked.stderr)


def test_check_config_warns_of_a_socket_path_taken_by_a_file(tmp_path: Path) -> None:
    # the daemon refuses such a path (a fresh-user helper met it on a reload); check-config said nothing
    (tmp_path / "in.sock").write_bytes(b"")
    config = write_config(tmp_path, f'[[source]]\nname = "s"\ntype = "unix"\npath = "{tmp_path}/in.sock"\n')
    done = run_cli("check-config", str(config))
    assert done.returncode == 0
    assert (
        done.stderr
        == (
            f"streamfilter: warning: {config}: source[0].path: {tmp_path}/in.sock: exists and is not a socket, "
            "which the daemon will not replace; the daemon would fail to open it now\n"
        ).encode()
    )


def test_check_config_warns_of_a_tcp_host_that_does_not_resolve(tmp_path: Path) -> None:
    # it passed, and the daemon then failed to listen (a fresh-user helper's find)
    config = write_config(tmp_path, '[[source]]\nname = "t"\ntype = "tcp"\naddress = "999.1.1.1:9000"\n')
    done = run_cli("check-config", str(config))
    assert done.returncode == 0
    said = f"streamfilter: warning: {config}: source[0].address: 999.1.1.1:9000: cannot be listened on ("
    assert done.stderr.decode().startswith(said) and "the daemon would fail to open it now" in done.stderr.decode()
    ok = run_cli("check-config", str(write_config(tmp_path, '[[source]]\ntype = "tcp"\naddress = ":9000"\n')))
    assert ok.returncode == 0 and ok.stderr == b"", ok.stderr


def test_check_config_warns_of_an_unused_sink_and_of_a_path_outside_its_roots(tmp_path: Path) -> None:
    # the daemon warns of the first at start and refuses the second's files one by one; check-config
    # said nothing of either (a helper's find)
    (tmp_path / "logs").mkdir()
    for name in ("a.log", "b.txt"):
        (tmp_path / "logs" / name).write_bytes(b"ok\n")
    body = (
        f'[[source]]\nname = "app"\ntype = "file"\npath = "{tmp_path}/logs/*.log"\n'
        f'roots = ["{tmp_path}/elsewhere"]\nsinks = ["out"]\n'
        f'[[source]]\nname = "ok"\ntype = "file"\npath = "{tmp_path}/logs/b.txt"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{tmp_path}/out.txt"\n'
        f'[[sink]]\nname = "spare"\ntype = "file"\npath = "{tmp_path}/spare.txt"\n'
    )
    config = write_config(tmp_path, body)
    done = run_cli("check-config", str(config))
    assert done.returncode == 0 and json.loads(done.stdout)["sinks"]
    assert done.stderr.decode().splitlines() == [
        f"streamfilter: warning: {config}: sink[1]: 'spare' is in no source's sinks, so nothing is written to it",
        f"streamfilter: warning: {config}: source[0].path: {tmp_path}/logs/*.log lies outside its roots "
        f"({tmp_path}/elsewhere): the daemon refuses every file it matches that is not a symlink into one",
    ]
    # with the sink used and the roots holding the path: no warning
    fixed = body.replace(f'"{tmp_path}/elsewhere"', f'"{tmp_path}"')
    fixed = fixed.replace('sinks = ["out"]', 'sinks = ["out", "spare"]', 1)
    again = run_cli("check-config", str(write_config(tmp_path, fixed)))
    assert again.returncode == 0 and again.stderr == b"", again.stderr


# -- files -----------------------------------------------------------------------------------------
def test_a_glob_in_a_missing_directory_is_warned_about_and_still_waited_for(tmp_path: Path) -> None:
    # a plain path said so, a glob nothing (a fresh-user helper's find); and a daemon stopped before
    # any input logged "totals": ""
    out = tmp_path / "out.jsonl"
    later = tmp_path / "later"
    live = start(
        tmp_path,
        f'[[source]]\nname = "ci"\ntype = "file"\npath = "{later}/*.log"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    assert live.log_event("source.directory_missing")["directory"] == str(later)
    assert live.stop() == 0
    assert live.log_event("daemon.stopped")["totals"] == "no input yet"
    live = start(tmp_path, out.parent.joinpath("streamfilter.toml").read_text())
    later.mkdir()
    (later / "build.log").write_bytes(b"ERROR: it came\n")
    live.wait_for(lambda: out.exists() and b"ERROR: it came" in out.read_bytes(), 10)
    assert live.stop() == 0


def test_B34_glob_reads_new_files_from_their_start_and_existing_ones_from_their_end(tmp_path: Path) -> None:
    """B34: old.log (present at start) is not replayed; build.log, created later, is read whole."""
    (tmp_path / "old.log").write_bytes(b"".join(b"OLD%03d historical line\n" % i for i in range(1, 101)))
    out = tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "B01 B33 migration"\n[[source]]\nname = "ci"\ntype = "file"\npath = "{tmp_path}/*.log"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    build = tmp_path / "build.log"
    build.write_bytes(b"".join(b"B%02d container starting step %02d\n" % (i, i) for i in range(1, 34)))
    time.sleep(0.5)
    with build.open("ab") as f:
        f.write(b"B34 ERROR migration failed\nB35 container stopped\n")
    with (tmp_path / "old.log").open("ab") as f:
        f.write(b"OLD101 appended after start ERROR migration\n")
    live.wait_for(lambda: "B34 ERROR" in kept(live.events(out)) and "OLD101" in kept(live.events(out)), 10)
    assert live.stop() == 0
    events = live.events(out)
    stream = f"ci:{build}"
    assert sum(e["lines"] for e in runs(events, stream)) == 35
    assert "OLD0" not in json.dumps(events)
    assert any(e.get("event") == "file.found" and e.get("path") == str(build) for e in live.logs())


def test_a_glob_that_matches_compressed_rotated_files_does_not_read_them(tmp_path: Path) -> None:
    # app.log* over logrotate's compress + delaycompress: app.log.2.gz was followed, its gzip bytes
    # filtered as lines (helper-94)
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    (logs / "app.log.2.gz").write_bytes(gzip.compress(b"".join(b"old line %d ERROR\n" % i for i in range(50))))
    live = start(
        tmp_path,
        f'[defaults]\nquery = "ERROR"\n[[source]]\nname = "app"\ntype = "file"\npath = "{logs}/app.log*"\n'
        f'start_at = "beginning"\nsinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\n'
        'format = "jsonl"\n',
    )
    (logs / "app.log").write_bytes(b"".join(b"new line %d ok\n" % i for i in range(30)) + b"ERROR disk full\n")
    (logs / "app.log.3.gz").write_bytes(gzip.compress(b"older ERROR\n"))  # (one that appears later too)
    live.wait_for(lambda: "ERROR disk full" in kept(live.events(out)), 10)
    said = live.log_event("file.compressed")
    live.wait_for(lambda: len([e for e in live.logs() if e.get("event") == "file.compressed"]) == 2, 10)
    assert live.stop() == 0
    streams = {e["source"] for e in live.events(out)}
    assert streams == {f"app:{logs}/app.log"}, streams
    assert said["path"] in (f"{logs}/app.log.2.gz", f"{logs}/app.log.3.gz")


def test_a_glob_that_matches_the_daemon_s_own_stdout_does_not_read_it(tmp_path: Path) -> None:
    # `streamfilter daemon > x/daemon.log` with a source x/*.log repeated its own output for ever
    # (helper-94); here its stdout is out-N.txt, in the folder of the source's *.txt
    live = start(
        tmp_path,
        f'[defaults]\nquery = "ERROR"\n[[source]]\nname = "app"\ntype = "file"\npath = "{tmp_path}/*.txt"\n'
        'start_at = "beginning"\nsinks = ["stdout"]\n',
    )
    (tmp_path / "app.txt").write_bytes(b"".join(b"line %d ok\n" % i for i in range(30)) + b"ERROR disk full\n")
    live.wait_for(lambda: b"ERROR disk full" in live.output(), 10)
    refused = live.log_event("file.refused")
    time.sleep(1.5)  # (what it would have read back by now, a poll or two)
    assert live.stop() == 0
    assert refused["path"] == str(live.out_path) and "own stdout" in refused["reason"], refused
    assert live.output().count(b"ERROR disk full") == 1, live.output()


def test_a_file_whose_name_is_not_utf8_is_followed_and_its_checkpoint_resumed(tmp_path: Path) -> None:
    # "caf\xe9.log" (Latin-1) under logs/*.log: its checkpoint's name hashed the path as UTF-8 text,
    # and the surrogate that stands for \xe9 stopped the whole daemon (helper-30)
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    log = logs / os.fsdecode(b"caf\xe9.log")
    log.write_bytes(b"hello\nERROR: it failed\n")
    body = glob_to_jsonl(logs, out)
    live = start(tmp_path, body)
    live.wait_for(lambda: "ERROR: it failed" in kept(live.events(out)), 10)
    assert live.stop() == 0
    with log.open("ab") as f:
        f.write(b"ERROR: again failed\n")
    second = start(tmp_path, body)
    assert second.log_event("checkpoint.resumed")["offset"] == len(b"hello\nERROR: it failed\n")
    second.wait_for(lambda: "ERROR: again failed" in kept(second.events(out)), 10)
    assert second.stop() == 0
    assert kept(second.events(out)).count("ERROR: it failed") == 1


@pytest.mark.parametrize("given", ["file", "devnull"])
def test_a_stdin_source_reads_a_regular_file_or_dev_null(tmp_path: Path, given: str) -> None:
    # systemd gives a service /dev/null, a shell `< build.log` a regular file: neither can be waited
    # on (epoll refuses them), and the daemon stopped with "Operation not permitted" (helper-30)
    log, out = tmp_path / "build.log", tmp_path / "out.jsonl"
    log.write_bytes(b"".join(b"INFO %04d step ok\n" % i for i in range(3000)) + b"ERROR: the build failed\n")
    body = (
        f'[[source]]\nname = "in"\ntype = "stdin"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    with open(log if given == "file" else os.devnull, "rb") as stdin:
        live = Live(tmp_path, "daemon", "--config", str(write_config(tmp_path, body)), stdin=stdin)
        live.log_event("daemon.ready")
        live.wait_for(lambda: any(e["event"] == "end" for e in live.events(out)), 10)
        assert live.stop() == 0
    events = live.events(out)
    if given == "file":
        assert "ERROR: the build failed" in kept(events)
        assert sum(e["lines"] for e in runs(events)) == 3001
    else:
        assert runs(events) == [] and [e["lines"] for e in events if e["event"] == "end"] == [0]


def test_a_glob_over_more_files_than_the_soft_limit_of_open_files_follows_every_one(tmp_path: Path) -> None:
    # each followed file holds a descriptor: with a soft limit of 64 (systemd's default is 1024, where
    # job logs pile up in thousands), files past it were skipped for good, "Too many open files" (helper-30)
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    for i in range(150):
        (logs / f"job{i:03d}.log").write_bytes(b"ERROR: job %d failed\n" % i)
    body = glob_to_jsonl(logs, out)
    config = write_config(tmp_path, body)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 1024:
        pytest.skip(f"the hard limit of open files here is {hard}")
    err = tmp_path / "err.log"
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamfilter", "daemon", "--config", str(config)],
            stderr=stderr,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard)),
        )
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and kept(jsonl_events(out)).count("failed") < 150:
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
    assert kept(jsonl_events(out)).count("failed") == 150
    assert b"file.unreadable" not in err.read_bytes()


def test_a_stdin_source_with_standard_input_closed_reads_nothing_and_says_so(tmp_path: Path) -> None:
    # `daemon --config sf.toml <&-`: an AttributeError from sys.stdin, None (helper-34)
    out = tmp_path / "out.jsonl"
    body = (
        f'[[source]]\nname = "in"\ntype = "stdin"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    err = tmp_path / "err.log"
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamfilter", "daemon", "--config", str(write_config(tmp_path, body))],
            stderr=stderr,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
            preexec_fn=lambda: os.close(0),
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(e["event"] == "end" for e in jsonl_events(out)):
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, err.read_text()
    assert [e["lines"] for e in jsonl_events(out) if e["event"] == "end"] == [0]
    assert b"source.stdin_closed" in err.read_bytes()


def test_a_file_rotated_to_a_name_the_glob_also_matches_is_not_read_again(tmp_path: Path) -> None:
    # logs/*.log, app.log renamed to app.1.log half-way: app.1.log was found by the glob and read
    # from byte 0 once the app.log follower left it, 100 of 200 lines twice (a fresh-user helper's find)
    logs, out = tmp_path / "logs", tmp_path / "out.jsonl"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(b"")
    live = start(tmp_path, glob_to_jsonl(logs, out))
    with log.open("ab", buffering=0) as f:
        f.write(b"".join(b"L%06d worker ok\n" % i for i in range(1, 101)))
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 100, 10)
    log.rename(logs / "app.1.log")
    with log.open("ab", buffering=0) as f:
        f.write(b"".join(b"L%06d worker ok\n" % i for i in range(101, 201)))
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) >= 200, 15)
    time.sleep(2.5)  # the rotation's quiet second, then a rescan: app.1.log would be read again by now
    assert live.stop() == 0
    events = live.events(out)
    assert [(e["first_line"], e["last_line"]) for e in runs(events, f"ci:{log}")][-1][1] == 200  # one stream
    assert runs(events, f"ci:{logs}/app.1.log") == []  # nothing read there: the rest of it was empty
    assert sum(e["lines"] for e in runs(events)) == 200
    # app.1.log's path found the file app.log's path was reading: that is a rotation, not a fault
    # (when app.log's follower has left it by then, app.1.log's resumes it there: nothing is refused)
    assert {e["level"] for e in live.logs() if e.get("event") == "file.refused"} <= {"info"}


def test_restart_after_kill_9_loses_and_repeats_nothing(tmp_path: Path) -> None:
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'query = "failed"\n')
    log.write_bytes(b"".join(b"INFO %05d step ok\n" % i for i in range(2000)))
    live = start(tmp_path, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) >= 2000, 10)
    with log.open("ab") as f:
        f.write(b"".join(b"INFO %05d more\n" % i for i in range(500)) + b"ERROR job failed\n")
    time.sleep(0.3)
    live.stop(signal.SIGKILL)
    with log.open("ab") as f:
        f.write(b"".join(b"INFO %05d after restart\n" % i for i in range(300)) + b"ERROR again failed\n")
    second = start(tmp_path, body)
    assert second.log_event("checkpoint.resumed")["offset"] > 0
    second.wait_for(lambda: "ERROR again failed" in kept(second.events(out)), 10)
    assert second.stop() == 0
    # every byte of the file is in exactly one run, across both lives of the daemon
    spans = sorted((e["start_byte"], e["end_byte"]) for e in runs(second.events(out)))
    assert spans[0][0] == 0 and spans[-1][1] == log.stat().st_size
    for (_, end), (begin, _) in itertools.pairwise(spans):
        assert begin == end
    assert kept(second.events(out)).count("ERROR job failed") == 1


def test_a_checkpoint_cut_short_is_warned_of_and_the_file_read_as_if_none_was_saved(tmp_path: Path) -> None:
    # a checkpoint cut to 20 bytes was ignored without a word and the whole file output again (helper-30)
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, "")
    log.write_bytes(b"INFO one\nERROR two failed\n")
    live = start(tmp_path, body)
    live.wait_for(lambda: any(e["event"] == "keep" for e in live.events(out)), 10)
    assert live.stop() == 0
    (saved,) = (tmp_path / "state" / "streamfilter" / "checkpoints").glob("app-*.json")
    good = json.loads(saved.read_bytes())
    # cut short; then edited by hand: these stopped the daemon (TypeError, "Invalid argument", helper-34)
    edits = ({"offset": "x"}, {"offset": -5}, {"line": None})
    texts = [saved.read_text()[:20]] + [json.dumps({**good, **edit}) for edit in edits]
    for n, text in enumerate(texts, start=2):
        saved.write_text(text)
        second = start(tmp_path, body)
        warned = second.log_event("checkpoint.unreadable")
        assert warned["file"] == str(saved) and warned["level"] == "warning"
        # start_at "beginning": read again
        second.wait_for(lambda: kept(jsonl_events(out)).count("ERROR two failed") == n, 10)  # noqa: B023
        assert second.stop() == 0


def test_a_file_sink_on_a_full_disk_makes_its_source_wait_and_the_daemon_goes_on(tmp_path: Path) -> None:
    # /dev/full refuses every write with ENOSPC, as a full disk does: the daemon stopped with "No space
    # left on device", every source with it, where a sink that cannot take output should make them wait
    log, other, out = tmp_path / "app.log", tmp_path / "other.log", tmp_path / "out.jsonl"
    log.write_bytes(b"INFO start\nERROR: it failed\n")
    other.write_bytes(b"ERROR: elsewhere failed\n")
    body = (
        f'[defaults]\nstart_at = "beginning"\n'
        f'[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\nsinks = ["full"]\n'
        f'[[source]]\nname = "other"\ntype = "file"\npath = "{other}"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "full"\ntype = "file"\npath = "/dev/full"\nformat = "jsonl"\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    live = start(tmp_path, body)
    assert live.log_event("sink.full")["path"] == "/dev/full"
    live.wait_for(lambda: "ERROR: elsewhere failed" in kept(live.events(out)), 10)  # the other source goes on
    time.sleep(1.5)
    assert live.proc.poll() is None
    assert not any(e.get("event") == "daemon.failed" for e in live.logs())
    # stopping, it gives up on the full sink at once, says so, and the checkpoint stays before it
    started = time.monotonic()
    assert live.stop() == 1
    assert time.monotonic() - started < 5
    assert b"sink 'full': cannot write /dev/full while stopping: No space left on device" in live.err_path.read_bytes()
    assert b"Traceback" not in live.err_path.read_bytes()
    again = start(tmp_path, body)
    opened = again.wait_for(lambda: [e for e in again.logs() if e.get("event") == "source.opened"], 10)
    assert {e["source"]: e["offset"] for e in opened} == {"app": 0, "other": other.stat().st_size}
    again.stop(signal.SIGKILL)


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_stop_on_a_full_disk_leaves_no_part_of_a_write_and_a_restart_writes_every_line_once(
    tmp_path: Path, fmt: str
) -> None:
    # a small tmpfs, nearly full: a text sink's checkpoint passed the write the disk did not take (a
    # restart wrote nothing more: 241 of 3000 lines), and a JSONL sink kept half an event that the
    # restart's whole one was glued to (helper-34)
    mnt, log, out = tmp_path / "mnt", tmp_path / "app.log", tmp_path / "mnt" / "out"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("no tmpfs can be mounted here")
    try:
        (mnt / "filler").write_bytes(bytes(190 << 10))
        body = file_to_jsonl(log, out, 'protect = ["ID-"]\n').replace('format = "jsonl"', f'format = "{fmt}"')
        log.write_bytes(b"")
        live = start(tmp_path, body)
        log.write_bytes(b"".join(b"ID-%d info compiling module %d\n" % (i, i) for i in range(3000)))
        live.log_event("sink.full")
        assert live.stop() == 1
        written = out.read_bytes()
        assert not written or written.endswith(b"\n")  # (no part of the write it gave up)
        (mnt / "filler").unlink()
        again = start(tmp_path, body)
        again.wait_for(lambda: out.read_bytes().count(b"ID-2999 ") == 1, 10)
        assert again.stop() == 0
        data = out.read_bytes()
        if fmt == "jsonl":
            data = kept(jsonl_events(out)).encode()
        ids = re.findall(rb"^ID-(\d+) ", data, re.M)
        assert sorted(int(i) for i in ids) == list(range(3000))
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_restart_inside_a_line_goes_on_with_its_rest_not_a_new_line(tmp_path: Path, how: int) -> None:
    """Stopped (SIGTERM: the line is written as it is) or killed (the line was let out at a
    pause: it holds a failure signature) before a line's end came: the bytes after the restart up
    to its end were a line of their own, and every later line number was one too high."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'query = "failed"\n')
    log.write_bytes(b"first ok\nsecond ok\nthird half: step failed, exit code 1")
    live = start(tmp_path, body)
    live.wait_for(lambda: "third half" in kept(live.events(out)), 10)
    if how == signal.SIGKILL:  # killed once the checkpoint after the write is saved too
        saved = tmp_path / "state" / "streamfilter" / "checkpoints"
        live.wait_for(lambda: any('"rest_line": 3' in p.read_text() for p in saved.glob("*.json")), 10)
    live.stop(how)
    with log.open("ab") as f:
        f.write(b" and the rest of third\nfourth ok\n")
    second = start(tmp_path, body)
    assert second.log_event("checkpoint.resumed")["inside_line"] == 3
    second.wait_for(lambda: any(e["last_line"] == 4 for e in runs(second.events(out))), 10)
    assert second.stop() == 0
    events = runs(second.events(out))
    assert max(e["last_line"] for e in events) == 4  # the file's 4 lines, numbered as in the file
    (rest,) = [e for e in events if e.get("rest")]
    assert rest["first_line"] == 3 and rest["event"] == "keep" and rest["text"] == " and the rest of third\n"
    spans = sorted((e["start_byte"], e["end_byte"]) for e in events)
    assert spans[0][0] == 0 and spans[-1][1] == log.stat().st_size
    for (_, end), (begin, _) in itertools.pairwise(spans):
        assert begin == end


@pytest.mark.anyio
async def test_the_first_summary_after_a_restart_inside_a_dropped_line_names_its_file(tmp_path: Path) -> None:
    """helper-85: a stream resumed inside a dropped line (its checkpoint's ``rest_line``): the line's
    end alone is a DROP run that writes nothing in text, but its ref was taken as naming the file,
    so the first summary's ref was short (``@START-END:CRC``, no how-to) in an output that had
    never named the file."""
    out, log = tmp_path / "out.txt", str(tmp_path / "app.log")
    sink = FileSink(SinkConfig("out", "file", str(out), format="text"))

    def refs(run: Run) -> str:
        return str(Ref(log, run.start_byte, run.end_byte, run.checksum)) if run.decision == "drop" else ""

    resumed = {"start_line": 301, "start_byte": 5000, "rest_of": (300, False)}  # (inside line 300, dropped)
    live = LiveStream("app", FilterConfig(), Timing(), [sink], refs, **resumed)  # type: ignore[arg-type]
    await live.feed(b"\n" + b"".join(b"INFO processing item %d ok\n" % i for i in range(300)) + b"ERROR: b failed\n")
    await live.end()
    first = out.read_bytes().splitlines()[0]
    assert first.startswith(b"[streamfilter: dropped lines 301-") and f"; ref {log}:5001-".encode() in first
    assert b"to see them: streamfilter expand REF" in first


def test_restart_after_a_rotation_with_late_writes_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """Lines written to the renamed file after the rotation are read before the new file; a
    kill -9 after the switch resumes in the new file, where the checkpoint says."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'query = "late finished again"\ntail_lines = 0\n')
    log.write_bytes(b"")
    live = start(tmp_path, body)
    with log.open("ab", buffering=0) as old:
        old.write(b"".join(b"old %d\n" % i for i in range(20)))
        live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 20, 5)
        log.rename(tmp_path / "app.log.1")
        with log.open("ab", buffering=0) as new:
            for i in range(5):  # not reopened yet: written to the renamed file
                old.write(b"late %d\n" % i)
                time.sleep(0.12)
            old.close()
            new.write(b"".join(b"new %d\n" % i for i in range(30)) + b"new: finished\n")
    live.wait_for(lambda: "new: finished" in kept(live.events(out)), 15)

    def saved_line() -> int:
        files = list((tmp_path / "state").rglob("checkpoints/app-*.json"))
        return int(json.loads(files[0].read_text())["line"]) if files else 0

    live.wait_for(lambda: saved_line() == 57, 5, "the checkpoint past the new file's last line")
    live.stop(signal.SIGKILL)
    with log.open("ab") as f:
        f.write(b"".join(b"more %d\n" % i for i in range(10)) + b"ERROR again\n")
    second = start(tmp_path, body)
    assert second.log_event("checkpoint.resumed")["line"] == 57  # 20 + 5 + 31 lines before it
    second.wait_for(lambda: "ERROR again" in kept(second.events(out)), 10)
    assert second.stop() == 0
    # line numbers across both lives: 1..67, each in exactly one run
    numbered = sorted((e["first_line"], e["last_line"]) for e in runs(second.events(out)))
    assert numbered[0][0] == 1 and numbered[-1][1] == 67
    for (_, last), (first, _) in itertools.pairwise(numbered):
        assert first == last + 1
    # and so do the stream's byte offsets (after the restart they were the new file's own: helper-64)
    spans = [(e["start_byte"], e["end_byte"]) for e in sorted(runs(second.events(out)), key=lambda e: e["first_line"])]
    assert spans[0][0] == 0
    for (_, end), (begin, _) in itertools.pairwise(spans):
        assert begin == end
    for e in runs(second.events(out)):  # each DROP run's ref reads its lines back, across both lives
        if e["event"] == "drop" and e.get("ref"):
            back = run_cli("expand", e["ref"], env={"XDG_STATE_HOME": str(tmp_path / "state")})
            assert back.returncode == 0 and back.stdout.count(b"\n") == e["lines"], back.stderr
    text = kept(second.events(out))
    assert text.count("late 0\n") == 1
    assert text.index("late 0") < text.index("new: finished") < text.index("ERROR again")


def test_a_writer_that_never_reopens_its_rotated_log_loses_nothing(tmp_path: Path) -> None:
    """logrotate without copytruncate, and a program that goes on writing to the renamed file for
    12 s, past the 5 s the follower waits before it moves to the new file: a late reader reads the
    renamed file on as a stream of its own, and every line is read once."""
    log, out, text_out = tmp_path / "app.log", tmp_path / "out.jsonl", tmp_path / "out.txt"
    body = (
        file_to_jsonl(log, out, 'protect = ["line \\\\d+"]\ntail_lines = 0\n').replace(
            'sinks = ["out"]', 'sinks = ["out", "text"]'
        )
        + f'[[sink]]\nname = "text"\ntype = "file"\npath = "{text_out}"\n'
    )
    log.write_bytes(b"")
    live = start(tmp_path, body)
    with log.open("ab", buffering=0) as old:
        old.write(b"".join(b"before line %d\n" % i for i in range(20)))
        live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 20, 5)
        log.rename(tmp_path / "app.log.1")
        log.write_bytes(b"".join(b"new line %d\n" % i for i in range(10)))
        end = time.monotonic() + 12
        written = 0
        while time.monotonic() < end:
            old.write(b"".join(b"late line %d\n" % (written + k) for k in range(10)))
            written += 10
            time.sleep(0.05)
    live.wait_for(lambda: kept(live.events(out)).count("late line") == written, 20)
    assert live.stop() == 0
    events = live.events(out)
    text = kept(events)
    for i in range(written):
        assert text.count(f"late line {i}\n") == 1
    assert text.count("new line 9\n") == 1 and text.count("before line 0\n") == 1
    late = {e["source"] for e in runs(events)} - {"app"}
    assert len(late) == 1 and late.pop().startswith("app@")
    assert live.log_event("file.rotated")["late_reader"] is True
    # a text sink tells the late stream apart from the path's (labelled as the path's writes it next)
    lines = text_out.read_text().splitlines()
    label = next(i for i, line in enumerate(lines) if line.startswith("==> app@"))
    assert any(line.startswith("late line") for line in lines[label:])


def test_a_late_reader_starts_at_a_lines_start(tmp_path: Path) -> None:
    """A writer still writing to its renamed log, a few bytes at a time: the path's stream read up
    to inside a line when it moved to the new file, and the late reader went on from there, one
    line cut in two streams (helper-30: "...items=949" in one, "369" in the other)."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    log.write_bytes(b"")
    live = start(tmp_path, file_to_jsonl(log, out, 'protect = ["item"]\ntail_lines = 0\n'))
    written = 0
    with log.open("ab", buffering=0) as old:
        log.rename(tmp_path / "app.log.1")
        log.write_bytes(b"new item\n")
        end = time.monotonic() + 7  # past the 5 s the path's stream waits for the renamed file
        while time.monotonic() < end:
            line = b"item %05d done\n" % written
            for k in range(0, len(line), 4):  # (its end comes last: most of the time inside a line)
                old.write(line[k : k + 4])
                time.sleep(0.004)
            written += 1
    live.wait_for(lambda: kept(live.events(out)).count("done") == written, 20)
    assert live.log_event("file.rotated")["late_reader"] is True
    assert live.stop() == 0
    for stream in {e["source"] for e in runs(live.events(out))}:
        text = kept(live.events(out), stream)
        whole = [re.fullmatch(r"item \d{5} done|new item", line) for line in text.splitlines()]
        assert all(whole), (stream, text[:200], text[-200:])


def test_restart_after_a_rotation_while_down_reads_the_rest_of_the_rotated_file_first(tmp_path: Path) -> None:
    """The daemon stopped, the file got more lines and was rotated (renamed), a new one was
    started: on restart the renamed file is found by its inode, its rest is read, then the new file."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'query = "failed"\ntail_lines = 0\n')
    log.write_bytes(b"".join(b"INFO %03d step ok\n" % i for i in range(100)))
    live = start(tmp_path, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 100, 10)
    assert live.stop() == 0
    with log.open("ab") as f:
        f.write(b"".join(b"INFO %03d while down\n" % i for i in range(50)) + b"ERROR old job failed\n")
    log.rename(tmp_path / "app.log.1")
    new = b"".join(b"INFO %03d new file\n" % i for i in range(50))
    log.write_bytes(new + b"ERROR new job failed\n" + b"INFO end\n" * 50)
    second = start(tmp_path, body)
    assert second.log_event("checkpoint.rotated_file")["file"] == str(tmp_path / "app.log.1")
    second.wait_for(lambda: "ERROR new job failed" in kept(second.events(out)), 15)
    assert second.stop() == 0
    numbered = sorted((e["first_line"], e["last_line"]) for e in runs(second.events(out)))
    assert numbered[0][0] == 1 and numbered[-1][1] == 252  # 100 + 51 + 101 lines, each once
    for (_, last), (first, _) in itertools.pairwise(numbered):
        assert first == last + 1
    text = kept(second.events(out))
    assert text.index("ERROR old job failed") < text.index("ERROR new job failed")
    # refs into the new file are offsets in it (they were shifted by the resumed offset), and the
    # checkpoint names it: a third start resumes there and repeats nothing
    refs = [e["ref"] for e in runs(second.events(out)) if e["event"] == "drop" and e["first_line"] > 151]
    assert refs and all(run_cli("expand", ref).returncode == 0 for ref in refs)
    third = start(tmp_path, body)
    assert third.log_event("checkpoint.resumed")["line"] == 253
    assert third.stop() == 0
    assert not [e for e in third.logs() if e.get("event") == "checkpoint.rotated_file"]
    assert len(runs(third.events(out))) == len(runs(second.events(out)))


def test_B03_stale_checkpoint_for_a_reused_inode_is_not_resumed(tmp_path: Path) -> None:
    """B03: the file was replaced while the daemon was down; its checkpoint no longer fits."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    # the first lines are kept (head), so the new file's first line shows it was read from its start
    body = file_to_jsonl(log, out, 'query = "NEW"\nhead_lines = 3\n')
    log.write_bytes(b"".join(b"OLD-%02d padding padding padding padding padding\n" % i for i in range(1, 41)))
    live = start(tmp_path, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 40, 10)
    assert live.stop() == 0
    out.unlink()
    log.unlink()
    log.write_bytes(b"".join(b"NEW-%d short\n" % n for n in range(1, 6)))  # shorter; inode may be reused
    second = start(tmp_path, body)
    reason = second.log_event("checkpoint.stale")["reason"]
    assert "inode" in reason or "shorter" in reason or "first bytes" in reason
    second.wait_for(lambda: sum(e["lines"] for e in runs(second.events(out))) == 5, 10)
    assert second.stop() == 0
    new = runs(second.events(out))
    assert new[0]["start_byte"] == 0 and new[0]["first_line"] == 1 and new[-1]["end_byte"] == log.stat().st_size
    assert "NEW-1 short" in kept(second.events(out))


def test_a_file_truncated_while_the_daemon_was_down_is_read_again_with_a_marker(tmp_path: Path) -> None:
    """The same file, truncated and written again while the daemon was down: it is read from byte 0,
    and the output says why, as for a truncation while running. Before, the new lines started again
    at line 1 with nothing to say so (helper-30)."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    body = file_to_jsonl(log, out, 'query = "NEW"\n')
    log.write_bytes(b"".join(b"OLD-%02d padding padding padding padding padding\n" % i for i in range(1, 41)))
    inode = log.stat().st_ino
    live = start(tmp_path, body)
    live.wait_for(lambda: sum(e["lines"] for e in runs(live.events(out))) == 40, 10)
    assert live.stop() == 0
    with log.open("r+b") as f:  # (the same inode: copytruncate, or `: > app.log`, then new lines)
        f.truncate(0)
        f.write(b"".join(b"NEW-%d short\n" % n for n in range(1, 6)))
    assert log.stat().st_ino == inode
    second = start(tmp_path, body)
    stale = second.log_event("checkpoint.stale")
    # a warning: what it got past the checkpoint before the truncation is not read (helper-75: info)
    assert "shorter" in stale["reason"] and stale["level"] == "warning"
    second.wait_for(lambda: sum(e["lines"] for e in runs(second.events(out))) == 45, 10)
    assert second.stop() == 0
    events = second.events(out)
    markers = [e for e in events if e["event"] == "marker"]
    assert len(markers) == 1 and "changed while the daemon was down" in markers[0]["text"], markers
    assert "shorter than the checkpoint offset" in markers[0]["text"] and "was not read" in markers[0]["text"]
    assert markers[0]["offset"] == 40 * len(
        b"OLD-01 padding padding padding padding padding\n"
    )  # (how far it was read)
    after = events[events.index(markers[0]) + 1 :]
    new = runs(after)
    assert new[0]["start_byte"] == 0 and new[0]["first_line"] == 1 and new[-1]["end_byte"] == log.stat().st_size


def test_B35_symlink_out_of_the_roots_is_refused(tmp_path: Path) -> None:
    """B35: roots, checked on the opened fd (the terminal escaping: tests/cases/test_live_cases.py)."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "pods").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"SECRET-MARKER-7f3a this must never be read\n")
    out = tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "ERROR SECRET"\n[[source]]\nname = "jobs"\ntype = "file"\npath = "{allowed}/*.log"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    (allowed / "job_42.log").symlink_to("../outside/secret.txt")
    (allowed / "job_43.log").write_bytes(b"\x1b]0;owned\x07\x1b[2J\x1b[1;1HERROR forged status line\n")
    (allowed / "pods" / "p1.log").write_bytes(b"ERROR real failure in pod log\n")
    (allowed / "job_44.log").symlink_to("pods/p1.log")
    live.wait_for(lambda: "real failure" in kept(live.events(out)) and "forged" in kept(live.events(out)), 10)
    refused = live.log_event("file.refused")
    assert refused["path"].endswith("job_42.log")
    assert live.stop() == 0
    assert b"SECRET-MARKER" not in out.read_bytes() + live.err_path.read_bytes() + live.output()


def test_check_config_warns_of_two_sources_on_one_file_and_a_tcp_source_on_every_address(tmp_path: Path) -> None:
    """helper-60: a glob source and a path source on one file each read it, its lines came out
    twice, and check-config said nothing; nor of a tcp source listening on 0.0.0.0."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x.log").write_bytes(b"a line\n")
    body = (
        f'[[source]]\nname = "g"\ntype = "file"\npath = "{tmp_path}/logs/*.log"\n'
        f'[[source]]\nname = "p"\ntype = "file"\npath = "{tmp_path}/logs/x.log"\n'
        '[[source]]\nname = "t"\ntype = "tcp"\naddress = "0.0.0.0:9999"\n'
        '[[source]]\nname = "here"\ntype = "tcp"\naddress = "127.0.0.1:9998"\n'
    )
    checked = run_cli("check-config", str(write_config(tmp_path, body)))
    assert checked.returncode == 0, checked.stderr
    warnings = checked.stderr.decode()
    assert f"source[1].path: {tmp_path}/logs/x.log names {tmp_path}/logs/x.log as source[0] ('g') does" in warnings
    assert "source[2].address: 0.0.0.0:9999 takes lines and runs from any host" in warnings
    assert ": source[3]." not in warnings and ": source[0]." not in warnings, warnings


# -- sockets ---------------------------------------------------------------------------------------
def test_a_unix_source_has_its_group_from_the_start_and_open_access_is_warned_of(tmp_path: Path) -> None:
    """A team's tools of other users connect through the socket's group (set before it listens);
    check-config and the daemon warn of a mode any user may connect by and of a socket directory
    others may write without the sticky bit (they could replace the socket)."""
    gid = grp.getgrnam("nogroup").gr_gid
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    sock, open_sock = tmp_path / "team.sock", shared / "any.sock"
    body = (
        f'[[source]]\nname = "team"\ntype = "unix"\npath = "{sock}"\nmode = "0660"\ngroup = "nogroup"\n'
        f'[[source]]\nname = "any"\ntype = "unix"\npath = "{open_sock}"\nmode = "0666"\n'
    )
    checked = run_cli("check-config", str(write_config(tmp_path, body)))
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["sources"][0]["group"] == gid
    warnings = checked.stderr.decode()
    assert "source[1].mode: 0666 lets any user on this machine connect" in warnings
    assert f"source[1].path: its directory {shared} can be written by other users (0777, no sticky bit)" in warnings
    assert "source[0]" not in warnings
    live = start(tmp_path, body)
    info = os.stat(sock)
    assert (info.st_gid, stat.S_IMODE(info.st_mode)) == (gid, 0o660)
    assert "0666 lets any user" in live.log_event("config.socket_access")["finding"]
    assert live.stop() == 0
    shared.chmod(0o1777)  # /tmp's way: others may write, but not replace what is not theirs
    checked = run_cli("check-config", str(write_config(tmp_path, body)))
    assert b"can be written by other users" not in checked.stderr


def test_B25_B16_unix_socket_streams_are_filtered_while_open_and_kept_apart(tmp_path: Path) -> None:
    """B25: the first record reaches the sink while the connection is open; B16: no successor needed."""
    sock, out = tmp_path / "in.sock", tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "failure"\n[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    a, b = connect_unix(sock), connect_unix(sock)
    sent = time.monotonic()
    a.sendall(b"ERROR first failure\n")
    live.wait_for(lambda: "first failure" in kept(live.events(out)), 5)
    assert time.monotonic() - sent < 2.0
    b.sendall(b"b line one\nb line two ERROR other failure\n")
    a.sendall(b"ERROR second failure\nlast line without newline")
    a.close()  # the disconnect mid-line still gets the last line through
    live.wait_for(lambda: "last line without newline" in kept(live.events(out)), 5)
    b.close()
    live.wait_for(lambda: sum(e["event"] == "end" for e in live.events(out)) == 2, 5)
    assert live.stop() == 0
    events = live.events(out)
    streams = {e["source"] for e in runs(events)}
    assert streams == {"tools#1", "tools#2"}
    first = runs(events, "tools#1")
    assert next(r["first_line"] for r in first) == 1 and sum(r["lines"] for r in first) == 3
    assert kept(events, "tools#1") == "ERROR first failure\nERROR second failure\nlast line without newline"
    assert sum(r["lines"] for r in runs(events, "tools#2")) == 2
    assert not sock.exists()  # removed at shutdown


def test_B26_overlong_line_on_tcp_is_cut_with_a_marker_and_the_connection_stays(tmp_path: Path) -> None:
    """B26: a 2 MiB line under a 1 MiB cap."""
    out = tmp_path / "out.jsonl"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    live = start(
        tmp_path,
        f'[defaults]\nquery = "ERROR"\nmax_line_bytes = 1048576\n[[source]]\nname = "tcp"\ntype = "tcp"\n'
        f'address = "127.0.0.1:{port}"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    payload = b"ok 1\n" + b"X" * (2 * 1024 * 1024 + 10) + b"\n" + b"ERROR after overlong line\n"
    with socket.create_connection(("127.0.0.1", port)) as client:
        for i in range(0, len(payload), 65536):
            client.sendall(payload[i : i + 65536])
        live.wait_for(lambda: "ERROR after overlong line" in kept(live.events(out)), 10)
        client.sendall(b"still open\n")
        live.wait_for(lambda: sum(r["lines"] for r in runs(live.events(out))) >= 4, 20)
    live.wait_for(lambda: any(e["event"] == "end" for e in live.events(out)), 20)
    assert live.stop() == 0
    events = live.events(out)
    assert next(e for e in events if e["event"] == "end")["lines"] == 4
    # line 2 is represented: kept up to the cap with the marker, or summarized with its size
    (long,) = [r for r in runs(events) if r["first_line"] <= 2 <= r["last_line"]]
    if long["event"] == "keep":
        assert long["text"].endswith(f"[{1024 * 1024 + 10} bytes elided]\n")
    else:
        assert long["bytes"] >= 1 << 20 and "MiB" in long["summary"]
    warning = live.log_event("input.line_truncated")
    assert warning["bytes"] == 2 * 1024 * 1024 + 10 and warning["peer"].startswith("127.0.0.1:")


def test_B27_stale_socket_is_replaced_a_live_one_is_not_stolen_a_regular_file_is_kept(tmp_path: Path) -> None:
    """B27."""
    sock = tmp_path / "sf.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))  # a socket file nobody listens on: what a kill -9 leaves
    stale.close()
    body = f'[[source]]\nname = "s"\ntype = "unix"\npath = "{sock}"\n'
    first = start(tmp_path, body)
    assert first.log_event("socket.stale_removed")["path"] == str(sock)
    second = Live(tmp_path, "daemon", "--config", str(write_config(tmp_path / "..", body)))
    assert second.proc.wait(20) != 0
    assert b"already in use by a live listener" in second.err_path.read_bytes()
    with connect_unix(sock) as client:  # the first still serves
        client.sendall(b"ERROR still served\n")
    first.wait_for(lambda: b"ERROR still served" in first.output(), 5)
    assert first.stop() == 0
    sock.write_bytes(b"not a socket, keep me\n")
    third = Live(tmp_path, "daemon", "--config", str(write_config(tmp_path, body)))
    assert third.proc.wait(20) != 0
    assert f"{sock} exists and is not a socket".encode() in third.err_path.read_bytes()
    assert sock.read_bytes() == b"not a socket, keep me\n"


def test_a_second_daemon_on_a_taken_socket_exits_before_it_opens_any_file(tmp_path: Path) -> None:
    """Its file source came first in the config: it read the files and saved their checkpoints
    before the socket failed, then took seconds to exit (a fresh-user helper's find)."""
    sock, log = tmp_path / "sf.sock", tmp_path / "app.log"
    log.write_bytes(b"ERROR: one\n")
    first = start(tmp_path, f'[[source]]\nname = "s"\ntype = "unix"\npath = "{sock}"\n')
    body = (
        f'[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\nstart_at = "beginning"\n'
        f'[[source]]\nname = "s"\ntype = "unix"\npath = "{sock}"\n'
    )
    state = tmp_path / "second-state"
    second = Live(
        tmp_path, "daemon", "--config", str(write_config(tmp_path / "..", body)), env={"XDG_STATE_HOME": str(state)}
    )
    assert second.proc.wait(20) == 1
    assert b"already in use by a live listener" in second.err_path.read_bytes()
    assert not [e for e in second.logs() if e.get("source") == "app"]  # the file was never opened
    assert not list(state.rglob("*.json"))  # nor checkpointed
    assert not second.output()
    assert first.stop() == 0


def test_a_second_daemon_on_the_same_checkpoints_refuses_to_start(tmp_path: Path) -> None:
    """Two daemons of one config both read every file, so every line reached the sink twice, and
    both wrote the same checkpoints (a fresh-user helper's find)."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    log.write_bytes(b"ERROR: one\n")
    first = start(tmp_path, file_to_jsonl(log, out, ""))
    second = Live(
        tmp_path,
        "daemon",
        "--config",
        str(write_config(tmp_path, file_to_jsonl(log, out, ""))),
        env={"XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert second.proc.wait(20) == 1
    err = second.err_path.read_bytes()
    assert b"source 'app': its checkpoints in " in err and f"(pid {first.proc.pid})".encode() in err
    assert not [e for e in second.logs() if e.get("event") == "source.opened"]
    with log.open("ab") as f:
        f.write(b"ERROR: two\n")
    first.wait_for(lambda: b"ERROR: two" in out.read_bytes(), 10)
    assert first.stop() == 0
    assert out.read_bytes().count(b"ERROR: two") == 1
    third = start(tmp_path, file_to_jsonl(log, out, ""))  # released at exit: the next one starts
    assert third.stop() == 0


def test_slow_subscriber_is_dropped_and_others_get_everything(tmp_path: Path) -> None:
    sock, sub = tmp_path / "in.sock", tmp_path / "sub.sock"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "failure"\nhead_lines = 100000\n[[source]]\nname = "in"\ntype = "unix"\npath = "{sock}"\n'
        f'sinks = ["sub"]\n[[sink]]\nname = "sub"\ntype = "unix"\npath = "{sub}"\nqueue_events = 8\n',
    )
    slow, fast = connect_unix(sub), connect_unix(sub)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    live.wait_for(lambda: sum(e.get("event") == "subscriber.connected" for e in live.logs()) == 2, 5)
    received = bytearray()
    fast.settimeout(0.05)
    line = b"ERROR failure %06d " + b"x" * 200 + b"\n"
    with connect_unix(sock) as client:
        for i in range(3000):
            client.sendall(line % i)
            if i % 100 == 0:
                time.sleep(0.06)  # let the idle flush write what came
                try:
                    while chunk := fast.recv(1 << 20):
                        received += chunk
                except TimeoutError:
                    pass
    dropped = live.log_event("subscriber.dropped")
    assert dropped["queue_events"] == 8
    fast.settimeout(5)
    while b"ERROR failure 002999" not in received:
        received += fast.recv(1 << 20)
    assert received.count(b"ERROR failure") == 3000
    assert live.proc.poll() is None
    slow.settimeout(5)
    tail = bytearray()
    try:
        while chunk := slow.recv(1 << 20):
            tail += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    last = b"[streamfilter: subscriber too slow: its queue of 8 events or 16 MiB is full; disconnected]\n"
    assert tail.endswith(last)
    assert live.stop() == 0


def test_a_subscriber_gets_every_event_up_to_the_end_at_a_stop(tmp_path: Path) -> None:
    """At SIGTERM the streams' last events (their end) were queued for a unix-socket subscriber and
    the daemon stopped before writing them (helper-34): what was queued is written before it closes."""
    sock, sub, log = tmp_path / "in.sock", tmp_path / "sub.sock", tmp_path / "app.log"
    log.write_bytes(b"")
    live = start(
        tmp_path,
        f'[defaults]\nquery = "failure"\nidle_seconds = 600\n'
        f'[[source]]\nname = "in"\ntype = "unix"\npath = "{sock}"\nsinks = ["sub"]\n'
        f'[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\nsinks = ["sub"]\n'
        f'[[sink]]\nname = "sub"\ntype = "unix"\npath = "{sub}"\nformat = "jsonl"\n',
    )
    reader = connect_unix(sub)
    live.wait_for(lambda: any(e.get("event") == "subscriber.connected" for e in live.logs()), 5)
    with log.open("ab") as f:  # (a subscriber gets what is sent after it connected)
        f.write(b"".join(b"INFO %04d step ok\n" % i for i in range(300)) + b"ERROR failure here\n")
    with connect_unix(sock) as client:
        client.sendall(b"".join(b"peer %04d ok\n" % i for i in range(200)) + b"peer failure\n")
        time.sleep(0.5)  # (read, and their lines after the failure held: idle_seconds)
        live.proc.send_signal(signal.SIGTERM)
        assert live.proc.wait(30) == 0
    reader.settimeout(10)
    received = bytearray()
    while chunk := reader.recv(1 << 20):
        received += chunk
    events = [json.loads(line) for line in received.splitlines()]
    ends = [e["source"] for e in events if e["event"] == "end"]
    assert len(ends) == 2, events[-3:]
    lines = {
        src: sum(e["lines"] for e in events if e["event"] in ("keep", "drop") and e["source"] == src) for src in ends
    }
    assert sorted(lines.values()) == [201, 301], lines


# -- signals ---------------------------------------------------------------------------------------
def test_sighup_with_a_bad_config_keeps_the_old_one_and_a_good_one_is_taken(tmp_path: Path) -> None:
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    good = (
        f'[defaults]\nquery = "failed"\n[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\n'
        f'start_at = "beginning"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    log.write_bytes(b"INFO one\n")
    live = start(tmp_path, good)
    write_config(tmp_path, good.replace("query", "quer"))
    live.proc.send_signal(signal.SIGHUP)
    error = live.log_event("config.invalid")["error"]
    assert "quer: unknown key" in error
    with log.open("ab") as f:
        f.write(b"ERROR step failed\n")
    live.wait_for(lambda: "step failed" in kept(live.events(out)), 5)  # the old config still runs
    # one that checks but whose sink cannot be opened (a fresh-user helper's find: the daemon died)
    write_config(tmp_path, good.replace(f'path = "{out}"', f'path = "{tmp_path}/missing/out.jsonl"'))
    live.proc.send_signal(signal.SIGHUP)
    error = live.log_event("reload.failed")["error"]
    assert "sink 'out': cannot open" in error and "missing/out.jsonl" in error
    with log.open("ab") as f:
        f.write(b"ERROR step two failed\n")
    live.wait_for(lambda: "step two failed" in kept(live.events(out)), 5)  # the old config runs again
    write_config(tmp_path, good.replace('query = "failed"', 'query = "panic"'))
    live.proc.send_signal(signal.SIGHUP)
    live.log_event("daemon.reloaded")
    with log.open("ab") as f:
        f.write(b"thread main panic: boom\n")
    live.wait_for(lambda: "panic: boom" in kept(live.events(out)), 5)
    assert live.stop() == 0
    assert kept(live.events(out)).count("ERROR step failed") == 1  # resumed from the checkpoint


def test_standard_outputs_labels_go_on_across_a_reload(tmp_path: Path) -> None:
    # after a SIGHUP the stream that wrote last was labelled again, with no blank line before its
    # label (a fresh-user helper's find): the new config's stdout sink started as if nothing was written
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"")
    b.write_bytes(b"")
    config = "".join(
        f'[[source]]\nname = "{p.stem}"\ntype = "file"\npath = "{p}"\nstart_at = "beginning"\nsinks = ["stdout"]\n'
        for p in (a, b)
    )
    live = start(tmp_path, f'[defaults]\nquery = "failed"\ntail_lines = 0\n{config}')
    for path, line in ((a, b"ERROR a failed\n"), (b, b"ERROR b failed\n")):
        with path.open("ab") as f:
            f.write(line)
        live.wait_for(lambda line=line: line in live.output(), 10)
    live.proc.send_signal(signal.SIGHUP)
    live.log_event("daemon.reloaded")
    for path, line in ((b, b"ERROR b failed again\n"), (a, b"ERROR a failed again\n")):
        with path.open("ab") as f:
            f.write(line)
        live.wait_for(lambda line=line: line in live.output(), 10)
    assert live.stop() == 0
    assert live.output() == (
        b"==> a <==\nERROR a failed\n\n==> b <==\nERROR b failed\nERROR b failed again\n"
        b"\n==> a <==\nERROR a failed again\n"
    )


def test_connections_are_numbered_on_across_a_reload(tmp_path: Path) -> None:
    """Two connections, one before and one after a SIGHUP, were both "tools#1" in the same sink."""
    sock, out = tmp_path / "in.sock", tmp_path / "out.jsonl"
    config = (
        f'[defaults]\nquery = "failure"\n[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    live = start(tmp_path, config)
    with connect_unix(sock) as client:
        client.sendall(b"ERROR first failure\n")
    live.wait_for(lambda: "first failure" in kept(live.events(out)), 5)
    live.proc.send_signal(signal.SIGHUP)
    live.log_event("daemon.reloaded")
    with connect_unix(sock) as client:
        client.sendall(b"ERROR second failure\n")
    live.wait_for(lambda: "second failure" in kept(live.events(out)), 5)
    assert live.stop() == 0
    sources = {e["source"]: e["text"] for e in live.events(out) if e["event"] == "keep"}
    assert sources == {"tools#1": "ERROR first failure\n", "tools#2": "ERROR second failure\n"}
    # and across a restart (helper-73: both daemons' first connections were "tools#1" in one sink)
    again = start(tmp_path, config)
    with connect_unix(sock) as client:
        client.sendall(b"ERROR third failure\n")
    again.wait_for(lambda: "third failure" in kept(again.events(out)), 5)
    assert again.stop() == 0
    assert [e["source"] for e in again.events(out) if e["event"] == "keep"][-1] == "tools#3"


def test_a_connections_count_has_its_unterminated_last_line_and_a_runs_events_have_command_and_cwd(
    tmp_path: Path,
) -> None:
    sock, out = tmp_path / "in.sock", tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "failure"\n[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    mark = b"\x1estreamfilter "
    with connect_unix(sock) as client:
        client.sendall(mark + b'{"type": "run-start", "run": "r"}\nERROR one failure\nstep two\n')
        client.sendall(mark + b'{"type": "run-end", "run": "r", "status": 1}\nplain 1\nplain 2\nplain 3 unterminated')
    closed = live.log_event("connection.closed")
    assert closed["lines"] == 5
    live.wait_for(lambda: any(e["event"] == "end" and e["source"] == "tools#1/r" for e in live.events(out)), 5)
    assert live.stop() == 0
    run = [e for e in live.events(out) if e["source"] == "tools#1/r"]
    assert run and all(e["command"] is None and e["cwd"] is None and e["run"] == "r" for e in run)


def test_expand_gives_back_the_dropped_bytes_of_a_socket_stream(tmp_path: Path) -> None:
    sock, out = tmp_path / "in.sock", tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "failure"\n[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    payload = b"".join(b"noise %d \xff\xfe bytes\r\n" % i for i in range(200)) + b"ERROR final failure\n"
    with connect_unix(sock) as client:
        client.sendall(payload)
    live.wait_for(lambda: any(e["event"] == "end" for e in live.events(out)), 10)
    drops = [e for e in runs(live.events(out)) if e["event"] == "drop"]
    assert drops and all("ref" in d for d in drops)
    for drop in drops:
        back = run_cli("expand", drop["ref"], env={"XDG_STATE_HOME": str(tmp_path / "state")})
        assert back.returncode == 0, back.stderr
        assert back.stdout == payload[drop["start_byte"] : drop["end_byte"]]
    assert live.stop() == 0


def test_check_config_names_a_mistake_in_each_table_at_once(tmp_path: Path) -> None:
    # it stopped at the first, so four typos took four runs (a fresh-user helper's find)
    config = write_config(
        tmp_path,
        '[defaults]\nqurey = "error"\n[[source]]\nname = "a"\ntyp = "file"\nfiel = "x"\n'
        '[[source]]\nname = "b"\ntype = "file"\npath = "/tmp/x.log"\nidle_second = 1\nsinks = ["out"]\n'
        '[[sink]]\nname = "out"\ntype = "fle"\npath = "/tmp/o.log"\n[[sinks]]\nname = "x"\n',
    )
    done = run_cli("check-config", str(config))
    assert done.returncode == 78 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert [line.split(": ")[3] for line in lines] == [
        "sinks",
        "defaults.qurey",
        "sink[0].type",
        "source[0].typ",
        "source[0].fiel",
        "source[1].idle_second",
    ]
    assert all(line.startswith(f"streamfilter: error: {config}: ") for line in lines)
    assert "did you mean 'idle_seconds'?" in lines[-1] and "no sink named" not in done.stderr.decode()


def test_a_tcp_source_on_port_0_logs_the_port_it_got(tmp_path: Path) -> None:
    # it logged "listen": "127.0.0.1:0", so a client could not find it (a fresh-user helper's find)
    out = tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[[source]]\nname = "t"\ntype = "tcp"\naddress = "127.0.0.1:0"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    host, _, port = live.log_event("source.opened")["listen"].rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0
    with socket.create_connection((host, int(port))) as client:
        client.sendall(b"ERROR: over tcp\n")
    live.wait_for(lambda: "ERROR: over tcp" in kept(live.events(out)), 10)
    # a peer that resets its connection at once has no address left to read: it was logged as "unix"
    for _ in range(5):
        with socket.create_connection((host, int(port))) as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    opened = live.wait_for(lambda: [e for e in live.logs() if e.get("event") == "connection.opened"][5:] or None, 10)
    peers = [e["peer"] for e in live.logs() if e.get("event") == "connection.opened"]
    assert opened and "unix" not in peers and all(p.startswith("127.0.0.1:") or p == "tcp" for p in peers), peers
    # and its close says it was reset: the bytes it sent last may be lost (helper-64: a clean close it said)
    live.wait_for(lambda: [e for e in live.logs() if e.get("event") == "connection.closed"][5:] or None, 10)
    closed = [e for e in live.logs() if e.get("event") == "connection.closed"]
    assert "reset" not in closed[0] and all(e.get("reset") is True and e["level"] == "warning" for e in closed[1:]), (
        closed
    )
    assert live.stop() == 0


def test_a_daemon_that_cannot_start_says_so_in_its_json_logs_too(tmp_path: Path) -> None:
    # its fatal errors were a plain line only, among the JSON events of its logs (a fresh-user helper's find)
    done = run_cli("daemon", "--config", str(write_config(tmp_path, '[[source]]\ntype = "stdin"\nquer = "x"\n')))
    assert done.returncode == 78
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("streamfilter: error: ") and "source[0].quer: unknown key" in lines[0]
    event = json.loads(lines[1])
    assert event["event"] == "daemon.failed" and event["exit_code"] == 78 and "source[0].quer" in event["error"]


def test_a_checkpoint_that_cannot_be_written_is_warned_of_once_and_leaves_no_file(tmp_path: Path) -> None:
    """helper-23: on a full disk ``checkpoint.unwritable`` came at every write (1123 in 5 s) and an
    empty temporary file stayed. Once now, until one is written again (``checkpoint.written``)."""
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    folder = tmp_path / "state" / "streamfilter" / "checkpoints"
    key = hashlib.sha256(f"app\0{log}".encode()).hexdigest()[:16]
    blocker = folder / f"app-{key}.json"  # a directory where the checkpoint goes: it cannot replace it
    (blocker / "x").mkdir(parents=True)
    log.write_bytes(b"")
    live = start(tmp_path, file_to_jsonl(log, out, ""))
    for burst in range(1, 4):
        with log.open("ab") as f:
            f.write(b"".join(b"INFO burst %d line %d\n" % (burst, i) for i in range(200)))
        live.wait_for(lambda b=burst: sum(e["lines"] for e in runs(live.events(out))) == 200 * b, 10)
    assert [e["event"] for e in live.logs()].count("checkpoint.unwritable") == 1
    # (a save may be under way as the output is read: its temporary file is there for a moment)
    live.wait_for(lambda: not [p.name for p in folder.iterdir() if ".tmp" in p.name], 5)
    (blocker / "x").rmdir()
    blocker.rmdir()
    with log.open("ab") as f:
        f.write(b"INFO one more\n")
    live.log_event("checkpoint.written")
    assert live.stop() == 0
    assert json.loads(blocker.read_text())["line"] == 602


def test_a_start_at_the_open_files_limit_gets_ready_and_stops_on_sigterm(tmp_path: Path) -> None:
    # files whose checkpoints could not be read for want of a descriptor never reported their
    # first open: the daemon never got ready and SIGTERM did not stop it (helper-47)
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(80):
        (logs / f"g{i}.log").write_text(f"INFO g{i} started\n")
    config = tmp_path / "d.toml"
    config.write_text(
        f'[[source]]\nname = "jobs"\ntype = "file"\npath = "{logs}/*.log"\nstart_at = "beginning"\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{tmp_path / "out.jsonl"}"\nformat = "jsonl"\n'
    )
    err = tmp_path / "d.err"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamfilter", "daemon", "--config", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (60, 60)),
        )
    try:
        deadline = time.monotonic() + 30
        while b"daemon.ready" not in err.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert b"daemon.ready" in err.read_bytes(), err.read_text()[-2000:]
        # each file left unread says why, once, and what to do (helper-50: "checkpoint.unavailable,
        # tried again" read as a retry that would work)
        waiting = [e for e in jsonl_events(err) if e.get("event") == "file.waiting"]
        assert waiting and all(e["open_files_limit"] == 60 and "LimitNOFILE" in e["hint"] for e in waiting)
        assert len({e["path"] for e in waiting}) == len(waiting) < 80
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_late_readers_bytes_past_its_files_deletion_get_no_ref_and_a_marker_says_so(tmp_path: Path) -> None:
    # logrotate's compress without delaycompress, its writer still writing to the old file: the bytes
    # written after the copy was made are on no disk once the file is deleted, and the summaries of
    # them had refs that never read back ("is now shorter than byte ...", helper-104)
    log, out = tmp_path / "app.log", tmp_path / "out.jsonl"
    log.write_bytes(b"")
    live = start(tmp_path, file_to_jsonl(log, out, 'protect = ["ERROR"]\ntail_lines = 0\n'))
    written = 0

    def some(old: BinaryIO, count: int) -> None:
        nonlocal written
        for _ in range(count):
            old.write(b"".join(b"late line %d\n" % (written + k) for k in range(30)) + b"ERROR late %d\n" % written)
            written += 30
            time.sleep(0.05)

    with log.open("ab", buffering=0) as old:
        log.rename(tmp_path / "app.log.1")
        log.write_bytes(b"new line\n")
        some(old, 120)  # (past the 5 s the path's stream waits for the renamed file: a late reader's)
        live.wait_for(lambda: live.log_event("file.rotated")["late_reader"], 10)
        (tmp_path / "app.log.1").unlink()
        some(old, 40)
    live.wait_for(lambda: kept(live.events(out)).count("ERROR late") == 160, 20)
    assert live.stop() == 0
    events = [e for e in live.events(out) if e["source"].startswith("app@")]
    (said,) = [e for e in events if e["event"] == "marker"]
    assert "was deleted while read, at byte" in said["text"] and said["text"].endswith("is on no disk, and has no ref")
    drops = [e for e in events if e["event"] == "drop"]
    assert all(bool(e.get("ref")) == (e["end_byte"] <= said["offset"]) for e in drops), drops
    assert [e for e in drops if e["start_byte"] >= said["offset"]]  # (summaries past it: none with a ref)
    late = [e for e in live.events(out) if e["event"] in ("keep", "drop")]
    assert sum(e["lines"] for e in late) == 160 * 31 + 1  # (every line once: the late ones and "new line")
