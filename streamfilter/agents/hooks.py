"""The hook programs of Claude Code, Codex and Cursor: the agent's JSON in, its answer out.

Each agent runs ``streamfilter hook AGENT`` before a shell command, with a JSON object on stdin;
the answer rewrites the command into ``streamfilter run --budget-tokens N -- COMMAND`` when
``wrap.rewrite`` says so, and is empty (Claude Code, Codex) or ``{}`` (Cursor) otherwise. A hook
never stops the agent: bad input or a broken config file leaves the command as it was (a note
goes to stderr).

The documented shapes (each agent's hook reference, 2026):

* Claude Code, ``PreToolUse`` on ``Bash``: in ``{"hook_event_name": "PreToolUse", "tool_name":
  "Bash", "tool_input": {"command", "description", "timeout", "run_in_background"}, "cwd",
  "permission_mode", ...}``; out ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "updatedInput": {...the tool input, its command rewritten}}}``. Claude Code then asks its
  permission rules about the rewritten command, which a user's rule for the original
  (``Bash(npm test:*)``) does not match; so when the original is allowed by the user's settings
  files the answer also says ``"permissionDecision": "allow"``, and when a deny or ask rule
  matches it the command is left alone (the rules then apply to it as written). Nothing is
  allowed that the user's own rules would not allow.
* Codex, ``PreToolUse`` on ``Bash``: in ``{"hook_event_name": "PreToolUse", "tool_name": "Bash",
  "tool_input": {"command": "..."}, "cwd", "permission_mode", ...}``; out as Claude Code's, where
  Codex takes a rewrite only with ``"permissionDecision": "allow"``: so a command is rewritten
  only when ``approve.approves`` says the hook may approve it (what the user's Codex rules allow,
  the ``approve`` list, the built-in build and test commands), and left alone otherwise.
* Cursor, ``preToolUse`` on its shell tool: in ``{"hook_event_name": "preToolUse", "tool_name":
  "Shell", "tool_input": {"command", ...}, "workspace_roots", ...}``; out ``{"permission":
  "allow", "updated_input": {...}}``, or ``{}`` to leave the command alone (Cursor wants a JSON
  object every time). As for Codex, a rewrite is an approval: only what ``approve.approves``
  allows is rewritten. ``beforeShellExecution`` cannot rewrite a command: its answer is ``{}``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .approve import approves, cd_outside, project_root, rule_words
from .wrap import ConfigError, Rules, Wrap, in_order, load_rules, names_of, rewrite, top_level

__all__ = ("AGENTS", "answer", "claude_home", "claude_rules_say", "executable_words", "render")

AGENTS = ("claude", "codex", "cursor")
_CURSOR_SHELL_TOOLS = frozenset(("Shell", "shell", "Terminal", "run_terminal_cmd", "Bash"))
_REASON = "streamfilter wraps build and test output (the whole output stays on disk; see its last line)"


def _settings_files(cwd: str, env: Mapping[str, str]) -> list[tuple[Path, bool]]:
    """Claude Code's settings files that hold permission rules, in its order of precedence, each
    with whether its allow rules count: the user's in ``$CLAUDE_CONFIG_DIR`` when that is set (Claude
    Code reads them there; the hook read ``~/.claude`` and missed their deny rules, helper-46); the
    project's in ``$CLAUDE_PROJECT_DIR``, else, Claude Code's folder not being known, in ``cwd`` and
    each folder above it up to its repository's root, whose deny and ask rules count (a deny rule
    in the root's settings held only when the command ran there, helper-54) and whose allow rules
    do not (but ``cwd``'s)."""
    given = env.get("CLAUDE_PROJECT_DIR")
    here = Path(given or cwd or ".")
    folders = [here]
    if not given:
        with contextlib.suppress(OSError):
            here = here.resolve()
            root = project_root(here)
            folders += [f for f in here.parents if f.is_relative_to(root)]
    files = [(Path("/etc/claude-code/managed-settings.json"), True)]
    for folder in folders:
        allow = folder is folders[0]
        files += [(folder / ".claude" / "settings.local.json", allow), (folder / ".claude" / "settings.json", allow)]
    return [*files, (claude_home(env) / "settings.json", True)]


def claude_home(env: Mapping[str, str]) -> Path:
    """Claude Code's folder of the user's settings: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env.get("HOME") or Path.home()) / ".claude"


def _rule_matches(rule: str, command: str) -> bool:
    """Whether a Claude Code permission rule (``Bash``, ``Bash(npm test)``, ``Bash(npm test:*)``,
    ``Bash(npm run *)``) matches one command."""
    if rule in ("Bash", "Bash(*)"):
        return True
    found = re.fullmatch(r"Bash\((.*)\)", rule, re.DOTALL)
    if found is None:
        return False
    pattern = found[1]
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return command == prefix or command.startswith(prefix + " ")
    if "*" in pattern:
        return fnmatch.fnmatchcase(command, pattern)
    return command == pattern


def claude_rules_say(command: str, cwd: str, env: Mapping[str, str], wrap: Wrap | None = None) -> str | None:
    """What the user's Claude Code permission rules say of ``command``: ``deny``, ``ask`` or ``allow``
    (the first that matches, in that order, as Claude Code weighs them), or None when none does.

    A ``cd DIR && CMD`` command is asked about each part; a ``cd`` part into the project (its
    repository, else ``cwd``) needs no rule. A deny or ask rule also holds for the command's words
    as ``wrap`` (its rewrite) read them: quotes and spaces gone (``make 'publish'``), behind its
    assignments, ``timeout``, ``env`` or a runner (``CI=1 make clean``), and under its other names
    (``python -m pytest``); a rewritten command would no longer match it (helper-29).
    """
    rules: dict[str, list[str]] = {"deny": [], "ask": [], "allow": []}
    for path, allow in _settings_files(cwd, env):
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return "ask"  # (a file it cannot read may deny anything: a trailing comma, a BOM, helper-66)
        permissions = doc.get("permissions") if isinstance(doc, dict) else None
        if permissions is not None and not isinstance(permissions, dict):
            return "ask"
        if isinstance(permissions, dict):
            for kind, found in rules.items():
                listed = permissions.get(kind, [])
                if not isinstance(listed, list):
                    return "ask"  # ("deny": "Bash(make deploy)", a string: not read as no rule)
                if allow or kind != "allow":
                    found.extend(r for r in listed if isinstance(r, str))
    pipes: list[int] = []
    segments, _ = top_level(command, pipes)  # (the quote-aware split the rewrite uses, not a plain split)
    # each command of a pipeline (`pytest | tail -30`) needs its own rule, as Claude Code asks them
    cuts = sorted({a for a, _ in segments} | {p + 1 for p in pipes})
    ends = sorted({b for _, b in segments} | set(pipes))
    parts = [command[a:b].strip() for a, b in zip(cuts, ends, strict=False) if command[a:b].strip()]
    parts = parts or [command.strip()]
    named = list(parts)
    if wrap is not None:
        named += [" ".join(w) for w in rule_words(wrap) if w]
    for kind in ("deny", "ask"):
        if any(_rule_matches(r, p) or _rule_holds(r, p) for r in rules[kind] for p in named):
            return kind
    here = Path(cwd or ".").resolve()
    root = project_root(here)
    asked = [p for p in parts if not _into_project(p, here, root, env)]
    if asked and all(any(_rule_matches(r, p) for r in rules["allow"]) for p in asked):
        return "allow"
    return None


def _rule_holds(rule: str, command: str) -> bool:
    """Whether a deny or ask rule (``Bash(make deploy:*)``, ``Bash(npm run test)``) holds for one
    command as the Codex and Cursor hooks read theirs (``approve._holds``): its first word the rule's
    and the rule's other words in order among the rest (``make -C . deploy``), under the command's
    and the rule's other names (``npm test`` for ``npm run test``; helper-66). Asking about more
    than the rule names only leaves a command to Claude Code."""
    found = re.fullmatch(r"Bash\((.*)\)", rule, re.DOTALL)
    if found is None or "*" in found[1].removesuffix(":*"):
        return False
    try:
        pattern, words = shlex.split(found[1].removesuffix(":*")), shlex.split(command)
    except ValueError:
        return False
    return any(in_order(name, p) for name in names_of(words) for p in names_of(pattern) if p)


def _into_project(part: str, here: Path, root: Path, env: Mapping[str, str]) -> bool:
    """Whether ``part`` is a ``cd`` into the project's folder ``root`` from ``here`` (``cd_outside``)."""
    try:
        words = shlex.split(part)
    except ValueError:
        return False
    return words[:1] == ["cd"] and len(words) == 2 and not cd_outside(words[1], here, root, env)


def _claude(payload: Mapping[str, Any], rules: Rules, executable: Sequence[str], env: Mapping[str, str]) -> Any:
    tool_input = payload.get("tool_input")
    if payload.get("hook_event_name", "PreToolUse") != "PreToolUse":
        return None
    if payload.get("tool_name") != "Bash" or not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or tool_input.get("run_in_background"):
        return None  # (a background command's output is read later, in pieces)
    wrap = rewrite(command, rules, executable, env)
    if wrap.command is None:
        return None
    said = claude_rules_say(command, str(payload.get("cwd") or ""), env, wrap)
    if said in ("deny", "ask"):
        return None
    out: dict[str, Any] = {"hookEventName": "PreToolUse", "updatedInput": {**tool_input, "command": wrap.command}}
    # the user's rule approved the original; not an expansion or a changed PATH it did not show
    # (never in plan mode: an allow there would run the command while Claude Code only plans, helper-66)
    mode = payload.get("permission_mode")
    if mode != "plan" and ((said == "allow" and wrap.plain) or mode == "bypassPermissions"):
        out["permissionDecision"] = "allow"
        out["permissionDecisionReason"] = _REASON
    return {"hookSpecificOutput": out}


def _codex(payload: Mapping[str, Any], rules: Rules, executable: Sequence[str], env: Mapping[str, str]) -> Any:
    tool_input = payload.get("tool_input")
    if payload.get("hook_event_name", "PreToolUse") != "PreToolUse" or not isinstance(tool_input, dict):
        return None
    if tool_input.get("sandbox_permissions") not in (None, "", "use_default") or tool_input.get(
        "with_escalated_permissions"
    ):
        return None  # (a call that asks to run outside the sandbox: its approval is Codex's, helper-66)
    command = tool_input.get("command")
    script: str | None = None
    shell: list[str] = []  # the shell words before the script, when the command is an argv
    if isinstance(command, str):
        script = command
    elif (  # an argv that runs a shell script: ["bash", "-lc", SCRIPT]
        isinstance(command, list)
        and len(command) == 3
        and all(isinstance(w, str) for w in command)
        and _system_shell(command[0], env)
        and command[1] in ("-c", "-lc")
    ):
        shell, script = command[:2], command[2]
    if script is None:
        return None
    wrap = rewrite(script, rules, executable, env)
    cwd = str(payload.get("cwd") or os.getcwd())
    workdir = tool_input.get("workdir")
    if isinstance(workdir, str) and workdir:  # (where Codex runs the command: judged there, as after a cd)
        if _leaves(cwd, workdir, env):
            return None
        cwd = os.path.join(cwd, workdir)
    if not _folder(cwd) or (workdir not in (None, "") and not isinstance(workdir, str)):
        return None  # (a call judged where it does not run is not approved, helper-90)
    if not approves("codex", wrap, rules, cwd, env, str(payload.get("permission_mode") or "")):
        return None  # (a rewrite is an approval: left to Codex's own)
    assert wrap.command is not None
    new = [*shell, wrap.command] if shell else wrap.command
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",  # (Codex takes a rewrite only with it)
            "permissionDecisionReason": _REASON,
            "updatedInput": {**tool_input, "command": new},
        }
    }


def _folder(cwd: str) -> bool:
    """Whether ``cwd``, where a call runs, is an absolute path of a folder (not ``5``, a file, or
    ``/nonexistent``, which a call's ``cwd`` may be)."""
    return os.path.isabs(cwd) and os.path.isdir(cwd)


def _leaves(session: str, there: str, env: Mapping[str, str]) -> bool:
    """Whether a call run in ``there`` (from the session's folder ``session``) is outside the
    session's project, as a ``cd there`` would be (``approve.cd_outside``): a Codex ``workdir`` or a
    Cursor ``cwd`` elsewhere made that folder the project (helper-51)."""
    here = Path(session).resolve()
    return cd_outside(there, here, project_root(here), env)


_SYSTEM_BIN = ("/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin")
_SHELLS = ("bash", "sh", "zsh")


def _system_shell(word: str, env: Mapping[str, str]) -> bool:
    """Whether ``word``, the first of a Codex argv (``["bash", "-lc", SCRIPT]``), names the system's
    shell: bash, sh or zsh, found on ``PATH`` or named by its absolute path, in a system folder
    (where only root writes, or for Homebrew's the user). A shell named by any other path
    (``/tmp/x/bash``, ``./bash``) is another program: approving the script would approve running it
    (helper-49)."""
    if os.path.basename(word) not in _SHELLS or not (os.sep not in word or os.path.isabs(word)):
        return False
    found = word if os.path.isabs(word) else shutil.which(word, path=env.get("PATH", os.defpath))
    return found is not None and os.path.dirname(os.path.normpath(found)) in _SYSTEM_BIN


def _cursor(payload: Mapping[str, Any], rules: Rules, executable: Sequence[str], env: Mapping[str, str]) -> Any:
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if payload.get("hook_event_name") != "preToolUse" or payload.get("tool_name") not in _CURSOR_SHELL_TOOLS:
        return {}
    if not isinstance(tool_input, dict) or not isinstance(command, str):
        return {}
    if tool_input.get("is_background"):
        return {}  # (its output is read later, in pieces: as Claude Code's run_in_background)
    wrap = rewrite(command, rules, executable, env)
    roots = payload.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    cwd = str(tool_input.get("cwd") or root or os.getcwd())
    if not _folder(cwd) or (root is not None and _leaves(root, cwd, env)):
        return {}  # (a call judged where it does not run is not approved, helper-90)
    if not approves("cursor", wrap, rules, cwd, env):
        return {}  # (a rewrite is an approval: left to Cursor's own)
    assert wrap.command is not None
    return {"permission": "allow", "updated_input": {**tool_input, "command": wrap.command}, "agent_message": _REASON}


_ANSWERS = {"claude": _claude, "codex": _codex, "cursor": _cursor}


def answer(agent: str, payload: object, executable: Sequence[str], env: Mapping[str, str]) -> tuple[Any, str]:
    """The hook's answer to ``payload`` (the agent's JSON, parsed) and a note for stderr (or "").

    Returns:
        ``(answer, note)``: the JSON value to print (None: print nothing) and why the command was
        left alone when something was wrong (a bad payload, a broken config file).

    Raises:
        KeyError: ``agent`` is not one of ``AGENTS``.
    """
    respond = _ANSWERS[agent]
    empty: dict[str, Any] | None = {} if agent == "cursor" else None
    if not isinstance(payload, dict):
        return empty, "the hook's input is not a JSON object: the command is left as it was"
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    # (Claude's and Codex's shell tool is "Bash", one of Cursor's; only Codex's command may be a list)
    kinds = (str, list) if agent == "codex" else str
    if payload.get("tool_name") in _CURSOR_SHELL_TOOLS and not isinstance(command, kinds):
        return empty, "the hook's input names a shell tool without a command (tool_input.command): left as it was"
    try:
        rules = load_rules(env)
    except ConfigError as exc:
        return empty, f"{exc}: the command is left as it was"
    try:
        return respond(payload, rules, executable, env), ""
    except FileNotFoundError:  # (where no cwd is given, the hook's own, which can be removed, helper-87)
        return empty, "the working directory is gone: the command is left as it was"
    except (OSError, UnicodeError) as exc:  # (a lone surrogate, or a path the locale cannot encode, helper-90)
        return empty, f"a path of the call cannot be read ({exc}): the command is left as it was"


def executable_words(argv0: str, python: str) -> list[str]:
    """The words that start this ``streamfilter`` in a rewritten command: the console script's
    absolute path, or ``PYTHON -m streamfilter`` when run as a module."""
    path = Path(argv0)
    if path.name == "streamfilter" and path.exists():
        return [os.path.abspath(path)]  # (not resolved: a venv's script runs the venv's python)
    return [python, "-m", "streamfilter"]


def render(value: Any) -> str:
    """The answer as the agent reads it: one line of JSON, or nothing."""
    return "" if value is None else json.dumps(value) + "\n"
