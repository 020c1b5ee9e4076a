"""Run envelopes: control lines on a socket stream that mark where a command's run starts and ends.

A control line is one line that starts with ``PREFIX`` (the ASCII record separator ``\\x1e`` and
``streamfilter ``) followed by a JSON object::

    \\x1estreamfilter {"type": "run-start", "run": "42", "command": "make test", "cwd": "/src", "query": "error"}
    ... the run's output, plain lines ...
    \\x1estreamfilter {"type": "run-end", "run": "42", "status": 2}

Everything else is data. ``EnvelopeSplitter.feed(bytes) -> list[Item]`` separates the two
incrementally (a control line may arrive in any number of pieces); its state is bounded by
``MAX_CONTROL_BYTES``. A control line that is not valid JSON or has no known ``type`` becomes an
``invalid`` item carrying the reason (the caller logs it; nothing is lost: its bytes are data).
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = (
    "MAX_CONTROL_BYTES",
    "PREFIX",
    "SUCCESS_TAIL_LINES",
    "Control",
    "Ended",
    "EnvelopeSplitter",
    "control_line",
    "exit_text",
    "printable",
    "status_of",
    "stop_received",
    "stop_reply",
)

PREFIX = b"\x1estreamfilter "
MAX_CONTROL_BYTES = 64 * 1024
TYPES = ("run-start", "run-end")
SUCCESS_TAIL_LINES = 5  # the tail rule's T for a run that exited 0 (a failed run keeps the configured T)


@dataclass(frozen=True, slots=True)
class Control:
    """A parsed control line: ``type`` is ``run-start``, ``run-end`` or ``invalid`` (then ``reason``).

    ``raw`` is the line's bytes as received, ``PREFIX`` and newline included.
    """

    type: str
    fields: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    raw: bytes = b""


def control_line(kind: str, **fields: Any) -> bytes:
    """The bytes of one control line (with its newline)."""
    return PREFIX + json.dumps({"type": kind, **fields}).encode() + b"\n"


class EnvelopeSplitter:
    """Splits a byte stream into data (``bytes``) and control lines (``Control``), in order."""

    def __init__(self) -> None:
        self._bol = True  # at the start of a line
        self._maybe = b""  # the start of a line that so far matches PREFIX
        self._control: bytearray | None = None  # the body of a control line being read

    def feed(self, chunk: bytes) -> list[bytes | Control]:
        """The items ``chunk`` completes; a partial control line is held until its newline."""
        out: list[bytes | Control] = []
        i, n = 0, len(chunk)
        while i < n:
            if self._control is not None:
                nl = chunk.find(b"\n", i)
                end = n if nl < 0 else nl
                self._control += chunk[i:end]
                if len(self._control) > MAX_CONTROL_BYTES:
                    # not a control line after all: too long; its bytes are data
                    out.append(PREFIX + bytes(self._control))
                    self._control, self._bol = None, False
                elif nl >= 0:
                    out.append(_parse(bytes(self._control)))
                    self._control, self._bol = None, True
                    end += 1
                i = end
                continue
            if self._bol:
                need = PREFIX[len(self._maybe) :]
                avail = chunk[i : i + len(need)]
                if need.startswith(avail):
                    self._maybe += avail
                    i += len(avail)
                    if len(self._maybe) == len(PREFIX):
                        self._maybe, self._control = b"", bytearray()
                    continue
                if self._maybe:
                    out.append(self._maybe)
                    self._maybe = b""
                self._bol = False
            nl = chunk.find(b"\n", i)
            end = n if nl < 0 else nl + 1
            out.append(chunk[i:end])
            self._bol = nl >= 0
            i = end
        return _merge(out)

    def flush(self) -> list[bytes | Control]:
        """End of the stream: held bytes of an unfinished control line are data."""
        held = self._maybe + (PREFIX + bytes(self._control) if self._control is not None else b"")
        self._maybe, self._control = b"", None
        return [held] if held else []


def stop_reply(received: int) -> bytes:
    """The daemon's reply to a ``send`` client whose run goes on when the daemon stops: it read
    ``received`` bytes of the connection (control lines included)."""
    return control_line("stop", received=received)


def stop_received(line: bytes) -> int | None:
    """The ``received`` count of a ``stop_reply`` line (without its newline), or None for another line."""
    if not line.startswith(PREFIX):
        return None
    try:
        reply = json.loads(line[len(PREFIX) :])
    except ValueError:
        return None
    received = reply.get("received") if isinstance(reply, dict) and reply.get("type") == "stop" else None
    return received if isinstance(received, int) and not isinstance(received, bool) else None


def status_of(returncode: int) -> int:
    """A shell's exit status for a process's return code (128+N when killed by signal N)."""
    return returncode if returncode >= 0 else 128 - returncode


class Ended(NamedTuple):
    """How a wrapped command ended, for the wrapper's own end: ``status``, a shell's
    (``status_of``), and ``signum``, the signal that killed it (or stopped the wrapper), or None.
    A wrapper dies of that signal too, as ``timeout`` does: a shell stops its loop at a Ctrl-C, and
    xargs its jobs, only for a command the signal killed, not for one that exited 130 (helper-57)."""

    status: int
    signum: int | None = None

    @classmethod
    def of(cls, returncode: int) -> Ended:
        """How a process of return code ``returncode`` (-N when a signal N killed it) ended."""
        return cls(status_of(returncode), -returncode if returncode < 0 else None)


def printable(text: str) -> str:
    """``text`` on one line: control characters (newlines too) written as escapes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def exit_text(command: str, returncode: int) -> str:
    """``CMD exited with status N`` or ``CMD was killed by signal N (NAME)``."""
    if returncode >= 0:
        return f"{command} exited with status {returncode}"
    try:
        name = f" ({signal.Signals(-returncode).name})"
    except ValueError:
        name = ""
    return f"{command} was killed by signal {-returncode}{name}"


def _parse(body: bytes) -> Control:
    raw = PREFIX + body + b"\n"
    try:
        doc = json.loads(body)
    except ValueError as exc:
        return Control("invalid", reason=f"not JSON: {exc}", raw=raw)
    if not isinstance(doc, dict) or doc.get("type") not in TYPES:
        return Control("invalid", reason=f"no known type ({', '.join(TYPES)})", raw=raw)
    return Control(str(doc["type"]), doc, raw=raw)


def _merge(items: list[bytes | Control]) -> list[bytes | Control]:
    merged: list[bytes | Control] = []
    for item in items:
        if isinstance(item, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += item
        elif not isinstance(item, bytes) or item:
            merged.append(item)
    return merged
