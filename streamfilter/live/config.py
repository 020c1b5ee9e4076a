"""The daemon's TOML config: parsed with ``tomllib``, checked key by key, resolved to plain values.

Layout (see ``examples/streamfilter.toml``)::

    [defaults]            # filter and timing settings every source starts from
    query = "error failed"
    [[source]]            # one table per source: type = "file" | "unix" | "tcp" | "stdin" | "nats"
    name = "build"
    type = "file"
    path = "/var/log/ci/*.log"
    sinks = ["stdout"]
    [[sink]]              # named sinks besides the built-in "stdout": type = "file" | "unix" | "nats"
    name = "archive"
    type = "file"
    path = "/var/lib/streamfilter/filtered.jsonl"
    format = "jsonl"
    [metrics]             # a Prometheus endpoint: GET http://HOST:PORT/metrics
    address = "127.0.0.1:9464"

The ``nats`` source and sink (a pool of workers over NATS JetStream) are described in docs/fleet.md.
Every error names the file and the dotted key (``source[2].quer``) and says what is wrong;
unknown keys get a "did you mean" from the known ones.
"""

from __future__ import annotations

import difflib
import fnmatch
import glob
import grp
import itertools
import math
import os
import re
import socket
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..core.errors import StreamfilterError
from ..core.output import FORMATS
from ..core.score import PARAMETER_RANGES
from ..core.settings import MAX_COUNT, MIN_LINE_BYTES, FilterConfig

__all__ = (
    "MAX_PARTITIONS",
    "ConfigError",
    "DaemonConfig",
    "SinkConfig",
    "SourceConfig",
    "check_access",
    "check_places",
    "check_use",
    "glob_directory",
    "load_config",
    "resolved",
    "unused_sinks",
)


class ConfigError(StreamfilterError):
    """A config that cannot be used: unreadable, not TOML, unknown key, wrong type or range (exit 78)."""

    exit_code = 78  # EX_CONFIG: systemd's RestartPreventExitStatus=78 stops a restart loop


@dataclass(frozen=True, slots=True)
class Timing:
    """Time settings of a live source, in seconds.

    Attributes:
        idle_seconds: quiet time after which pending lines are decided, an unterminated
            last line with a signature or a query term included (``StreamFilter.settle``).
        max_delay_seconds: longest a line waits for its decision while the stream keeps
            flowing (no quiet moment comes): the stream is settled then anyway.
        poll_seconds: the stat check of a followed file while it is quiet (a backstop to
            the directory watch); while a file is being written it is read as fast as it grows.
    """

    idle_seconds: float = 0.05
    max_delay_seconds: float = 0.01
    poll_seconds: float = 1.0


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """One source.

    Attributes:
        name: unique name (in logs, JSONL events and checkpoints).
        type: ``file``, ``unix``, ``tcp`` or ``stdin``.
        path: file path or glob (``file``), socket path (``unix``).
        address: ``HOST:PORT`` (``tcp``; default host 127.0.0.1).
        start_at: ``beginning`` or ``end``: where files present at the source's first start are
            read from (files that appear later, or while the daemon was down, are always read from
            their beginning).
        roots: directories a followed file must resolve into (symlinks out are refused);
            default: the directory part of ``path``.
        mode: permission bits of a unix socket (default 0o600).
        group: the group id a unix socket is given when it is made (its group's members may
            connect when ``mode`` lets the group write); None keeps the daemon's own group.
        max_line_bytes: longest line taken from a socket; the rest of a longer line is
            discarded and replaced by an ``[N bytes elided]`` marker.
        checkpoint: whether file positions are saved in the state directory.
        tail_at_end: ``file``: a quiet file's last ``tail_lines`` lines wait for its stream's end
            and the tail rule, but for those up to the last one a pause keeps (``follow``'s, which
            ends with its reader's Ctrl-C; not a config file's: a daemon ships every line at a pause).
        baselines: a socket source's runs in an envelope are weighed against their command's last
            green run (``live.baselines``), and store their own when they exit 0.
        sinks: names of the sinks the source writes to.
        filter: the filter settings.
        timing: idle and poll times.
        servers: ``nats``: the NATS server URLs (``nats://HOST:PORT``).
        stream: ``nats``: the JetStream stream the producers' messages are kept in (made if missing).
        subject: ``nats``: the subjects' first token: producers publish to ``SUBJECT.<stream id>``,
            which the server's partition mapping turns into ``SUBJECT.<partition>.<stream id>``.
        partitions: ``nats``: how many partitions the mapping has (the same number as the server's).
        consumer: ``nats``: the durable consumers' names are ``CONSUMER-<partition>``; the leases
            bucket is ``CONSUMER-leases``.
        ack_wait_seconds: ``nats``: how long a message delivered to a worker that died waits before it
            is delivered again (a live worker keeps its held messages from this with progress acks).
        lease_seconds: ``nats``: how long a worker's claim on a partition lasts without renewal
            (after it dies, its partitions are taken over that much later).
        max_ack_pending: ``nats``: most messages delivered and not yet acked per partition (what
            a worker holds in memory for it).
        evict_seconds: ``nats``: a stream quiet this long is written out (its last line ended, a
            ``quiet`` event for a run with no end) and forgotten; more of it resumes it.
        payload: ``nats``: what a message without an offset header holds: ``lines`` (whole lines; a
            line end is added to one that lacks it, as Vector's ``text`` codec sends them) or
            ``fluent-bit`` (Fluent Bit's JSON records, whose ``log`` or ``message`` fields are the lines).
    """

    name: str
    type: str
    path: str = ""
    address: str = ""
    start_at: str = "end"
    roots: tuple[str, ...] = ()
    mode: int = 0o600
    group: int | None = None
    max_line_bytes: int = 1 << 20
    checkpoint: bool = True
    tail_at_end: bool = False
    baselines: bool = True
    sinks: tuple[str, ...] = ("stdout",)
    servers: tuple[str, ...] = ()
    stream: str = "STREAMFILTER"
    subject: str = "logs"
    partitions: int = 8
    consumer: str = "streamfilter"
    ack_wait_seconds: float = 30.0
    lease_seconds: float = 10.0
    max_ack_pending: int = 256
    evict_seconds: float = 300.0
    payload: str = "lines"
    filter: FilterConfig = field(default_factory=FilterConfig)
    timing: Timing = field(default_factory=Timing)

    def in_roots(self, real: str) -> bool:
        """Whether ``real``, a path with its symlinks resolved, is one of ``roots`` or lies under one."""
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)


@dataclass(frozen=True, slots=True)
class SinkConfig:
    """One sink.

    Attributes:
        name: unique name that sources refer to (``stdout`` is built in).
        type: ``stdout``, ``file`` (appended) or ``unix`` (subscribers connect and read).
        path: the file or socket path.
        format: ``text`` or ``jsonl``.
        queue_events: per-subscriber queue (``unix``), in events; a subscriber whose queue
            stays full for ``sinks.ROOM_SECONDS`` (it is not reading) is told so and disconnected.
        mode: permission bits of a subscriber socket.
        group: the group id a subscriber socket is given when it is made (None: the daemon's own).
        raw: ``stdout`` on a terminal: write control bytes as they are (default: escaped).
        servers: ``nats``: the NATS server URLs.
        stream: ``nats``: the JetStream stream the events are kept in (made if missing).
        subject: ``nats``: each stream's events go to ``SUBJECT.<stream>``.
    """

    name: str
    type: str
    path: str = ""
    format: str = "text"
    queue_events: int = 1024
    mode: int = 0o600
    group: int | None = None
    raw: bool = False
    servers: tuple[str, ...] = ()
    stream: str = "STREAMFILTER_OUT"
    subject: str = "filtered"


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """A whole daemon config: its sources and sinks, where it came from, and the metrics
    endpoint's ``HOST:PORT`` (``""``: none)."""

    path: str
    sources: tuple[SourceConfig, ...]
    sinks: tuple[SinkConfig, ...]
    metrics: str = ""


# (results: set by a run's exit status, not configured; signatures: off only to measure how the
# filter does on tools no signature knows)
_FILTER_KEYS = {f.name: f for f in fields(FilterConfig) if f.name not in ("explain", "group_windows", "results")}
_TIMING_KEYS = {f.name: f for f in fields(Timing)}
_NATS_KEYS = (
    "servers",
    "stream",
    "subject",
    "partitions",
    "consumer",
    "ack_wait_seconds",
    "lease_seconds",
    "max_ack_pending",
    "evict_seconds",
    "payload",
)
_SOURCE_KEYS = {
    "name",
    "type",
    "path",
    "address",
    "start_at",
    "roots",
    "mode",
    "group",
    "max_line_bytes",
    "checkpoint",
    "baselines",
    "sinks",
    *_NATS_KEYS,
}
# the source keys that only some types have (a key of another type is a mistake, said as such)
_KEY_TYPES = {
    "path": ("file", "unix"),
    "address": ("tcp",),
    "start_at": ("file",),
    "roots": ("file",),
    "checkpoint": ("file",),
    "baselines": ("unix", "tcp"),
    "mode": ("unix",),
    "group": ("unix",),
    **{key: ("nats",) for key in _NATS_KEYS},
}
_SOURCE_TYPES = ("file", "unix", "tcp", "stdin", "nats")
_SINK_KEYS = {f.name for f in fields(SinkConfig)}
_SINK_KEY_TYPES = {
    "queue_events": ("unix",),
    "mode": ("unix",),
    "group": ("unix",),
    "path": ("file", "unix"),
    **{key: ("nats",) for key in ("servers", "stream", "subject")},
}
_SINK_TYPES = ("stdout", "file", "unix", "nats")
MAX_SECONDS = 86400.0  # a day: longer timings are mistakes (milliseconds given as seconds)
_POSITIVE = {"window_lines", "window_chars", "max_line_bytes", "top_shapes", "summary_chars", "max_keep_event_bytes"}
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")  # a NATS subject token, stream or consumer name (no '.', '*', '>')
MAX_PARTITIONS = 1024
MIN_ACK_PENDING = 64  # a partition's messages in flight, at least (``_source_table``)


class _Checker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path))  # where relative paths in it start

    def resolve(self, path: str) -> str:
        """``path`` made absolute (``~`` expanded), a relative one from the config file's directory."""
        return os.path.abspath(os.path.join(self.base, os.path.expanduser(path)))

    def fail(self, key: str, what: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {what}")

    def table(self, value: object, key: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table, not {type(value).__name__}")
        return value

    def known(self, table: Mapping[str, Any], allowed: set[str], key: str) -> None:
        """Raise one ``ConfigError`` that names every unknown key of ``table``, a line each."""
        lines = []
        for name in table:
            if name not in allowed:
                close = difflib.get_close_matches(name, sorted(allowed), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(sorted(allowed))}"
                owners = [t for t, keys in (("[[source]]", _SOURCE_KEYS), ("[[sink]]", _SINK_KEYS)) if name in keys]
                if owners:  # ("mode" in [defaults]: a key of another table, not a typo)
                    kinds = sorted({*_KEY_TYPES.get(name, ()), *_SINK_KEY_TYPES.get(name, ())})
                    whose = f" of type {' or '.join(kinds)}" if kinds else ""
                    hint = f" here: it is a key of a {' or a '.join(owners)}{whose}"
                lines.append(str(self.fail(f"{key}.{name}" if key else name, f"unknown key{hint}")))
        if lines:
            raise ConfigError("\n".join(lines))

    def typed(self, value: object, kind: type | tuple[type, ...], key: str) -> Any:
        # bool is an int in Python; a config's true is not a count
        if isinstance(value, bool) and kind is not bool:
            raise self.fail(key, f"must be {_kind_name(kind)}, not a boolean")
        if not isinstance(value, kind):
            raise self.fail(key, f"must be {_kind_name(kind)}, not {type(value).__name__} {value!r}")
        return value

    def choice(self, value: object, choices: tuple[str, ...], key: str) -> str:
        text = self.typed(value, str, key)
        if text not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, not {text!r}")
        return str(text)


def _tables(check: _Checker, doc: dict[str, Any], key: str) -> list[Any]:
    """The ``[[KEY]]`` tables of ``doc`` (an array of tables; ``[KEY]``, one table, says so).

    Raises:
        ConfigError: ``doc[key]`` is not a list.
    """
    value = doc.get(key, [])
    if isinstance(value, dict):
        raise check.fail(key, f"must be an array of tables: write [[{key}]] (two brackets), not [{key}]")
    tables: list[Any] = check.typed(value, list, key)
    return tables


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _settings(
    check: _Checker, table: Mapping[str, Any], base: FilterConfig, timing: Timing, key: str
) -> tuple[FilterConfig, Timing]:
    """Filter and timing keys of ``table`` applied over ``base`` and ``timing``."""
    changes: dict[str, Any] = {}
    times: dict[str, float] = {}
    for name, value in table.items():
        where = f"{key}.{name}" if key else name
        if name in _TIMING_KEYS:
            seconds = float(check.typed(value, (int, float), where))
            if not 0 < seconds <= MAX_SECONDS:  # NaN fails too
                raise check.fail(where, f"must be more than 0 and at most {MAX_SECONDS} seconds, not {value!r}")
            times[name] = seconds
        elif name == "query":
            if not check.typed(value, str, where).split():
                raise check.fail(where, "is empty: give at least one word")
            changes[name] = value
        elif name == "protect":
            patterns = check.typed(value, list, where)
            for i, pattern in enumerate(patterns):
                check.typed(pattern, str, f"{where}[{i}]")
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise check.fail(f"{where}[{i}]", f"not a valid regex: {exc}") from None
            changes[name] = tuple(patterns)
        elif name in ("prior", "signatures"):
            changes[name] = check.typed(value, bool, where)
        elif name in _FILTER_KEYS:
            if _FILTER_KEYS[name].type in ("float", float):
                number = float(check.typed(value, (int, float), where))
                low, high = PARAMETER_RANGES.get(name, (-math.inf, math.inf))
                if not (math.isfinite(number) and low <= number <= high):
                    span = f"{low:g} to {high:g}" if name in PARAMETER_RANGES else "a finite number"
                    raise check.fail(where, f"must be {span}, not {value!r}")
                changes[name] = number
            else:
                count = check.typed(value, int, where)
                low = MIN_LINE_BYTES if name == "max_line_bytes" else 1 if name in _POSITIVE else 0
                if not low <= count <= MAX_COUNT:
                    raise check.fail(where, f"must be {low} to {MAX_COUNT}, not {count}")
                changes[name] = count
    return replace(base, **changes), replace(timing, **times)


def _group(check: _Checker, value: object, key: str) -> int:
    """A group name or id, as its id."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 1 << 32:
            raise check.fail(key, f"must be a group name or an id 0 to {(1 << 32) - 1}, not {value}")
        return value
    name = check.typed(value, str, key)
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise check.fail(key, f"no group named {name!r} on this machine") from None


def _mode(check: _Checker, value: object, key: str) -> int:
    text = check.typed(value, str, key)
    if not re.fullmatch(r"0?[0-7]{3}", text):
        raise check.fail(key, f'must be an octal permission string like "0600", not {text!r}')
    return int(text, 8)


def _source(
    check: _Checker, table: Mapping[str, Any], i: int, base: FilterConfig, timing: Timing, key: str = ""
) -> SourceConfig:
    key = key or f"source[{i}]"
    allowed = _SOURCE_KEYS | set(_FILTER_KEYS) | set(_TIMING_KEYS)
    check.known(table, allowed, key)
    if "type" not in table:
        raise check.fail(f"{key}.type", f"missing: one of {', '.join(_SOURCE_TYPES)}")
    kind = check.choice(table["type"], _SOURCE_TYPES, f"{key}.type")
    name = check.typed(table.get("name", f"{kind}{i}"), str, f"{key}.name")
    if not _NAME.fullmatch(name):
        raise check.fail(f"{key}.name", f"{name!r}: use letters, digits, '.', '_' or '-'")
    filt, times = _settings(check, table, base, timing, key)
    values: dict[str, Any] = {"name": name, "type": kind, "filter": filt, "timing": times}
    if kind in ("file", "unix"):
        if "path" not in table:
            raise check.fail(f"{key}.path", f"missing: a {kind} source needs a path")
        values["path"] = _path(check, table["path"], f"{key}.path")
    if kind == "tcp":
        address = check.typed(table.get("address", ""), str, f"{key}.address")
        host, _, port = address.rpartition(":")
        if not port.isdigit():
            raise check.fail(f"{key}.address", f"must be HOST:PORT or :PORT, not {address!r}")
        if int(port) > 65535:
            raise check.fail(f"{key}.address", f"the port must be 0-65535, not {int(port)}")
        values["address"] = f"{host or '127.0.0.1'}:{int(port)}"
    if kind == "nats":
        values.update(_nats(check, table, key, source=True))
    if "start_at" in table:
        values["start_at"] = check.choice(table["start_at"], ("beginning", "end"), f"{key}.start_at")
    if "roots" in table:
        roots = check.typed(table["roots"], list, f"{key}.roots")
        values["roots"] = tuple(
            os.path.realpath(check.resolve(check.typed(r, str, f"{key}.roots[{j}]"))) for j, r in enumerate(roots)
        )
    elif kind == "file":
        values["roots"] = (os.path.realpath(glob_directory(values["path"])),)
    if "mode" in table:
        values["mode"] = _mode(check, table["mode"], f"{key}.mode")
    if "group" in table:
        values["group"] = _group(check, table["group"], f"{key}.group")
    values["max_line_bytes"] = filt.max_line_bytes  # the source's own, or [defaults]'
    if "checkpoint" in table:
        values["checkpoint"] = check.typed(table["checkpoint"], bool, f"{key}.checkpoint")
    if "baselines" in table:
        values["baselines"] = check.typed(table["baselines"], bool, f"{key}.baselines")
    if "sinks" in table:
        sinks = check.typed(table["sinks"], list, f"{key}.sinks")
        values["sinks"] = tuple(check.typed(s, str, f"{key}.sinks[{j}]") for j, s in enumerate(sinks))
        if not values["sinks"]:
            raise check.fail(f"{key}.sinks", 'is empty: the output would go nowhere (the default is ["stdout"])')
    return SourceConfig(**values)


def _nats(check: _Checker, table: Mapping[str, Any], key: str, source: bool) -> dict[str, Any]:
    """The ``nats`` keys of a source or sink table, checked (``servers`` is required)."""
    values: dict[str, Any] = {}
    if "servers" not in table:
        raise check.fail(f"{key}.servers", 'missing: the NATS servers, as ["nats://HOST:PORT", ...]')
    servers = check.typed(table["servers"], list, f"{key}.servers")
    for j, url in enumerate(servers):
        text = check.typed(url, str, f"{key}.servers[{j}]")
        if not re.fullmatch(r"(nats|tls)://[^\s/]+", text):
            raise check.fail(f"{key}.servers[{j}]", f"must be nats://HOST:PORT or tls://HOST:PORT, not {text!r}")
    if not servers:
        raise check.fail(f"{key}.servers", "is empty: give at least one NATS server URL")
    values["servers"] = tuple(servers)
    for name in ("stream", "subject", "consumer"):
        if name in table:
            text = check.typed(table[name], str, f"{key}.{name}")
            if not _TOKEN.fullmatch(text):
                raise check.fail(f"{key}.{name}", f"{text!r}: use letters, digits, '_' or '-' (one subject token)")
            values[name] = text
    if not source:
        return values
    # (max_ack_pending: a stream's look-ahead and a run's held tail span several messages of a
    # slow producer; 4 stalled a partition for good with every message delivered and waiting, 16
    # and 64 did not, helper-42)
    for name, low, high in (("partitions", 1, MAX_PARTITIONS), ("max_ack_pending", MIN_ACK_PENDING, 1 << 20)):
        if name in table:
            count = check.typed(table[name], int, f"{key}.{name}")
            if not low <= count <= high:
                raise check.fail(f"{key}.{name}", f"must be {low} to {high}, not {count}")
            values[name] = count
    for name in ("ack_wait_seconds", "lease_seconds", "evict_seconds"):
        if name in table:
            seconds = float(check.typed(table[name], (int, float), f"{key}.{name}"))
            if not 1 <= seconds <= MAX_SECONDS:  # (NaN fails too)
                raise check.fail(f"{key}.{name}", f"must be 1 to {MAX_SECONDS} seconds, not {table[name]!r}")
            values[name] = seconds
    if "payload" in table:
        values["payload"] = check.choice(table["payload"], ("lines", "fluent-bit"), f"{key}.payload")
    return values


def _check_key_types(
    check: _Checker, table: Mapping[str, Any], kind: str, types_of: Mapping[str, tuple[str, ...]], key: str, what: str
) -> None:
    """Raise for a key of ``table`` that only other types of ``what`` (source, sink) have."""
    for name, types in types_of.items():
        if name in table and kind not in types:
            raise check.fail(f"{key}.{name}", f"only a {' or '.join(types)} {what} has one, not {kind}")


def _path(check: _Checker, value: object, key: str) -> str:
    """An absolute path from a config value (``~`` expanded, a relative one from the config file's
    directory); an empty one is an error (it would name that directory)."""
    path: str = check.typed(value, str, key)
    if not path.strip():
        raise check.fail(key, "must not be empty")
    return check.resolve(path)


def glob_directory(path: str) -> str:
    """The directory of a path or glob: the components before its last one, or before its first
    wildcard component (``/logs/*/a.log`` -> ``/logs``)."""
    parts = Path(path).parts
    for j, part in enumerate(parts):
        if glob.has_magic(part):
            return str(Path(*parts[:j]))
    return os.path.dirname(path)


def _sink(check: _Checker, table: Mapping[str, Any], i: int) -> SinkConfig:
    key = f"sink[{i}]"
    check.known(table, _SINK_KEYS, key)
    if "name" not in table:
        raise check.fail(f"{key}.name", "missing: sources refer to sinks by name")
    name = check.typed(table["name"], str, f"{key}.name")
    kind = check.choice(table.get("type", ""), ("file", "unix", "nats"), f"{key}.type")
    _check_key_types(check, table, kind, _SINK_KEY_TYPES, key, "sink")
    values: dict[str, Any] = {"name": name, "type": kind}
    if kind == "nats":
        values.update(_nats(check, table, key, source=False))
        values["format"] = "jsonl"  # events, each with its stream's position (docs/fleet.md)
        if table.get("format", "jsonl") != "jsonl":
            raise check.fail(f"{key}.format", f"a nats sink publishes jsonl events, not {table['format']!r}")
    else:
        if "path" not in table:
            raise check.fail(f"{key}.path", f"missing: a {kind} sink needs a path")
        values["path"] = _path(check, table["path"], f"{key}.path")
    if "format" in table and kind != "nats":
        values["format"] = check.choice(table["format"], FORMATS, f"{key}.format")
    if "queue_events" in table:
        count = check.typed(table["queue_events"], int, f"{key}.queue_events")
        if not 1 <= count <= MAX_COUNT:
            raise check.fail(f"{key}.queue_events", f"must be 1 to {MAX_COUNT}, not {count}")
        values["queue_events"] = count
    if "mode" in table:
        values["mode"] = _mode(check, table["mode"], f"{key}.mode")
    if "group" in table:
        values["group"] = _group(check, table["group"], f"{key}.group")
    if "raw" in table:
        values["raw"] = check.typed(table["raw"], bool, f"{key}.raw")
    return SinkConfig(**values)


def load_config(path: str | os.PathLike[str]) -> DaemonConfig:
    """Read and check the config at ``path``.

    Raises:
        ConfigError: the file is unreadable or not TOML, or a key is unknown, of the wrong
            type, out of range, or refers to something that does not exist (message names
            the file and the dotted key; a line for each table in error).
    """
    name = os.fspath(path)
    check = _Checker(name)
    try:
        with open(name, "rb") as handle:
            doc = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: not valid TOML: {exc}") from None
    # each table is checked whatever the ones before it hold, so one run names a mistake in each
    # (a table's first; and every unknown key of it); what refers to a table in error is not checked
    errors: list[str] = []
    try:
        check.known(doc, {"defaults", "source", "sink", "metrics"}, "")
    except ConfigError as exc:
        errors.append(str(exc))
    metrics = ""
    try:
        metrics = _metrics(check, doc.get("metrics"))
    except ConfigError as exc:
        errors.append(str(exc))
    base, timing, shared = FilterConfig(), Timing(), {}
    try:
        defaults = check.table(doc.get("defaults", {}), "defaults")
        check.known(defaults, set(_FILTER_KEYS) | set(_TIMING_KEYS) | {"start_at", "sinks", "checkpoint"}, "defaults")
        base, timing = _settings(check, defaults, FilterConfig(), Timing(), "defaults")
        shared = {k: defaults[k] for k in ("start_at", "sinks", "checkpoint") if k in defaults}
    except ConfigError as exc:
        errors.append(str(exc))
    sinks = [SinkConfig("stdout", "stdout")]
    sinks_ok = True
    for i, table in enumerate(_tables(check, doc, "sink")):
        try:
            sink = _sink(check, check.table(table, f"sink[{i}]"), i)
            if sink.name == "stdout":
                raise check.fail(f"sink[{i}].name", "'stdout' is built in: a source names it, no [[sink]] makes it")
            if any(s.name == sink.name for s in sinks):
                raise check.fail(f"sink[{i}].name", f"{sink.name!r} is used twice")
            sinks.append(sink)
        except ConfigError as exc:
            errors.append(str(exc))
            sinks_ok = False
    # the shared keys are checked where they are written, so an error names defaults.KEY
    if shared and not errors:
        try:
            checked = _source(check, {"type": "stdin", **shared}, 0, base, timing, "defaults")
            _check_sink_names(check, checked.sinks, "defaults", sinks)
        except ConfigError as exc:
            errors.append(str(exc))
            shared = {}
    raw_sources = _tables(check, doc, "source")
    if not raw_sources:
        errors.append(str(check.fail("source", "no sources: add at least one [[source]] table")))
    sources: list[SourceConfig] = []
    for i, table in enumerate(raw_sources):
        try:
            own = check.table(table, f"source[{i}]")
            kind = own.get("type", shared.get("type"))
            if kind in _SOURCE_TYPES:  # (the source's own keys: [defaults] serve every source that has them)
                _check_key_types(check, own, kind, _KEY_TYPES, f"source[{i}]", "source")
            source = _source(check, {**shared, **own}, i, base, timing)
            if any(s.name == source.name for s in sources):
                raise check.fail(f"source[{i}].name", f"{source.name!r} is used twice")
            if sinks_ok:
                _check_sink_names(check, source.sinks, f"source[{i}]", sinks)
            sources.append(source)
        except ConfigError as exc:
            errors.append(str(exc))
    if errors:
        raise ConfigError("\n".join(errors))
    if sum(s.type == "stdin" for s in sources) > 1:
        raise check.fail("source", "stdin can be read by one source only")
    _check_conflicts(check, sources, sinks)
    return DaemonConfig(name, tuple(sources), tuple(sinks), metrics)


def _metrics(check: _Checker, value: object) -> str:
    """The ``[metrics]`` table's ``address`` as ``HOST:PORT`` (default host 127.0.0.1), or ``""`` without one."""
    if value is None:
        return ""
    table = check.table(value, "metrics")
    check.known(table, {"address"}, "metrics")
    if "address" not in table:
        raise check.fail("metrics.address", 'missing: where /metrics is served, as "HOST:PORT"')
    address = check.typed(table["address"], str, "metrics.address")
    host, _, port = address.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise check.fail("metrics.address", f"must be HOST:PORT or :PORT with a port 0-65535, not {address!r}")
    return f"{host.strip('[]') or '127.0.0.1'}:{int(port)}"


def _check_sink_names(check: _Checker, names: tuple[str, ...], key: str, sinks: list[SinkConfig]) -> None:
    for j, sink_name in enumerate(names):
        if not any(s.name == sink_name for s in sinks):
            known = ", ".join(s.name for s in sinks)
            raise check.fail(f"{key}.sinks[{j}]", f"no sink named {sink_name!r} (sinks: {known})")


def _check_conflicts(check: _Checker, sources: list[SourceConfig], sinks: list[SinkConfig]) -> None:
    """Two listeners on one socket, or a sink the daemon would read back as input."""
    taken: list[tuple[str, str, tuple[str, str, str]]] = []  # (key, as it names it, socket) so far
    places = [(f"source[{i}]", s.type, s.path or s.address) for i, s in enumerate(sources) if s.type in ("unix", "tcp")]
    places += [(f"sink[{i - 1}]", s.type, s.path) for i, s in enumerate(sinks) if s.type == "unix"]
    for key, kind, where in places:
        mine = _sockets(kind, where)
        for other, named, theirs in taken:
            if other != key and any(_same_socket(a, theirs) for a in mine):
                also = "" if named == where else f" ({named})"
                raise check.fail(f"{key}.{'address' if kind == 'tcp' else 'path'}", f"{where} is also {other}'s{also}")
        taken += [(key, where, a) for a in mine]
    for i, sink in enumerate(sinks):
        if sink.type != "file":
            continue
        # as written and through the symlinks on the way (a sink in a linked folder that a glob
        # reads by its other name); realpath keeps a glob's magic as a name of its own
        written, real = sink.path, os.path.realpath(sink.path)
        for j, source in enumerate(sources):
            if source.type == "file" and (
                fnmatch.fnmatch(written, source.path) or fnmatch.fnmatch(real, os.path.realpath(source.path))
            ):
                raise check.fail(
                    f"sink[{i - 1}].path", f"{sink.path} is read by source[{j}] (the daemon would read its own output)"
                )


def _sockets(kind: str, where: str) -> list[tuple[str, str, str]]:
    """The sockets a unix path or a tcp ``HOST:PORT`` names, as ``(family, address, port)``, so that
    two names of one socket compare equal (``_same_socket``): a path through its folder's symlinks
    (``link/s.sock`` for ``real/s.sock``), a host by its addresses (``localhost:9600`` and
    ``127.0.0.1:9600``). A host that does not resolve is its name (``check_places`` says so)."""
    if kind == "unix":
        return [("unix", os.path.join(os.path.realpath(os.path.dirname(where) or "."), os.path.basename(where)), "")]
    host, _, port = where.rpartition(":")
    try:
        found = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return [("name", where, port)]
    return [(family.name, str(address[0]), port) for family, *_, address in found]


def _same_socket(a: tuple[str, str, str], b: tuple[str, str, str]) -> bool:
    """Whether two of ``_sockets``' sockets cannot both be listened on: the same one, or one port of
    one family where either listens on every address (``0.0.0.0``, ``::``)."""
    if a[0] != b[0] or a[2] != b[2] or a[2] == "0":  # (port 0: each its own port, the system's choice)
        return False
    return a[1] == b[1] or (a[0] != "unix" and (a[1] in ("0.0.0.0", "::") or b[1] in ("0.0.0.0", "::")))


def check_places(config: DaemonConfig) -> list[str]:
    """What would stop the daemon from opening the config's sinks or binding its sockets now, found
    touching nothing: a missing or unwritable directory, a file sink that is a directory, a socket
    path taken by something else, a TCP host that does not resolve (``check-config`` warns; it is no
    error, as a directory may be made before the daemon starts, such as systemd's ``RuntimeDirectory=``).

    Returns:
        one message per place, as ``PATH: KEY: what``.
    """
    out = []
    places = [(f"sink[{i - 1}].path", s.type, s.path) for i, s in enumerate(config.sinks) if s.type in ("file", "unix")]
    places += [(f"source[{i}].path", "unix", s.path) for i, s in enumerate(config.sources) if s.type == "unix"]
    for key, kind, path in places:
        parent = os.path.dirname(path)
        what = ""
        if not os.path.isdir(parent):
            what = f"its directory {parent} {'is not a directory' if os.path.exists(parent) else 'does not exist'}"
        elif not os.path.exists(path) and not os.access(parent, os.W_OK | os.X_OK):
            what = f"its directory {parent} is not writable"
        elif kind == "file" and os.path.isdir(path):
            what = "is a directory"
        elif kind == "unix" and os.path.exists(path) and not stat.S_ISSOCK(os.stat(path).st_mode):
            what = "exists and is not a socket, which the daemon will not replace"
        if what:
            out.append(f"{config.path}: {key}: {path}: {what}")
    for i, source in enumerate(config.sources):
        if source.type == "tcp":
            host, _, port = source.address.rpartition(":")
            try:
                socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            except (OSError, UnicodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                out.append(f"{config.path}: source[{i}].address: {source.address}: cannot be listened on ({why})")
    return out


def check_access(config: DaemonConfig) -> list[str]:
    """Who else could use the config's unix sockets, found touching nothing (``check-config`` and the
    daemon at start warn): a mode that lets any user connect, and a socket directory that other users
    may write to without the sticky bit (any of them could replace the socket with their own).

    Returns:
        one message per finding, as ``PATH: KEY: what``.
    """
    out = []
    places = [(f"source[{i}]", s.path, s.mode) for i, s in enumerate(config.sources) if s.type == "unix"]
    places += [(f"sink[{i - 1}]", s.path, s.mode) for i, s in enumerate(config.sinks) if s.type == "unix"]
    for i, source in enumerate(config.sources):
        host = source.address.rpartition(":")[0].strip("[]") if source.type == "tcp" else "localhost"
        if host not in ("localhost", "127.0.0.1", "::1") and not host.startswith("127."):
            out.append(
                f"{config.path}: source[{i}].address: {source.address} takes lines and runs from any host that"
                " can reach this machine (listen on 127.0.0.1, or a unix socket with a mode)"
            )
    for key, path, mode in places:
        if mode & 0o002:
            out.append(f"{config.path}: {key}.mode: {mode:04o} lets any user on this machine connect to {path}")
        parent = os.path.dirname(path)
        try:
            info = os.stat(parent)
        except OSError:
            continue  # (check_places says so)
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            out.append(
                f"{config.path}: {key}.path: its directory {parent} can be written by other users "
                f"({stat.S_IMODE(info.st_mode):04o}, no sticky bit): any of them could replace the socket"
            )
    return out


def unused_sinks(config: DaemonConfig) -> list[str]:
    """Names of the sinks no source writes to (the implicit ``stdout`` sink aside), in config order."""
    used = {name for s in config.sources for name in s.sinks}
    return [s.name for s in config.sinks if s.name not in used and s.type != "stdout"]


def check_use(config: DaemonConfig) -> list[str]:
    """What in a valid config does nothing, found touching nothing (``check-config`` warns; the
    daemon warns of the first at start and refuses the files of the second as it meets them): a
    sink no source lists, a file source whose path lies outside its ``roots``, one that names no
    file now (a typo, or logs to come) and two file sources that name one file.

    Returns:
        one message per finding, as ``PATH: KEY: what``.
    """
    out = []
    unused = set(unused_sinks(config))
    for i, sink in enumerate(config.sinks):
        if sink.name in unused:
            what = f"{sink.name!r} is in no source's sinks, so nothing is written to it"
            out.append(f"{config.path}: sink[{i - 1}]: {what}")
    for i, source in enumerate(config.sources):
        if source.type != "file":
            continue
        if not source.in_roots(os.path.realpath(glob_directory(source.path))):
            out.append(
                f"{config.path}: source[{i}].path: {source.path} lies outside its roots ({', '.join(source.roots)}): "
                "the daemon refuses every file it matches that is not a symlink into one"
            )
    # two file sources on one file read it twice, each to its sinks (meant, for two queries, or not)
    files = [(i, s) for i, s in enumerate(config.sources) if s.type == "file"]
    matched = {i: _matched_now(s.path) for i, s in files}
    for i, source in files:
        # (no error: logs may come later; but a typo in a path passed silently, and the daemon waited, helper-69)
        if not matched[i]:
            directory = glob_directory(source.path)
            if os.path.isdir(source.path):
                what = f"is a directory: the daemon follows files ({os.path.join(source.path, '*.log')} reads its logs)"
            elif not os.path.isdir(directory):
                what = f"its directory {directory} does not exist: nothing is read until it is made"
            else:
                what = "names no file now: the daemon reads one when it appears"
            out.append(f"{config.path}: source[{i}].path: {source.path}: {what}")
    for (i, a), (j, b) in itertools.combinations(files, 2):
        both = sorted(matched[i] & matched[j]) or ([a.path] if a.path == b.path else [])
        if both:
            out.append(
                f"{config.path}: source[{j}].path: {b.path} names {both[0]}"
                f"{f' and {len(both) - 1} more' if len(both) > 1 else ''} as source[{i}] ({a.name!r}) does: "
                "each reads it, and its lines come out twice"
            )
    return out


def _matched_now(path: str) -> set[str]:
    """The files (real paths) a file source's path or glob names now."""
    names = glob.glob(path) if glob.has_magic(path) else [path]
    return {os.path.realpath(n) for n in names if os.path.isfile(n)}


def resolved(config: DaemonConfig) -> dict[str, Any]:
    """The config with every default filled in, as plain values (for ``check-config``): each
    source's and sink's keys of its type only, the built-in stdout sink when a source uses it."""

    def plain(value: Any) -> Any:
        if hasattr(value, "__dataclass_fields__"):
            return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        return value

    out = plain(config)
    # a table shows its type's keys only (a nats source has no path), and the built-in stdout
    # sink is shown when a source writes to it
    source_keys = _SOURCE_KEYS | {"filter", "timing"}  # (not follow's tail_at_end: no key of a config)
    for tables, keys, types in ((out["sources"], source_keys, _KEY_TYPES), (out["sinks"], _SINK_KEYS, _SINK_KEY_TYPES)):
        for table in tables:
            for key in list(table):
                if key not in keys or table["type"] not in types.get(key, (table["type"],)):
                    del table[key]
            if "mode" in table:
                table["mode"] = f"{table['mode']:04o}"
    used = {name for source in out["sources"] for name in source["sinks"]}
    out["sinks"] = [t for t in out["sinks"] if t["type"] != "stdout" or t["name"] in used]
    return dict(out)
