"""``streamfilter install AGENT`` and ``uninstall AGENT``: the hook in the agent's settings file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..agents.hooks import AGENTS, executable_words
from ..agents.install import hook_command, plan, settings_path, write

__all__ = ("add_parser",)


def add_parser(sub: Any) -> None:
    """The ``install`` and ``uninstall`` subcommands' options."""
    for name, what in (("install", "add the hook to"), ("uninstall", "remove the hook from")):
        p = sub.add_parser(
            name,
            help=f"{what} an agent's settings (Claude Code, Codex, Cursor)",
            description=f"{what.capitalize()} the agent's settings file: its build and test commands then run "
            "through `streamfilter run --budget-tokens`. Idempotent; the rest of the file is kept.",
        )
        p.add_argument("agent", choices=AGENTS, help="the agent")
        scope = p.add_mutually_exclusive_group()
        scope.add_argument("--user", dest="project", action="store_false", help="the user's settings (default)")
        scope.add_argument("--project", action="store_true", help="the settings of the project in this directory")
        p.add_argument("--dry-run", action="store_true", help="print the change as a diff; write nothing")
        # (both write ``project``: the default must be set once, or --user's own default, True, wins)
        p.set_defaults(handler=_install, remove=name == "uninstall", project=False)


def _install(args: argparse.Namespace) -> int:
    executable = executable_words(sys.argv[0], sys.executable)
    path = settings_path(args.agent, args.project, Path.cwd(), os.environ)
    change = plan(args.agent, path, executable, remove=args.remove)
    if args.dry_run:
        sys.stdout.write(change.diff() or f"{path}: no change\n")
        _approvals(args)
        return 0
    write(change)
    if args.remove:
        said = "removed the hook from" if change.changed else "no streamfilter hook in"
        sys.stdout.write(f"streamfilter: {said} {path}\n")
    else:
        said = "installed the hook in" if change.changed else "the hook is already in"
        sys.stdout.write(f"streamfilter: {said} {path}: it runs `{hook_command(args.agent, executable)}`\n")
        _approvals(args)
    return 0


def _approvals(args: argparse.Namespace) -> None:
    """Codex and Cursor take a rewrite only as an approval: say what the hook will approve."""
    if args.agent in ("codex", "cursor") and not args.remove:
        from ..agents.approve import what_it_approves
        from ..agents.wrap import config_path

        sys.stdout.write(what_it_approves(args.agent, config_path(os.environ)))
