"""Stop signals while an input is read: SIGINT, SIGTERM, SIGHUP and SIGQUIT end the reading between chunks.

Apart from the filtering stage (``batch``): ``run`` takes them before it knows whether its
command's output needs a filter.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping
from typing import IO, ClassVar

__all__ = ("STOP_SIGNALS", "StopSignals", "not_ignored")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def not_ignored(signals: Iterable[signal.Signals]) -> tuple[signal.Signals, ...]:
    """``signals`` but those ignored now: a signal ignored when we started (``nohup``, a shell's
    background job, ``trap '' INT``) stays ignored, by us and by a command we start, which inherits
    that through exec as it would from the shell. Call it before taking any of them."""
    return tuple(s for s in signals if signal.getsignal(s) != signal.SIG_IGN)


class _Stop(Exception):
    """A stop signal arrived while waiting for input."""


class StopSignals:
    """SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the input between chunks, never in the middle of one.

    The filter's state stays whole, so what was read is still decided and written; a signal
    that comes while waiting for input interrupts the wait (no bytes of that read are taken).
    A signal ignored when we started (``nohup``, a shell's background job) stays ignored.
    """

    STATUS: ClassVar[Mapping[int, int]] = {s: 128 + s for s in STOP_SIGNALS}  # (a shell's status)

    def __init__(self) -> None:
        self.received: int | None = None
        self.waiting = False
        for signum in not_ignored(STOP_SIGNALS):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.received = signum
        if self.waiting:
            raise _Stop

    def read(self, handle: IO[bytes], size: int) -> bytes:
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
