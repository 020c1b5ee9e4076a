"""``streamfilter daemon`` and ``check-config``: the sources and sinks of a TOML config."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..live.config import (
    check_access,
    check_places,
    check_use,
    load_config,
    resolved,
)

__all__ = ("add_check_parser", "add_parser")


def add_parser(sub: Any) -> None:
    """The ``daemon`` subcommand's options."""
    dm = sub.add_parser(
        "daemon",
        help="run the sources and sinks of a config file",
        description="Run the sources and sinks a TOML config names, until SIGTERM; SIGHUP reloads the config.",
    )
    dm.add_argument("--config", required=True, metavar="FILE", help="the TOML config")
    dm.set_defaults(handler=_daemon)


def add_check_parser(sub: Any) -> None:
    """The ``check-config`` subcommand's options."""
    cc = sub.add_parser(
        "check-config",
        help="check a daemon config and print it resolved",
        description="Check a daemon config; print it with every default filled in, as JSON (exit 78 if invalid).",
    )
    cc.add_argument("config", metavar="FILE", help="the TOML config")
    cc.set_defaults(handler=_check_config)


def _daemon(args: argparse.Namespace) -> int:
    import anyio

    from ..live.daemon import run_daemon

    return anyio.run(run_daemon, load_config(args.config))


def _check_config(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    for problem in check_places(config):
        sys.stderr.write(f"streamfilter: warning: {problem}; the daemon would fail to open it now\n")
    for problem in check_use(config) + check_access(config):
        sys.stderr.write(f"streamfilter: warning: {problem}\n")
    resolved_config = resolved(config)
    sys.stdout.write(json.dumps(resolved_config, indent=2) + "\n")
    return 0
