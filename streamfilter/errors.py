"""Exception types; each message states the facts (what, where) so it can be printed as is."""

from __future__ import annotations

__all__ = ("InputError", "StreamfilterError", "UsageError")


class StreamfilterError(Exception):
    """Base of every error streamfilter raises on purpose."""

    exit_code = 1


class UsageError(StreamfilterError):
    """A bad command line or option value (exit status 2)."""

    exit_code = 2


class InputError(StreamfilterError):
    """An input that cannot be opened or read (exit status 2 before any output)."""

    exit_code = 2
