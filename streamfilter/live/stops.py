"""Stop signals while an input is read: SIGINT, SIGTERM, SIGHUP and SIGQUIT end the reading between chunks.

Apart from the filtering stage (``batch``): ``run`` takes them before it knows whether its
command's output needs a filter.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from typing import BinaryIO, ClassVar

__all__ = ("StopSignals",)


class _Stop(Exception):
    """A stop signal arrived while waiting for input."""


class StopSignals:
    """SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the input between chunks, never in the middle of one.

    The filter's state stays whole, so what was read is still decided and written; a signal
    that comes while waiting for input interrupts the wait (no bytes of that read are taken).
    A signal ignored when we started (``nohup``, a shell's background job) stays ignored.
    """

    STATUS: ClassVar[Mapping[int, int]] = {
        signal.SIGINT: 130,
        signal.SIGTERM: 143,
        signal.SIGHUP: 129,
        signal.SIGQUIT: 131,
    }

    def __init__(self) -> None:
        self.received: int | None = None
        self.waiting = False
        for signum in self.STATUS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.received = signum
        if self.waiting:
            raise _Stop

    def read(self, handle: BinaryIO, size: int) -> bytes:
        """The next chunk of at most ``size`` bytes, or b"" once a stop signal came."""
        if self.received is not None:
            return b""
        self.waiting = True
        try:
            chunk: bytes = handle.read1(size)  # type: ignore[attr-defined]  # what there is, up to size
            return chunk
        except _Stop:
            return b""
        finally:
            self.waiting = False
