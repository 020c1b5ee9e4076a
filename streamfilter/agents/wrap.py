"""Which of an agent's shell commands a hook wraps in ``streamfilter run``, and how.

A command is wrapped when it is one simple command (after ``cd DIR && `` or ``source FILE && ``
parts, and before a pipe into ``tail``) whose words begin with a build, test, lint, type-check,
package-manager or CI command of the built-in list (``BUILTIN``) or of the user's ``wrap`` list
(a listed command's last options anywhere after its other words: ``gh run view 123 --log-failed``
for ``gh run view --log-failed``, ``ruff format src --check``), and none of ``skip``; behind a
runner (``uv run``, ``npx``), ``timeout DURATION`` or ``env NAME=VALUE`` too, and with a package
manager's workspace options (``pnpm -r test``) or a script named ``test:unit`` for ``test``. The
pipe is kept: ``pytest -q 2>&1 | tail -30`` becomes ``streamfilter run ... -- pytest -q 2>&1 | tail
-n 31`` (a line more for run's status line); without ``2>&1`` it is left alone (the command's errors
went around the pipe, in full; they would go through it). Never wrapped:

* a command whose output already goes elsewhere or is cut by the user: a pipe into anything but
  ``tail`` (``| grep``, ``| tee``), a redirection (``> file``; ``2>&1`` alone is harmless, ``run``
  merges stderr anyway), ``;``, ``||``, ``&``, a subshell or a group, a command over several lines;
* a command whose flags ask for its own prints on success too (``pytest -s``, ``cargo test --
  --nocapture``): the filter would keep only a green run's tail of them;
* a watch mode or a server (``--watch``, ``npm run dev``), an interactive command (``sbt`` alone);
* a command that asks for its raw output: one that starts with the assignment ``STREAMFILTER_RAW=1``
  (the word an agent or a user types), or any command while the hook's own environment has
  ``STREAMFILTER_RAW`` set to anything but ``0`` or empty;
* ``streamfilter`` itself.

The rewrite keeps the command's own text (its quoting, ``$VAR`` and ``$(...)`` expand as before):
``FOO=1 npm test -- -t "cart total"`` becomes
``FOO=1 /path/streamfilter run --budget-tokens 4000 -- npm test -- -t "cart total"``; the shell
runs it in the same directory and environment, and ``run`` exits with the command's status.

The user's rules are a TOML file: ``$STREAMFILTER_HOOKS_CONFIG``, else
``$XDG_CONFIG_HOME/streamfilter/hooks.toml`` (``~/.config/streamfilter/hooks.toml``)::

    wrap = ["just test", "./run-tests.sh"]   # also wrap these (word prefixes)
    skip = ["make deploy"]                    # never wrap these (wins over wrap and the built-ins)
    approve = ["just test"]                   # Codex, Cursor: the hook may approve these (see approve.py)
    builtin = true                            # false: wrap only what `wrap` lists, approve no built-in
    budget_tokens = 4000                      # the wrapped output's budget, in estimated tokens
    query = "error failed"                    # the filter's query (default: the filter's own)
"""

from __future__ import annotations

import operator
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .defaults import DEFAULT_BUDGET_TOKENS, MAX_BUDGET_TOKENS

__all__ = (
    "BUILTIN",
    "OFF_VALUES",
    "PYTHON_NAME",
    "RAW_VARIABLE",
    "ConfigError",
    "Rules",
    "Wrap",
    "among",
    "config_path",
    "load_rules",
    "names_of",
    "rewrite",
    "starts",
    "top_level",
)

RAW_VARIABLE = "STREAMFILTER_RAW"

# word prefixes of the commands wrapped by default: builds, tests, linters, type checkers,
# package managers and CI log readers, whose output is long and whose failure is what matters
BUILTIN: tuple[str, ...] = (
    # Python
    "pytest", "py.test", "python -m pytest", "python3 -m pytest", "python -m unittest", "python3 -m unittest",
    "behave", "sphinx-build",
    "tox", "nox", "mypy", "python -m mypy", "python3 -m mypy", "pyright", "ruff check", "ruff format --check",
    "flake8", "pylint", "black --check", "hatch test", "python manage.py test", "python3 manage.py test",
    "./manage.py test", "pip install", "pip3 install", "python -m pip install",
    "python3 -m pip install", "uv pip install", "uv sync", "poetry install", "pdm install", "pre-commit run",
    # JavaScript / TypeScript
    "npm test", "npm t", "npm ci", "npm install", "npm i", "npm run build", "npm run test", "npm run lint",
    "npm run typecheck", "npm run check", "npm run ci", "pnpm test", "pnpm install", "pnpm build", "pnpm lint",
    "pnpm run build", "pnpm run test", "pnpm run lint", "yarn test", "yarn install", "yarn build", "yarn lint",
    "bun test", "node --test", "deno test", "bun install", "jest", "vitest run", "mocha", "tsc", "eslint",
    "prettier --check", "next build",
    "vite build", "webpack",
    # C, C++ and build systems
    "make", "gmake", "cmake", "ninja", "meson compile", "meson test", "ctest", "bazel build",
    "bazel test", "scons", "gcc", "g++", "clang", "clang++", "cc", "c++",
    # Rust, Go
    "cargo build", "cargo test", "cargo check", "cargo clippy", "cargo nextest", "cargo doc", "cargo bench",
    "cargo fmt --check", "cargo install", "rustc", "go build", "go test", "go vet", "go mod", "go generate",
    "golangci-lint run",
    # JVM, .NET, Swift, Ruby, PHP, Elixir, Erlang
    "mvn", "./mvnw", "gradle", "./gradlew", "javac", "sbt test", "sbt compile", "ant", "dotnet build", "dotnet test",
    "dotnet restore", "swift build", "swift test", "bundle install", "bundle exec rspec", "bundle exec rake",
    "rspec", "rake test", "rake spec", "prove", "composer install", "phpunit", "vendor/bin/phpunit", "mix test",
    "mix compile", "rebar3 eunit", "rebar3 ct", "rebar3 compile",
    # containers, infrastructure, CI logs
    "docker build", "docker compose build", "docker buildx build", "terraform plan", "terraform validate",
    "terraform init", "helm lint", "shellcheck", "gh run view --log", "gh run view --log-failed",
)  # fmt: skip

# command runners whose next words are the command that runs (``uv run pytest``, ``npx tsc``)
RUNNERS = ("uv run", "poetry run", "pdm run", "pipenv run", "hatch run", "npx", "pnpm exec", "pnpm dlx",
           "yarn dlx", "bunx", "bundle exec")  # fmt: skip
# package managers whose scripts are named by groups (``npm run test:unit`` runs a ``test`` script),
# and their options before the script or command: (those alone, those with a value)
_MANAGERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "npm": (frozenset(("--workspaces", "-ws", "--if-present", "-s", "--silent")),
            frozenset(("-w", "--workspace"))),
    "pnpm": (frozenset(("-r", "--recursive", "--parallel", "--stream", "-w", "--workspace-root", "--if-present",
                        "-s", "--silent", "--aggregate-output")), frozenset(("-F", "--filter", "-C", "--dir"))),
    "yarn": (frozenset(("-s", "--silent")), frozenset()),
    "bun": (frozenset(), frozenset()),
}  # fmt: skip
# ``timeout``'s options before its duration: (those alone, those with a value)
_TIMEOUT_OPTIONS = (frozenset(("--preserve-status", "--foreground", "-v", "--verbose")),
                    frozenset(("-s", "--signal", "-k", "--kill-after")))  # fmt: skip
# ``env``'s options before its assignments: (those alone, those with a value)
_ENV_OPTIONS = (frozenset(("-i", "--ignore-environment")), frozenset(("-u", "--unset")))
# (patterns, not compiled ones: re compiles and caches one at its first use, and most commands use none)
_DURATION = r"\d+(?:\.\d+)?[smhd]?"
MAX_TAIL = 10_000  # most of a `| tail -N`'s lines kept as they are (the filter holds them until the end)
# a longer command is left alone: the shell's words (``shlex``) take time that grows with the square of
# a word's length (100 KB took 5 s, 200 KB with permission rules 16 s, past a hook's 30 s timeout at
# about 300 KB, helper-114); no test or build command an agent types is near it
MAX_COMMAND_CHARS = 16_384
# the one pipe kept: into ``tail`` with a count (the output an agent asked for, then cut as it asked)
# (not `tail -n +N`: from the filtered output's Nth line it would cut its first lines, a failure
# kept there among them, where it cut the command's header from the raw output; helper-29)
_TAIL = r"tail(?: (?:-n ?|-|--lines[= ])(\d+))?"
# a source part that a hook may vouch for: a virtual environment's activate script in the project
_ACTIVATE = r"(?!/)(?!.*(?:^|/)\.\.(?:/|$))[\w./-]*bin/activate"

# words that make a listed command a watcher, a server or a dialogue: its output never ends, or
# waits for a person (under a budget nothing is shown until the command ends)
_NEVER_WORDS = frozenset(("--watch", "--watchAll", "watch", "--serve", "serve", "dev", "start",
                          "--interactive", "menuconfig", "nconfig", "xconfig",
                          # a debugger waited for, whatever runs it (npm test -- --inspect-brk,
                          # manage.py test --pdb, ctest's and mix's, helper-90)
                          "--inspect", "--inspect-brk", "--inspect-wait", "--pdb", "--ipdb",
                          "--interactive-debug-mode", "--listen-on-stdin"))  # fmt: skip
# the same, for one program: ``make run``, ``./gradlew bootRun``, ``tsc -w``, ``pytest --pdb``
_NEVER_FOR = {
    "make": frozenset(("run", "up", "repl", "shell", "console", "run-server", "server")),
    "gmake": frozenset(("run", "up", "repl", "shell", "console", "run-server", "server")),
    "gradle": frozenset(("run", "bootRun", "-t", "--continuous")),
    "./gradlew": frozenset(("run", "bootRun", "-t", "--continuous")),
    "mvn": frozenset(
        ("spring-boot:run", "exec:java", "exec:exec", "jetty:run", "quarkus:dev", "-Dmaven.surefire.debug")
    ),
    "./mvnw": frozenset(
        ("spring-boot:run", "exec:java", "exec:exec", "jetty:run", "quarkus:dev", "-Dmaven.surefire.debug")
    ),
    "tsc": frozenset(("-w",)),
    "vite": frozenset(("-w",)),
    "mocha": frozenset(("-w",)),
    "pytest": frozenset(("--pdb", "--trace", "-f", "--looponfail")),
    "py.test": frozenset(("--pdb", "--trace", "-f", "--looponfail")),
    "node": frozenset(("--inspect", "--inspect-brk", "--inspect-wait")),
    "meson": frozenset(("--gdb",)),
    "ninja": frozenset(("browse",)),
}
# words that ask a listed command for what it prints on success as its answer (help, a version, a
# listing, a dry run, a preprocessed file), which a green run's filter would cut: `pytest --co -q`
# showed 3 of 803 test ids, `pytest --help` lost its usage line (helper-71)
_ANSWER_WORDS = frozenset(("--help", "-h", "--version"))
_COMPILER_ANSWERS = frozenset(("-E", "-M", "-MM", "-dumpversion", "-dumpmachine", "-dumpspecs", "-print-search-dirs"))
# (make's "help" target lists the others: its answer, 15 of 20 lines cut, helper-106)
_MAKE_ANSWERS = frozenset(("-n", "--just-print", "--dry-run", "--recon", "-p", "--print-data-base", "-v", "help"))
_ANSWER_FOR = {
    "pytest": frozenset(("--co", "--collect-only", "--fixtures", "--fixtures-per-test", "--markers", "--setup-plan",
                         "-V")),
    "make": _MAKE_ANSWERS,
    "gmake": _MAKE_ANSWERS,
    **dict.fromkeys(("gcc", "g++", "clang", "clang++", "cc", "c++"), _COMPILER_ANSWERS),
    "cargo": frozenset(("--list", "-V")),  # (cargo test -- --list: the test binary's)
    "go": frozenset(("-list",)),
    "mvn": frozenset(("-v",)),
    "ctest": frozenset(("-N", "--show-only")),
    "jest": frozenset(("--listTests", "--showConfig")),
    "tsc": frozenset(("--showConfig", "--listFiles", "--listFilesOnly")),
}  # fmt: skip
# an option's values that turn it off (``--watchAll=false``)
OFF_VALUES = frozenset(("false", "0", "no", "off"))
# a script named as a watcher: ``npm run test:watch``, ``yarn watch-tests`` (not ``test_watchdog.py``)
_WATCH_SCRIPT = re.compile(r"(?:^|[:_-])(?:watch|serve|livehtml|livereload|dev-?server)(?:$|[:_-])", re.IGNORECASE)
# the variables an approval may cover a command setting (or ``env`` unsetting): they change how it
# prints, not which program runs nor what it loads. A list of those that do was never whole
# (helper-28: RUSTC_WRAPPER, PYTEST_ADDOPTS, MAKEFLAGS, JAVA_TOOL_OPTIONS, CC, npm_config_*, ...)
_HARMLESS_VARIABLES = frozenset((
    "CI", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS", "LINES", "LANG", "LANGUAGE",
    "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "RUST_BACKTRACE", "RUST_LOG", "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR", "CARGO_TERM_VERBOSE", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
    "PYTHONIOENCODING", "GOMAXPROCS", "NODE_ENV", "JEST_WORKER_ID", "VERBOSE",
))  # fmt: skip


class ConfigError(Exception):
    """The hooks' TOML file cannot be read, or holds a key or value it does not know."""


class Rules(NamedTuple):  # (not a dataclass: importing dataclasses costs the hook ~6 ms of each command)
    """What the hooks wrap, and how.

    Attributes:
        wrap: word prefixes of the commands wrapped (the built-ins and the user's ``wrap``).
        skip: word prefixes never wrapped.
        budget_tokens: the wrapped output's budget (``run --budget-tokens``), in estimated tokens.
        query: the filter's query for wrapped commands (None: the filter's default).
        approve: word prefixes of the commands the Codex and Cursor hooks may approve
            (``approve.approves``), beside the agent's own settings.
        builtin_approve: whether they may approve the built-in ``approve.DEFAULT_APPROVED`` too.
    """

    wrap: tuple[tuple[str, ...], ...]
    skip: tuple[tuple[str, ...], ...] = ()
    budget_tokens: int = DEFAULT_BUDGET_TOKENS
    query: str | None = None
    approve: tuple[tuple[str, ...], ...] = ()
    builtin_approve: bool = True


class Wrap(NamedTuple):
    """A hook's decision on one command: ``command`` is the rewritten command, or None with ``why`` not.

    ``plain``: the command runs a listed program by its name (or the listed ``./gradlew``), with no
    expansion (``$``, a backquote), no variable that changes what runs (``PATH=...``) and no
    script sourced but a virtual environment's ``bin/activate`` in the project: what a hook may
    approve when the agent takes a rewrite only with an approval (Codex, Cursor), or when the
    user's rule approves the original (Claude Code).

    Of a wrapped command: ``parts``, the words of each part the shell runs (the ``cd`` and
    ``source`` parts, then the command without its leading assignments; not the pipe into
    ``tail``); ``body``, the command that runs behind its runner, ``timeout`` or ``env`` (a
    package manager's workspace options left out); ``runner``, whether a runner (``uv run``,
    ``npx``) runs it; ``simple``, whether the command is its parts as they are (no assignment,
    redirection or pipe), as an agent's rules for its words judge it.
    """

    command: str | None
    why: str
    plain: bool = False
    parts: tuple[tuple[str, ...], ...] = ()
    body: tuple[str, ...] = ()
    runner: bool = False
    simple: bool = False


def config_path(env: Mapping[str, str]) -> Path:
    """The hooks' TOML file: ``$STREAMFILTER_HOOKS_CONFIG``, else ``$XDG_CONFIG_HOME/streamfilter/hooks.toml``."""
    if env.get("STREAMFILTER_HOOKS_CONFIG"):
        return Path(env["STREAMFILTER_HOOKS_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "streamfilter" / "hooks.toml"


def _prefixes(items: object, key: str, path: Path) -> tuple[tuple[str, ...], ...]:
    if not isinstance(items, list) or not all(isinstance(x, str) and x.split() for x in items):
        raise ConfigError(f"{path}: {key} must be a list of commands (strings of words)")
    return tuple(tuple(x.split()) for x in items)


def load_rules(env: Mapping[str, str]) -> Rules:
    """The built-in rules, changed by the user's TOML file when it exists (``config_path``).

    Raises:
        ConfigError: the file is not valid TOML, or has an unknown key (a typo) or a value of the wrong
            type; or ``STREAMFILTER_HOOKS_CONFIG`` names a file that is not there.
    """
    path = config_path(env)
    builtin = tuple(tuple(x.split()) for x in BUILTIN)
    try:
        with open(path, "rb") as handle:
            text = handle.read()
            info = os.fstat(handle.fileno())
    except FileNotFoundError:
        if env.get("STREAMFILTER_HOOKS_CONFIG"):  # (named by the user: a typo in it dropped their rules)
            raise ConfigError(f"{path}: no such file (STREAMFILTER_HOOKS_CONFIG names it)") from None
        return Rules(builtin)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if info.st_uid not in (os.getuid(), 0) or info.st_mode & 0o002:  # (its approve list approves: helper-61)
        raise ConfigError(f"{path}: another user owns it or may write to it: its rules are not used")
    import tomllib  # (only when there is a file: the hook runs before every command)

    try:
        doc = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    known = {"wrap", "skip", "approve", "builtin", "budget_tokens", "query"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    use_builtin = doc.get("builtin", True)
    if not isinstance(use_builtin, bool):
        raise ConfigError(f"{path}: builtin must be true or false")
    budget = doc.get("budget_tokens", DEFAULT_BUDGET_TOKENS)
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= MAX_BUDGET_TOKENS:
        # (past run's maximum, every wrapped command would fail as a usage error without running)
        raise ConfigError(f"{path}: budget_tokens must be a whole number from 1 to {MAX_BUDGET_TOKENS}")
    query = doc.get("query")
    if query is not None and (not isinstance(query, str) or not query.split()):
        raise ConfigError(f"{path}: query must be a string of words")
    wrap = _prefixes(doc.get("wrap", []), "wrap", path)
    skip = _prefixes(doc.get("skip", []), "skip", path)
    approve = _prefixes(doc.get("approve", []), "approve", path)
    return Rules((builtin if use_builtin else ()) + wrap, skip, budget, query, approve, use_builtin)


_BLANKS = " \t\n"  # what the shell takes for space between words
_ENDS = ("", " ", "\t", "|")  # what may follow a word "2>&1" ("2>&1-" also closes stdout, helper-43)
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_READ_ONLY = frozenset(("BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"))  # bash's, always
_REDIRECTION = re.compile(r"&?[<>]+&?")  # its operator: "&>>", ">&", "<"
# a backslash-newline after an even number of backslashes (none, or escaped ones): the shell's
# line continuation, outside single quotes and comments
_CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*)\\\n")


def top_level(command: str, pipes: list[int] | None = None) -> tuple[list[tuple[int, int]], str | None]:
    """Split ``command`` at its top-level ``&&``: the segments' (start, end) character offsets, or
    the first other shell operator found outside quotes (then the segments are not complete).

    Quotes, backslashes, ``$(...)``, ``${...}`` and backquotes are skipped as the shell reads them;
    ``2>&1`` is not an operator here, and neither is a pipe ``|`` when ``pipes`` is given: its
    offset is appended to ``pipes`` instead. A comment ends the command (a line after it is a
    second line, whatever ends the comment: a backslash does not continue it); the last segment
    ends before it. A ``#`` inside a word is the word's, as to the shell (``all#x`` is one word:
    shlex's comments took it for a comment's start, and the words after it went unread, helper-43).
    """
    segments: list[tuple[int, int]] = []
    start, i, n = 0, 0, len(command)
    while i < n:
        ch = command[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = command.find("'", i + 1)
            if end < 0:
                return segments, "an unclosed quote"
            i = end + 1
            continue
        if ch == '"':
            i += 1
            while i < n and command[i] != '"':
                i += 2 if command[i] == "\\" else 1
            if i >= n:
                return segments, "an unclosed quote"
            i += 1
            continue
        if ch == "`" or command.startswith(("$(", "${"), i):
            close = {"`": "`", "$(": ")", "${": "}"}[ch if ch == "`" else command[i : i + 2]]
            depth, i = 1, i + (1 if ch == "`" else 2)
            while i < n and depth:
                if command[i] == "\\":
                    i += 1
                elif command[i] == close:
                    depth -= 1
                elif close == ")" and command[i] == "(":
                    depth += 1
                i += 1
            if depth:
                return segments, "an unclosed substitution"
            continue
        if ch == "#" and _word_starts_at(command, i):  # a comment: to its line's end, continuations too
            if "\n" in command[i:]:
                return segments, "a second line"
            segments.append((start, i))  # (the command ends before it: a word's "#" is the word's)
            return segments, None
        if command.startswith("$'", i):  # (ANSI-C quoting: $'\'' is one quote, helper-43)
            return segments, "ANSI-C quoting ($'...'), which the hook does not read"
        if command.startswith("2>&1", i) and _word_starts_at(command, i) and command[i + 4 : i + 5] in _ENDS:
            i += 4
            continue
        if command.startswith("&&", i):
            segments.append((start, i))
            i += 2
            start = i
            continue
        if pipes is not None and ch == "|" and not command.startswith(("||", "|&"), i):
            pipes.append(i)
            i += 1
            continue
        if ch in "<>" or command.startswith("&>", i):  # (its output goes elsewhere, or its input comes from it)
            found = _REDIRECTION.match(command, i)
            return segments, f"a redirection, {found[0] if found else ch!r}"
        if ch == "\r":  # (a word's byte to the shell, a space to shlex: the two would read other words)
            return segments, "a carriage return"
        if ch in "|;&(){}\n":
            if ch in "{}" and not _word_alone(command, i):
                i += 1
                continue
            return segments, repr(ch) if ch != "\n" else "a second line"
        i += 1
    segments.append((start, n))
    return segments, None


def _word_starts_at(command: str, i: int) -> bool:
    """Whether a shell word starts at ``i`` (outside quotes): the line's start, or a blank before it
    that no backslash escapes (``a\\ #x`` is one word, helper-44)."""
    if i == 0:
        return True
    if command[i - 1] not in " \t":
        return False
    escapes = len(command[: i - 1]) - len(command[: i - 1].rstrip("\\"))
    return escapes % 2 == 0


def _word_alone(command: str, i: int) -> bool:
    """Whether the brace at ``i`` is a word of its own (a group ``{ ...; }``), not part of a word."""
    before = i == 0 or command[i - 1] in " \t"
    after = i + 1 == len(command) or command[i + 1] in " \t"
    return before and after


def _program(word: str) -> str:
    """A command's first word as the lists name it: its file name (``/usr/bin/make`` is ``make``),
    and a versioned Python as plain ``python3`` (``python3.11 -m pytest``)."""
    name = os.path.basename(word)
    return "python3" if re.fullmatch(r"python3(?:\.\d+)?", name) else name


PYTHON_NAME = re.compile(r"python(?:\d+(?:\.\d+)?)?")  # a Python by its name (python3.11)
_OTHER_PROGRAM = {"py.test": "pytest", "gmake": "make", "mvnw": "mvn", "gradlew": "gradle"}
_SCRIPT_RUNNERS = ("npm", "pnpm", "yarn", "bun")


def _never_words(name: Sequence[str]) -> frozenset[str]:
    """The words of a command's ``name`` (``names_of``) that make it a watcher, a server or a
    dialogue (``_NEVER_WORDS``, and its program's ``_NEVER_FOR``)."""
    if not name:
        return frozenset()
    own = _NEVER_FOR.get(name[0], _NEVER_FOR.get(_program(name[0]), frozenset()))
    # (an option with its value too: jest --watch=true, mvn -Dmaven.surefire.debug=5005, helper-90;
    # not one that turns it off: jest --watchAll=false, helper-106)
    words = (key for key, _, value in (w.partition("=") for w in name[1:]) if value.lower() not in OFF_VALUES)
    return (_NEVER_WORDS | own).intersection(words)


def _answer_words(name: Sequence[str]) -> frozenset[str]:
    """The words of a command's ``name`` (``names_of``) that ask it for what it prints on success as
    its answer (``_ANSWER_WORDS``, and its program's ``_ANSWER_FOR``)."""
    if not name:
        return frozenset()
    own = _ANSWER_FOR.get(name[0], _ANSWER_FOR.get(_program(name[0]), frozenset()))
    words = set(name[1:])
    # (an option with its value, go test -list=., ctest --show-only=json-v1; and make's short flags
    # together, make -sn, -np: all wrapped, helper-108)
    words.update(w.partition("=")[0] for w in name[1:] if w.startswith("-"))
    if _program(name[0]) == "make":
        words.update(f"-{flag}" for w in name[1:] if re.fullmatch(r"-[A-Za-z]+", w) for flag in w[1:])
    return (_ANSWER_WORDS | own).intersection(words)


def names_of(words: Sequence[str], bare: bool = True) -> list[tuple[str, ...]]:
    """``words`` (first) and the other words a user's rule may name the same command by (helper-28:
    a rule on ``pytest``, on ``make`` or on ``npm test`` did not hold for these): ``python3.11 -m
    pytest`` is ``pytest``, ``py.test`` is ``pytest``, ``gmake`` is ``make``, ``npm t`` and ``npm
    run test`` are ``npm test``; with ``bare``, each of those without its options too (``make test``
    for ``make -s test``)."""
    if not words:
        return [()]
    program, rest = os.path.basename(words[0]), tuple(words[1:])
    names: list[tuple[str, ...]] = [tuple(words)]
    if PYTHON_NAME.fullmatch(program) and rest[:1] == ("-m",) and len(rest) > 1:
        names.append(rest[1:])
    elif program in _OTHER_PROGRAM:
        names.append((_OTHER_PROGRAM[program], *rest))
    elif program in _SCRIPT_RUNNERS:
        if rest[:1] in (("t",), ("tst",)):
            names.append((program, "test", *rest[1:]))
        elif rest[:1] in (("run",), ("run-script",)) and len(rest) > 1:
            names.append((program, *rest[1:]))
    # and without its options: a rule on "make test" holds for "make -s test" (helper-39)
    for name in list(names) if bare else []:
        plain = tuple(w for w in name if not w.startswith("-"))
        if plain != name:
            names.append(plain)
    return names


def in_order(words: Sequence[str], prefix: Sequence[str]) -> bool:
    """Whether ``words`` begin as ``prefix`` does (``starts``), or begin with its first word and
    have its other words in order among theirs (``make -j 4 test`` for ``make test``)."""
    if starts(words, prefix):
        return True
    if not words or not prefix or _program(words[0]) != _program(prefix[0]):
        return False
    return among(words[1:], prefix[1:])


def among(words: Sequence[str], pattern: Sequence[Any], same: Callable[[str, Any], bool] = operator.eq) -> bool:
    """Whether each of ``pattern``'s words comes, in order, among ``words`` (``same(word, its word)``)."""
    rest = iter(words)
    return all(any(same(w, p) for w in rest) for p in pattern)  # (in order: rest is consumed)


def starts(words: Sequence[str], prefix: Sequence[str]) -> bool:
    """Whether ``words`` (a command's) begin with ``prefix`` (a listed command's words): the first
    by its program's name (``/usr/bin/make`` is ``make``) unless the prefix names a path, and a
    package manager's script ``test:unit`` as ``test``."""
    if len(words) < len(prefix) or not prefix:
        return False
    first = words[0] if "/" in prefix[0] else _program(words[0])
    scripts = first in _MANAGERS
    return first == prefix[0] and all(
        a == b or (scripts and a.startswith(b + ":")) for a, b in zip(words[1:], prefix[1:], strict=False)
    )


def _listed(words: Sequence[str], prefix: Sequence[str]) -> bool:
    """Whether ``words`` are the listed command ``prefix`` (``starts``), or begin with its words but
    its last options and have those anywhere after them: ``gh run view 1 --log`` is ``gh run view
    --log``, as ``run`` reads it (``prints_another_runs_log``)."""
    lead = len(prefix)
    while lead > 1 and prefix[lead - 1].startswith("-"):
        lead -= 1
    if starts(words, prefix):
        return True
    return lead < len(prefix) and starts(words, prefix[:lead]) and set(prefix[lead:]).issubset(words[lead:])


def _options(words: Sequence[str], alone: frozenset[str], valued: frozenset[str]) -> int:
    """How many of ``words`` are options of ``alone`` or ``valued`` (with their values: ``-F x``,
    ``--filter=x``, ``-sKILL``)."""
    i = 0
    while i < len(words):
        word, name = words[i], words[i].split("=", 1)[0]
        if word in alone or (name in valued and "=" in word):
            i += 1
        elif word in valued:
            i += 2
        elif len(word) > 2 and word[:2] in valued and not word.startswith("--"):
            i += 1
        else:
            break
    return min(i, len(words))


def _env_changes(options: Sequence[str]) -> list[str]:
    """The variables ``env``'s ``options`` change, as assignments of nothing: ``-u NAME`` unsets
    NAME, ``-i`` empties the environment, ``PATH`` with it (which program runs changes)."""
    changed = []
    for i, word in enumerate(options):
        if word in ("-i", "--ignore-environment"):
            changed.append("PATH=")
        elif word in ("-u", "--unset") and i + 1 < len(options):
            changed.append(f"{options[i + 1]}=")
        elif word.startswith("--unset="):
            changed.append(f"{word[8:]}=")
        elif word.startswith("-u") and len(word) > 2:
            changed.append(f"{word[2:]}=")
    return changed


def _inner(words: list[str]) -> tuple[list[str], list[str], bool]:
    """The command ``words`` runs: behind runners (``uv run``), ``timeout [OPTIONS] DURATION`` and
    ``env [-i] [-u NAME] [NAME=VALUE]...``; with a package manager's workspace options left out.

    Returns:
        ``(body, assignments, runner)``: the command's words, the assignments ``env`` made (a
        variable it unsets or empties as ``NAME=``, ``_env_changes``), and whether a runner runs it.
    """
    body, assigned, runner = words, [], False
    while len(body) > 1:
        program = _program(body[0])
        after = next((len(r.split()) for r in RUNNERS if starts(body, r.split())), 0)
        if after:
            runner = True
        elif program == "timeout":
            after = 1 + _options(body[1:], *_TIMEOUT_OPTIONS)
            if after >= len(body) or not re.fullmatch(_DURATION, body[after]):
                break
            after += 1
        elif program == "env":
            after = 1 + _options(body[1:], *_ENV_OPTIONS)
            assigned += _env_changes(body[1:after])
            while after < len(body) and "=" in body[after] and body[after].split("=")[0].isidentifier():
                assigned.append(body[after])
                after += 1
        elif program in _MANAGERS and (after := 1 + _options(body[1:], *_MANAGERS[program])) > 1:
            return [body[0], *body[after:]], assigned, runner
        else:
            break
        if after >= len(body):
            break
        body = body[after:]
    return body, assigned, runner


def _asks_for_prints(body: Sequence[str]) -> str | None:
    """The flag of ``body`` that asks for the command's own prints on success too (``pytest -s``,
    ``--capture=no``; ``cargo test -- --nocapture``), or None."""
    args = list(body[1:])
    if _program(body[0]) == "behave":  # (its prints, and the logging it captures)
        return next((w for w in args if w in ("--no-capture", "--no-capture-stderr", "--no-logcapture")), None)
    if body[1:3] in (["-m", "pytest"], ["-m", "py.test"]):
        args = list(body[3:])
    elif _program(body[0]) not in ("pytest", "py.test"):
        if _program(body[0]) == "cargo" and body[1:2] in (["test"], ["nextest"]):
            return next((w for w in args if w in ("--nocapture", "--no-capture", "--show-output")), None)
        return None
    for i, word in enumerate(args):
        if word in ("--capture=no", "--capture=tee-sys") or (
            word == "--capture" and args[i + 1 : i + 2] in (["no"], ["tee-sys"])
        ):
            return word
        key, eq, value = word.partition("=")
        if key in ("--report-chars", "-r") and (eq or key == "--report-chars"):  # (-r=P, --report-chars A, helper-108)
            if _shows_passed(value if eq else "".join(args[i + 1 : i + 2])):
                return word
            continue
        if re.fullmatch(r"-[A-Za-z]+", word):
            for flag in word[1:]:
                if flag == "s":
                    return word
                if flag == "r":  # (-rP, -rA: the passed tests' prints in the summary, helper-106)
                    chars = word[word.index("r", 1) + 1 :] or "".join(args[i + 1 : i + 2])
                    if _shows_passed(chars):
                        return word
                    break
                if flag in "kmpcoWn":  # (an option with a value: the rest of the word is it)
                    break
    return None


def _shows_passed(chars: str) -> bool:
    """Whether pytest's ``-r`` characters ``chars`` ask for the passed tests' prints (``P``, ``A``)."""
    return bool(set(chars) & {"P", "A"})


def _assigned_prints(assignments: Sequence[str]) -> str | None:
    """The assignment (``NAME=VALUE``) that asks a test runner the command runs for its own prints
    (``RUST_TEST_NOCAPTURE=1``, ``PYTEST_ADDOPTS=-s``; wrapped, helper-108), or None."""
    for word in assignments:
        name, _, value = word.partition("=")
        if name == "RUST_TEST_NOCAPTURE" and value and value.lower() not in OFF_VALUES:
            return word
        if name == "PYTEST_ADDOPTS" and _asks_for_prints(["pytest", *value.split()]) is not None:
            return word
    return None


def _joined(command: str, leading: Sequence[tuple[int, int]], last: tuple[int, int], at: int) -> Wrap:
    """Left alone: the part of ``command`` that holds offset ``at``, one of ``leading`` (the
    segments before the ``last``), is not ``cd DIR`` or ``source FILE``."""
    part = next(command[a:b].strip() for a, b in leading if a <= at < b)
    why = "only `cd DIR &&` or `source FILE &&` may come before the command"
    return Wrap(None, f"{why}: here `{part}` comes before `{command[last[0] : last[1]].strip()}`")


def rewrite(command: str, rules: Rules, executable: Sequence[str], env: Mapping[str, str]) -> Wrap:
    """Decide whether ``command`` (the agent's shell command) is wrapped, and how (see the module docstring).

    Args:
        command: the shell command as the agent wrote it.
        rules: what to wrap (``load_rules``).
        executable: the words that start ``streamfilter`` in the rewrite (its absolute path).
        env: the hook's environment (for ``STREAMFILTER_RAW``).
    """
    if env.get(RAW_VARIABLE, "") not in ("", "0"):
        return Wrap(None, f"{RAW_VARIABLE} is set in the hook's environment")
    if len(command) > MAX_COMMAND_CHARS:
        return Wrap(None, f"longer than {MAX_COMMAND_CHARS} characters")
    # (a trailing newline is not a second command; only the shell's blanks: Python's strip also
    # takes \r, \f, a no-break space, which are a word's bytes to bash, helper-38)
    command = command.rstrip(_BLANKS)
    if "'" not in command and "#" not in command:
        # a line continuation is nothing to the shell; not in single quotes, nor at a comment's end,
        # nor after an escaped backslash (``a\\`` then a newline: two lines)
        command = _CONTINUATION.sub(r"\1", command)
        if "\n" in command:  # (a here-document's body in $(...), whose continuations bash keeps, helper-90)
            return Wrap(None, "not one simple command (a second line)")
    pipes: list[int] = []
    segments, operator = top_level(command, pipes)
    if operator is not None:
        return Wrap(None, f"not one simple command ({operator})")
    *leading, (start, end) = segments
    piped, tailed = "", 0
    if pipes:  # only one, after the last part, into tail: the command is wrapped, the pipe kept
        piped = " ".join(command[pipes[-1] + 1 : end].split())
        if pipes[-1] < start:  # ("pytest | tail -30 && echo ok": it blamed the pipe into tail)
            return _joined(command, leading, (start, end), pipes[-1])
        tail = re.fullmatch(_TAIL, piped)
        if len(pipes) > 1 or tail is None:
            return Wrap(None, "not one simple command ('|' into other than `tail -N`)")
        if tail[1] is not None and int(tail[1]) == 0:  # (it prints nothing: run's status line would be all)
            return Wrap(None, "`tail -0` shows none of its output")
        end = pipes[0]
        # one line more, for run's status line: `| tail -1` showed it, not the command's last line (helper-43)
        tailed = int(tail[1] or 10)
        if tailed > MAX_TAIL:  # (run would keep MAX_TAIL of them, not as many as tail shows, helper-90)
            return Wrap(None, f"`tail` of more than {MAX_TAIL} lines")
        piped = f"tail -n {tailed + 1}"
    parts: list[tuple[str, ...]] = []
    sourced_plain = True
    for a, b in leading:  # "cd DIR && CMD": CMD runs where it would have; "source FILE && CMD": as set up
        try:
            words = shlex.split(command[a:b])
        except ValueError as exc:
            return Wrap(None, f"cannot read it as shell words ({exc})")
        if len(words) != 2 or words[0] not in ("cd", "source", "."):
            return _joined(command, leading, (start, end), a)
        sourced_plain = sourced_plain and (words[0] == "cd" or bool(re.fullmatch(_ACTIVATE, words[1])))
        parts.append(tuple(words))
    text = command[start:end].strip(_BLANKS)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        return Wrap(None, f"cannot read it as shell words ({exc})")
    assigned = 0
    raw_starts = _word_starts(text)
    # an assignment as the shell reads one: NAME= written plainly ('CI'=1 is a command's name)
    while assigned < len(words) and _ASSIGNMENT_WORD.match(text, raw_starts[assigned]):
        name, _, value = words[assigned].partition("=")
        if name == RAW_VARIABLE and value not in ("", "0"):
            return Wrap(None, f"it asks for its raw output ({RAW_VARIABLE}=...)")
        if name in _READ_ONLY:
            return Wrap(None, f"{name} is read-only in bash: the command would not run")
        raw = text[raw_starts[assigned] : raw_starts[assigned + 1] if assigned + 1 < len(raw_starts) else len(text)]
        if any(ch in raw for ch in "$`{*?[~"):
            # behind env it is an argument: split, globbed and brace-expanded where an assignment is not
            return Wrap(None, f"its assignment {name}=... would be expanded otherwise behind env")
        assigned += 1
    assignments = words[:assigned]
    merged = "2>&1" in words  # (its stderr goes into the pipe too)
    simple = not assigned and not piped and not merged
    words = [w for w in words[assigned:] if w != "2>&1"]
    if not words:
        return Wrap(None, "no command")
    if _program(words[0]) == "streamfilter":
        return Wrap(None, "it is streamfilter already")
    body, env_assigned, runner = _inner(words)
    # (under its other names too: skip = ["pytest"] holds for python -m pytest and py.test, helper-43;
    # and with other words between its words: make -j 4 test, helper-44)
    # (and a skip's own other names: skip = ["npm run test"] holds for npm test, helper-66; not
    # without its options, which would skip more than it names)
    skips = [n for s in rules.skip for n in names_of(s, bare=False)]
    if any(in_order(name, s) for name in (words, *names_of(body)) for s in skips if s):
        return Wrap(None, "it is in skip")
    if not any(_listed(words, p) or _listed(body, p) for p in rules.wrap):
        return Wrap(None, "not a build, test or lint command of the list")
    # (under its other names too: python -m pytest --pdb is pytest --pdb, helper-66)
    never = set().union(*(_never_words(name) for name in names_of(body, bare=False)))
    never |= {w for w in body[1:] if not w.startswith("-") and _WATCH_SCRIPT.search(w)}
    if never:
        return Wrap(None, f"{sorted(never)[0]!r}: a watcher, a server or a dialogue")
    answer = set().union(*(_answer_words(name) for name in names_of(body, bare=False)))
    if answer:
        return Wrap(None, f"{sorted(answer)[0]!r} asks for what the command prints as its answer: a filter cuts it")
    prints = _asks_for_prints(body) or _assigned_prints([*assignments, *env_assigned])
    if prints is not None:
        return Wrap(None, f"{prints!r} asks for the command's own prints, which a green run's filter would cut")
    if piped and not merged:
        # (run sends the command's stderr into its output: tail would cut the errors the original
        # showed in full around the pipe, helper-49)
        return Wrap(None, "a pipe into `tail` without `2>&1`: the command's errors would go through it")
    # the command's own text, quoting and expansions as written; its assignments go to it through
    # `env`, not to streamfilter's Python (helper-29: `PYTHONPATH=. pytest` in a checkout whose
    # module shadows one streamfilter imports stopped it before the command ran)
    cut = raw_starts[assigned] if assigned else 0
    # into tail: no budget (the tail bounds what is read) and the command's last lines kept as they
    # are, so that tail shows what it would have: a budget's choice, and the repeat cap of a failure
    # shape, had put summaries where the raw tail showed failure lines (helper-71); as many when it
    # passes, and none left out as printed by its last green run too (helper-79)
    last = ["--tail", str(tailed), "--found-tail", str(tailed), "--success-tail", str(tailed), "--no-baseline"]
    last = last if piped else []
    run = [*executable, "run", *(last or ["--budget-tokens", str(rules.budget_tokens)])]
    if rules.query:  # (a query that starts with "-" would be read as an option: "--query -Werror")
        run += [f"--query={rules.query}"] if rules.query.startswith("-") else ["--query", rules.query]
    through = f"env {text[:cut]}" if cut else ""
    wrapped = f"{shlex.join(run)} -- {through}{text[cut:]}" + (f" | {piped}" if piped else "")
    listed_path = any("/" in p[0] and words[0] == p[0] for p in rules.wrap)
    plain = (
        not any(ch in command for ch in "$`")
        and ("/" not in words[0] or listed_path)
        and sourced_plain
        and all(w.split("=")[0] in _HARMLESS_VARIABLES for w in [*assignments, *env_assigned])
    )
    parts.append(tuple(words))
    return Wrap(
        f"{command[:start].rstrip(_BLANKS)} {wrapped}" if start else wrapped,
        "wrapped",
        plain,
        tuple(parts),
        tuple(body),
        runner,
        simple,
    )


def _word_starts(text: str) -> list[int]:
    """The character offsets where the shell words of ``text`` (one simple command) begin."""
    starts, i, n, in_word = [], 0, len(text), False
    while i < n:
        ch = text[i]
        if ch in " \t":
            in_word = False
            i += 1
            continue
        if not in_word:
            starts.append(i)
            in_word = True
        if ch == "\\":
            i += 2
        elif ch == "'":
            i = text.find("'", i + 1) + 1 or n
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return starts
