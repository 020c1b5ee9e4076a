"""systemd integration: sd_notify (readiness, status, watchdog, reload, stop) and socket activation.

The notify protocol is one datagram per message to ``$NOTIFY_SOCKET`` (a path, or ``@name`` for
an abstract socket), as sd_notify(3) describes; socket activation hands over listening sockets as
fds 3.. with ``$LISTEN_FDS``, ``$LISTEN_PID`` and ``$LISTEN_FDNAMES`` (sd_listen_fds(3)). Both are
a few lines over the standard ``socket`` module; the maintained binding (``systemd-python``)
needs libsystemd's headers to build, which this package does not want to require. Outside
systemd (no ``NOTIFY_SOCKET``, no ``LISTEN_FDS``) everything here is a no-op.
"""

from __future__ import annotations

import os
import socket
import time

import anyio

from ._logging import get_logger

__all__ = ("Notifier", "listen_fds")

SD_LISTEN_FDS_START = 3


class Notifier:
    """Sends sd_notify messages, and ``WATCHDOG=1`` every half of ``$WATCHDOG_USEC`` from the event loop.

    Args:
        environ: the environment to read (default ``os.environ``).

    The watchdog pings only if ``$WATCHDOG_PID`` is unset or is this process's pid. Send
    errors are logged once and otherwise ignored: the manager going away must not stop the
    daemon.
    """

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        name = env.get("NOTIFY_SOCKET", "")
        self.address = "\0" + name[1:] if name.startswith("@") else name
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or (pid.isdigit() and int(pid) == os.getpid())
        self.watchdog_seconds = int(usec) / 1e6 if usec.isdigit() and int(usec) > 0 and mine else None
        self._sock: socket.socket | None = None
        self._failed = False
        if self.address:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    @property
    def enabled(self) -> bool:
        """Whether a manager listens (``$NOTIFY_SOCKET`` is set)."""
        return self._sock is not None

    def send(self, *fields: str) -> None:
        """Send one message of ``KEY=VALUE`` fields (e.g. ``"READY=1"``, ``"STATUS=..."``)."""
        if self._sock is None:
            return
        try:
            self._sock.sendto("\n".join(fields).encode(), self.address)
        except OSError as exc:
            if not self._failed:
                get_logger().warning("notify.failed", socket=self.address.replace("\0", "@"), error=str(exc))
                self._failed = True

    def reloading(self) -> None:
        """``RELOADING=1`` with ``MONOTONIC_USEC`` (as ``Type=notify-reload`` wants)."""
        self.send("RELOADING=1", f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")

    async def watchdog(self) -> None:
        """Ping every half watchdog interval until cancelled; a stuck event loop stops the pings."""
        if self.watchdog_seconds is None or self._sock is None:
            return
        while True:
            self.send("WATCHDOG=1")
            await anyio.sleep(self.watchdog_seconds / 2)

    def close(self) -> None:
        """Close the notify socket."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def listen_fds(environ: dict[str, str] | None = None) -> dict[str, socket.socket]:
    """Sockets passed by systemd socket activation, by name (``FileDescriptorName=``; default ``unknown``).

    Only when ``$LISTEN_PID`` is this process; the variables are then removed so children do
    not take the sockets too.
    """
    env = os.environ if environ is None else environ
    if env.get("LISTEN_PID", "") != str(os.getpid()) or not env.get("LISTEN_FDS", "").isdigit():
        return {}
    count = int(env["LISTEN_FDS"])
    names = env.get("LISTEN_FDNAMES", "").split(":") if env.get("LISTEN_FDNAMES") else []
    sockets: dict[str, socket.socket] = {}
    for i in range(count):
        fd = SD_LISTEN_FDS_START + i
        os.set_inheritable(fd, False)
        name = names[i] if i < len(names) else "unknown"
        sockets[name] = socket.socket(fileno=fd)
    for key in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(key, None)
    return sockets
