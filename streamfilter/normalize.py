"""Text for scoring only (stage 2): escapes removed, CR redraws reduced, long lines capped.

KEEP output never sees this text; it is always the original bytes. Every function
here keeps the number of lines: a line of the input is a line of the output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ("ANSI_ESCAPE", "NormalizedBlock", "normalize_block", "strip_ansi")

# ECMA-48 escape sequences, all forms, none of which may cross a line end:
# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ST, or cut at the
# line end), DCS/SOS/PM/APC strings, and the two-byte / nF escapes (ESC ( B, ESC 7).
ANSI_ESCAPE = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"
    rb"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    rb"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?"
    rb"|\x1b[ -/]*[0-~]"
    rb"|\x1b"
)
_LONE_CR = re.compile(rb"\r(?=[^\r\n])")
# A timestamp that CI runners (GitHub Actions, Azure, xcodebuild, many loggers) put before every
# line hides the line's own indentation and start from segmentation and signatures: scoring
# text starts after it. Matched after a "\n" (a literal prefix re scans for quickly).
_TIMESTAMP_PREFIX = re.compile(rb"\n\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]? ?")


def strip_ansi(data: bytes) -> bytes:
    """Remove every ANSI/ECMA-48 escape sequence from ``data`` (line ends are kept).

    ``re`` scans for the ESC byte quickly; measured here on an escape-heavy build
    log (34,000 escapes per MB) at about 10 ms per MB, as fast as a numpy version.
    """
    return ANSI_ESCAPE.sub(b"", data) if b"\x1b" in data else data


@dataclass(frozen=True, slots=True)
class NormalizedBlock:
    """The scoring text of a block of lines.

    Attributes:
        text: bytes with exactly as many lines as the raw block; escapes removed,
            a leading ISO-8601 timestamp (``2026-05-07T17:30:12.8056437Z ``) removed,
            each carriage-return redraw reduced to its last frame, each line over
            the cap reduced to its first and last ``cap // 2`` bytes. Case is kept
            (the tokenizer needs it to split ``ValueError``) and folded there.
        ends: shape ``(n_lines,)``, int64: end offset of each line in ``text``.
        frames: shape ``(n_lines,)``, int32: number of CR-separated frames in each
            line (0 for a line with no redraw).
        capped: 0-based indexes of lines whose scoring text was capped.
    """

    text: bytes
    ends: npt.NDArray[np.int64]
    frames: npt.NDArray[np.int32]
    capped: tuple[int, ...]


def _line_ends(text: bytes, n_lines: int) -> npt.NDArray[np.int64]:
    ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10).astype(np.int64) + 1
    if ends.shape[0] < n_lines:  # the stream's last line, without its newline
        ends = np.append(ends, np.int64(len(text)))
    return ends


def normalize_block(data: bytes, n_lines: int, max_line_bytes: int) -> NormalizedBlock:
    """Make the scoring text of ``data``, a block of ``n_lines`` complete lines.

    Args:
        data: raw bytes of whole lines (see ``LineBlock.data``).
        n_lines: number of lines in ``data``.
        max_line_bytes: scoring cap per line, in bytes; a longer line is scored on
            its first and last ``max_line_bytes // 2`` bytes (it is still emitted whole).

    Returns:
        The ``NormalizedBlock``. Never raises on any byte content.
    """
    text = strip_ansi(data)
    text = _TIMESTAMP_PREFIX.sub(b"\n", b"\n" + text)[1:]
    frames = np.zeros(n_lines, dtype=np.int32)
    if b"\r" in text:
        text = _collapse_redraws(text, n_lines, frames)
    ends = _line_ends(text, n_lines)
    capped: tuple[int, ...] = ()
    if n_lines and len(text) > max_line_bytes:
        arr = np.frombuffer(text, dtype=np.uint8)
        lengths = np.diff(ends, prepend=np.int64(0)) - (arr[ends - 1] == 10)  # without the line end
        long_lines = np.flatnonzero(lengths > max_line_bytes)
        if long_lines.shape[0]:
            text = _cap_lines(text, ends, long_lines, max_line_bytes)
            ends = _line_ends(text, n_lines)
            capped = tuple(int(i) for i in long_lines)
    return NormalizedBlock(text=text, ends=ends, frames=frames, capped=capped)


def _collapse_redraws(text: bytes, n_lines: int, frames: npt.NDArray[np.int32]) -> bytes:
    """Keep only the text after the last lone ``\\r`` of each line, as a terminal shows it."""
    positions = [m.start() for m in _LONE_CR.finditer(text)]
    if not positions:
        return text
    ends = _line_ends(text, n_lines)
    pos = np.asarray(positions, dtype=np.int64)
    line_of = np.searchsorted(ends, pos, side="right")
    # the last lone CR of each affected line: where the next position is on another line
    last = np.ones(pos.shape[0], dtype=bool)
    last[:-1] = line_of[1:] != line_of[:-1]
    counts = np.bincount(line_of, minlength=n_lines)
    frames += (counts + (counts > 0)).astype(np.int32)
    pieces: list[bytes] = []
    prev = 0
    for line, cr in zip(line_of[last].tolist(), pos[last].tolist(), strict=True):
        line_start = int(ends[line - 1]) if line else 0
        pieces.append(text[prev:line_start])
        prev = cr + 1
    pieces.append(text[prev:])
    return b"".join(pieces)


def _cap_lines(text: bytes, ends: npt.NDArray[np.int64], long_lines: npt.NDArray[np.intp], cap: int) -> bytes:
    half = max(1, cap // 2)
    pieces: list[bytes] = []
    prev = 0
    for line in long_lines.tolist():
        start = int(ends[line - 1]) if line else 0
        end = int(ends[line])
        newline = b"\n" if text[end - 1 : end] == b"\n" else b""
        body_end = end - len(newline)
        pieces.append(text[prev : start + half])
        pieces.append(b" ")
        pieces.append(text[body_end - half : body_end])
        pieces.append(newline)
        prev = end
    pieces.append(text[prev:])
    return b"".join(pieces)
