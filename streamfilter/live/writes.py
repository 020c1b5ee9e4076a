"""Writing output: every byte of it, through a stop signal, escaped on a terminal."""

from __future__ import annotations

import codecs
from typing import IO, BinaryIO

from ..core.errors import StreamfilterError

__all__ = ("Escaped", "flush_out", "write_all")


class Escaped:
    """A terminal: what is written to it has its control bytes and invalid UTF-8 shown as
    ``\\xNN`` (``terminal.escape_controls``), so a log cannot set the title or clear the screen;
    a character split between two writes is kept until the next (or ``flush``)."""

    def __init__(self, out: BinaryIO) -> None:
        from .terminal import escape_control_text

        self._out = out
        self._escape = escape_control_text
        self._decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    def write(self, data: bytes | memoryview) -> int:
        write_all(self._out, self._escape(self._decoder.decode(bytes(data))))
        return len(data)

    def flush(self) -> None:
        write_all(self._out, self._escape(self._decoder.decode(b"", final=True)))
        flush_out(self._out)


def write_all(out: IO[bytes], data: bytes) -> None:
    """Write all of ``data``. A stop signal that interrupts a blocking write to a pipe makes
    ``BufferedWriter.write`` return early with a short count (the rest is not buffered):
    the rest is written again, so no line of output is cut."""
    try:
        view = memoryview(data)
        while view:
            written = out.write(view)
            view = view[written if written is not None else len(view) :]
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StreamfilterError(f"cannot write output: {exc.strerror or exc}") from None


def flush_out(out: IO[bytes]) -> None:
    """Flush ``out``. Raises ``BrokenPipeError`` as it is; another ``OSError`` as ``StreamfilterError``."""
    try:
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StreamfilterError(f"cannot write output: {exc.strerror or exc}") from None
