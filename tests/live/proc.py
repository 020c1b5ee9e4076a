"""A running ``streamfilter`` subprocess (follow, daemon) whose stdout and stderr go to files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def jsonl_events(path: Path) -> list[dict[str, Any]]:
    """The whole JSON lines of ``path`` so far (none if it is not there yet)."""
    data = path.read_bytes() if path.exists() else b""
    data = data[: data.rfind(b"\n") + 1]  # (a line the process is still writing is not whole yet)
    return [json.loads(line) for line in data.splitlines() if line.strip()]


class Live:
    """``python -m streamfilter ARGS`` started now; read its output while it runs."""

    running: list[Live] = []  # noqa: RUF012 - every started process, killed after its test

    @classmethod
    def kill_all(cls) -> None:
        """Kill what a failed test left running."""
        for live in cls.running:
            if live.proc.poll() is None:
                live.proc.kill()
                live.proc.wait()
        cls.running.clear()

    def __init__(self, tmp: Path, *args: str, env: dict[str, str] | None = None, stdin: Any = None) -> None:
        self.out_path = tmp / f"out-{time.monotonic_ns()}.txt"
        self.err_path = self.out_path.with_suffix(".err")
        self._out = open(self.out_path, "wb")
        self._err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamfilter", *args],
            stdout=self._out,
            stderr=self._err,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        Live.running.append(self)

    def output(self) -> bytes:
        return self.out_path.read_bytes()

    def events(self, path: Path | None = None) -> list[dict[str, Any]]:
        return jsonl_events(path or self.out_path)

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in self.err_path.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"event": "raw", "text": line.decode("utf-8", "replace")})
        return out

    def wait_for(self, check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
        """Poll ``check`` until it returns something true; fail with the output after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = check()
            if result:
                return result
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        result = check()
        if result:
            return result
        raise AssertionError(
            f"timed out waiting for {what or check}; exit {self.proc.poll()}\n"
            f"stdout:\n{self.output().decode(errors='replace')[-3000:]}\n"
            f"stderr:\n{self.err_path.read_text(errors='replace')[-3000:]}"
        )

    def log_event(self, name: str, timeout: float = 10.0) -> dict[str, Any]:
        return self.wait_for(lambda: next((e for e in self.logs() if e.get("event") == name), None), timeout, name)  # type: ignore[no-any-return]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._out.close()
            self._err.close()
        return code
