"""The daemon: run a config's sources and sinks with anyio until a stop signal.

Start-up opens the sinks, then every source (files opened and watched, sockets bound); only
then is the daemon ready (``daemon.ready``). SIGTERM/SIGINT stop reading, decide and write
everything pending, save checkpoints and exit 0 (a second signal exits at once, status 1).
SIGHUP reloads the config file (``follow``, which has none, stops): a config that does not
check is logged (``config.invalid``) and the old one kept; a good one replaces the sources
and sinks (file sources resume from their checkpoints).
"""

from __future__ import annotations

import glob
import os
import resource
import signal
import socket
import stat
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import anyio
import anyio.lowlevel
from anyio.abc import Listener, SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from ..core.errors import StreamfilterError, first_cause
from ..core.words import counted
from ._logging import get_logger
from .baselines import BaselineStore, GreenRun
from .checkpoint import CheckpointStore
from .config import ConfigError, DaemonConfig, SourceConfig, check_access, load_config, unused_sinks
from .expand import state_dir
from .files import FileSource
from .sinks import Sink, StdoutSink, open_sink
from .sockets import ConnectionNumbers, serve_socket_source
from .stream import LiveStream, archived_stream
from .systemd import Notifier, listen_fds
from .totals import Totals
from .unix import SocketInUseError, bind_unix

__all__ = ("run_daemon",)

READ_BYTES = 1 << 20
STATUS_SECONDS = 2.0  # how often STATUS= is sent to systemd


def _open_stream(
    source: SourceConfig,
    sinks: list[Sink],
    totals: Totals,
    name: str,
    query: str | None = None,
    extra: dict[str, object] | None = None,
) -> LiveStream:
    """The stream of a socket source's connection, or (``extra``: its ``run``, ``command`` and
    ``cwd``) of a run in an envelope in it, with its own ``query``; a run whose ``run-start`` named
    its command and directory is weighed against its last green run and stores its own when it
    exits 0 (``source.baselines``)."""
    if query:
        source = replace(source, filter=replace(source.filter, query=query))
    command, cwd = (extra or {}).get("command"), (extra or {}).get("cwd")
    green = None
    if source.baselines and isinstance(command, str) and isinstance(cwd, str):
        green = GreenRun(BaselineStore(), command, cwd)
    # a run in an envelope: its end applies the tail rule
    baseline = green.baseline if green is not None else None
    stream = archived_stream(source, sinks, name, totals, extra, hold_tail=extra is not None, baseline=baseline)
    if green is not None:
        stream.filter.collector = green.collector
        stream.on_green = lambda: _save(green, name)
    return stream


def _save(green: GreenRun, stream: str) -> None:
    """A run in an envelope exited 0: store its baseline (logged if it cannot be)."""
    try:
        green.save()
    except OSError as exc:
        get_logger().warning("baseline.not_stored", stream=stream, error=str(exc.strerror or exc))


async def _socket_source(
    source: SourceConfig,
    sinks: list[Sink],
    tg: TaskGroup,
    totals: Totals,
    numbers: ConnectionNumbers,
    inherited: socket.socket | None,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    log = get_logger().bind(source=source.name)
    listener: Listener[SocketStream]
    if inherited is not None:  # socket activation: systemd owns the path or port
        sock = socket.socket(fileno=os.dup(inherited.fileno()))  # a reload takes its own copy
        sock.setblocking(False)
        listener = await SocketListener.from_socket(sock)
        where = f"{source.type} socket from systemd ({source.name})"
    else:
        where = source.path if source.type == "unix" else source.address
        try:
            if source.type == "unix":
                listener = await bind_unix(source.path, source.mode, source.group)
            else:
                host, _, port = source.address.rpartition(":")
                listener = await anyio.create_tcp_listener(local_host=host, local_port=int(port))
                bound = listener.extra(SocketAttribute.local_address)  # the port chosen for port 0
                where = f"[{bound[0]}]:{bound[1]}" if ":" in str(bound[0]) else f"{bound[0]}:{bound[1]}"
        except OSError as exc:
            raise StreamfilterError(
                f"source {source.name!r}: cannot listen on {where}: {exc.strerror or exc}"
            ) from None
        except SocketInUseError as exc:  # (its message names the path)
            raise StreamfilterError(f"source {source.name!r}: {exc}") from None
    log.info("source.opened", listen=where)
    task_status.started()
    try:
        async with listener:
            await serve_socket_source(
                listener,
                source.name,
                lambda name, query=None, extra=None: _open_stream(source, sinks, totals, name, query, extra),
                source.max_line_bytes,
                tg,
                lambda: numbers.next(source.name),
            )
    finally:
        if source.type == "unix" and inherited is None:
            try:
                os.unlink(source.path)
            except FileNotFoundError:
                pass


def _streams_at_once(source: SourceConfig) -> bool:
    """Whether ``source`` may have several streams: a socket's connections, a glob's files."""
    return source.type in ("unix", "tcp", "nats") or (source.type == "file" and glob.has_magic(source.path))


async def _stdin_source(
    source: SourceConfig,
    sinks: list[Sink],
    totals: Totals,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    live = archived_stream(source, sinks, source.name, totals)
    if sys.stdin is None:  # (started with its standard input closed: fd 0 may be another file now)
        get_logger().warning("source.stdin_closed", source=source.name, hint="it reads nothing")
        task_status.started()
        await live.end()
        return
    fd = sys.stdin.fileno()
    # a regular file or /dev/null (a service's stdin under systemd) cannot be waited on (epoll
    # refuses them: EPERM), and is always readable
    given = os.fstat(fd)
    always = stat.S_ISREG(given.st_mode) or stat.S_ISBLK(given.st_mode)
    waits = not (always or os.path.samestat(given, os.stat(os.devnull)))
    task_status.started()
    try:
        while True:
            due = live.due()
            if not waits:
                await anyio.lowlevel.checkpoint()  # (the other sources and sinks go on between reads)
            elif due is not None:
                with anyio.move_on_after(max(0.0, due - time.monotonic())) as scope:
                    await anyio.wait_readable(fd)
                if scope.cancelled_caught:
                    await live.tick()
                    continue
            else:
                await anyio.wait_readable(fd)
            data = os.read(fd, READ_BYTES)
            if not data:
                break
            await live.feed(data)
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            await live.end()


class _Running:
    """The sources and sinks of one config, running in their own task group."""

    def __init__(
        self, config: DaemonConfig, totals: Totals, inherited: dict[str, socket.socket], before: _Running | None = None
    ) -> None:
        self.config = config
        # standard output outlives a reload: its ``==> NAME <==`` labels go on from the last config's
        stdout = [s for s in before.sinks.values() if isinstance(s, StdoutSink)] if before else []
        self._stdout_labels = (stdout[0].last_stream, stdout[0].fresh) if stdout else None
        self.totals = totals
        self.numbers: ConnectionNumbers = before.numbers if before else ConnectionNumbers(state_dir())
        self.inherited = inherited
        self.scope = anyio.CancelScope()
        self.finished = anyio.Event()
        self.sinks: dict[str, Sink] = {}
        self.files: list[FileSource] = []
        self.checkpoints: CheckpointStore | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open sinks, then sources; report started; run until ``stop``."""
        try:
            with self.scope:
                async with anyio.create_task_group() as sinks_tg:
                    try:
                        await self._run(sinks_tg, task_status)
                    finally:
                        with anyio.CancelScope(shield=True):
                            for sink in self.sinks.values():
                                await sink.aclose()
                        sinks_tg.cancel_scope.cancel()
        finally:
            if self.checkpoints is not None:
                self.checkpoints.close()  # the next config's sources claim them again
            self.finished.set()

    async def _run(self, sinks_tg: TaskGroup, task_status: TaskStatus[None]) -> None:
        checkpoints = None
        if any(s.type == "file" and s.checkpoint for s in self.config.sources):
            checkpoints = self.checkpoints = CheckpointStore(state_dir())
            for source in self.config.sources:
                if source.type == "file" and source.checkpoint:
                    checkpoints.claim(source.name)  # before anything is opened or read
        for name in unused_sinks(self.config):
            get_logger().warning("config.unused_sink", sink=name, hint="no source lists it in its sinks")
        for finding in check_access(self.config):
            get_logger().warning("config.socket_access", finding=finding)
        used = {name for s in self.config.sources for name in s.sinks}
        for sink_config in self.config.sinks:
            if sink_config.name in used:
                if sink_config.type == "nats":
                    from .nats.sink import NatsSink  # (nats-py loads only for a config that has one)

                    nats = self.sinks[sink_config.name] = NatsSink(sink_config)
                    await nats.start()
                    continue
                try:
                    self.sinks[sink_config.name] = await open_sink(sink_config, sinks_tg, self.totals)
                except OSError as exc:
                    raise StreamfilterError(
                        f"sink {sink_config.name!r}: cannot open {sink_config.path}: {exc.strerror or exc}"
                    ) from None
                except SocketInUseError as exc:  # (its message names the path)
                    raise StreamfilterError(f"sink {sink_config.name!r}: {exc}") from None
        for name, sink in self.sinks.items():
            if isinstance(sink, StdoutSink) and self._stdout_labels is not None:
                sink.last_stream, sink.fresh = self._stdout_labels
            writers = [s for s in self.config.sources if name in s.sinks]
            sink.shared = len(writers) > 1 or any(_streams_at_once(s) for s in writers)
        # sockets first: one that is taken (another daemon has it) fails the start before any
        # file is opened, read or checkpointed, and before a directory watch starts (its thread
        # only sees a cancel at its next event or timeout, seconds later)
        order = sorted(self.config.sources, key=lambda s: s.type not in ("unix", "tcp"))  # (stable)
        async with anyio.create_task_group() as tg:
            for source in order:
                sinks = [self.sinks[name] for name in source.sinks]
                cps = checkpoints if source.checkpoint else None
                if source.type == "file":
                    self.files.append(FileSource(source, sinks, cps, tg, self.totals))
                    await tg.start(self.files[-1].run)
                elif source.type in ("unix", "tcp"):
                    inherited = self.inherited.get(source.name)
                    await tg.start(_socket_source, source, sinks, tg, self.totals, self.numbers, inherited)
                elif source.type == "nats":
                    from .nats.source import serve_nats_source  # (nats-py loads only for a config that has one)

                    await tg.start(serve_nats_source, source, sinks, self.totals)
                else:
                    await tg.start(_stdin_source, source, sinks, self.totals)
            get_logger().info("daemon.ready", config=self.config.path, sources=len(self.config.sources))
            task_status.started()

    def stop(self) -> None:
        """Stop every source; each writes what it holds (see ``FileFollower.run``), but to a sink
        waiting for room (a full disk), which gives up."""
        for files in self.files:
            files.stop_watching()
        for sink in self.sinks.values():
            sink.stopping()
        self.scope.cancel()


async def run_daemon(config: DaemonConfig, stop: anyio.Event | None = None) -> int:
    """Run ``config`` until SIGTERM/SIGINT (or ``stop`` is set, for a daemon run in-process); return 0.

    Under systemd: ``READY=1`` once every source is open, ``STATUS=`` with the counts every
    ``STATUS_SECONDS``, ``WATCHDOG=1`` from the event loop, ``RELOADING=1``/``READY=1`` around a
    reload, ``STOPPING=1`` before draining; unix and TCP sources take the listening sockets
    systemd passes whose ``FileDescriptorName=`` is the source's name.

    With ``[metrics]``, ``/metrics`` is served on its address from the start to the end.

    Raises:
        StreamfilterError: a source or sink could not be opened at start-up (the message
            names it, its path or address, and why; ``SocketInUseError`` for a taken socket),
            or the metrics address cannot be listened on.
    """
    _more_open_files()
    totals = Totals()
    if not config.metrics:
        return await _run(config, stop, totals)
    from .metrics import MetricsServer  # (prometheus-client loads only for a config that has it)

    # a change of [metrics] takes a restart: a reload keeps the endpoint
    metrics = MetricsServer(config.metrics, totals)
    get_logger().info("metrics.serving", address=metrics.address, path="/metrics")
    try:
        return await _run(config, stop, totals)
    finally:
        metrics.close()


def _more_open_files() -> None:
    """Raise the soft limit of open files to the hard one: a followed file holds a descriptor
    while it is followed, and a glob over a folder where job logs pile up passes the usual soft
    limit of 1024 (systemd's default) long before the hard one (as systemd.exec(5) advises for a
    program that needs more, and uses no select())."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # (an unlimited hard limit is over the kernel's nr_open)
            get_logger().info("daemon.open_files_limit", soft=soft, hard=hard)


async def _run(config: DaemonConfig, stop: anyio.Event | None, totals: Totals) -> int:
    log = get_logger()
    notifier = Notifier()
    inherited = listen_fds()
    send, signals = anyio.create_memory_object_stream[int](8)
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as received:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_relay, received, send, stop)
            tg.start_soon(notifier.watchdog)
            running = _Running(config, totals, inherited)
            await tg.start(running.run)
            if not config.path:  # follow: its one sink is standard output, and with no reader it is done
                tg.start_soon(_stop_when_unread, list(running.sinks.values()), send.clone())
            notifier.send("READY=1", f"STATUS=running {counted(len(config.sources), 'source')}")
            tg.start_soon(_report_status, notifier, totals)
            async for signum in signals:
                if signum != signal.SIGHUP or not config.path:  # no file to reload (follow): stop
                    break
                notifier.reloading()
                try:
                    new = load_config(config.path)
                except ConfigError as exc:
                    log.error("config.invalid", error=str(exc), kept=config.path)
                    notifier.send("READY=1", "STATUS=reload failed: the config does not check; the old one runs")
                    continue
                log.info("daemon.reloading", config=config.path)
                running.stop()
                await running.finished.wait()
                old, running = running, _Running(new, totals, inherited, running)
                failed: BaseException | None = None
                try:
                    await tg.start(running.run)
                except* StreamfilterError as group:  # (from the task groups inside, nested)
                    failed = first_cause(group)
                if failed is not None:
                    # the file checked, but a sink or source of it cannot be opened: the old
                    # config starts again (its files resume from their checkpoints)
                    log.error("reload.failed", error=str(failed), kept=config.path)
                    running = _Running(config, totals, inherited, old)
                    await tg.start(running.run)
                    notifier.send("READY=1", "STATUS=reload failed: a source or sink cannot open; the old config runs")
                    continue
                config = new
                notifier.send("READY=1", f"STATUS=reloaded; running {counted(len(config.sources), 'source')}")
                log.info("daemon.reloaded", config=config.path)
            notifier.send("STOPPING=1")
            log.info("daemon.stopping", signal=signal.Signals(signum).name)
            running.stop()
            tg.start_soon(_second_signal, signals)
            await running.finished.wait()
            tg.cancel_scope.cancel()
    log.info("daemon.stopped", totals=totals.describe())
    notifier.close()
    return 0


async def _relay(received: AsyncIterator[int], send: MemoryObjectSendStream[int], stop: anyio.Event | None) -> None:
    """Signals, and ``stop`` as a SIGTERM, into one stream of requests."""
    async with anyio.create_task_group() as tg:
        if stop is not None:

            async def on_stop() -> None:
                await stop.wait()
                await send.send(signal.SIGTERM)

            tg.start_soon(on_stop)
        async for signum in received:
            await send.send(signum)


async def _stop_when_unread(sinks: list[Sink], send: MemoryObjectSendStream[int]) -> None:
    """Once every sink is a standard output whose reader went away (``follow | head``), ask to
    stop as a SIGPIPE would."""
    gone = [sink.gone for sink in sinks if isinstance(sink, StdoutSink)]
    if not gone or len(gone) != len(sinks):
        return
    for event in gone:
        await event.wait()
    await send.send(signal.SIGPIPE)


async def _report_status(notifier: Notifier, totals: Totals) -> None:
    if not notifier.enabled:
        return
    while True:
        await anyio.sleep(STATUS_SECONDS)
        notifier.send(f"STATUS={totals.describe()}")


async def _second_signal(signals: AsyncIterator[int]) -> None:
    """A second stop signal while stopping: exit at once."""
    async for signum in signals:
        if signum != signal.SIGHUP:
            get_logger().warning("daemon.killed", signal=signal.Signals(signum).name)
            os._exit(1)
