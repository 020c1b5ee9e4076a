"""What filtering one input did (``Filtered``), and the error of an input changed while it was read.

Apart from the filtering stage (``batch``): a ``run`` whose output is short writes it whole and
reports the same counts without building a filter.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import StreamfilterError
from ..core.records import FilterStats

__all__ = ("Filtered", "InputChanged")


class InputChanged(StreamfilterError):
    """A file was truncated or rewritten while it was read, or between the two passes of a budget (exit 1)."""


@dataclass(frozen=True, slots=True)
class Filtered:
    """What ``filter_input`` did with one input.

    Attributes:
        last: the last byte written (b"" when nothing was): where the next output starts.
        stats: the counts of the filter whose runs were written (lines and bytes kept and dropped).
        changed: the file was truncated or rewritten while it was read; what was read before is
            written (without a budget), or nothing is (within a budget).
    """

    last: bytes
    stats: FilterStats
    changed: InputChanged | None = None
