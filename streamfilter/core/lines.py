"""Bytes in arbitrary chunks -> complete lines (stage 1).

Lines are split on ``\\n`` only, as the corpus numbers them: ``\\r\\n`` and a lone
``\\r`` stay inside the line's bytes. Nothing is decoded here, so invalid UTF-8,
NUL bytes and a multi-byte character split across two chunks cannot raise.
"""

from __future__ import annotations

import numpy as np

from .records import LineBlock

__all__ = ("MAX_BLOCK_LINES", "LineSplitter", "bounded", "utf8_cut")

# lines of a block at most (``bounded``): the stages' per-line arrays peak at about 600 bytes a
# line, so a read of 1 MiB of blank lines (a million lines) took 650 MB (helper-69)
MAX_BLOCK_LINES = 1 << 16
# a line is held whole up to this many bytes (or ``max_line_bytes``, if more) without its line end;
# a longer one is let out there, decided as a line of its own on its first bytes, and its rest in
# pieces of this size that take its decision (``StreamFilter.feed``): a progress bar redrawn by
# carriage returns for an hour, or a binary without a newline, otherwise held the stream's memory
# at several times its size (helper-77)
HELD_LINE_BYTES = 8 << 20


def utf8_cut(data: bytes) -> int:
    """Bytes of ``data`` up to its last whole UTF-8 character: ``len(data)`` less the 1-3 bytes of a
    multi-byte character begun at its end and not finished (other bytes, valid or not, count whole)."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: the character's first byte
            size = 2 if 0xC0 <= byte < 0xE0 else 3 if 0xE0 <= byte < 0xF0 else 4 if 0xF0 <= byte < 0xF8 else 1
            return n - back if size > back else n
    return n


def bounded(block: LineBlock | None) -> list[LineBlock]:
    """``block`` as consecutive blocks of at most ``MAX_BLOCK_LINES`` lines each (none for None);
    a block's lines decide nothing, so the filter's output is the same however it is cut."""
    if block is None:
        return []
    n = block.n_lines
    if n <= MAX_BLOCK_LINES:
        return [block]
    parts = []
    for a in range(0, n, MAX_BLOCK_LINES):
        b = min(n, a + MAX_BLOCK_LINES)
        lo = int(block.ends[a - 1]) if a else 0
        data = block.data[lo : int(block.ends[b - 1])]
        parts.append(LineBlock(data, block.first_line + a, block.start_byte + lo, block.ends[a:b] - lo))
    return parts


class LineSplitter:
    """Incremental line splitter: ``feed(bytes) -> LineBlock | None``, ``flush()``.

    A partial last line is held until its ``\\n`` arrives, until ``flush``, or until
    ``force`` lets it out early (a live stream gone quiet). The held bytes are the
    only state, so memory is bounded by the longest line; a line is never cut (the
    scoring stage caps what it reads of a long line; sources cap what they take).

    Args:
        first_line: 1-based number of the first line (a stream resumed from a checkpoint).
        start_byte: stream offset of the first byte.
    """

    def __init__(self, first_line: int = 1, start_byte: int = 0) -> None:
        self._partial = bytearray()
        self._next_line = first_line
        self._offset = start_byte  # stream offset of the first byte not yet emitted

    @property
    def pending_bytes(self) -> int:
        """Bytes of the partial line held back, waiting for its ``\\n``."""
        return len(self._partial)

    @property
    def pending(self) -> bytes:
        """The partial line held back (a copy)."""
        return bytes(self._partial)

    def feed(self, chunk: bytes) -> LineBlock | None:
        """Add ``chunk``; return the lines it completes, or None if it completes none."""
        last_nl = chunk.rfind(b"\n")
        if last_nl < 0:
            self._partial += chunk
            return None
        if self._partial:
            self._partial += chunk[: last_nl + 1]
            data = bytes(self._partial)
            self._partial = bytearray(chunk[last_nl + 1 :])
        else:
            data = chunk[: last_nl + 1]
            self._partial = bytearray(chunk[last_nl + 1 :])
        return self._emit(data, complete=True)

    def flush(self) -> LineBlock | None:
        """End of input: return the last line without its ``\\n``, if any."""
        if not self._partial:
            return None
        data = bytes(self._partial)
        self._partial = bytearray()
        return self._emit(data, complete=False)

    def force(self, upto: int) -> LineBlock | None:
        """A live stream went quiet: return the partial line's first ``upto`` bytes as a line, though
        the stream goes on (None if ``upto`` is 0).

        The bytes that later complete that line are not a line of their own: the caller holds the
        partial line's other bytes (``pending`` before the call), takes the next ones off the front
        of the next chunk, and passes them all to ``skip``.
        """
        data = bytes(self._partial[:upto])
        self._partial = bytearray()
        return self._emit(data, complete=False) if data else None

    def discard(self) -> None:
        """Forget the partial line held back (its bytes will be read again elsewhere)."""
        self._partial = bytearray()

    def skip(self, n_bytes: int) -> None:
        """Advance the stream offset past ``n_bytes`` that belong to an already emitted line."""
        self._offset += n_bytes

    def _emit(self, data: bytes, *, complete: bool) -> LineBlock:
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10).astype(np.int64) + 1
        if not complete:
            ends = np.append(ends, np.int64(len(data)))
        block = LineBlock(data=data, first_line=self._next_line, start_byte=self._offset, ends=ends)
        self._next_line += block.n_lines
        self._offset += len(data)
        return block
