"""Adding and removing the hook in an agent's settings file, keeping the rest of the file as it was.

Where each agent reads its hooks (its documentation, 2026):

==========  ===========================  ==================================  =======================
agent       user file (``--user``)       project file (``--project``)        entry
==========  ===========================  ==================================  =======================
claude      ``~/.claude/settings.json``  ``.claude/settings.json``           ``hooks.PreToolUse``,
                                                                             matcher ``Bash``
codex       ``$CODEX_HOME/hooks.json``   ``.codex/hooks.json``               ``hooks.PreToolUse``,
            (``~/.codex/hooks.json``)                                        matcher ``Bash``
cursor      ``~/.cursor/hooks.json``     ``.cursor/hooks.json``              ``hooks.preToolUse``
==========  ===========================  ==================================  =======================

The hook entry runs ``/abs/path/streamfilter hook AGENT``. Installing twice leaves one entry (an
entry of an older install, another path to streamfilter, is replaced); uninstalling removes only
streamfilter's entries, and the groups and lists that it leaves empty. The file is written whole
to a temporary file beside it and renamed over it (its mode kept), so an agent never reads half
of it; a file that is not valid JSON is not touched.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import StreamfilterError
from .hooks import claude_home

__all__ = ("Change", "InstallError", "hook_command", "plan", "settings_path", "write")


class InstallError(StreamfilterError):
    """A settings file that cannot be read as JSON, or cannot be written (exit 1)."""


@dataclass(frozen=True, slots=True)
class Change:
    """A settings file before and after: None when the file does not exist (before) or is not made (after)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        """Whether writing ``after`` changes the file."""
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (empty when there is none)."""
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                (self.after or "").splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path),
            )
        )


def settings_path(agent: str, project: bool, cwd: Path, env: Mapping[str, str]) -> Path:
    """The file ``agent`` reads its hooks from, for the user or for the project in ``cwd``.

    Raises:
        KeyError: an unknown agent.
    """
    home = Path(env.get("HOME") or Path.home())
    folder = {"claude": ".claude", "codex": ".codex", "cursor": ".cursor"}[agent]
    name = "settings.json" if agent == "claude" else "hooks.json"
    if project:
        return cwd / folder / name
    if agent == "codex" and env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"]) / name
    if agent == "claude":  # ($CLAUDE_CONFIG_DIR when set: where Claude Code reads it then, helper-46)
        return claude_home(env) / name
    return home / folder / name


def hook_command(agent: str, executable: Sequence[str]) -> str:
    """The shell command an agent runs as the hook: ``/abs/path/streamfilter hook AGENT``."""
    return shlex.join([*executable, "hook", agent])


def _is_ours(entry: object) -> bool:
    """Whether a hook entry's command is one ``hook_command`` writes, from any install: a program
    named ``streamfilter`` (quoted when its path has a space), or ``PYTHON -m streamfilter``, then
    ``hook AGENT`` and nothing else. A user's own hook that names it (``logger streamfilter hook
    claude``, ``echo ... >> audit.log``) is not (helper-66: uninstall removed them)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    try:
        argv = shlex.split(entry["command"])
    except ValueError:
        return False
    if len(argv) < 3 or argv[-2] != "hook" or argv[-1] not in ("claude", "codex", "cursor"):
        return False
    program = argv[:-2]
    return (len(program) == 1 and os.path.basename(program[0]) == "streamfilter") or (
        len(program) == 3 and program[1:] == ["-m", "streamfilter"]
    )


def _without_ours(doc: dict[str, Any], event: str, nested: bool) -> dict[str, Any]:
    """``doc`` with streamfilter's entries under ``hooks.EVENT`` removed, and what that left empty."""
    doc = copy.deepcopy(doc)
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(event), list):
        return doc
    kept: list[Any] = []
    for group in hooks[event]:
        if nested and isinstance(group, dict) and isinstance(group.get("hooks"), list):
            inner = [h for h in group["hooks"] if not _is_ours(h)]
            if inner or not group["hooks"]:
                kept.append({**group, "hooks": inner})
        elif not _is_ours(group):
            kept.append(group)
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
        if not hooks:
            del doc["hooks"]
    return doc


def _indent(text: str) -> int | str:
    """The indentation a JSON file uses (its first indented line's: spaces or a tab), 2 when it has none."""
    found = re.search(r"\n([ \t]+)\S", text)
    if found is None:
        return 2
    return "\t" if found[1].startswith("\t") else len(found[1])


def plan(agent: str, path: Path, executable: Sequence[str], remove: bool = False) -> Change:
    """What installing (or, with ``remove``, uninstalling) the hook does to the file at ``path``.

    Raises:
        InstallError: the file exists and is not a JSON object, or cannot be read.
    """
    try:
        before: str | None = path.read_text()
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    if before is not None and not os.access(path, os.W_OK):
        raise InstallError(f"{path} is read-only; it was left as it was")
    bom = "\ufeff" if before is not None and before.startswith("\ufeff") else ""
    try:
        doc = json.loads(before[len(bom) :]) if before is not None and before.strip() else {}
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); it was left as it was") from None
    if not isinstance(doc, dict):
        raise InstallError(f"{path} does not hold a JSON object; it was left as it was")
    event, nested = ("preToolUse", False) if agent == "cursor" else ("PreToolUse", True)
    doc = _without_ours(doc, event, nested)
    if not remove:
        command = hook_command(agent, executable)
        if agent == "cursor":
            doc.setdefault("version", 1)
            entry: dict[str, Any] = {"command": command}
        else:
            entry = {"matcher": "Bash", "hooks": [{"type": "command", "command": command, "timeout": 30}]}
        hooks = doc.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise InstallError(f"{path}: its hooks is not an object, as the agent reads it; it was left as it was")
        if not isinstance(hooks.setdefault(event, []), list):
            raise InstallError(f"{path}: its hooks.{event} is not a list, as the agent reads it; it was left as it was")
        hooks[event].append(entry)
    if before is None and remove:
        return Change(path, None, None)
    after = bom + json.dumps(doc, indent=_indent(before or ""), ensure_ascii=False) + "\n"
    if before is not None and remove and json.loads(before[len(bom) :] or "{}") == doc:
        after = before  # nothing of ours was there: the file stays byte for byte
    return Change(path, before, after)


def write(change: Change) -> None:
    """Write ``change.after`` to its file (whole, by a rename; the folder made when missing).

    Raises:
        InstallError: the folder or the file cannot be written.
    """
    if change.after is None:
        return
    path = change.path.resolve()  # a settings file that is a link (a dotfiles manager's) stays one
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if change.before is not None else 0o644
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(change.after)
            os.chmod(temp, mode)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as exc:
        raise InstallError(f"cannot write {path}: {exc.strerror or exc}") from None
