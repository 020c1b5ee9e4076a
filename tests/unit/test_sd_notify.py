"""sd_notify and socket activation helpers, against real sockets, in-process."""

from __future__ import annotations

import itertools
import os
import socket
import time
from pathlib import Path

import anyio
import pytest

from streamfilter.live.systemd import Notifier, listen_fds


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def receiver(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    return sock


def drain(sock: socket.socket) -> list[tuple[float, bytes]]:
    got = []
    while True:
        try:
            got.append((time.monotonic(), sock.recv(4096)))
        except BlockingIOError:
            return got


@pytest.mark.anyio
async def test_watchdog_pings_from_the_loop_stop_while_the_loop_is_blocked(tmp_path: Path) -> None:
    sock = receiver(tmp_path / "n.sock")
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "n.sock"), "WATCHDOG_USEC": "100000"})
    assert notifier.watchdog_seconds == 0.1
    pings: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(notifier.watchdog)
        for _ in range(10):
            await anyio.sleep(0.05)
            pings += [t for t, m in drain(sock) if m == b"WATCHDOG=1"]
        time.sleep(1.0)  # noqa: ASYNC251 - the event loop is stuck on purpose: no task runs, no ping goes out
        pings += [t for t, m in drain(sock) if m == b"WATCHDOG=1"]
        await anyio.sleep(0.2)
        pings += [t for t, m in drain(sock) if m == b"WATCHDOG=1"]
        tg.cancel_scope.cancel()
    gaps = [b - a for a, b in itertools.pairwise(pings)]
    assert max(gaps) >= 0.9  # the stuck second shows as one long gap
    assert sorted(gaps)[len(gaps) // 2] < 0.15  # otherwise every WATCHDOG_USEC/2
    notifier.close()


def test_abstract_names_pids_and_no_socket() -> None:
    assert Notifier({"NOTIFY_SOCKET": "@sf"}).address == "\0sf"
    assert Notifier({"NOTIFY_SOCKET": "/run/x"}).address == "/run/x"
    assert Notifier({"NOTIFY_SOCKET": "@sf", "WATCHDOG_USEC": "500000", "WATCHDOG_PID": "1"}).watchdog_seconds is None
    mine = {"NOTIFY_SOCKET": "@sf", "WATCHDOG_USEC": "500000", "WATCHDOG_PID": str(os.getpid())}
    assert Notifier(mine).watchdog_seconds == 0.5
    off = Notifier({})
    assert not off.enabled
    off.send("READY=1")  # outside systemd: nothing, no error


def test_listen_fds_only_for_this_pid_and_by_name() -> None:
    a, b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    assert listen_fds({"LISTEN_PID": "1", "LISTEN_FDS": "2"}) == {}
    # fds 3 and 4 must be the passed sockets: move ours there for the duration of the test
    saved = [_dup_or_none(3), _dup_or_none(4)]
    try:
        os.dup2(a.fileno(), 3)
        os.dup2(b.fileno(), 4)
        env = {"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "2", "LISTEN_FDNAMES": "tools:builds"}
        got = listen_fds(env)
        assert set(got) == {"tools", "builds"} and got["tools"].fileno() == 3
        assert "LISTEN_FDS" not in env  # children do not take them too
        for sock in got.values():
            sock.detach()
    finally:
        for target, fd in zip((3, 4), saved, strict=True):
            if fd is None:
                os.close(target)
            else:
                os.dup2(fd, target)
                os.close(fd)
        a.close()
        b.close()


def _dup_or_none(fd: int) -> int | None:
    try:
        return os.dup(fd)
    except OSError:
        return None
