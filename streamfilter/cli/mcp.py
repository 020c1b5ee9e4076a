"""``streamfilter mcp``: the MCP server for coding agents, over stdin and stdout."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..agents.defaults import DEFAULT_BUDGET_TOKENS
from ..core.settings import DEFAULT_QUERY
from .options import count

__all__ = ("add_parser",)


def add_parser(sub: Any) -> None:
    """The ``mcp`` subcommand's options."""
    m = sub.add_parser(
        "mcp",
        help="serve the tools run, filter and expand (and a daemon's streams) to a coding agent over MCP (stdio)",
        description="A Model Context Protocol server on stdin and stdout: tools run, filter and expand; "
        "with --config, streams and read over that daemon config's file sinks. Logs go to stderr.",
    )
    m.add_argument("--config", metavar="FILE", help="a daemon config: adds the tools streams and read")
    m.add_argument(
        "-q", "--query", default=DEFAULT_QUERY, help=f"the query when a call names none (default: {DEFAULT_QUERY!r})"
    )
    m.add_argument(
        "--budget-tokens",
        type=count(1),
        default=DEFAULT_BUDGET_TOKENS,
        metavar="N",
        help="about how many tokens run's and filter's output may take when a call names none (default %(default)s)",
    )
    m.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    import anyio

    # the SDK (pydantic, starlette, ...) loads here: the other subcommands do not pay for it
    from ..agents.mcp import StreamfilterMCP, too_broad
    from ..live.config import load_config

    config = load_config(os.path.abspath(args.config)) if args.config else None
    if too_broad(Path.cwd()):  # (a client that sets no working folder starts it in / or ~)
        sys.stderr.write(
            f"streamfilter: warning: mcp runs in {Path.cwd()}, which holds the home folder or is the root: the"
            " tools filter and expand read only streamfilter's state directory (start it in a project's folder)\n"
        )
    return anyio.run(StreamfilterMCP(config, args.query, args.budget_tokens).serve)
