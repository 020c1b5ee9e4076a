"""``streamfilter hook AGENT``: the hook program an agent runs before each shell command.

It runs on every command an agent types, so it imports only the standard library and the small
``agents`` modules (no numpy, no anyio): ``main`` takes it before the full command line is built.
``streamfilter hook explain CMD`` says what the hooks would do with CMD, and why.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..agents.approve import refusal
from ..agents.hooks import AGENTS, answer, claude_rules_say, executable_words, render
from ..agents.wrap import ConfigError, load_rules, rewrite

if TYPE_CHECKING:
    import argparse

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
    executable = executable_words(sys.argv[0], sys.executable)
    env = dict(os.environ)
    if len(argv) == 1 and argv[0] in AGENTS:  # (what an agent runs: argparse would cost it ~8 ms)
        return _answer(argv[0], executable, env)
    import argparse

    parser = argparse.ArgumentParser(prog="streamfilter hook", description=_HELP, allow_abbrev=False)
    _arguments(parser)
    args = parser.parse_args(argv)
    if args.agent != "explain":
        return _answer(args.agent, executable, env)
    if args.command is None:
        parser.error("explain needs the command, e.g. streamfilter hook explain 'npm test'")
    try:
        rules = load_rules(env)
    except ConfigError as exc:
        sys.stderr.write(f"streamfilter: error: {exc}\n")
        return 78
    from ..live.envelope import printable  # (explain only: a file name's escape sequence is shown, not run, helper-59)

    try:
        here = os.getcwd()
    except FileNotFoundError:  # (as an agent's hook answers there, helper-87)
        sys.stdout.write("left alone: the working directory is gone\n")
        return 0
    wrap = rewrite(args.command, rules, executable, env)
    sys.stdout.write(
        f"wrapped: {printable(wrap.command)}\n" if wrap.command else f"left alone: {printable(wrap.why)}\n"
    )
    if wrap.command:  # (Codex and Cursor take a rewrite only as an approval: approve.refusal)
        said_claude = claude_rules_say(args.command, here, env, wrap)
        if said_claude in ("deny", "ask"):  # (Claude Code's own rules win: the hook leaves it to them)
            what = "deny it" if said_claude == "deny" else "ask about it"
            sys.stdout.write(f"claude: your permission rules {what}, so left alone\n")
        elif said_claude == "allow" and wrap.plain:  # (the hook answers "allow", as the rules did)
            sys.stdout.write("claude: your permission rules allow it, so wrapped and allowed\n")
        for agent in ("codex", "cursor"):
            why = refusal(agent, wrap, rules, here, env)
            said = "approved, so wrapped" if why is None else f"not approved ({printable(why)}), so left alone"
            sys.stdout.write(f"{agent}: {said}\n")
    return 0


def _answer(agent: str, executable: list[str], env: dict[str, str]) -> int:
    """Answer the agent's JSON on stdin on stdout (a note on stderr); exit status 0."""
    try:
        payload = json.loads(sys.stdin.buffer.read() or b"null")
    except ValueError:
        payload = None
    value, note = answer(agent, payload, executable, env)
    if note:
        sys.stderr.write(f"streamfilter: {note}\n")
    sys.stdout.write(render(value))
    return 0
