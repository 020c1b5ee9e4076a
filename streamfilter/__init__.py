"""streamfilter: cut build logs and test output down to what matters, live.

The pure core: ``StreamFilter`` (bytes in, KEEP/DROP ``Run`` values out) and its
stages; see docs/cli.md for the command line.
"""

from __future__ import annotations

from .core.errors import InputError, StreamfilterError, UsageError
from .core.filter import DEFAULT_QUERY, FilterConfig, FilterStats, Notice, StreamFilter
from .core.records import LineBlock, Run
from .core.tokens import Query, tokenize

__version__ = "0.1.0"

__all__ = (
    "DEFAULT_QUERY",
    "FilterConfig",
    "FilterStats",
    "InputError",
    "LineBlock",
    "Notice",
    "Query",
    "Run",
    "StreamFilter",
    "StreamfilterError",
    "UsageError",
    "__version__",
    "tokenize",
)
