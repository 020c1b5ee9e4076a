"""sd_notify against a real AF_UNIX datagram socket standing in for systemd; socket activation."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.live.proc import Live


class NotifyListener:
    """Collects (monotonic time, message) of every datagram sent to it."""

    def __init__(self, address: str) -> None:
        self.name = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.settimeout(0.05)
        self.messages: list[tuple[float, str]] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            for field in data.decode().split("\n"):
                self.messages.append((time.monotonic(), field))

    def fields(self) -> list[str]:
        return [m for _, m in self.messages]

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


def daemon_config(tmp: Path, log: Path) -> Path:
    config = tmp / "sf.toml"
    config.write_text(f'[[source]]\nname = "app"\ntype = "file"\npath = "{log}"\nstart_at = "beginning"\n')
    return config


@pytest.mark.parametrize("kind", ["path", "abstract"])
def test_B32_ready_status_watchdog_reload_stopping_in_order(tmp_path: Path, kind: str) -> None:
    address = str(tmp_path / "notify.sock") if kind == "path" else f"@sf-notify-{os.getpid()}-{time.monotonic_ns()}"
    listener = NotifyListener(address)
    log = tmp_path / "app.log"
    log.write_bytes(b"INFO hello\n")
    env = {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "500000", "XDG_STATE_HOME": str(tmp_path / "state")}
    live = Live(tmp_path, "daemon", "--config", str(daemon_config(tmp_path, log)), env=env)
    try:
        live.wait_for(lambda: "READY=1" in listener.fields(), 10, "READY=1")
        ready_at = next(t for t, m in listener.messages if m == "READY=1")
        assert live.log_event("daemon.ready")  # ready only after the sources are open
        # load while pinging: the file grows by 20 MB
        with log.open("ab") as f:
            for _ in range(20):
                f.write(b"INFO busy line with some words in it\n" * 27_000)
        live.wait_for(lambda: any(m.startswith("STATUS=app:") for m in listener.fields()), 10, "STATUS")
        time.sleep(1.0)
        live.proc.send_signal(signal.SIGHUP)
        live.wait_for(lambda: listener.fields().count("READY=1") == 2, 10, "READY after reload")
        assert live.stop() == 0
        time.sleep(0.2)
    finally:
        listener.close()
    fields = listener.fields()
    assert fields[0] == "READY=1" or fields.index("READY=1") < fields.index("STOPPING=1")
    reload_at = fields.index("RELOADING=1")
    assert any(f.startswith("MONOTONIC_USEC=") for f in fields[reload_at : reload_at + 2])
    assert fields.index("READY=1", reload_at) > reload_at
    assert fields[-1] == "STOPPING=1" or fields.index("STOPPING=1") > reload_at
    pings = [t for t, m in listener.messages if m == "WATCHDOG=1" and t > ready_at]
    gaps = [b - a for a, b in itertools.pairwise(pings)]
    # every WATCHDOG_USEC/2 = 0.25 s; under load the loop may be late by one feed, never past the deadline
    assert len(pings) >= 6 and max(gaps) < 0.5
    status = [m for m in fields if m.startswith("STATUS=app:")]
    assert "lines in" in status[-1] and "kept" in status[-1]


def test_B32_no_watchdog_for_another_pid_and_nothing_without_notify_socket(tmp_path: Path) -> None:
    address = str(tmp_path / "notify.sock")
    listener = NotifyListener(address)
    log = tmp_path / "app.log"
    log.write_bytes(b"INFO hello\n")
    env = {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"}
    live = Live(tmp_path, "daemon", "--config", str(daemon_config(tmp_path, log)), env=env)
    try:
        live.wait_for(lambda: "READY=1" in listener.fields(), 10)
        time.sleep(0.5)
        assert live.stop() == 0
    finally:
        listener.close()
    assert "WATCHDOG=1" not in listener.fields()
    plain = Live(tmp_path, "daemon", "--config", str(daemon_config(tmp_path, log)), env={"NOTIFY_SOCKET": ""})
    plain.log_event("daemon.ready")
    assert plain.stop() == 0
    assert not [e for e in plain.logs() if e.get("level") in ("warning", "error")]


def test_socket_activation_uses_the_inherited_socket_and_touches_no_path(tmp_path: Path) -> None:
    path = tmp_path / "activated.sock"
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(path))
    listening.listen(8)
    out = tmp_path / "out.jsonl"
    config = tmp_path / "sf.toml"
    # the config names another path: with socket activation it is not bound or touched
    config.write_text(
        f'[defaults]\nquery = "failure"\n[[source]]\nname = "tools"\ntype = "unix"\npath = "{tmp_path}/unused.sock"\n'
        f'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n'
    )
    fd = listening.fileno()
    script = (
        f"exec 3<&{fd}; export LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=tools; "
        f"exec {sys.executable} -m streamfilter daemon --config {config}"
    )
    err = open(tmp_path / "err.txt", "wb")
    proc = subprocess.Popen(["bash", "-c", script], pass_fds=(fd,), stderr=err)
    try:
        deadline = time.monotonic() + 10
        while b"daemon.ready" not in (tmp_path / "err.txt").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        listening.close()  # the daemon holds its own copy
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(path))
            client.sendall(b"ERROR activated failure\n")
        while b"activated failure" not in (out.read_bytes() if out.exists() else b"") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b"activated failure" in out.read_bytes()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        err.close()
    assert path.exists()  # the activated socket's path belongs to systemd: not unlinked
    assert not (tmp_path / "unused.sock").exists()


def test_the_shipped_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    root = Path(__file__).resolve().parents[2] / "systemd"
    streamfilter = Path(sys.executable).parent / "streamfilter"
    for name in ("streamfilter.service", "streamfilter.socket"):
        text = (root / name).read_text().replace("/usr/local/bin/streamfilter", str(streamfilter))
        (tmp_path / name).write_text(text)
    done = subprocess.run(
        [analyze, "verify", str(tmp_path / "streamfilter.socket"), str(tmp_path / "streamfilter.service")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done.stdout + done.stderr
    unit = (root / "streamfilter.service").read_text()
    for setting in ("Type=notify", "NotifyAccess=main", "WatchdogSec=", "RestartPreventExitStatus=78", "ExecReload="):
        assert setting in unit
