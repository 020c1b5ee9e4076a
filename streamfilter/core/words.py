"""Counts in the words users read: ``1 line``, ``2 lines``, ``0 lines`` (summaries, status lines, notes)."""

from __future__ import annotations

__all__ = ("counted",)


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``counted(1, "line")`` is ``"1 line"``,
    ``counted(3, "progress line")`` is ``"3 progress lines"``.

    ``noun`` is singular and takes an ``s`` (every noun counted here does: line, byte, frame, ...).
    """
    return f"{n} {noun}{'s' * (n != 1)}"
