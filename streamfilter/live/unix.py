"""Binding a unix socket path safely: its mode and group set before anyone can connect, a stale
socket file replaced, a live one or a non-socket never touched."""

from __future__ import annotations

import os
import socket
import stat

from anyio.abc import SocketListener

from ..core.errors import StreamfilterError
from ._logging import get_logger

__all__ = ("SocketInUseError", "bind_unix")


class SocketInUseError(StreamfilterError):
    """A unix socket path that cannot be taken: a live listener has it, or it is not a socket."""


async def bind_unix(path: str, mode: int = 0o600, group: int | None = None) -> SocketListener:
    """Listen on a unix socket at ``path`` with permission bits ``mode`` and group ``group`` (a gid;
    None: the process's) from the start: both are set before it listens, so no one connects first.

    A socket file left by a crashed process (connect is refused) is removed and bound
    again; a live one is never taken, and a path that is not a socket is never touched.
    The mode is set by the umask during ``bind``, so the socket is never more open than
    ``mode``.

    Raises:
        SocketInUseError: a live listener has ``path``, or ``path`` is not a socket.
        OSError: the socket cannot be created or bound, or given ``group`` (not a member: EPERM).
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
        if group is not None:
            try:
                os.chown(path, -1, group)
            except OSError:
                os.unlink(path)
                raise
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old)
    sock.listen(128)
    sock.setblocking(False)
    return await SocketListener.from_socket(sock)
