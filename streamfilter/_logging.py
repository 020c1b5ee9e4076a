"""structlog set-up: the program's own logs go to stderr, never to the filtered output."""

from __future__ import annotations

import sys

import structlog

__all__ = ("configure_logging", "get_logger")


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
