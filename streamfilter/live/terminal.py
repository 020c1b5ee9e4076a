"""Text as a terminal shows it without acting on it: the escaping of what reaches a person or an
agent (kept lines on a terminal, the MCP tools' text, errors and log lines that name paths)."""

from __future__ import annotations

import re

from ..core.templates import HIDDEN_CHARACTERS

__all__ = ("escape_control_text", "escape_controls")

# all but tab and newline, and a carriage return before a newline (or at the end): a lone one
# would let a line's later text overwrite its start on screen ("ERROR: x\rok   "); DEL; and the
# characters a terminal acts on or shows as nothing (``HIDDEN_CHARACTERS``: C1 controls, the marks
# that reorder the text shown after them, "Trojan source", zero-width and tag characters, hidden
# text an agent reads and a person does not, helper-98)
# and a lone surrogate: a byte that is not UTF-8 in a file name (``os.fsdecode``'s \udcNN), shown as
# \xNN (it could not be written at all: a warning naming such a file had crashed the filter, helper-99)
_CONTROLS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
    + "".join(re.escape(chr(c)) for c in HIDDEN_CHARACTERS)
    + "\ud800-\udfff]|\r(?=[^\n])"
)


def escape_controls(data: bytes) -> bytes:
    r"""Text a terminal shows but does not act on: control characters (C0 but tab, newline and
    a carriage return before a newline; DEL; C1) and bytes that are not UTF-8 written as ``\xNN``,
    the other ``HIDDEN_CHARACTERS`` (bidirectional overrides and isolates, zero-width space,
    direction marks, line and paragraph separators, U+FEFF, the tags) as ``\uNNNN`` or
    ``\UNNNNNNNN``. Never raises."""
    return escape_control_text(data.decode("utf-8", "backslashreplace"))


def escape_control_text(text: str) -> bytes:
    r"""``escape_controls`` of text already decoded (invalid bytes as ``\xNN``), as UTF-8 bytes."""
    return _CONTROLS.sub(_escaped, text).encode("utf-8")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m[0])
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
