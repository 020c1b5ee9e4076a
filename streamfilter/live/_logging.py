"""structlog set-up: the program's own logs go to stderr, never to the filtered output.

structlog (and asyncio, which it imports: about 45 ms) is loaded at the first log call,
so a run that logs nothing does not pay for it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

    from ..core.filter import Notice

__all__ = ("configure_logging", "get_logger", "log_notices")

_state = {"wanted": False, "done": False}


def configure_logging() -> None:
    """Log key=value lines to a terminal, JSON lines otherwise; stderr, flushed per line.

    Takes effect at the first log call (structlog is imported then).
    """
    _state["wanted"] = True
    if _state["done"]:  # already loaded: configure again now, as before
        _configure()


def _configure() -> None:
    import structlog

    on_terminal = sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=False) if on_terminal else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *([_shown] if on_terminal else []),  # (JSON escapes control characters itself)
            renderer,
        ],
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def _shown(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """A log event's text values as a terminal shows them without acting on them (a file named
    with an escape sequence had cleared the screen in a warning, helper-98)."""
    from .terminal import escape_control_text

    return {k: escape_control_text(v).decode() if isinstance(v, str) else v for k, v in event.items()}


class _LazyLogger:
    """Stands for a structlog logger until a method is used; then loads and configures structlog."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            import structlog

            if _state["wanted"] and not _state["done"]:
                _configure()
            _state["done"] = True
            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attr)


def get_logger(name: str = "streamfilter") -> FilteringBoundLogger:
    """A bound logger named ``name`` (structlog is loaded when it first logs)."""
    return cast("FilteringBoundLogger", _LazyLogger(name))


def log_notices(notices: list[Notice], source: str) -> None:
    """Log the filter's input warnings (``StreamFilter.notices``) and clear the list."""
    if notices:
        log = get_logger()
        for notice in notices:
            more = {"rest_follows": True} if notice.rest_follows else {}
            log.warning(notice.event, source=source, line=notice.line, bytes=notice.n_bytes, count=notice.count, **more)
        notices.clear()
