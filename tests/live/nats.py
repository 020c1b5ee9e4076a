"""A real ``nats-server`` (JetStream on, the partition mapping of docs/fleet.md) on loopback for a test."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

# Debian puts it in /usr/sbin, which a user's PATH may lack
BINARY = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """``nats-server`` started in ``folder`` with ``partitions`` partitions on ``logs.*`` (None: a bare
    server, without the mapping) and the server's ``max_payload`` (bytes, None: its default, 1 MiB);
    ``stop()`` ends it."""

    def __init__(self, folder: Path, partitions: int | None, max_payload: int | None = None) -> None:
        if BINARY is None:
            pytest.skip("nats-server is not installed (apt-get install nats-server; .ci/run does)")
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / "nats.conf"
        text = f'listen: 127.0.0.1:{self.port}\njetstream {{ store_dir: "{folder / "js"}" }}\n'
        if partitions is not None:
            text += f'mappings = {{ "logs.*": "logs.{{{{partition({partitions},1)}}}}.{{{{wildcard(1)}}}}" }}\n'
        if max_payload is not None:
            text += f"max_payload: {max_payload}\n"
        config.write_text(text)
        self._config, self._folder = config, folder
        self.log = open(folder / "nats.log", "ab")  # (closed by stop())
        self._start()

    def restart(self, down_seconds: float = 0.0) -> None:
        """Kill the server (as a crash would) and start it again on its port and store, after
        ``down_seconds``."""
        self.proc.kill()
        self.proc.wait()
        time.sleep(down_seconds)
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen([BINARY, "-c", str(self._config)], stdout=self.log, stderr=subprocess.STDOUT)
        folder = self._folder
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"nats-server did not start: {(folder / 'nats.log').read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def worker_config(
    tmp: Path, url: str, partitions: int, extra: str = "", source_extra: str = "", lease_seconds: int = 3
) -> Path:
    """A worker's config: a nats source (short leases and ack wait for a test; ``source_extra`` keys
    added) and a nats sink (``extra`` tables after it)."""
    path = tmp / f"worker-{os.getpid()}-{time.monotonic_ns()}.toml"
    path.write_text(
        f'[[source]]\nname = "fleet"\ntype = "nats"\nservers = ["{url}"]\npartitions = {partitions}\n'
        f'lease_seconds = {lease_seconds}\nack_wait_seconds = 2\n{source_extra}sinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "nats"\nservers = ["{url}"]\n{extra}'
    )
    return path
