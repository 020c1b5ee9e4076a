"""``streamfilter install`` and ``uninstall``: idempotent, the rest of the file kept, --dry-run writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str, cwd: Path, home: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": "", **(extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "streamfilter", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


FILES = {
    ("claude", "--user"): ".claude/settings.json",
    ("claude", "--project"): ".claude/settings.json",
    ("codex", "--user"): ".codex/hooks.json",
    ("codex", "--project"): ".codex/hooks.json",
    ("cursor", "--user"): ".cursor/hooks.json",
    ("cursor", "--project"): ".cursor/hooks.json",
}


@pytest.mark.parametrize(("agent", "scope"), list(FILES))
def test_install_twice_keeps_one_entry_and_the_rest_and_uninstall_restores(
    agent: str, scope: str, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    path = (home if scope == "--user" else project) / FILES[(agent, scope)]
    path.parent.mkdir(parents=True)
    event = "preToolUse" if agent == "cursor" else "PreToolUse"
    theirs = {"command": "/usr/local/bin/audit-hook"}
    group = theirs if agent == "cursor" else {"matcher": "Bash", "hooks": [{"type": "command", **theirs}]}
    original = {"model": "x", "permissions": {"allow": ["Bash(make)"]}, "hooks": {event: [group]}}
    text = json.dumps(original, indent=4) + "\n"
    path.write_text(text)
    dry = _cli("install", agent, scope, "--dry-run", cwd=project, home=home)
    assert dry.returncode == 0 and dry.stdout.startswith("---") and f"hook {agent}" in dry.stdout
    assert path.read_text() == text  # a dry run writes nothing
    for _ in range(2):
        done = _cli("install", agent, scope, cwd=project, home=home)
        assert done.returncode == 0, done.stderr
    doc = json.loads(path.read_text())
    assert doc["model"] == "x" and doc["permissions"] == original["permissions"]
    entries = doc["hooks"][event]
    assert entries[0] == group  # theirs first, as it was
    ours = [e for e in entries if f"hook {agent}" in json.dumps(e)]
    assert len(ours) == 1
    command = ours[0]["command"] if agent == "cursor" else ours[0]["hooks"][0]["command"]
    assert command.endswith(f"streamfilter hook {agent}")
    assert "    " in path.read_text()  # the file's own indentation
    done = _cli("uninstall", agent, scope, cwd=project, home=home)
    assert done.returncode == 0 and "removed the hook" in done.stdout
    after = json.loads(path.read_text())
    if agent == "cursor":
        after.pop("version")  # (added by the install: the file format's own key)
    assert after == original
    again = _cli("uninstall", agent, scope, cwd=project, home=home)
    assert "no streamfilter hook" in again.stdout


def test_install_makes_the_file_and_its_folder_and_the_agent_can_run_the_command(tmp_path: Path) -> None:
    done = _cli("install", "claude", "--project", cwd=tmp_path, home=tmp_path)
    assert done.returncode == 0
    doc = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "make"}}
    ran = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True)
    assert ran.returncode == 0 and json.loads(ran.stdout)["hookSpecificOutput"]["updatedInput"]["command"]


def test_a_settings_file_that_is_not_json_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{ not json")
    done = _cli("install", "claude", "--project", cwd=tmp_path, home=tmp_path)
    assert done.returncode == 1 and "is not valid JSON" in done.stderr
    assert path.read_text() == "{ not json"


def test_the_user_settings_are_the_default_wherever_it_runs(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    done = _cli("install", "claude", cwd=project, home=home)
    assert done.returncode == 0
    assert (home / ".claude" / "settings.json").exists() and not (project / ".claude").exists()


def test_claude_config_dir_is_where_the_claude_hook_goes(tmp_path: Path) -> None:
    # Claude Code reads the user's settings from $CLAUDE_CONFIG_DIR when it is set (helper-46)
    home, project, config = tmp_path / "home", tmp_path / "project", tmp_path / "cc"
    project.mkdir()
    done = _cli("install", "claude", cwd=project, home=home, extra={"CLAUDE_CONFIG_DIR": str(config)})
    assert done.returncode == 0, done.stderr
    assert (config / "settings.json").exists() and not (home / ".claude").exists()


def test_a_linked_file_stays_a_link_and_tabs_and_a_bom_are_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('\ufeff{\n\t"model": "x"\n}\n')
    (home / ".claude" / "settings.json").symlink_to(dotfiles)
    done = _cli("install", "claude", cwd=tmp_path, home=home)
    assert done.returncode == 0, done.stderr
    assert (home / ".claude" / "settings.json").is_symlink()
    text = dotfiles.read_text()
    assert text.startswith('\ufeff{\n\t"model": "x",\n\t"hooks"') and "hook claude" in text


def test_hooks_of_a_shape_the_agent_does_not_read_are_an_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {"PreToolUse": {"matcher": "Bash"}}}')
    done = _cli("install", "claude", "--project", cwd=tmp_path, home=tmp_path)
    assert done.returncode == 1 and "its hooks.PreToolUse is not a list" in done.stderr
    assert "Traceback" not in done.stderr
    # the key that is wrong is named (helper-29: `{"hooks": []}` blamed hooks.PreToolUse)
    path.write_text('{"hooks": []}')
    done = _cli("install", "claude", "--project", cwd=tmp_path, home=tmp_path)
    assert done.returncode == 1 and "its hooks is not an object" in done.stderr and "PreToolUse" not in done.stderr
    assert path.read_text() == '{"hooks": []}'


@pytest.mark.parametrize("agent", ["claude", "codex", "cursor"])
def test_install_and_uninstall_know_their_entries_by_its_words_not_a_mention(agent: str, tmp_path: Path) -> None:
    """helper-66: uninstall removed a user's hooks that mention the words (``logger streamfilter hook
    claude``), and an install from a path with a space was not known again: two installs left two
    entries, and uninstall removed neither."""
    from streamfilter.agents.install import plan, write

    event = "preToolUse" if agent == "cursor" else "PreToolUse"
    mentions = [
        f"logger streamfilter hook {agent}",
        f"echo 'streamfilter hook {agent}' >> /tmp/audit.log",
        f"/usr/bin/python3 /opt/x/streamfilter hook {agent}",
        f"streamfilter hook {agent} --verbose",
    ]
    theirs = [
        {"command": c} if agent == "cursor" else {"matcher": "Bash", "hooks": [{"type": "command", "command": c}]}
        for c in mentions
    ]
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps({"hooks": {event: theirs}}, indent=2) + "\n")
    spaced = [str(tmp_path / "my venv" / "bin" / "streamfilter")]
    for executable in (spaced, spaced, [sys.executable, "-m", "streamfilter"]):
        write(plan(agent, path, executable))
    entries = json.loads(path.read_text())["hooks"][event]
    assert entries[: len(theirs)] == theirs and len(entries) == len(theirs) + 1  # (the last install's)
    write(plan(agent, path, spaced, remove=True))
    assert json.loads(path.read_text())["hooks"][event] == theirs
