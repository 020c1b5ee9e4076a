"""``streamfilter hook AGENT``: the hook program an agent runs before each shell command.

It runs on every command an agent types, so it imports only the standard library and the small
``agents`` modules (no numpy, no anyio): ``main`` takes it before the full command line is built.
``streamfilter hook explain CMD`` says what the hooks would do with CMD, and why.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..agents.hooks import AGENTS, answer, executable_words, render
from ..agents.wrap import ConfigError, load_rules, rewrite

__all__ = ("add_parser", "main")

_HELP = "the hook program of an agent: its JSON on stdin, its answer on stdout (streamfilter install sets it up)"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", choices=(*AGENTS, "explain"), help="the agent whose JSON comes in, or explain")
    parser.add_argument("command", nargs="?", metavar="CMD", help="explain: the shell command to explain")


def add_parser(sub: Any) -> None:
    """The ``hook`` subcommand's options (for ``--help``; ``main`` runs it before the full parser)."""
    h = sub.add_parser("hook", help=_HELP, description=_HELP + ". `hook explain CMD` shows what it does with CMD.")
    _arguments(h)


def main(argv: Sequence[str]) -> int:
    """Run ``streamfilter hook ARGS`` (``argv`` without the ``hook`` word); return the exit status.

    The answer goes to stdout; a problem with the input or the config file goes to stderr and
    leaves the command alone (exit 0: a hook must not stop the agent). Exit 2 for a usage error.
    """
    parser = argparse.ArgumentParser(prog="streamfilter hook", description=_HELP, allow_abbrev=False)
    _arguments(parser)
    args = parser.parse_args(argv)
    executable = executable_words(sys.argv[0], sys.executable)
    env = dict(os.environ)
    if args.agent == "explain":
        if args.command is None:
            parser.error("explain needs the command, e.g. streamfilter hook explain 'npm test'")
        try:
            wrap = rewrite(args.command, load_rules(env), executable, env)
        except ConfigError as exc:
            sys.stderr.write(f"streamfilter: error: {exc}\n")
            return 78
        sys.stdout.write(f"wrapped: {wrap.command}\n" if wrap.command else f"left alone: {wrap.why}\n")
        return 0
    try:
        payload = json.loads(sys.stdin.buffer.read() or b"null")
    except ValueError:
        payload = None
    value, note = answer(args.agent, payload, executable, env)
    if note:
        sys.stderr.write(f"streamfilter: {note}\n")
    sys.stdout.write(render(value))
    return 0
