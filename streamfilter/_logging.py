"""structlog set-up: the program's own logs go to stderr, never to the filtered output."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from .filter import Notice

__all__ = ("configure_logging", "get_logger", "log_notices")


def configure_logging() -> None:
    """Log key=value lines to a terminal, JSON lines otherwise; stderr, flushed per line."""
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=False) if sys.stderr.isatty() else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def get_logger(name: str = "streamfilter") -> structlog.typing.FilteringBoundLogger:
    """A bound logger named ``name``."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger


def log_notices(notices: list[Notice], source: str) -> None:
    """Log the filter's input warnings (``StreamFilter.notices``) and clear the list."""
    if notices:
        log = get_logger()
        for notice in notices:
            log.warning(notice.event, source=source, line=notice.line, bytes=notice.n_bytes, count=notice.count)
        notices.clear()
