"""Each hook fed the input shapes its agent documents, its answer checked against the agent's schema;
the hook program itself as the agent runs it (a subprocess: JSON on stdin, exit 0, answer on stdout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamfilter.agents.hooks import answer, claude_rules_say

EXE = ["/opt/sf/bin/streamfilter"]
RUN = "/opt/sf/bin/streamfilter run --budget-tokens 4000 --"


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _claude_input(command: str, cwd: Path, **extra: Any) -> dict[str, Any]:
    """Claude Code's documented PreToolUse input for its Bash tool."""
    return {
        "session_id": "abc123",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the tests", "timeout": 120000, **extra},
        "tool_use_id": "toolu_01ABC123",
    }


def _check_claude_schema(out: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's PreToolUse output: only hookSpecificOutput, with its documented keys and values."""
    assert set(out) == {"hookSpecificOutput"}
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert set(specific) <= {"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput"}
    assert specific.get("permissionDecision", "allow") in ("allow", "deny", "ask")
    assert isinstance(specific["updatedInput"]["command"], str)
    return dict(specific)


def test_claude_gets_the_whole_tool_input_back_with_its_command_wrapped(tmp_path: Path) -> None:
    payload = _claude_input("pytest -q", tmp_path)
    out, note = answer("claude", payload, EXE, _env(tmp_path))
    specific = _check_claude_schema(out)
    assert note == ""
    # every field of the tool input is kept (a plain command string would be ignored by Claude Code)
    assert specific["updatedInput"] == {**payload["tool_input"], "command": f"{RUN} pytest -q"}
    assert "permissionDecision" not in specific  # no rule allows it: Claude Code asks as it would


def test_claude_allows_only_what_the_users_rules_allow(tmp_path: Path) -> None:
    env = _env(tmp_path)
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test:*)", "Bash(make)"]}}))
    project = tmp_path / "proj"
    out, _ = answer("claude", _claude_input("npm test -- --ci", project), EXE, env)
    assert _check_claude_schema(out)["permissionDecision"] == "allow"
    out, _ = answer("claude", _claude_input("make install", project), EXE, env)
    assert "permissionDecision" not in _check_claude_schema(out)  # "Bash(make)" is that command only
    # a deny or ask rule for the original: left alone, so the rule applies to it as written
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    (tmp_path / "home" / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(npm test:*)"], "ask": ["Bash(cargo *)"]}})
    )
    assert answer("claude", _claude_input("npm test", project), EXE, env)[0] is None
    assert answer("claude", _claude_input("cargo test", project), EXE, env)[0] is None
    assert claude_rules_say("cd web && npm test", str(project), env) == "deny"
    # each command of a pipeline needs its rule: the one for make does not approve `| tail`
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(make:*)"]}}))
    assert claude_rules_say("make | tail -5", str(project), env) is None
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(make:*)", "Bash(tail -5)"]}}))
    assert claude_rules_say("make | tail -5", str(project), env) == "allow"


def test_claude_config_dir_holds_the_users_rules(tmp_path: Path) -> None:
    # the hook read ~/.claude/settings.json where Claude Code read $CLAUDE_CONFIG_DIR's, and allowed
    # from the stale file what the real one denied (helper-46)
    env = {**_env(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    stale = {"permissions": {"allow": ["Bash(make:*)"]}}
    (tmp_path / "home" / ".claude" / "settings.json").write_text(json.dumps(stale))
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(make check)"]}}))
    (tmp_path / "proj").mkdir()
    assert claude_rules_say("make check", str(tmp_path / "proj"), env) == "deny"
    assert claude_rules_say("make test", str(tmp_path / "proj"), env) is None  # (the stale allow is not read)


def test_claude_deny_and_ask_rules_hold_however_the_command_is_written(tmp_path: Path) -> None:
    # helper-29: the rules were matched against the text, so `make  publish`, `make 'publish'`,
    # `CI=1 make clean` and `timeout 60 make clean` were wrapped (and so approved, or the rule no
    # longer matched the rewritten command); `cd /tmp && make` took no rule for its `cd`
    env = _env(tmp_path)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "web").mkdir()
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    rules = {
        "allow": ["Bash(make:*)", "Bash(pytest:*)"],
        "deny": ["Bash(make publish)", "Bash(make clean:*)", "Bash(pytest -p:*)"],
        "ask": ["Bash(make deploy:*)"],
    }
    settings.write_text(json.dumps({"permissions": rules}))
    for command in (
        "make  publish",
        "make 'publish'",
        'make "deploy"',
        "CI=1 make clean",
        "timeout 60 make clean",
        "env CI=1 make clean -j2",
        "python3 -m pytest -p no:cacheprovider",
    ):
        out, _ = answer("claude", {**_claude_input(command, project), "permission_mode": "bypassPermissions"}, EXE, env)
        assert out is None, command
    out, _ = answer("claude", _claude_input("make test", project), EXE, env)
    assert _check_claude_schema(out)["permissionDecision"] == "allow"
    # a `cd` into the project needs no rule; one out of it does
    assert claude_rules_say("cd web && make test", str(project), env) == "allow"
    in_web = {**env, "CLAUDE_PROJECT_DIR": str(project)}
    assert claude_rules_say(f"cd {project} && make test", str(project / "web"), in_web) == "allow"
    assert claude_rules_say("cd /tmp && make test", str(project), env) is None
    out, _ = answer("claude", _claude_input("cd /tmp && make", project), EXE, env)
    assert "permissionDecision" not in _check_claude_schema(out)


def test_claude_deny_rules_hold_with_words_between_under_other_names_and_unread(tmp_path: Path) -> None:
    """helper-66: with allow ``Bash(make:*)`` and deny ``Bash(make deploy:*)``, ``make -C . deploy``
    was allowed and rewritten (so the deny rule no longer matched it); a rule on ``npm run test``
    did not hold for ``npm test``; a settings file with a trailing comma, or a ``deny`` that is a
    string, counted as no deny while another file's allow still counted; and plan mode got an allow."""
    env = _env(tmp_path)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "package.json").write_text('{"name": "p", "scripts": {"test": "echo t"}}')
    user = tmp_path / "home" / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"permissions": {"allow": ["Bash(make:*)", "Bash(npm:*)"]}}))
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(make deploy:*)", "Bash(npm run test)"]}}))
    for command in ("make -C . deploy", "make V=1 deploy", "make test deploy", "npm test", "npm t"):
        assert claude_rules_say(command, str(project), env) == "deny", command
        out, _ = answer("claude", _claude_input(command, project), EXE, env)
        assert out is None, command
    assert claude_rules_say("make test", str(project), env) == "allow"
    for broken in (
        '{"permissions": {"deny": ["Bash(make deploy)"]},}',
        '\ufeff{"permissions": {"deny": ["Bash(make deploy)"]}}',
        '{"permissions": {"deny": "Bash(make deploy)"}}',
        '{"permissions": ["Bash(make deploy)"]}',
    ):
        settings.write_text(broken)
        assert claude_rules_say("make test", str(project), env) == "ask", broken
        assert answer("claude", _claude_input("make test", project), EXE, env)[0] is None, broken
    settings.unlink()
    out, _ = answer("claude", {**_claude_input("make test", project), "permission_mode": "plan"}, EXE, env)
    assert "permissionDecision" not in _check_claude_schema(out)  # (rewritten, not allowed)


def test_claude_deny_rules_of_the_repositorys_root_hold_in_a_sub_folder_without_its_project_dir(tmp_path: Path) -> None:
    """helper-54: with no CLAUDE_PROJECT_DIR, only the payload's cwd was looked in for .claude: a
    deny rule in the repository's root let `make` in src/ be rewritten, which Claude Code then asks
    about instead of denying. Allow rules count from cwd's folder only (Claude Code's is not known)."""
    env = _env(tmp_path)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src" / ".claude").mkdir(parents=True)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(make:*)"]}}))
    out, _ = answer("claude", _claude_input("make", project / "src"), EXE, env)
    assert out is None
    assert claude_rules_say("make", str(project / "src"), env) == "deny"
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(make:*)"]}}))
    assert claude_rules_say("make", str(project / "src"), env) is None
    (project / "src" / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(make:*)"]}}))
    assert claude_rules_say("make", str(project / "src"), env) == "allow"


def test_claude_bypass_mode_allows_and_background_or_other_tools_are_left_alone(tmp_path: Path) -> None:
    env = _env(tmp_path)
    out, _ = answer("claude", {**_claude_input("make", tmp_path), "permission_mode": "bypassPermissions"}, EXE, env)
    assert _check_claude_schema(out)["permissionDecision"] == "allow"
    assert answer("claude", _claude_input("make", tmp_path, run_in_background=True), EXE, env)[0] is None
    assert answer("claude", _claude_input("git status", tmp_path), EXE, env)[0] is None
    read = {**_claude_input("x", tmp_path), "tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}}
    assert answer("claude", read, EXE, env)[0] is None


def _check_codex_schema(out: dict[str, Any]) -> dict[str, Any]:
    """Codex's PreToolUse output: a rewrite only with permissionDecision allow."""
    specific = out["hookSpecificOutput"]
    assert set(out) == {"hookSpecificOutput"} and specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "allow" and "updatedInput" in specific
    return dict(specific)


def test_codex_string_and_argv_commands(tmp_path: Path) -> None:
    env = _env(tmp_path)
    base = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    out, _ = answer("codex", {**base, "tool_input": {"command": "cargo test"}}, EXE, env)
    assert _check_codex_schema(out)["updatedInput"] == {"command": f"{RUN} cargo test"}
    out, _ = answer("codex", {**base, "tool_input": {"command": ["bash", "-lc", "go test ./..."]}}, EXE, env)
    assert _check_codex_schema(out)["updatedInput"]["command"] == ["bash", "-lc", f"{RUN} go test ./..."]
    assert answer("codex", {**base, "tool_input": {"command": "rm -rf build"}}, EXE, env)[0] is None
    assert answer("codex", {**base, "tool_input": {"command": ["ls", "-la"]}}, EXE, env)[0] is None
    # a call that asks to run outside the sandbox is Codex's to approve (helper-66: allowed, its
    # escalation request copied into the rewrite)
    for escalate in (
        {"sandbox_permissions": "require_escalated", "justification": "x"},
        {"with_escalated_permissions": True},
    ):
        assert answer("codex", {**base, "tool_input": {"command": "cargo test", **escalate}}, EXE, env)[0] is None
    out, _ = answer(
        "codex", {**base, "tool_input": {"command": "cargo test", "sandbox_permissions": "use_default"}}, EXE, env
    )
    assert _check_codex_schema(out)["permissionDecision"] == "allow"


def test_codex_argv_approved_only_with_the_systems_shell(tmp_path: Path) -> None:
    """helper-49: ["/tmp/x/bash", "-lc", "make test"] was approved, and ran that program."""
    env = _env(tmp_path)
    (tmp_path / "proj").mkdir()
    fake = tmp_path / "evil" / "bash"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nexec /bin/bash "$@"\n')
    fake.chmod(0o755)
    base = {"cwd": str(tmp_path / "proj"), "hook_event_name": "PreToolUse", "tool_name": "Bash"}

    def approved(shell: str, path: str = "/usr/bin:/bin") -> bool:
        payload = {**base, "tool_input": {"command": [shell, "-lc", "make test"]}}
        return answer("codex", payload, EXE, {**env, "PATH": path})[0] is not None

    assert approved("bash") and approved("/bin/bash") and approved("/usr/bin/sh")
    assert not approved(str(fake)) and not approved("./bash") and not approved("../evil/bash")
    assert not approved("bash", f"{fake.parent}:/usr/bin:/bin")  # (the first bash on PATH is that one)
    assert not approved("/bin/../tmp/bash") and not approved("python3")


def test_codex_command_judged_in_its_workdir(tmp_path: Path) -> None:
    """Codex runs a shell call in its ``workdir``: the approval looks there, not at the session's cwd."""
    env = _env(tmp_path)
    (tmp_path / "clean").mkdir()
    (tmp_path / "outer" / "proj").mkdir(parents=True)
    (tmp_path / "outer" / "setup.py").write_text("import os\n")  # (pytest runs it: read from above)
    base = {"cwd": str(tmp_path / "clean"), "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    assert answer("codex", {**base, "tool_input": {"command": "pytest -q"}}, EXE, env)[0] is not None
    inside = {"command": "pytest -q", "workdir": str(tmp_path / "outer" / "proj")}
    assert answer("codex", {**base, "tool_input": inside}, EXE, env)[0] is None
    relative = {"command": "pytest -q", "workdir": "../outer/proj"}
    assert answer("codex", {**base, "tool_input": relative}, EXE, env)[0] is None


def test_a_call_run_outside_the_sessions_project_is_not_approved(tmp_path: Path) -> None:
    """helper-51: a Codex workdir or a Cursor cwd elsewhere was made the project and approved, where
    `cd THERE && pytest -q` was not."""
    env = _env(tmp_path)
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    (tmp_path / "proj" / ".git").mkdir()
    (tmp_path / "shared").mkdir()
    codex = {"cwd": str(tmp_path / "proj"), "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    for there, approved in (("../shared", False), (str(tmp_path / "shared"), False), ("sub", True)):
        payload = {**codex, "tool_input": {"command": "pytest -q", "workdir": there}}
        assert (answer("codex", payload, EXE, env)[0] is not None) == approved, there
    cursor = {"hook_event_name": "preToolUse", "tool_name": "Shell", "workspace_roots": [str(tmp_path / "proj")]}
    for there, approved in ((str(tmp_path / "shared"), False), (str(tmp_path / "proj" / "sub"), True)):
        payload = {**cursor, "tool_input": {"command": "pytest -q", "cwd": there}}
        assert (answer("cursor", payload, EXE, env)[0] != {}) == approved, there


def test_cursor_pre_tool_use_rewrites_and_every_other_case_answers_an_empty_object(tmp_path: Path) -> None:
    env = _env(tmp_path)
    common = {"conversation_id": "c", "generation_id": "g", "workspace_roots": [str(tmp_path)]}
    shell = {**common, "hook_event_name": "preToolUse", "tool_name": "Shell"}
    out, _ = answer("cursor", {**shell, "tool_input": {"command": "npm test", "cwd": str(tmp_path)}}, EXE, env)
    assert set(out) <= {"permission", "updated_input", "user_message", "agent_message"}
    assert out["permission"] == "allow"
    assert out["updated_input"] == {"command": f"{RUN} npm test", "cwd": str(tmp_path)}
    assert answer("cursor", {**shell, "tool_input": {"command": "ls"}}, EXE, env)[0] == {}
    background = {"command": "npm test", "cwd": str(tmp_path), "is_background": True}  # (as Claude Code's, helper-66)
    assert answer("cursor", {**shell, "tool_input": background}, EXE, env)[0] == {}
    before = {**common, "hook_event_name": "beforeShellExecution", "command": "npm test", "cwd": str(tmp_path)}
    assert answer("cursor", before, EXE, env)[0] == {}  # (this event cannot rewrite a command)
    edit = {**common, "hook_event_name": "preToolUse", "tool_name": "Edit", "tool_input": {"file_path": "a"}}
    assert answer("cursor", edit, EXE, env)[0] == {}


def _hook(agent: str, stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "streamfilter", "hook", agent],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def test_the_hook_program_answers_on_stdout_and_never_stops_the_agent(tmp_path: Path) -> None:
    env = _env(tmp_path)
    done = _hook("claude", json.dumps(_claude_input("make test", tmp_path)).encode(), env)
    assert done.returncode == 0 and done.stderr == b""
    command = json.loads(done.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
    assert command.endswith("run --budget-tokens 4000 -- make test")
    assert command.startswith(f"{sys.executable} -m streamfilter ")  # (run as a module here)
    # input that is not the agent's JSON: the command is left alone, a note on stderr, exit 0
    done = _hook("claude", b"not json", env)
    assert (done.returncode, done.stdout) == (0, b"") and b"not a JSON object" in done.stderr
    done = _hook("cursor", b"", env)
    assert (done.returncode, done.stdout) == (0, b"{}\n")
    # a shell tool's call without a command: left alone, and said (helper-35)
    for payload in (
        {"tool_name": "Bash"},
        {"tool_name": "Bash", "tool_input": {"command": 42}},
        {"tool_name": "Bash", "tool_input": {"command": ["pytest", "-q"]}},  # (Codex's may be; helper-36)
    ):
        done = _hook("claude", json.dumps(payload).encode(), env)
        assert (done.returncode, done.stdout) == (0, b"") and b"without a command" in done.stderr, done.stderr
    done = _hook("claude", json.dumps({"tool_name": "Read", "tool_input": {"file_path": "x"}}).encode(), env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")  # (not a shell tool: nothing to say)
    # a config file with a typo: left alone, and the note names the file and the key
    (tmp_path / "config" / "streamfilter").mkdir(parents=True)
    (tmp_path / "config" / "streamfilter" / "hooks.toml").write_text("budget = 5\n")
    done = _hook("claude", json.dumps(_claude_input("make", tmp_path)).encode(), env)
    assert (done.returncode, done.stdout) == (0, b"") and b"unknown key 'budget'" in done.stderr


def test_explain_says_what_the_hooks_do_with_a_command(tmp_path: Path) -> None:
    env = {**os.environ, **_env(tmp_path)}
    run = [sys.executable, "-m", "streamfilter", "hook", "explain"]
    done = subprocess.run([*run, "npm test"], capture_output=True, env=env, check=False, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith(b"wrapped: ")
    assert done.stdout.endswith(b"-- npm test\ncodex: approved, so wrapped\ncursor: approved, so wrapped\n")
    done = subprocess.run([*run, "npm install"], capture_output=True, env=env, check=False, timeout=60)
    assert done.stdout.endswith(
        b"-- npm install\n"
        b"codex: not approved (not a command of the built-in list, nor of your approve list), so left alone\n"
        b"cursor: not approved (not a command of the built-in list, nor of your approve list), so left alone\n"
    )
    # why it is not approved names what to look at: one link out turns approval off (helper-51)
    (tmp_path / "proj2").mkdir()
    (tmp_path / "proj2" / "docs-link").symlink_to(tmp_path)
    done = subprocess.run(
        [*run, "npm test"], capture_output=True, env=env, check=False, timeout=60, cwd=tmp_path / "proj2"
    )
    assert (
        f"codex: not approved ({tmp_path / 'proj2' / 'docs-link'} is a symlink out of the project".encode()
        in done.stdout
    )
    # a file name's escape sequence is shown, not written to the terminal (helper-59)
    (tmp_path / "proj2" / "docs-link").rename(tmp_path / "proj2" / "x\x1b]0;T\x07y")
    done = subprocess.run(
        [*run, "npm test"], capture_output=True, env=env, check=False, timeout=60, cwd=tmp_path / "proj2"
    )
    assert b"x\\x1b]0;T\\x07y is a symlink out" in done.stdout and b"\x1b" not in done.stdout, done.stdout
    (tmp_path / "proj3").mkdir()
    done = subprocess.run(
        [*run, "make -e test"], capture_output=True, env=env, check=False, timeout=60, cwd=tmp_path / "proj3"
    )
    assert b"codex: not approved (-e: an option not known to be harmless for make), so left alone" in done.stdout
    # each reason true of the command (helper-53: "behind a runner (True: ...)"; npm's extra word
    # called "not the project's own module")
    for command, reason in (
        ("npx jest", b"(behind a runner (npx, uv run, poetry run, ...: it may fetch, sync or change what runs))"),
        ("npm test deploy", b"(deploy: words after a script go to the script's command)"),
    ):
        done = subprocess.run(
            [*run, command], capture_output=True, env=env, check=False, timeout=60, cwd=tmp_path / "proj3"
        )
        assert b"codex: not approved " + reason + b", so left alone" in done.stdout, done.stdout
    done = subprocess.run([*run, "npm test | head"], capture_output=True, env=env, check=False, timeout=60)
    assert done.stdout == b"left alone: not one simple command ('|' into other than `tail -N`)\n"
    # Claude Code's rules that deny or ask: its hook leaves the command to them, and explain says
    # so; it said "wrapped" alone (helper-37)
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Bash(npm test:*)"]}}')
    env["CLAUDE_PROJECT_DIR"] = str(project)
    done = subprocess.run([*run, "npm test"], capture_output=True, env=env, check=False, timeout=60, cwd=project)
    assert b"\nclaude: your permission rules deny it, so left alone\n" in done.stdout, done.stdout
    (project / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash(npm test:*)"]}}')
    done = subprocess.run([*run, "npm test"], capture_output=True, env=env, check=False, timeout=60, cwd=project)
    assert b"\nclaude: your permission rules allow it, so wrapped and allowed\n" in done.stdout, done.stdout


@pytest.mark.parametrize("agent", ["claude", "codex", "cursor"])
def test_the_hook_does_not_load_numpy(agent: str, tmp_path: Path) -> None:
    # it runs before every command an agent types: the filter's heavy modules stay unloaded, and so
    # do argparse (~8 ms), dataclasses (~6 ms, with inspect and ast) and, with no config file, tomllib
    probe = (
        "import sys; sys.argv = ['streamfilter', 'hook', '" + agent + "']; from streamfilter.cli.main import main; "
        "main(['hook', '" + agent + "']); sys.stderr.write(str(sorted(m for m in sys.modules if m.split('.')[0] "
        "in ('numpy', 'anyio', 'argparse', 'dataclasses', 'tomllib', 'ast'))))"
    )
    shell = {"hook_event_name": "preToolUse", "tool_name": "Shell", "tool_input": {"command": "make -j4"}}
    payload = json.dumps(shell if agent == "cursor" else _claude_input("make -j4", tmp_path)).encode()
    done = subprocess.run([sys.executable, "-c", probe], input=payload, capture_output=True,
                          env={**os.environ, **_env(tmp_path)}, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stderr.endswith(b"[]"), done.stderr
    assert b"run --budget-tokens 4000 -- make -j4" in done.stdout


def test_an_approval_never_covers_an_expansion_or_a_changed_path(tmp_path: Path) -> None:
    env = _env(tmp_path)
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test:*)"]}}))
    out, _ = answer("claude", _claude_input("npm test -- $(id)", tmp_path / "proj"), EXE, env)
    assert "permissionDecision" not in _check_claude_schema(out)  # rewritten; Claude Code asks as it would
    base = {"hook_event_name": "PreToolUse", "tool_name": "Bash"}
    for command in ("PATH=/tmp/evil:$PATH cargo test", "/tmp/evil/pytest", "pytest `id`"):
        assert answer("codex", {**base, "tool_input": {"command": command}}, EXE, env)[0] is None
        cursor = {"hook_event_name": "preToolUse", "tool_name": "Shell", "tool_input": {"command": command}}
        assert answer("cursor", cursor, EXE, env)[0] == {}


def test_another_event_gets_no_rewrite(tmp_path: Path) -> None:
    post = {**_claude_input("make", tmp_path), "hook_event_name": "PostToolUse"}
    assert answer("claude", post, EXE, _env(tmp_path))[0] is None
    assert answer("codex", post, EXE, _env(tmp_path))[0] is None


def test_in_a_removed_working_directory_the_hook_leaves_the_command_alone_and_exits_0(tmp_path: Path) -> None:
    # (the hook's own directory, read where the payload gives none, raised FileNotFoundError: exit 1
    # and a traceback, helper-87)
    env = {**os.environ, **_env(tmp_path)}
    gone = tmp_path / "gone"
    gone.mkdir()
    hook = f"{sys.executable} -m streamfilter hook"
    payloads = {
        "claude": {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "make"}},
        "cursor": {"hook_event_name": "preToolUse", "tool_name": "Shell", "tool_input": {"command": "make"}},
    }
    for agent, payload in payloads.items():
        done = subprocess.run(
            ["sh", "-c", f'cd "$1" && rmdir "$1" && exec {hook} {agent}', "sh", str(gone)],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout in (b"", b"{}\n"), done.stderr
        assert done.stderr == b"streamfilter: the working directory is gone: the command is left as it was\n"
        gone.mkdir()
    done = subprocess.run(
        ["sh", "-c", f'cd "$1" && rmdir "$1" && exec {hook} explain make', "sh", str(gone)],
        capture_output=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, b"left alone: the working directory is gone\n"), done.stderr


def test_a_call_whose_folder_is_not_one_is_not_approved(tmp_path: Path) -> None:
    """helper-90: a Cursor cwd of 5 or /nonexistent, a Codex workdir of 5 or a cwd that is a file were
    judged in the hook's own folder and approved."""
    env = _env(tmp_path)
    (tmp_path / "proj").mkdir()
    (tmp_path / "file").write_text("x\n")
    cursor = {"hook_event_name": "preToolUse", "tool_name": "Shell", "workspace_roots": [str(tmp_path / "proj")]}
    for cwd in (5, "/nonexistent", str(tmp_path / "file"), "proj"):
        payload = {**cursor, "tool_input": {"command": "pytest -q", "cwd": cwd}}
        assert answer("cursor", payload, EXE, env) == ({}, ""), cwd
    payload = {**cursor, "tool_input": {"command": "pytest -q", "cwd": str(tmp_path / "proj")}}
    assert answer("cursor", payload, EXE, env)[0]["permission"] == "allow"
    codex = {"hook_event_name": "PreToolUse", "tool_name": "Bash"}
    for cwd, workdir in ((str(tmp_path / "proj"), 5), (str(tmp_path / "file"), None), ("/nonexistent", None)):
        tool_input = {"command": "pytest -q", **({"workdir": workdir} if workdir is not None else {})}
        assert answer("codex", {**codex, "cwd": cwd, "tool_input": tool_input}, EXE, env) == (None, ""), cwd
    assert answer("codex", {**codex, "cwd": str(tmp_path / "proj"), "tool_input": {"command": "pytest"}}, EXE, env)[0]


@pytest.mark.parametrize(
    ("agent", "payload", "locale"),
    [
        ("codex", {"hook_event_name": "PreToolUse", "cwd": "{here}",
                   "tool_input": {"command": "make ARGS=\ud800"}}, {}),
        ("claude", {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "/tmp/\ud800",
                    "tool_input": {"command": "pytest -q"}}, {}),
        ("cursor", {"hook_event_name": "preToolUse", "tool_name": "Shell", "tool_input": {"command": "pytest -k é"}},
         {"PYTHONUTF8": "0", "LC_ALL": "C", "PYTHONIOENCODING": ""}),
    ],
)  # fmt: skip
def test_a_path_the_hook_cannot_encode_leaves_the_command_alone(
    tmp_path: Path, agent: str, payload: dict[str, Any], locale: dict[str, str]
) -> None:
    # (a lone surrogate, valid in JSON, or a locale whose encoding is ASCII: UnicodeEncodeError from a
    # path's resolve(), a traceback and exit 1, helper-90)
    stdin = json.dumps(payload).replace("{here}", str(tmp_path)).encode()
    done = _hook(agent, stdin, {**os.environ, **_env(tmp_path), **locale})
    assert done.returncode == 0 and done.stdout in (b"", b"{}\n"), done.stderr
    assert done.stderr.startswith(b"streamfilter: a path of the call cannot be read (")
    assert done.stderr.endswith(b"): the command is left as it was\n")
