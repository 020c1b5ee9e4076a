"""Socket sources (unix and TCP) and the safe binding of unix socket paths.

Each connection is its own stream (its own line numbers, windows and statistics), filtered
while the connection is open; its end flushes what is pending, an unterminated last line
included. A line longer than the source's ``max_line_bytes`` keeps its first bytes and ends
with an ``[N bytes elided]`` marker: the connection stays open and memory stays bounded.
Reading waits while the sinks are full, so backpressure reaches the peer (its sends block).
"""

from __future__ import annotations

import os
import socket
import stat
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from anyio.abc import Listener, SocketAttribute, SocketListener, SocketStream, TaskGroup
from structlog.typing import FilteringBoundLogger

from ._logging import get_logger
from .errors import StreamfilterError

if TYPE_CHECKING:
    from .live import LiveStream

__all__ = ("LineCap", "SocketInUseError", "bind_unix", "serve_socket_source")

READ_BYTES = 1 << 16
FINISH_SECONDS = 10.0  # most time a closing connection's stream gets to write what it holds


class SocketInUseError(StreamfilterError):
    """A unix socket path that cannot be taken: a live listener has it, or it is not a socket."""


async def bind_unix(path: str, mode: int = 0o600) -> SocketListener:
    """Listen on a unix socket at ``path`` with permission bits ``mode`` from the start.

    A socket file left by a crashed process (connect is refused) is removed and bound
    again; a live one is never taken, and a path that is not a socket is never touched.
    The mode is set by the umask during ``bind``, so the socket is never more open than
    ``mode``.

    Raises:
        SocketInUseError: a live listener has ``path``, or ``path`` is not a socket.
        OSError: the socket cannot be created or bound.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(info.st_mode):
            raise SocketInUseError(f"{path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except ConnectionRefusedError:
            os.unlink(path)
            get_logger().info("socket.stale_removed", path=path)
        except FileNotFoundError:
            pass
        else:
            raise SocketInUseError(f"{path} is already in use by a live listener")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o777 & ~mode)
    try:
        sock.bind(path)
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old)
    sock.listen(128)
    sock.setblocking(False)
    return await SocketListener.from_socket(sock)


class LineCap:
    """Cuts lines longer than ``max_bytes``: the first ``max_bytes`` bytes, then ``[N bytes elided]``.

    ``feed(bytes) -> bytes`` (the bytes to pass on); bounded state. ``cut`` lists
    ``(line length in bytes)`` of each line cut since the last look, for a warning.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._run = 0  # bytes of the current line seen so far
        self.cut: list[int] = []

    def feed(self, chunk: bytes) -> bytes:
        """Pass ``chunk`` on, with the parts of over-long lines beyond the cap removed."""
        out = bytearray()
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            end = len(chunk) if nl < 0 else nl + 1
            piece = chunk[pos:end]
            body = len(piece) - (1 if nl >= 0 else 0)
            room = max(0, self.max_bytes - self._run)
            out += piece[: min(room, body)]
            self._run += body
            if nl >= 0:
                if self._run > self.max_bytes:
                    out += b" [%d bytes elided]" % (self._run - self.max_bytes)
                    self.cut.append(self._run)
                out += b"\n"
                self._run = 0
            pos = end
        return bytes(out)

    def flush(self) -> bytes:
        """End of the stream: the marker of a cut last line that had no newline."""
        if self._run > self.max_bytes:
            self.cut.append(self._run)
            marker = b" [%d bytes elided]" % (self._run - self.max_bytes)
            self._run = 0
            return marker
        return b""


async def serve_socket_source(
    listener: Listener[SocketStream],
    name: str,
    open_stream: Callable[[str], LiveStream],
    max_line_bytes: int,
    task_group: TaskGroup,
) -> None:
    """Accept connections on ``listener``; each is filtered as its own stream.

    Args:
        listener: a bound listener (``bind_unix``, a TCP listener, or one from systemd).
        name: the source's name; connection ``k`` is the stream ``NAME#k``.
        open_stream: ``(stream name) -> LiveStream``, called once per connection.
        max_line_bytes: the line cap (``LineCap``).
        task_group: where connection tasks run.
    """
    log = get_logger().bind(source=name)
    count = 0

    async def handle(conn: SocketStream) -> None:
        nonlocal count
        count += 1
        stream_name = f"{name}#{count}"
        peer = _peer(conn)
        log.info("connection.opened", stream=stream_name, peer=peer)
        live = open_stream(stream_name)
        cap = LineCap(max_line_bytes)
        try:
            async with conn:
                while True:
                    due = live.due()
                    timeout = max(0.0, due - time.monotonic()) if due is not None else None
                    data = b""
                    with anyio.move_on_after(timeout) if timeout is not None else anyio.CancelScope():
                        try:
                            data = await conn.receive(READ_BYTES)
                        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                            break
                    if data:
                        await live.feed(cap.feed(data))
                        _warn_cut(log, cap, stream_name, peer)
                    else:
                        await live.tick()
        finally:
            # the peer left or the daemon stops: what was received is decided and written
            with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_SECONDS):
                await live.feed(cap.flush())
                _warn_cut(log, cap, stream_name, peer)
                await live.end()
                log.info("connection.closed", stream=stream_name, peer=peer, lines=live.filter.stats.lines)

    await listener.serve(handle, task_group)


def _peer(conn: SocketStream) -> str:
    try:
        address = conn.extra(SocketAttribute.remote_address)
    except anyio.TypedAttributeLookupError:
        return "unix"
    if isinstance(address, tuple):
        return f"{address[0]}:{address[1]}"
    return str(address) or "unix"


def _warn_cut(log: FilteringBoundLogger, cap: LineCap, stream: str, peer: str) -> None:
    for length in cap.cut:
        log.warning("input.line_truncated", stream=stream, peer=peer, bytes=length, kept_bytes=cap.max_bytes)
    cap.cut.clear()
