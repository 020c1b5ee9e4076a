"""Exception types; each message states the facts (what, where) so it can be printed as is."""

from __future__ import annotations

__all__ = ("InputError", "NotStartedError", "StreamfilterError", "UsageError", "first_cause")


class StreamfilterError(Exception):
    """Base of every error streamfilter raises on purpose."""

    exit_code = 1


class UsageError(StreamfilterError):
    """A bad command line or option value (exit status 2)."""

    exit_code = 2


class InputError(StreamfilterError):
    """An input that cannot be opened or read (exit status 2 before any output)."""

    exit_code = 2


class NotStartedError(StreamfilterError):
    """``run`` failed before it started CMD (exit status 125, as ``env``, ``nice`` and ``timeout``
    exit when they fail themselves: not a status CMD could have given)."""

    exit_code = 125


def first_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception of ``group`` that is not a group (task groups nest them)."""
    first = group.exceptions[0]
    return first_cause(first) if isinstance(first, BaseExceptionGroup) else first
