"""Which commands the hooks wrap, and how the rewrite keeps the command's own text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamfilter.agents.defaults import MAX_BUDGET_TOKENS
from streamfilter.agents.wrap import ConfigError, Rules, load_rules, rewrite
from streamfilter.core.settings import MAX_COUNT

EXE = ["/opt/sf/bin/streamfilter"]
RUN = "/opt/sf/bin/streamfilter run --budget-tokens 4000 --"
# (into tail: its lines, passing or not, no budget, no green run)
TAILED = "/opt/sf/bin/streamfilter run --tail {n} --found-tail {n} --success-tail {n} --no-baseline --"


def _wrap(command: str, rules: Rules | None = None, env: dict[str, str] | None = None) -> str | None:
    return rewrite(command, rules or load_rules({"HOME": "/nonexistent"}), EXE, env or {}).command


@pytest.mark.parametrize(
    ("command", "wrapped"),
    [
        ("npm test", f"{RUN} npm test"),
        ("pytest -q tests/test_cart.py", f"{RUN} pytest -q tests/test_cart.py"),
        ("python3 -m pytest -k 'cart and total'", f"{RUN} python3 -m pytest -k 'cart and total'"),
        # assignments go to the command through env, with their quoting; expansions stay as written
        ('CI=1 FOO="a b" pytest "$TESTS"', f'{RUN} env CI=1 FOO="a b" pytest "$TESTS"'),
        ("pytest $(git diff --name-only)", f"{RUN} pytest $(git diff --name-only)"),
        ("cd web && npm run build", f"cd web && {RUN} npm run build"),
        ("cd 'my app' && cd src && make -j8", f"cd 'my app' && cd src && {RUN} make -j8"),
        ("npm test 2>&1", f"{RUN} npm test 2>&1"),
        ("uv run pytest -x", f"{RUN} uv run pytest -x"),
        ("npx tsc --noEmit", f"{RUN} npx tsc --noEmit"),
        ("cargo test --workspace", f"{RUN} cargo test --workspace"),
        ("./gradlew check", f"{RUN} ./gradlew check"),
        # a listed command's last options anywhere after its other words (the usual gh forms)
        ("gh run view 123 --log-failed", f"{RUN} gh run view 123 --log-failed"),
        ("gh run view --job 456 --log", f"{RUN} gh run view --job 456 --log"),
        ("ruff format src --check", f"{RUN} ruff format src --check"),
    ],
)
def test_build_and_test_commands_are_wrapped_keeping_their_text(command: str, wrapped: str) -> None:
    assert _wrap(command) == wrapped


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("pytest | grep FAILED", "'|'"),
        ("pytest | tee log", "'|'"),
        ("pytest | tail -5 | head -1", "'|'"),
        ("pytest | tail -n +5", "'|' into other than `tail -N`"),  # (its first filtered lines cut)
        ("pytest | tail --lines=+5", "'|' into other than `tail -N`"),
        ("git log | tail -5", "not a build, test or lint command"),
        # (its errors went around the pipe in full; run's output holds them: tail would cut them, helper-49)
        ("mypy . | tail -2", "a pipe into `tail` without `2>&1`"),
        ("pytest -s", "'-s' asks for the command's own prints"),
        ("python -m pytest -x -sv tests", "'-sv' asks for the command's own prints"),
        ("pytest --capture=no", "'--capture=no' asks"),
        ("cargo test -- --nocapture", "'--nocapture' asks"),
        # (the passed tests' prints in the summary: 1 of 30 shown, helper-106)
        ("pytest -q -rP tests", "'-rP' asks for the command's own prints"),
        ("python -m pytest -vrA", "'-vrA' asks for the command's own prints"),
        ("pytest -r P", "'-r' asks for the command's own prints"),
        ("pytest --report-chars=A", "'--report-chars=A' asks for the command's own prints"),  # (helper-108)
        ("pytest --report-chars A", "'--report-chars' asks for the command's own prints"),
        ("pytest -r=P", "'-r=P' asks for the command's own prints"),
        ("RUST_TEST_NOCAPTURE=1 cargo test", "'RUST_TEST_NOCAPTURE=1' asks for the command's own prints"),
        ("env PYTEST_ADDOPTS='-x -s' pytest", "'PYTEST_ADDOPTS=-x -s' asks for the command's own prints"),
        ("cargo nextest run --no-capture", "'--no-capture' asks"),
        ("echo x && pytest", "only `cd DIR &&` or `source FILE &&`"),
        # (it said "'|' into other than `tail -N`" of a pipe into tail -30)
        ("pytest -q | tail -30 && echo ok", "command: here `pytest -q | tail -30` comes before `echo ok`"),
        ("pytest -q && echo ok", "here `pytest -q` comes before `echo ok`"),
        ("timeout pytest", "not a build, test or lint command"),
        ("make > build.log", "a redirection, '>'"),
        ("make 2> errors.log", "a redirection, '>'"),
        ("pytest &>/dev/null", "a redirection, '&>'"),  # (it said "'&'", helper-35)
        ("pytest >> log", "a redirection, '>>'"),
        ("pytest &>> log", "a redirection, '&>>'"),  # (it said '&>', helper-36)
        # what bash reads otherwise than a word split would (helper-37): a command named CI=1, a
        # read-only variable that stops the command, a carriage return inside a word
        ("'CI'=1 pytest -q", "not a build, test or lint command"),
        ('"CI=1" pytest', "not a build, test or lint command"),
        ("CI\\=1 pytest", "not a build, test or lint command"),
        ("UID=0 pytest", "UID is read-only in bash"),
        ("pytest\rtouch pwned", "a carriage return"),
        # bash's blanks are spaces, tabs and newlines: Python's strip took these too (helper-38)
        ("pytest\r", "a carriage return"),
        ("\u00a0pytest", "not a build, test or lint command"),
        # an assignment's value is not split, globbed or brace-expanded; behind env it would be
        ("PYTHONPATH=$PWD pytest --version", "PYTHONPATH=... would be expanded otherwise behind env"),
        ("FOO={a,b} pytest", "FOO=... would be expanded otherwise behind env"),
        ("make < input", "a redirection, '<'"),
        ("cargo test; echo done", "';'"),
        ("npm test || true", "'|'"),
        ("pytest &", "'&'"),
        ("(cd a && make)", "'('"),
        ("make\nmake install", "a second line"),
        ("pytest 'unclosed", "unclosed quote"),
        ("git status", "not a build, test or lint command"),
        ("gh run view 123", "not a build, test or lint command"),  # (the run's summary, not its log)
        ("gh run list --log", "not a build, test or lint command"),
        ("ruff format src", "not a build, test or lint command"),  # (it rewrites the files)
        ("ls -la", "not a build, test or lint command"),
        ("cd a && rm -rf build", "not a build, test or lint command"),
        ("jest --watch", "'--watch'"),
        ("make serve", "'serve'"),
        ("sbt", "not a build, test or lint command"),
        ("STREAMFILTER_RAW=1 pytest", "raw output"),
        ("/usr/local/bin/streamfilter run -- make", "streamfilter already"),
        # it prints nothing; wrapped it printed run's status line (helper-54)
        ("pytest 2>&1 | tail -n 0", "`tail -0` shows none of its output"),
        ("pytest 2>&1 | tail -0", "`tail -0` shows none of its output"),
        # the shell's words take time that grows with the square of a word's length (helper-114: 16 s
        # for 200 KB past the hook's 30 s at about 300 KB)
        ("pytest -k " + "a" * 200_000, "longer than 16384 characters"),
    ],
    ids=lambda v: v[:60] if isinstance(v, str) else v,
)
def test_other_commands_are_left_alone_and_say_why(command: str, why: str) -> None:
    wrap = rewrite(command, load_rules({"HOME": "/nonexistent"}), EXE, {})
    assert wrap.command is None
    assert why in wrap.why


def test_the_hooks_own_environment_can_ask_for_raw_output() -> None:
    assert _wrap("pytest", env={"STREAMFILTER_RAW": "1"}) is None
    assert _wrap("pytest", env={"STREAMFILTER_RAW": "0"}) == f"{RUN} pytest"


def test_a_config_file_adds_skips_and_sets_the_budget_and_query(tmp_path: Path) -> None:
    config = tmp_path / "hooks.toml"
    config.write_text(
        'wrap = ["just test", "./ci.sh"]\nskip = ["make deploy"]\nbudget_tokens = 500\nquery = "panic failed"\n'
    )
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    run = "/opt/sf/bin/streamfilter run --budget-tokens 500 --query 'panic failed' --"
    assert _wrap("just test unit", rules) == f"{run} just test unit"
    assert _wrap("./ci.sh --fast", rules) == f"{run} ./ci.sh --fast"
    assert _wrap("make deploy", rules) is None
    assert _wrap("make", rules) == f"{run} make"
    config.write_text('builtin = false\nwrap = ["just test"]\n')
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    assert _wrap("make", rules) is None and _wrap("just test", rules) is not None


def test_the_config_file_is_found_under_xdg_config_home(tmp_path: Path) -> None:
    (tmp_path / "streamfilter").mkdir()
    (tmp_path / "streamfilter" / "hooks.toml").write_text("budget_tokens = 700\n")
    assert load_rules({"XDG_CONFIG_HOME": str(tmp_path)}).budget_tokens == 700


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("budget_token = 500\n", "unknown key 'budget_token'"),
        ("budget_tokens = 0\n", "budget_tokens must be a whole number"),
        ("budget_tokens = 99999999999999999\n", "budget_tokens must be a whole number from 1 to 1099511627776"),
        ('wrap = "make"\n', "wrap must be a list"),
        ("builtin = 1\n", "builtin must be true or false"),
        ('query = " "\n', "query must be a string of words"),
        ("wrap = [\n", "hooks.toml"),
    ],
)
def test_a_config_file_with_a_typo_is_an_error_that_names_it(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "hooks.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})


def test_a_config_file_named_by_the_environment_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    # a typo in STREAMFILTER_HOOKS_CONFIG silently dropped the user's rules (builtin = false, helper-38)
    with pytest.raises(ConfigError, match="no such file"):
        load_rules({"STREAMFILTER_HOOKS_CONFIG": str(tmp_path / "hoks.toml")})
    assert load_rules({"HOME": str(tmp_path)}).budget_tokens == 4000  # (the default place: optional)


def test_the_hooks_largest_budget_is_the_one_run_takes() -> None:
    assert MAX_BUDGET_TOKENS == MAX_COUNT


def test_the_config_file_shown_in_the_docs_is_one_the_hooks_accept(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text()
    shown = page.split("```toml hooks.toml\n", 1)[1].split("```", 1)[0]
    config = tmp_path / "hooks.toml"
    config.write_text(shown)
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    assert rules.skip == (("make", "deploy"),) and rules.budget_tokens == 4000 and rules.query == "error failed"


@pytest.mark.parametrize(
    "command",
    ["tsc -w", "mocha -w", "./gradlew bootRun", "gradle build -t", "make run", "mvn spring-boot:run", "pytest --pdb",
     # under other names, scripts named as watchers, debuggers and prints asked for (helper-66: wrapped)
     "python -m pytest --pdb", "python3 -m pytest --trace", "pytest -f", "pytest --looponfail", "npm run test:watch",
     "yarn watch-tests", "node --inspect-brk --test", "meson test --gdb", "ninja -t browse", "behave --no-capture",
     # helper-90: wrapped, so nothing showed while they ran
     "make livehtml", "make dev-server", "vite build -w", "jest --watch=true", "mvn -Dmaven.surefire.debug test",
     "mvn -Dmaven.surefire.debug=5005 test", "python manage.py test --pdb", "pytest --ipdb",
     "npm test -- --inspect-brk", "jest --inspect-brk", "mix test --listen-on-stdin",
     "ctest --interactive-debug-mode 1"],
)  # fmt: skip
def test_a_programs_own_watch_serve_or_debug_words_leave_it_alone(command: str) -> None:
    assert _wrap(command) is None


@pytest.mark.parametrize(
    "command",
    ["pytest --co -q", "python -m pytest --collect-only", "pytest --fixtures", "pytest --help", "pytest -h",
     "make -n", "make -j4 --dry-run all", "make -p", "gcc -E main.c", "g++ -MM a.cpp", "cargo test -- --list",
     "cargo --version", "go test -list .", "ctest -N", "jest --listTests", "tsc --showConfig", "mvn -v",
     "make help", "make -C docs help",
     # (flags together, and with their values: wrapped, helper-108)
     "make -np", "make -sn", "make -Bn", "make -rRn", "go test -list=.", "ctest --show-only=json-v1"],
)  # fmt: skip
def test_a_command_asked_for_its_answer_is_left_alone(command: str) -> None:
    """helper-71: `pytest --co -q` wrapped showed 3 of 803 test ids, `pytest --help` lost its usage
    line, `gcc -E` kept fragments: what these print on success is what was asked for."""
    assert _wrap(command) is None


@pytest.mark.parametrize(
    "command",
    ["pytest -v", "make -j4 all", "gcc -O2 -c main.c", "cargo test -- --nocapture-x", "pytest -rfE tests",
     "pytest -rf -x", "make helpers", "pytest --report-chars=fE", "make -sj4 all", "make -Bk",
     "RUST_TEST_NOCAPTURE=0 cargo test", "PYTEST_ADDOPTS=-x pytest",
     # a watch option turned off (helper-106: left alone as a watcher)
     "npm test -- --watchAll=false", "jest --watch=false", "jest --watchAll=0"],
)  # fmt: skip
def test_options_near_the_answer_words_are_still_wrapped(command: str) -> None:
    assert _wrap(command) in (f"{RUN} {command}", f"{RUN} env {command}")  # (an assignment goes through env)


def test_a_word_that_only_holds_watch_is_no_watcher() -> None:
    assert _wrap("pytest tests/test_watchdog.py") == f"{RUN} pytest tests/test_watchdog.py"


def test_a_trailing_newline_and_raw_zero_are_not_reasons_to_leave_a_command_alone() -> None:
    assert _wrap("pytest -q\n") == f"{RUN} pytest -q"
    assert _wrap("STREAMFILTER_RAW=0 pytest") == f"{RUN} env STREAMFILTER_RAW=0 pytest"
    # nor a line continuation (it said "cannot read it as shell words (No escaped character)", helper-35)
    assert _wrap("pytest -q 2>&1 \\\n  | tail -3") == f"{TAILED.format(n=3)} pytest -q 2>&1 | tail -n 4"
    assert _wrap("pytest -q \\\n  tests/") == f"{RUN} pytest -q   tests/"
    assert _wrap("pytest -k 'a\\\nb'") == f"{RUN} pytest -k 'a\\\nb'"  # (in single quotes: the shell keeps it)
    assert _wrap("pytest -k a\\\\\\\n  tests/") == f"{RUN} pytest -k a\\\\  tests/"  # (an escaped one, then one)
    assert _wrap("pytest -q  # the unit tests") == f"{RUN} pytest -q"  # (a comment: the command ends before it)
    assert _wrap("pytest -q 2>&1 | tail -3  # the last lines") == f"{TAILED.format(n=3)} pytest -q 2>&1 | tail -n 4"


def test_a_hash_inside_a_word_is_the_words() -> None:
    # bash starts a comment only at a word's start: "all#x install" is two words, where shlex's
    # comments ended the command at "#" and the hook approved what it did not read (helper-43)
    assert _wrap("make -k all#x install") == f"{RUN} make -k all#x install"
    assert _wrap("pytest x#y -p antigravity") == f"{RUN} pytest x#y -p antigravity"
    # ANSI-C quoting ($'\'' is one quote character) and 2>&1- (it closes stdout too) are left alone
    assert _wrap("pytest $'\\'' ; touch pwned ; # '") is None
    assert _wrap("pytest -q 2>&1-") is None
    # an escaped blank before "#" is the word's: no comment starts there (helper-44)
    assert rewrite("pytest -q a\\ #x; touch pwn", load_rules({"HOME": "/nonexistent"}), EXE, {}).why == (
        "not one simple command (';')"
    )


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q # run the tests \\\nrm -rf build",  # (a backslash does not continue a comment)
        "pytest -k a\\\\\nrm -rf build",  # (an escaped backslash, then the line's end)
        "pytest -q # note\nrm -rf build",
    ],
)
def test_a_second_line_behind_a_comment_or_an_escaped_backslash_is_a_second_line(command: str) -> None:
    # the hook read them as one line and approved "pytest ... rm -rf build" for Codex and Cursor
    # (helper-36)
    wrap = rewrite(command, load_rules({"HOME": "/nonexistent"}), EXE, {})
    assert wrap.command is None and wrap.why == "not one simple command (a second line)", wrap


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        ("npm test", True),
        ("cd web && CI=1 npm test", True),
        ("./gradlew check", True),
        ("npm test -- $(id)", False),
        ("pytest `id`", False),
        ('pytest -k "$NAME"', False),
        ("/tmp/evil/pytest", False),
        ("PATH=/tmp/evil pytest", False),
        ("LD_PRELOAD=/tmp/x.so make", False),
        ("BASH_ENV=/tmp/x make", False),
    ],
)
def test_only_a_plain_command_may_be_approved(command: str, plain: bool) -> None:
    wrap = rewrite(command, load_rules({"HOME": "/nonexistent"}), EXE, {})
    assert wrap.command is not None and wrap.plain is plain


@pytest.mark.parametrize(
    ("command", "wrapped"),
    [
        # the pipe into tail is kept: the agent reads the filtered output's end, as it asked
        # (a line more for run's status line: `| tail -1` showed it, not the command's last, helper-43)
        ("pytest -q 2>&1 | tail -30", f"{TAILED.format(n=30)} pytest -q 2>&1 | tail -n 31"),
        ("cargo test 2>&1 | tail -n 20", f"{TAILED.format(n=20)} cargo test 2>&1 | tail -n 21"),
        ("cargo test 2>&1 | tail --lines=1", f"{TAILED.format(n=1)} cargo test 2>&1 | tail -n 2"),
        ("cd web && npm test 2>&1 | tail", f"cd web && {TAILED.format(n=10)} npm test 2>&1 | tail -n 11"),
        # timeout and env run the command: run runs them, so a timeout's kill is still filtered
        ("timeout 300 pytest", f"{RUN} timeout 300 pytest"),
        ("timeout -s KILL 5m make -j4", f"{RUN} timeout -s KILL 5m make -j4"),
        ("env FOO=1 pytest -x", f"{RUN} env FOO=1 pytest -x"),
        ("CI=1 env -u DEBUG pytest", f"{RUN} env CI=1 env -u DEBUG pytest"),
        ("source .venv/bin/activate && pytest -q", f"source .venv/bin/activate && {RUN} pytest -q"),
        (". venv/bin/activate && cd src && make", f". venv/bin/activate && cd src && {RUN} make"),
        ("npm run test:unit", f"{RUN} npm run test:unit"),
        ("pnpm -r test", f"{RUN} pnpm -r test"),
        ("pnpm --filter web run build", f"{RUN} pnpm --filter web run build"),
        ("npm -w api test", f"{RUN} npm -w api test"),
        ("python manage.py test", f"{RUN} python manage.py test"),
        ("node --test", f"{RUN} node --test"),  # (node's own test runner: TAP)
        ("deno test --allow-read", f"{RUN} deno test --allow-read"),
        ("python3.12 manage.py test shop", f"{RUN} python3.12 manage.py test shop"),
        ("pytest -rs", f"{RUN} pytest -rs"),  # (-r's value, not -s)
        ("pytest -k sum", f"{RUN} pytest -k sum"),
        # helper-56's real tools left alone: their failures are as long to read as the others'
        ("npx mocha", f"{RUN} npx mocha"),
        ("cmake -S . -B build", f"{RUN} cmake -S . -B build"),
        ("behave", f"{RUN} behave"),
        ("sphinx-build -W docs out", f"{RUN} sphinx-build -W docs out"),
        ("javac -d out A.java", f"{RUN} javac -d out A.java"),
        ("prove -v t", f"{RUN} prove -v t"),
    ],
)
def test_what_agents_type_is_wrapped(command: str, wrapped: str) -> None:
    assert _wrap(command) == wrapped


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        ("env PATH=/tmp/evil:/usr/bin pytest", False),
        ("env CI=1 NO_COLOR=1 pytest", True),
        ("CI=1 FORCE_COLOR=0 pytest", True),
        # a variable no list says is harmless: any may change what runs (helper-28's, approved before)
        ("env FOO=1 pytest", False),
        ("RUSTC_WRAPPER=/tmp/evil cargo test", False),
        ('PYTEST_ADDOPTS="-p evil" pytest', False),
        ("MAKEFLAGS='-f /tmp/x.mk' make", False),
        ("timeout 5 env JAVA_TOOL_OPTIONS=-javaagent:/tmp/a.jar mvn test", False),
        ("npm_config_script_shell=/tmp/evil npm test", False),
        ("CC=/tmp/evil make", False),
        ("source .venv/bin/activate && pytest", True),
        ("source /tmp/x/bin/activate && pytest", False),
        ("source ../other/.venv/bin/activate && pytest", False),
        ("source env.sh && pytest", False),
        ("pytest -q 2>&1 | tail -5", True),
    ],
)
def test_what_a_wrapper_or_a_sourced_file_may_change_is_not_plain(command: str, plain: bool) -> None:
    wrap = rewrite(command, load_rules({"HOME": "/nonexistent"}), EXE, {})
    assert wrap.command is not None and wrap.plain is plain


def test_a_wrapped_pipe_into_tail_runs_and_ends_on_the_status_line(tmp_path: Path) -> None:
    script = tmp_path / "check.sh"
    script.write_text(
        "#!/bin/sh\nfor i in $(seq 1 400); do echo \"step $i ok\"; done\necho 'E: disk full' >&2\nexit 3\n"
    )
    script.chmod(0o755)
    config = tmp_path / "hooks.toml"
    config.write_text('wrap = ["./check.sh"]\n')
    exe = [sys.executable, "-m", "streamfilter"]
    wrapped = rewrite("./check.sh 2>&1 | tail -3", load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)}), exe, {})
    assert wrapped.command is not None and wrapped.command.endswith("-- ./check.sh 2>&1 | tail -n 4")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(["bash", "-c", wrapped.command], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    lines = done.stdout.splitlines()
    # the command's last 3 lines, as asked, and the status line
    assert lines[:3] == [b"step 399 ok", b"step 400 ok", b"E: disk full"]
    assert len(lines) == 4 and b"exited with status 3" in lines[-1]


def test_a_wrapped_pipe_into_tail_shows_the_lines_the_raw_tail_does(tmp_path: Path) -> None:
    """helper-71: `pytest 2>&1 | tail -30` wrapped showed a summary of 5 failure lines where the raw
    tail showed them (a budget's choice), and the filter's repeat cap of a failure shape summarizes
    the last of 79 FAILED lines: the command's last lines are kept as they are."""
    log = Path(__file__).resolve().parents[1] / "data" / "pytest-q-79-failed.log"
    script = tmp_path / "check.sh"
    script.write_text(f"#!/bin/sh\ncat {log}\nexit 1\n")
    script.chmod(0o755)
    config = tmp_path / "hooks.toml"
    config.write_text('wrap = ["./check.sh"]\n')
    exe = [sys.executable, "-m", "streamfilter"]
    wrapped = rewrite("./check.sh 2>&1 | tail -30", load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)}), exe, {})
    assert wrapped.command is not None
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(["bash", "-c", wrapped.command], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[:-1] == log.read_bytes().splitlines()[-30:]
    assert b"exited with status 1" in lines[-1]


def test_a_wrapped_pipe_into_tail_shows_the_raw_tail_when_it_passes_and_after_a_green_run(tmp_path: Path) -> None:
    """helper-79: a passing `make test 2>&1 | tail -12` wrapped showed the success tail's 5 lines, and
    after a green run was stored, 2 lines: the others were printed by that run too. A failure after
    it lost the lines before the failure line the same way."""
    script = tmp_path / "check.sh"
    script.write_text(
        '#!/bin/sh\nfor i in $(seq 1 70); do echo "check $i passed"\n'
        '  if [ "$i" = 60 ] && [ -e broken ]; then echo "check 61 FAILED: want 3, got 4"; exit 1; fi\ndone\n'
    )
    script.chmod(0o755)
    config = tmp_path / "hooks.toml"
    config.write_text('wrap = ["./check.sh"]\n')
    exe = [sys.executable, "-m", "streamfilter"]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    for broken, n in ((False, 12), (False, 12), (True, 5)):
        if broken:
            (tmp_path / "broken").touch()
        wrapped = rewrite(f"./check.sh 2>&1 | tail -{n}", rules, exe, {})
        assert wrapped.command is not None
        raw = subprocess.run(["bash", "-c", f"./check.sh 2>&1 | tail -{n}"], cwd=tmp_path, capture_output=True)
        done = subprocess.run(["bash", "-c", wrapped.command], cwd=tmp_path, env=env, capture_output=True, timeout=120)
        lines = done.stdout.splitlines()
        assert lines[:-1] == raw.stdout.splitlines() and len(lines) == n + 1, done.stdout
        assert f"exited with status {int(broken)}".encode() in lines[-1]


def test_the_rewrite_runs_as_the_command_would_with_its_assignments_and_the_query(tmp_path: Path) -> None:
    # helper-29: `PYTHONPATH=shadow pytest` set PYTHONPATH for streamfilter's own Python too, and a
    # module there that shadows one it imports stopped it before the command ran; a query that
    # starts with "-" (`query = "-Werror"`) was read as an option, and nothing ran
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "numpy.py").write_text('raise SystemExit("shadowed!")\n')
    config = tmp_path / "hooks.toml"
    config.write_text('wrap = ["sh"]\nquery = "-Werror"\n')
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    script = 'sh -c \'echo "PYTHONPATH is $PYTHONPATH"; echo "error: -Werror set"; exit 3\''
    wrapped = rewrite(f"PYTHONPATH=shadow {script}", rules, [sys.executable, "-m", "streamfilter"], {}).command
    assert wrapped is not None and "--query=-Werror" in wrapped
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(["sh", "-c", wrapped], cwd=tmp_path, capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 3 and b"shadowed" not in done.stderr, done.stderr
    assert b"PYTHONPATH is shadow\n" in done.stdout and b"error: -Werror set\n" in done.stdout


def test_skip_holds_for_the_commands_other_names(tmp_path: Path) -> None:
    # skip = ["pytest"] left python -m pytest and py.test wrapped (and approved), where a rule on
    # pytest holds for them (helper-43); and a skip holds with options between its words
    config = tmp_path / "hooks.toml"
    config.write_text('skip = ["pytest", "make test"]\n')
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    for command in ("pytest -q", "python -m pytest -q", "python3.11 -m pytest", "py.test", "make -s test",
                    "make -j 4 test", "make -C . test"):  # fmt: skip
        assert rewrite(command, rules, EXE, {}).command is None, command
    assert rewrite("make -s build", rules, EXE, {}).command is not None
    # and under the skip's own other names (helper-66: skip = ["npm run test"] wrapped npm test), but
    # not without its options (a skip of `cargo test --doc` is not one of every cargo test)
    config.write_text('skip = ["npm run test", "python3 -m mypy", "cargo test --doc"]\n')
    rules = load_rules({"STREAMFILTER_HOOKS_CONFIG": str(config)})
    for command in ("npm test", "npm t", "npm run test", "mypy src", "cargo test --doc"):
        assert rewrite(command, rules, EXE, {}).command is None, command
    assert rewrite("cargo test", rules, EXE, {}).command is not None


@pytest.mark.parametrize(
    "command",
    [
        'make -s raw ARGS="$(cat <<"E"\nfoo\\\nbar\nE\n)"',  # (bash keeps the continuation in its body)
        "make ARGS=`cat <<\\E\nfoo\\\nbar\nE\n`",
        'pytest -k "$(printf a\nb)"',
    ],
)
def test_a_second_line_inside_a_substitution_is_a_second_line(command: str) -> None:
    # a here-document with a quoted delimiter in $(...) lost its "\\\n": the hook joined its
    # lines as continuations, and make got another argument (helper-90)
    wrap = rewrite(command, load_rules({"HOME": "/nonexistent"}), EXE, {})
    assert wrap.command is None and wrap.why == "not one simple command (a second line)", wrap


def test_a_tail_of_more_lines_than_run_keeps_is_left_alone() -> None:
    # (run kept 10,000 of them where tail showed 15,000, helper-90)
    assert _wrap("make 2>&1 | tail -n 10000") == f"{TAILED.format(n=10000)} make 2>&1 | tail -n 10001"
    wrap = rewrite("make 2>&1 | tail -n 15000", load_rules({"HOME": "/nonexistent"}), EXE, {})
    assert wrap.command is None and wrap.why == "`tail` of more than 10000 lines"
