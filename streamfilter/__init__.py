"""streamfilter: cut build logs and test output down to what matters, live.

The pure core: ``StreamFilter`` (bytes in, KEEP/DROP ``Run`` values out) and its
stages; see docs/cli.md for the command line. The names load on first use (PEP 562), so a
command that needs none of them (an agent's hook) does not import numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.errors import InputError, StreamfilterError, UsageError
    from .core.filter import FilterStats, Notice, StreamFilter
    from .core.records import LineBlock, Run
    from .core.settings import DEFAULT_QUERY, FilterConfig
    from .core.tokens import Query, tokenize

__version__ = "0.1.0"

# each public name and the module it comes from
_WHERE = {
    "InputError": "core.errors",
    "StreamfilterError": "core.errors",
    "UsageError": "core.errors",
    "DEFAULT_QUERY": "core.settings",
    "FilterConfig": "core.settings",
    "FilterStats": "core.filter",
    "Notice": "core.filter",
    "StreamFilter": "core.filter",
    "LineBlock": "core.records",
    "Run": "core.records",
    "Query": "core.tokens",
    "tokenize": "core.tokens",
}

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


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    if name not in _WHERE:
        raise AttributeError(f"module 'streamfilter' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
