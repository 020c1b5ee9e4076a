"""Text for scoring only (stage 2): escapes removed, CR redraws reduced, long lines capped.

KEEP output never sees this text; it is always the original bytes. Every function
here keeps the number of lines: a line of the input is a line of the output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ("ANSI_ESCAPE", "NormalizedBlock", "gather_lines", "normalize_block", "strip_ansi", "strip_ansi_reference")

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
# A frame that a later one drew over but that reported a failure ("ERROR: checksum mismatch" in the
# middle of a download's progress): a terminal hid it, a log reader needs it. The first few such
# frames go before the last one in the scoring text (the first at the line's start, where anchored
# signatures look).
_FAILURE_FRAME = re.compile(rb"(?i)error|fail|fatal|panic|exception|traceback|denied|abort")
_FAILURE_FRAMES = 3  # most overdrawn frames kept a line (distinct ones, in order)
_FAILURE_FRAME_BYTES = 300  # most bytes of each
# A timestamp that CI runners (GitHub Actions, Azure, xcodebuild, many loggers) put before every
# line hides the line's own indentation and start from segmentation and signatures: scoring
# text starts after it. The definition (and the tests' reference): ``_stamp_lengths`` reads it
# column by column at the starts of candidate lines.
_TIMESTAMP_PREFIX = re.compile(rb"\n\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]? ?")


def strip_ansi_reference(data: bytes) -> bytes:
    """``strip_ansi`` with ``re`` alone (the reference; about 11 ms per MB on a colored build log)."""
    return ANSI_ESCAPE.sub(b"", data) if b"\x1b" in data else data


def _run_end(padded: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], low: int) -> npt.NDArray[np.int64]:
    """For each offset in ``at``: the first offset at or after it whose byte is not in ``low .. low+15``."""
    at = at.copy()
    pending = np.arange(at.shape[0])
    while pending.shape[0]:
        inside = (padded[at[pending]] - np.uint8(low)) < 16
        pending = pending[inside]
        at[pending] += 1
    return at


def _escape_ends(data: bytes, esc: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """End offset of the ``ANSI_ESCAPE`` match that starts at each ESC offset in ``esc``.

    CSI sequences (``ESC [ params intermediates final``) and two-byte / nF escapes
    (``ESC intermediates final``) are read with numpy, a byte column at a time over
    all escapes; OSC and DCS/SOS/PM/APC strings (rare) are matched by ``ANSI_ESCAPE``
    itself, one by one. The byte classes are disjoint, so the greedy runs never
    backtrack and each branch's end is found without trying the others.
    """
    n = len(data)
    padded = np.full(n + 2, 10, dtype=np.uint8)  # "\n" past the end: no branch takes it
    padded[:n] = np.frombuffer(data, dtype=np.uint8)
    nxt = padded[esc + 1]
    csi = nxt == 0x5B
    # CSI: params [0-?], intermediates [ -/], then a final byte [@-~]; without it, the two-byte "ESC ["
    at = _run_end(padded, _run_end(padded, esc[csi] + 2, 0x30), 0x20)
    final = padded[at]
    ends = esc + 1
    ends[csi] = np.where((final >= 0x40) & (final <= 0x7E), at + 1, esc[csi] + 2)
    # two-byte / nF: intermediates, then a byte in [0-~]; else the lone ESC
    plain = np.flatnonzero(~csi)
    at = _run_end(padded, esc[plain] + 1, 0x20)
    final = padded[at]
    ends[plain] = np.where((final >= 0x30) & (final <= 0x7E), at + 1, esc[plain] + 1)
    string = (nxt == 0x5D) | (nxt == 0x50) | (nxt == 0x58) | (nxt == 0x5E) | (nxt == 0x5F)  # ] P X ^ _
    for i in np.flatnonzero(string).tolist():
        m = ANSI_ESCAPE.match(data, int(esc[i]))
        ends[i] = m.end() if m is not None else esc[i] + 1
    return ends


def _drop_spans(arr: npt.NDArray[np.uint8], first: npt.NDArray[np.int64], end: npt.NDArray[np.int64]) -> bytes:
    """``arr``'s bytes without the disjoint, sorted spans ``[first[i], end[i])``.

    Every ESC byte of ``arr`` must lie in a span (the caller's invariant): the spans are
    overwritten with ESC and every ESC is deleted by ``bytes.translate``, which runs at
    about 1.5 ms per MB where a boolean mask (``np.compress``) takes about 3.
    """
    lengths = end - first
    removed = np.cumsum(lengths)
    marked = arr.copy()
    marked[np.repeat(first - (removed - lengths), lengths) + np.arange(int(removed[-1]))] = 0x1B
    return marked.tobytes().translate(None, b"\x1b")


def _strip(data: bytes, ends: npt.NDArray[np.int64] | None) -> tuple[bytes, npt.NDArray[np.int64] | None]:
    """``strip_ansi(data)``, and the line ends ``ends`` (offsets in ``data``) moved to the new text."""
    if b"\x1b" not in data:
        return data, ends
    arr = np.frombuffer(data, dtype=np.uint8)
    esc = np.flatnonzero(arr == 0x1B).astype(np.int64)
    stops = _escape_ends(data, esc)
    # an OSC or DCS string may end with "ESC \\": that ESC is inside the match before it,
    # and such a terminator never reaches past the next ESC
    kept = np.ones(esc.shape[0], dtype=bool)
    kept[1:] = stops[:-1] <= esc[1:]
    first, end = esc[kept], stops[kept]
    if ends is not None:  # no match crosses a line end: subtract the bytes removed before each end
        removed = np.cumsum(end - first)
        before = np.searchsorted(first, ends, side="left")
        ends = ends - np.where(before > 0, removed[np.maximum(before - 1, 0)], 0)
    # every ESC starts a match or ends an OSC/DCS string inside one: all of them go
    return _drop_spans(arr, first, end), ends


def strip_ansi(data: bytes) -> bytes:
    """Remove every ANSI/ECMA-48 escape sequence from ``data`` (line ends are kept).

    The same bytes as ``ANSI_ESCAPE.sub(b"", data)`` (``strip_ansi_reference``), found
    with numpy: about 5 ms per MB on a colored build log (36,000 escapes per MB),
    where ``re.sub`` spends a call per escape (about 12 ms per MB).
    """
    return _strip(data, None)[0]


@dataclass(frozen=True, slots=True)
class NormalizedBlock:
    """The scoring text of a block of lines.

    Attributes:
        text: bytes with exactly as many lines as the raw block; escapes removed,
            a leading ISO-8601 timestamp (``2026-05-07T17:30:12.8056437Z ``) and docker
            compose's service prefix (``web-1  | ``), in either order, removed,
            each carriage-return redraw reduced to its last frame (after the first few
            frames before it that report a failure, ``_FAILURE_FRAME``), each line over
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


# the service prefix docker compose puts on each line of its services' output ("web-1  | ",
# "db_1    | "): a name that ends in a replica number, padded, then "| "
_SERVICE_PREFIX = re.compile(rb"[A-Za-z][\w.-]{0,62}[-_]\d{1,4} {1,40}\| ")


def _strip_service_prefixes(text: bytes, ends: npt.NDArray[np.int64]) -> tuple[bytes, npt.NDArray[np.int64]]:
    """``_SERVICE_PREFIX`` removed from the line starts of ``text`` (the line's own text is then
    scored, matched against signatures and indented as the service printed it). Returns the new
    text and its line ends; ``text`` holds no ESC (escapes are removed first).

    A prefix ends at its line's first ``|``: only those with a space on both sides are tried
    (a regex tried at every line start cost 1.6 ms per MB of the benchmark log; this 0.3)."""
    arr = np.frombuffer(text, dtype=np.uint8)
    pipes = np.flatnonzero(arr == 0x7C)
    if not pipes.shape[0] or not ends.shape[0]:
        return text, ends
    line = np.searchsorted(ends, pipes, side="right")
    first = np.ones(pipes.shape[0], dtype=bool)
    first[1:] = line[1:] != line[:-1]
    pipes, line = pipes[first], line[first]
    starts = np.where(line > 0, ends[np.maximum(line - 1, 0)], 0)
    near = (pipes > starts + 2) & (pipes - starts <= 128) & (pipes + 1 < arr.shape[0])
    pipes, starts = pipes[near], starts[near]
    spaced = (arr[pipes - 1] == 0x20) & (arr[pipes + 1] == 0x20)  # (``near``: a byte follows each)
    found = [
        (start, pipe + 2)
        for start, pipe in zip(starts[spaced].tolist(), pipes[spaced].tolist(), strict=True)
        if (m := _SERVICE_PREFIX.match(text, start)) is not None and m.end() == pipe + 2
    ]
    if not found:
        return text, ends
    spans = np.asarray(found, dtype=np.int64)
    removed = np.zeros(ends.shape[0], dtype=np.int64)
    removed[np.searchsorted(ends, spans[:, 0], side="right")] = spans[:, 1] - spans[:, 0]
    return _drop_spans(arr, spans[:, 0], spans[:, 1]), ends - np.cumsum(removed)


def _timestamp_lines(text: bytes, ends: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Lines of ``text`` that may start with a ``_TIMESTAMP_PREFIX`` (``dddd-`` or ``[dddd-``)."""
    if ends.shape[0] == 0:
        return ends[:0]
    padded = np.zeros(len(text) + 6, dtype=np.uint8)
    padded[: len(text)] = np.frombuffer(text, dtype=np.uint8)
    starts = np.zeros(ends.shape[0], dtype=np.int64)
    starts[1:] = ends[:-1]
    bracket = padded[starts] == 0x5B
    starts += bracket
    maybe = (padded[starts + 4] == 0x2D) & ((padded[starts] - np.uint8(48)) < 10)
    return np.flatnonzero(maybe).astype(np.int64)


_STAMP_WIDTH = 40  # bytes looked at from a candidate's start: a prefix is at most 38 long, then one more
_STAMP_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]  # "dddd-dd-dd?dd:dd:dd"
_STAMP_FRACTION = 9  # most digits after the seconds' "." or ","


def _stamp_lengths(text: bytes, starts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Length of the ``_TIMESTAMP_PREFIX`` match (without its ``\\n``) at each of ``starts``, 0 for none.

    The regex read column by column over all candidates at once: each optional part is
    taken greedily when it is there, as ``re`` does (what follows it is optional too, so
    ``re`` never backtracks into it), and a line end or the end of the text stops every part.
    """
    padded = np.zeros(len(text) + _STAMP_WIDTH + 1, dtype=np.uint8)
    padded[: len(text)] = np.frombuffer(text, dtype=np.uint8)
    bracket = (padded[starts] == 0x5B).astype(np.int64)
    # the _STAMP_WIDTH bytes from every offset, as one opaque item each (an overlapping view): a row
    # per candidate is then one copy, where a 2-D fancy index takes an index per byte
    heads = np.ndarray(shape=(len(text) + 1,), dtype=f"V{_STAMP_WIDTH}", buffer=padded.data, strides=(1,))
    grid = heads[starts + bracket].view(np.uint8).reshape(-1, _STAMP_WIDTH)
    digit = (grid - np.uint8(48)) < 10
    ok = digit[:, _STAMP_DIGITS].all(axis=1)
    ok &= (grid[:, 4] == 0x2D) & (grid[:, 7] == 0x2D) & ((grid[:, 10] == 0x54) | (grid[:, 10] == 0x20))
    ok &= (grid[:, 13] == 0x3A) & (grid[:, 16] == 0x3A)
    at = np.full(starts.shape[0], 19, dtype=np.int64)
    # (?:[.,]\d{1,9})?  (the digits run to the first non-digit: a column forced False stops it at 9)
    fraction = ((grid[:, 19] == 0x2E) | (grid[:, 19] == 0x2C)) & digit[:, 20]
    run = digit[:, 20 : 21 + _STAMP_FRACTION].copy()
    run[:, _STAMP_FRACTION] = False
    at += np.where(fraction, 1 + run.argmin(axis=1), 0)
    # the parts after it start at a different column per row: read them from the flat grid
    flat, flat_digit = grid.reshape(-1), digit.reshape(-1)
    base = np.arange(starts.shape[0]) * _STAMP_WIDTH

    def byte(k: int) -> npt.NDArray[np.uint8]:
        found: npt.NDArray[np.uint8] = flat[base + at + k]
        return found

    def is_digit(k: int) -> npt.NDArray[np.bool_]:
        found: npt.NDArray[np.bool_] = flat_digit[base + at + k]
        return found

    # (?:Z|[+-]\d\d:?\d\d)?  (the ":" is tried first; without it, two digits must follow at once)
    first = byte(0)
    sign = ((first == 0x2B) | (first == 0x2D)) & is_digit(1) & is_digit(2)
    colon = sign & (byte(3) == 0x3A) & is_digit(4) & is_digit(5)
    plain = sign & ~colon & is_digit(3) & is_digit(4)
    at += np.where(first == 0x5A, 1, 0) + np.where(colon, 6, 0) + np.where(plain, 5, 0)
    at += byte(0) == 0x5D  # \]?
    at += byte(0) == 0x20  # " ?"
    lengths: npt.NDArray[np.int64] = np.where(ok, bracket + at, 0)
    return lengths


def _strip_timestamps(
    text: bytes, ends: npt.NDArray[np.int64], lines: npt.NDArray[np.int64]
) -> tuple[bytes, npt.NDArray[np.int64]]:
    """``_TIMESTAMP_PREFIX`` removed from the starts of ``lines``, the only lines that may have one.

    A match starts at a line's start and never reaches the next line, so matching line by
    line gives what ``sub`` over the whole text gives. ``text`` holds no ESC (escapes are
    removed first). Returns the new text and its line ends.
    """
    starts = np.where(lines > 0, ends[np.maximum(lines - 1, 0)], 0)
    lengths = _stamp_lengths(text, starts)
    found = lengths > 0
    if not found.any():
        return text, ends
    removed = np.zeros(ends.shape[0], dtype=np.int64)
    removed[lines[found]] = lengths[found]
    stripped = _drop_spans(np.frombuffer(text, dtype=np.uint8), starts[found], starts[found] + lengths[found])
    return stripped, ends - np.cumsum(removed)


def normalize_block(
    data: bytes, n_lines: int, max_line_bytes: int, raw_ends: npt.NDArray[np.int64] | None = None
) -> NormalizedBlock:
    """Make the scoring text of ``data``, a block of ``n_lines`` complete lines.

    Args:
        data: raw bytes of whole lines (see ``LineBlock.data``).
        n_lines: number of lines in ``data``.
        max_line_bytes: scoring cap per line, in bytes; a longer line is scored on
            its first and last ``max_line_bytes // 2`` bytes (it is still emitted whole).
        raw_ends: shape ``(n_lines,)``: end offset of each line in ``data``
            (``LineBlock.ends``), when known; saves finding them again.

    Returns:
        The ``NormalizedBlock``. Never raises on any byte content.
    """
    text, ends = _strip(data, raw_ends)
    if ends is None:
        ends = _line_ends(text, n_lines)
    text, ends = _strip_service_prefixes(text, ends)
    text, ends = _blank_valgrind(text, ends, n_lines)
    stamped = _timestamp_lines(text, ends)
    if stamped.shape[0]:
        text, ends = _strip_timestamps(text, ends, stamped)
        # a CI runner's timestamp before compose's prefix (GitHub Actions running docker compose)
        text, ends = _strip_service_prefixes(text, ends)
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


# valgrind's blank line, its prefix alone ("==123== "): the end of a report, as a blank line ends a
# record (a report glued to the program's output had kept the 30 lines after it, helper-91)
_VALGRIND_BLANK = re.compile(rb"\n==\d{1,10}==[ \t]*(?=\r?\n)")
_VALGRIND_LINE = re.compile(rb"\n==\d")  # (looked for first: pytest's "=====" rules are no reason to copy a block)


def _blank_valgrind(text: bytes, ends: npt.NDArray[np.int64], n_lines: int) -> tuple[bytes, npt.NDArray[np.int64]]:
    """``text`` with valgrind's blank lines (``_VALGRIND_BLANK``) made blank."""
    if not text.startswith(b"==") and _VALGRIND_LINE.search(text) is None:
        return text, ends
    blanked = _VALGRIND_BLANK.sub(b"\n", b"\n" + text)[1:]
    return (text, ends) if len(blanked) == len(text) else (blanked, _line_ends(blanked, n_lines))


def _collapse_redraws(text: bytes, n_lines: int, frames: npt.NDArray[np.int32]) -> bytes:
    """Keep only the text after the last lone ``\\r`` of each line, as a terminal shows it, after
    the first ``_FAILURE_FRAMES`` distinct frames before it that report a failure."""
    positions = [m.start() for m in _LONE_CR.finditer(text)]
    if not positions:
        return text
    ends = _line_ends(text, n_lines)
    pos = np.asarray(positions, dtype=np.int64)
    line_of = np.searchsorted(ends, pos, side="right")
    # the last lone CR of each affected line: where the next position is on another line
    last = np.ones(pos.shape[0], dtype=bool)
    last[:-1] = line_of[1:] != line_of[:-1]
    # frames: the text before the first lone CR and after each; a CR that starts its line
    # (after a line end) only clears a blank screen line, so it starts no frame of its own
    starts = np.where(line_of > 0, ends[np.maximum(line_of - 1, 0)], 0)
    counts = np.bincount(line_of[pos > starts], minlength=n_lines)[:n_lines]
    frames += (counts + (counts > 0)).astype(np.int32)
    pieces: list[bytes] = []
    prev = 0
    for line_start, cr in zip(starts[last].tolist(), pos[last].tolist(), strict=True):
        pieces.append(text[prev:line_start])
        if _FAILURE_FRAME.search(text, line_start, cr) is not None:
            pieces.append(_failure_frames(text[line_start:cr]))
        prev = cr + 1
    pieces.append(text[prev:])
    return b"".join(pieces)


def _failure_frames(overdrawn: bytes) -> bytes:
    """The frames of ``overdrawn`` (a line's text before its last lone CR) that report a failure,
    the first ``_FAILURE_FRAMES`` distinct ones, each cut to ``_FAILURE_FRAME_BYTES``, each
    followed by two spaces."""
    kept: list[bytes] = []
    for frame in overdrawn.split(b"\r"):
        frame = frame[:_FAILURE_FRAME_BYTES].strip()
        if frame and frame not in kept and _FAILURE_FRAME.search(frame) is not None:
            kept.append(frame)
            if len(kept) == _FAILURE_FRAMES:
                break
    return b"".join(frame + b"  " for frame in kept)


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


def gather_lines(
    text: bytes, ends: npt.NDArray[np.int64], lines: npt.NDArray[np.int64]
) -> tuple[bytes, npt.NDArray[np.int64]]:
    """Some lines of a block as one text, for a regex to scan only those.

    Args:
        text: whole lines.
        ends: shape ``(n_lines,)``: end offset of each line in ``text``.
        lines: shape ``(k,)``, k >= 1: sorted indexes of the lines to take.

    Returns:
        ``(sub, sub_ends)``: the lines' bytes, each ending with ``\\n`` (one is added
        to a last line without it), and shape ``(k,)`` their end offsets in ``sub``.
    """
    starts = np.where(lines > 0, ends[np.maximum(lines - 1, 0)], 0)
    stops = ends[lines]
    lengths = stops - starts
    sub_ends = np.cumsum(lengths)
    total = int(sub_ends[-1])
    arr = np.frombuffer(text, dtype=np.uint8)
    sub = arr[np.repeat(starts - (sub_ends - lengths), lengths) + np.arange(total)].tobytes()
    if lengths[-1] > 0 and text[int(stops[-1]) - 1] != 0x0A:  # the stream's last line, without its newline
        sub += b"\n"
        sub_ends[-1] += 1
    return sub, sub_ends.astype(np.int64)
