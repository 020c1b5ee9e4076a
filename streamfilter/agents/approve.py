"""What the Codex and Cursor hooks may approve: they rewrite a command only with an approval.

Codex takes a rewritten command only with ``permissionDecision: "allow"``, Cursor only with
``permission: "allow"``; so a rewrite approves the command. The hooks rewrite (and so approve) a
plain command (``wrap.Wrap.plain``) only when one of these already allows it without asking:

1. the agent's own settings, read where the agent documents them (2026):

   * Codex: its rules (``prefix_rule(pattern=[...], decision="allow" | "prompt" | "forbidden")``,
     Starlark, the strictest decision of the rules that match winning) in ``rules/*.rules`` under
     ``$CODEX_HOME`` (``~/.codex``) and ``/etc/codex``, and under a project's ``.codex/`` from
     the working directory up to its repository's root (their ``allow`` only when the project is
     trusted: ``[projects."DIR"] trust_level = "trusted"`` in ``$CODEX_HOME/config.toml``); and a
     session in ``bypassPermissions`` mode, which asks about nothing;
   * Cursor: ``permissions.allow`` and ``permissions.deny`` (``Shell(commandBase)``, the first
     word, with ``*`` and ``?`` wildcards; deny wins) in ``~/.cursor/cli-config.json``
     (``$XDG_CONFIG_HOME/cursor/cli-config.json`` when that is set) and the project's
     ``.cursor/cli.json`` files from its repository's root to the working directory;

   a rule that asks about the command or forbids it (Codex ``prompt`` or ``forbidden``, Cursor
   ``deny``) leaves it alone, whatever the rest says, and so does one that asks about or forbids
   the command it runs behind ``timeout``, ``env`` or a runner (``timeout 30 pytest``: ``pytest``)
   or the same command under another name (``wrap.names_of``); a Cursor deny rule with arguments
   holds for the commands its words begin;
2. the user's ``approve`` list in ``hooks.toml`` (word prefixes), where its ``cd`` parts stay in
   the project;
3. the built-in list, ``DEFAULT_APPROVED`` (unless ``builtin = false``): commands that build,
   check or test the project in place, with no runner (``uv run`` syncs, ``npx`` downloads), no
   path outside the project (its repository's folder, else the working directory) in any word or
   ``cd`` (``/tmp/x``, ``~/other``, ``../..``, a symlink out of it; ``cd /path/of/the/project`` is
   in it), only options known to be harmless for the tool (``_SAFE``: an allow list, as every list
   of options to refuse missed a way to run code), arguments the shell passes as they are (no
   braces, globs, ``$`` or ``=``: ``_PLAIN``), no URL, no watcher and, for a program of targets
   (``make``, ``ninja``, ``mvn``, ``gradle``, ``rake``, ``sbt``), only the targets of ``_TARGETS``
   (``make deploy`` is not one). No install (``pip install``, ``npm ci``), no container or
   infrastructure command, no CI log (``gh run view``: it reads the network).

Every other command is left alone, to the agent's own approval.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import grp
import json
import os
import pwd
import re
import stat
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .wrap import OFF_VALUES, PYTHON_NAME, Rules, Wrap, among, names_of, starts

__all__ = (
    "DEFAULT_APPROVED",
    "approves",
    "cd_outside",
    "codex_rules_say",
    "cursor_rules_say",
    "outside",
    "project_root",
    "refusal",
    "rule_words",
    "what_it_approves",
)

# word prefixes of the commands that build, check or test the project in place
DEFAULT_APPROVED: tuple[str, ...] = (
    "pytest", "py.test", "python -m pytest", "python3 -m pytest", "python -m unittest", "python3 -m unittest",
    "mypy", "python -m mypy", "python3 -m mypy", "pyright", "ruff check", "ruff format --check", "flake8",
    "pylint", "black --check", "python manage.py test", "python3 manage.py test", "./manage.py test",
    "npm test", "npm t", "npm run build", "npm run test", "npm run lint", "npm run typecheck", "npm run check",
    "pnpm test", "pnpm build", "pnpm lint", "pnpm run build", "pnpm run test", "pnpm run lint", "yarn test",
    "yarn build", "yarn lint", "bun test", "node --test", "deno test", "jest", "vitest run", "tsc", "eslint",
    "prettier --check",
    "next build", "vite build",
    "make", "gmake", "cmake --build", "ninja", "meson compile", "meson test", "ctest",
    "cargo build", "cargo test", "cargo check", "cargo clippy", "cargo nextest run", "cargo doc", "cargo bench",
    "cargo fmt --check", "go build", "go test", "go vet", "golangci-lint run", "shellcheck",
    "mvn", "./mvnw", "gradle", "./gradlew", "sbt test", "sbt compile", "dotnet build", "dotnet test",
    "swift build", "swift test", "rspec", "rake", "phpunit", "vendor/bin/phpunit",
    "mix test", "mix compile", "rebar3 eunit", "rebar3 ct", "rebar3 compile",
)  # fmt: skip

_MAKE = frozenset(("all", "build", "test", "tests", "check", "lint", "compile", "debug", "release", "default"))
_MVN = frozenset(("validate", "compile", "test-compile", "test", "package", "verify", "clean"))
_GRADLE = frozenset(("build", "test", "check", "assemble", "classes", "testClasses", "compileJava", "clean"))
# a program of targets: the only targets the built-in list approves
_TARGETS = {
    "make": _MAKE,
    "ninja": _MAKE,
    "mvn": _MVN,
    "gradle": _GRADLE,
    "rake": frozenset(("test", "spec")),
    "sbt": frozenset(("test", "compile")),
    "meson": frozenset(),  # (none: meson compile deploy ran a run_target, helper-44)
}
# the options the built-in list approves after a listed command's words, by its tool: an allow
# list, as a list of what to refuse missed ways to run code (make --eva=, node --experimental_loader,
# ctest --test-command, pylint --init-hook, helper-37 and 38). Exact words, then a pattern of
# options with a value; an option's separate value is an argument like any other
_VERBOSE = frozenset(("-q", "-qq", "-v", "-vv", "-vvv", "--quiet", "--verbose"))  # (every tool's)
_SAFE: dict[str, tuple[frozenset[str], str]] = {
    tool: (frozenset(words.split()), pattern)
    for tool, words, pattern in (
        ("pytest", "-x --exitfirst -k -m -n -l --showlocals --lf --last-failed --ff --failed-first --nf --new-first"
         " --sw --stepwise --co --collect-only --no-header --disable-warnings --strict-markers --runxfail",
         r"--tb=\w+|--maxfail=\d+|--durations=\d+|-r[a-zA-Z]+|-n\d+"),
        ("unittest", "-f --failfast -b --buffer -k discover", ""),
        ("mypy", "--strict --pretty --show-error-codes --no-incremental --ignore-missing-imports -p -m"
         " --check-untyped-defs --warn-unused-ignores --no-error-summary", ""),
        ("pyright", "--warnings --stats", ""),
        ("ruff", "--statistics --show-fixes --diff --no-fix", r"--output-format=\w+|--(?:select|ignore)=[A-Z0-9,]+"),
        ("flake8", "--count --statistics --show-source", r"--max-line-length=\d+|--(?:select|ignore)=[A-Z0-9,]+"),
        ("pylint", "", r"--(?:disable|enable)=[A-Za-z0-9,-]+|-j\d+"),
        ("black", "--diff", ""),
        ("manage.py", "--parallel --keepdb --failfast", ""),
        ("jest", "--ci --runInBand -i --silent --bail", r"--maxWorkers=\d+%?"),
        ("tsc", "--noEmit --pretty -p --project", ""),
        ("eslint", "", r"--max-warnings=\d+"),
        ("make", "-k --keep-going -s --silent -j", r"-j\d+|--jobs=\d+"),
        ("cmake", "-j --parallel --config", r"-j\d+"),
        ("ninja", "-j -k", r"-j\d+"),
        ("meson", "-C", ""),
        ("ctest", "--output-on-failure -j -V -VV --rerun-failed -R -E -N", r"-j\d+"),
        ("cargo", "--workspace --all --all-targets --all-features --no-default-features --release --locked"
         " --frozen -p --package --lib --bins --tests --no-fail-fast --features -j --test --bench --doc --check --"
         " --test-threads -D -W -A",
         r"-j\d+|--jobs=\d+|--test-threads=\d+"),
        ("go", "-race -short -run -timeout -cover -p -tags -failfast -json -bench -benchmem",
         r"-count=\d+|-p=\d+|-timeout=\w+|-cpu=\d+"),
        ("shellcheck", "-x -S -s", ""),
        ("mvn", "-B --batch-mode -e -X -T -U -o --offline -DskipTests -DskipITs -pl --projects -am --also-make"
         " -fae -ff", r"-T\d+C?"),
        ("gradle", "--no-daemon --info --stacktrace --offline --parallel --continue", ""),
        ("dotnet", "-c --configuration --no-restore --no-build --nologo", ""),
        ("swift", "-c --configuration --parallel", ""),
        ("rspec", "--fail-fast", ""),
        ("phpunit", "--filter --stop-on-failure --testdox", ""),
        ("mix", "--failed --trace --warnings-as-errors", ""),
    )
}  # fmt: skip
_SIDE_EFFECT = re.compile(r"publish|deploy|release|push|upload|install|fix|serve|start|dev", re.IGNORECASE)
# the options of _SAFE that take the next word as their value, by tool: that word is neither a
# target nor a name (a number after make -j or ninja -k is read as a number: make's -s and -k take
# none, so make -s install was read as the value of -s and approved, helper-40)
_VALUED: dict[str, frozenset[str]] = {
    tool: frozenset(words.split())
    for tool, words in (
        ("pytest", "-k -m -n"), ("unittest", "-k"), ("mypy", "-p -m"), ("ctest", "-R -E"), ("meson", "-C"),
        ("cargo", "-p --package --features --test --bench --test-threads"), ("go", "-run -timeout -p -tags -bench"),
        ("shellcheck", "-S -s"), ("mvn", "-T -pl --projects"), ("dotnet", "-c --configuration"),
        ("swift", "-c --configuration"), ("phpunit", "--filter"), ("cmake", "--config"), ("tsc", "-p --project"),
    )
}  # fmt: skip
_SAME_TOOL = {"./mvnw": "mvn", "./gradlew": "gradle", "py.test": "pytest", "gmake": "make", "./manage.py": "manage.py"}
# an argument the shell passes as it is (no expansion: braces, globs, $, ~) and that no make or
# environment assignment is (no "="); spaces only where it was quoted
_PLAIN = re.compile(r"[A-Za-z0-9_%+:,./ -]+")  # (not @: pytest @FILE, mypy @FILE read arguments from it)
_CODEX_STRICTNESS = {"allow": 0, "prompt": 1, "forbidden": 2}


def outside(word: str, here: Path, root: Path) -> bool:
    """Whether ``word``, read as a path from the folder ``here``, names a place outside the
    project's folder ``root`` (``/tmp/x``, ``~/other``, ``../..``, ``~-``, a name in the folder that
    is a symlink out of it; not ``/path/of/the/project``, as agents write ``cd`` to it)."""
    if word.startswith(("~-", "~+")):
        return True  # (the shell's last folder or its current one: not known here)
    # read as the file system reads it (a symlink out of the project, helper-38) and as cd and most
    # tools read it, ".." taking off the word before it: a/../.. past a symlink a (helper-39)
    path = here / os.path.expanduser(word)
    try:
        resolved = path.resolve()
    except RuntimeError:  # (a loop of symlinks: where it leads is not known)
        return True
    return not (resolved.is_relative_to(root) and Path(os.path.normpath(path)).is_relative_to(root))


def cd_outside(folder: str, here: Path, root: Path, env: Mapping[str, str]) -> bool:
    """Whether ``cd FOLDER`` run in ``here`` may leave the project's folder ``root``: ``cd -`` (the
    last folder), a relative folder under a ``CDPATH`` (the shell looks there first), or
    ``outside``; a folder the shell would expand (``{../x,}``, ``*``) is taken as outside."""
    if folder.startswith("-") or (env.get("CDPATH") and not folder.startswith(("/", "~", "."))):
        return True  # (cd -: the last folder; cd -P, -L or -- alone: home, helper-51)
    if not _PLAIN.fullmatch(folder.removeprefix("~")):
        return True  # (braces or a glob: the shell picks the folder, cd {../x,})
    return outside(folder, here, root)


def _tree_refusal(root: Path, env: Mapping[str, str]) -> str | None:
    """Why the files a command run in the project's folder ``root`` may read are not only the
    project's and its user's, or None: the project's folder or a folder above it that others may
    write to or own (one above may add a conftest.py, or put another folder in the project's
    place, helper-58; its parent, when the project is a Python package: pytest imports from
    there, helper-59), a file tools read from above it, a git directory elsewhere that others may
    change (a worktree's ``.git`` file, helper-59), or what the project holds (``_found_below``)."""
    owners = _owners()
    home = Path(env.get("HOME") or Path.home()).resolve()
    # (a package's parent is on pytest's sys.path: a sticky /tmp's stdlib-named module is imported)
    package = (root / "__init__.py").exists()
    for folder in (root, *root.parents):
        sticky_counts = folder == root or (package and folder == root.parent)
        if _open_to_others(folder, owners, above=not sticky_counts):
            where = "the project's folder" if folder == root else "a folder above the project,"
            return f"{where} {folder} is one others may write to or own"
    # (the home folder is the user's own: not when others may write there, HOME=/tmp, helper-59)
    above = _config_above(root, home if not _open_to_others(home, owners) else None, owners)
    if above is not None:
        return f"{above} is above the project ({root}): tools read such files from there, and others may have put it"
    gitdir = _git_dir(root)
    if gitdir is not None and not gitdir.is_relative_to(root):
        shared = next((p for p in (gitdir, *_git_common(gitdir)) if _open_to_others(p, owners)), None)
        if shared is not None:  # (its config's core.fsmonitor runs at a git status, helper-59)
            return f"the project's git directory {shared} is one others may write to or own"
    return _found_below(root, root, owners)


def _git_dir(root: Path) -> Path | None:
    """The git directory of the project's folder ``root``: its ``.git`` folder, or where its ``.git``
    file (a worktree's, a submodule's) points (``gitdir: PATH``); None for none."""
    git = root / ".git"
    if not git.is_file():
        return git if git.is_dir() else None
    try:
        found = re.match(r"gitdir: (.+)", git.read_text(errors="replace").strip())
    except OSError:
        return None
    return (root / found[1]).resolve() if found else None


def _git_common(gitdir: Path) -> list[Path]:
    """A worktree's git directory's common one (its ``commondir``) and the config files git reads
    there, those that are: what a ``git status`` run in the project reads beside ``gitdir``."""
    common = gitdir
    with contextlib.suppress(OSError):
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    return [p for p in (gitdir / "config", common, common / "config") if p.exists()]


def _walk(wrap: Wrap, cwd: Path, root: Path, env: Mapping[str, str]) -> list[tuple[tuple[str, ...], Path]] | None:
    """The parts of ``wrap`` but its ``cd`` parts, each with the folder it runs in (from ``cwd``,
    where the ``cd`` parts before it went); None when a ``cd`` part may leave the project's folder
    ``root`` (``cd_outside``)."""
    here = cwd.resolve()
    walked = []
    for part in wrap.parts:
        if part[:1] == ("cd",) and len(part) == 2:
            if cd_outside(part[1], here, root, env):
                return None
            here = (here / os.path.expanduser(part[1])).resolve()
        else:
            walked.append((part, here))
    return walked


def _default_refusal(wrap: Wrap, cwd: Path, env: Mapping[str, str]) -> str | None:
    """Why the built-in list does not approve ``wrap``, run in the folder ``cwd`` with the
    environment ``env`` (see the module docstring), or None when it does."""
    prefix = next((p.split() for p in DEFAULT_APPROVED if starts(wrap.body, p.split())), None)
    if prefix is None:
        return "not a command of the built-in list, nor of your approve list"
    if wrap.runner:
        return "behind a runner (npx, uv run, poetry run, ...: it may fetch, sync or change what runs)"
    if any("://" in w for part in wrap.parts for w in part):
        return "a URL: code from elsewhere"
    # (not one turned off, --watchAll=false: "a watcher" was not true, helper-108)
    if any("watch" in w.lower() and w.partition("=")[2].lower() not in OFF_VALUES for w in wrap.body):
        return "a watcher: it never ends"  # (npm run test:watch: under a budget nothing shows until it ends)
    if any(_SIDE_EFFECT.search(w) for w in wrap.body if ":" in w and not w.startswith("-")):
        return "a script group's member that is no build or test"  # (npm run build:publish, helper-39)
    root = project_root(cwd)
    walked = _walk(wrap, cwd, root, env)
    if walked is None:
        return f"a cd may leave the project ({root})"
    tree = _tree_refusal(root, env)
    if tree is not None:
        return tree
    tool = _tool(prefix)
    # each part's words are read from where the ``cd`` parts before it went (an option is checked
    # below), and its program when named by its path (./mvnw a symlink out, helper-44)
    out = next((v for part, here in walked for v in _part_paths(part) if outside(v, here, root)), None)
    if out is not None:
        return f"{out} names a place outside the project ({root})"
    unlooked = next((v for part, here in walked for v in _part_paths(part) if _not_looked_in(v, here, root)), None)
    if unlooked is not None:  # (pytest -q .git, a venv's site-packages: the walk does not look there)
        return f"{unlooked} names a place the approval does not look through for a symlink out"
    safe, pattern = _SAFE.get(tool, (frozenset(), ""))
    targets, valued = _TARGETS.get(tool), _VALUED.get(tool, frozenset())
    value = False  # the word is an option's value (mvn -pl core), not a target
    names = []  # the words that are neither options nor their values
    for word in wrap.body[len(prefix) :]:
        if word.startswith("-"):
            if word not in safe and word not in _VERBOSE and not (pattern and re.fullmatch(pattern, word)):
                return f"{word}: an option not known to be harmless for {tool}"
            value = word in valued
        elif not _PLAIN.fullmatch(word):
            return f"{word}: not a plain word (the shell or the tool would expand it)"
        elif targets is not None and not value and not word.isdigit() and word not in targets:
            return f"{word}: not one of {tool}'s build or test targets"
        else:
            if not value:
                names.append(word)
            value = False
    if not _names_in_project(tool, names, walked[-1][1], root):
        if tool in ("npm", "pnpm", "yarn"):
            return f"{' '.join(names)}: words after a script go to the script's command"
        if tool == "go":
            return f"{' '.join(names)}: a go package but a relative one (./...) is code outside the project"
        return f"{' '.join(names)}: not the project's own module or package"
    # (the other parts' words too: source FILE; the command's were checked above, and what runs it,
    # env CI=1 or timeout 30, is ``wrap.plain``'s: "env CI=1 pytest" was "not plain", helper-54)
    plain = all(_PLAIN.fullmatch(w) or w.startswith("-") for part, _ in walked[:-1] for w in part[1:])
    return None if plain else "a word of its cd or source part is not plain"


def _part_paths(part: Sequence[str]) -> list[str]:
    """What of a part's words may name a path: its program when named by its path, and what of its
    arguments may (``_paths_in``)."""
    program = [part[0]] if "/" in part[0] else []
    return program + [v for w in part[1:] for v in _paths_in(w)]


def _paths_in(word: str) -> list[str]:
    """What of a command's ``word`` may name a path: the word, or an option's value, after its
    ``=`` or glued to a short option (``--dir=..``, ``-C/tmp/x``, ``-w../x``: a package manager's
    folder, which its options take before the command, helper-43); an option's letters read as a
    path name a place in the project and pass."""
    if not word.startswith("-"):
        return [word]
    if "=" in word:
        return [word.split("=", 1)[1]]
    return [word[2:]] if not word.startswith("--") and len(word) > 2 else []


def _names_in_project(tool: str, names: Sequence[str], here: Path, root: Path) -> bool:
    """Whether the names a tool is given name the project's own code, for the tools that take a
    module or a package by its name, not by its path (helper-40): a dotted test name of unittest or
    Django's ``manage.py test`` is imported (``python -m unittest antigravity`` opened a browser,
    ``http.server.test`` served the folder), so its first part must be a module or a package in
    ``here``, the folder it runs in; go's packages are import paths unless they start with ``.``
    (``go test all`` or ``std`` tests every dependency or the standard library); a package
    manager's script takes no words, which go to the command it runs (``npm test deploy`` ran the
    project's ``make test deploy``, helper-44)."""
    if tool in ("unittest", "manage.py"):
        # (a name ending .py is a path only when that file is there: else unittest imports the
        # name before it, this.py is the module this, helper-44)
        paths = [n for n in names if "/" in n or (n.endswith(".py") and (here / n).is_file())]
        heads = [n.split(".")[0] for n in names if n != "discover" and n not in paths]
        # a package (a folder with __init__.py: a plain folder does not hide the standard library's
        # http, helper-43), never named as one of the standard library's
        # (and in the project once resolved: a module linked out of it ran, helper-46)
        return all(
            h
            and h not in sys.stdlib_module_names
            and any(
                (here / found).is_file() and not outside(found, here, root) for found in (f"{h}.py", f"{h}/__init__.py")
            )
            for h in heads
        )
    if tool in ("npm", "pnpm", "yarn"):  # (a script's words go to its command: npm test deploy ran make test deploy)
        return not names
    if tool == "go":  # (not "...": every package there is, the standard library's too, helper-43)
        return all(n in (".", "..") or n.startswith(("./", "../")) or n.endswith(".go") for n in names)
    return True


# files and folders that the tools of DEFAULT_APPROVED read from the folders above a project (a
# parent's package.json when the project has none, every .cargo/config.toml up to /, pytest's
# rootdir files, .mvn/jvm.config, go.work, MSBuild's Directory.Build.*, Gradle's settings, a
# toolchain file): one above the project, which anyone who may write there (/tmp) could have put,
# leaves the command to the agent (helper-39; .pytest.ini and .flake8 plugins ran, helper-40).
# Each name, then the names made of it and each extension a tool reads it with
_CONFIG_EXTENSIONS = ("", ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".json", ".json5", ".yml", ".yaml", ".toml")
_READ_FROM_ABOVE = frozenset(
    (
        *(
            f"{name}{ext}"
            for name in ("eslint.config", ".eslintrc", "prettier.config", ".prettierrc", "jest.config", "babel.config",
                         ".babelrc", "vitest.config", "vite.config", "next.config", ".golangci", ".shellcheckrc",
                         ".mocharc", ".nycrc", "nyc.config", "stylelint.config", ".stylelintrc", "postcss.config",
                         ".postcssrc", "vitest.workspace")  # (.mocharc and the rest: helper-59)
            for ext in _CONFIG_EXTENSIONS
        ),
        "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "conftest.py", "setup.py", "tox.ini", "setup.cfg",
        "pyproject.toml", ".flake8", ".pylintrc", "pylintrc", ".pylintrc.toml", "pylintrc.toml", "mypy.ini",
        ".mypy.ini", "pyrightconfig.json", "ruff.toml", ".ruff.toml",
        "package.json", "node_modules", ".pnp.cjs", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs",
        "pnpm-workspace.yaml", "bunfig.toml",
        "tsconfig.json", "deno.json", "deno.jsonc", ".babelrc",
        ".cargo", "Cargo.toml", "rust-toolchain", "rust-toolchain.toml", "clippy.toml", ".clippy.toml",
        "rustfmt.toml", ".rustfmt.toml", "go.work", "go.mod", ".mvn", "settings.gradle", "settings.gradle.kts",
        "gradle.properties", "Directory.Build.props", "Directory.Build.targets", "Directory.Build.rsp",
        "Directory.Packages.props", "global.json", "NuGet.Config", "NuGet.config", "nuget.config", "Package.swift",
        "Gemfile", "Rakefile", "rakefile", "Rakefile.rb", "rakefile.rb", ".rspec", "phpunit.xml",
        "phpunit.xml.dist", "composer.json", "mix.exs", "rebar.config", "CMakePresets.json",
        "__init__.py",  # (pytest imports a package's parents up its __init__.py files, helper-49)
        ".python-version",  # (pyenv picks the interpreter from a parent's, helper-58)
        ".tool-versions", "mise.toml", ".mise.toml",  # (asdf's and mise's, helper-61)
    )
)  # fmt: skip


def _config_above(root: Path, home: Path | None, owners: frozenset[int]) -> Path | None:
    """The first of ``_READ_FROM_ABOVE`` a folder above the project's ``root`` holds, or None; in the
    home folder ``home`` (the user's own, when given), only one that links out of it or that
    another user may change (a dotfile linked to another user's file, helper-61)."""
    for folder in root.parents:
        try:
            found = _READ_FROM_ABOVE.intersection(os.listdir(folder))  # (one listing a folder, not a stat a name)
        except OSError:
            continue  # (a folder it may not list: nor may the tools)
        if folder == home:
            found = frozenset(
                n for n in found if _links_out(str(folder / n), home) or _open_to_others(folder / n, owners)
            )
        if found:
            return folder / min(found)
    return None


WALK_ENTRIES = 20_000  # most entries of a project's own looked at; a larger tree is not approved
# most entries of what was installed or built (``_bulk``: thousands of files a venv or node_modules)
BULK_ENTRIES = 200_000
_INTERPRETER = re.compile(r"python(?:3(?:\.\d+)?)?")  # a venv's bin/python links, made by venv
# path parts a named path may not go through: git's own folder and what was installed or built
# (``pytest -q .git`` collects where no test of the project is)
_NOT_LOOKED_IN = frozenset({".git", "node_modules", "site-packages", "target"})
_MAX_HOPS = 40  # symlinks followed in a row (the kernel's limit): more is a loop


def _found_below(top: Path, root: Path, owners: frozenset[int]) -> str | None:
    """Why what the project's folder ``root`` (``top``, the folder the walk starts from) holds at
    any depth leaves a command alone, or None: a symlink that leads, or passes on its way, out of
    ``root`` (``_links_out``: a test folder or a conftest.py linked into /tmp, helper-49; node
    --test collects in dist/, cmake --build runs build/Makefile, helper-51; a link into the
    project through another user's link, helper-58; a ``..`` after a link, helper-59), a loop of
    links, or a file or folder others may write to or own (``_open_to_others``: a hard link to
    another user's conftest.py, helper-58). The whole project is looked at, wherever the command
    runs in it: npm runs the root's package.json, pytest loads the conftest.py files on its way
    down, cargo the root's build.rs (helper-59). More than ``WALK_ENTRIES`` entries of the
    project's own, or ``BULK_ENTRIES`` of what was installed or built (``_bulk``: the repository's
    ``.git/objects``, a venv's ``site-packages``, ``node_modules``, cargo's ``target``), are taken
    as not known. A venv's interpreter links (``bin/python3``) may point out of the project to an
    interpreter only its owners may write (``_interpreter_out``); its ``pyvenv.cfg``'s ``home``
    must be such a folder too."""
    folders, seen, bulk_seen = [(top, False, False)], 0, 0  # (a folder, in a venv above it, in bulk)
    while folders:
        folder, venv, bulk = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # (a folder it may not list: nor may the tools)
        if bulk:
            bulk_seen += len(entries)
        else:
            seen += len(entries)
        if seen > WALK_ENTRIES or bulk_seen > BULK_ENTRIES:
            limit = f"{BULK_ENTRIES:,} installed or built" if bulk_seen > BULK_ENTRIES else f"{WALK_ENTRIES:,}"
            return f"{top} holds more than {limit} entries to look through for a symlink out"
        venv = venv or any(e.name == "pyvenv.cfg" for e in entries)  # (a venv's folder, or one in it)
        for entry in entries:
            path = Path(entry.path)
            if entry.is_symlink():
                hops = _hops(entry.path)
                if hops is None:
                    return f"{entry.path} is a loop of symlinks"
                named = venv and folder.name == "bin" and _INTERPRETER.fullmatch(entry.name) is not None
                if not _inside(hops, root) and not (named and _interpreter_out(hops, owners)):
                    return f"{entry.path} is a symlink out of the project ({root})"
                continue
            folder_entry = entry.is_dir(follow_symlinks=False)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # (gone meanwhile)
            if _open_to_others(path, owners, info=info):
                return f"{entry.path} is a {'folder' if folder_entry else 'file'} others may write to or own"
            if entry.name == "pyvenv.cfg" and not folder_entry:
                home = _venv_home(path)
                if home is not None and _open_to_others(home, owners):
                    return f"{entry.path} names a home ({home}) others may write to or own"
            if folder_entry:
                folders.append((path, venv, bulk or _bulk(path, folder, root, venv)))
    return None


def _bulk(path: Path, parent: Path, root: Path, venv: bool) -> bool:
    """Whether the folder ``path`` (in ``parent``) holds what was installed or built, looked
    through in bulk (``_found_below``): the repository's ``.git/objects``, a venv's
    ``site-packages``, ``node_modules``, or cargo's ``target`` (tagged, beside a Cargo.toml)."""
    name = path.name
    if name == "objects":
        return parent == root / ".git"
    if name == "target":
        return (path / "CACHEDIR.TAG").exists() and (parent / "Cargo.toml").exists()
    return name == "node_modules" or (venv and name == "site-packages")


def _venv_home(cfg: Path) -> Path | None:
    """The ``home`` folder a venv's ``pyvenv.cfg`` names (its base interpreter's), or None."""
    try:
        text = cfg.read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r"(?m)^\s*home\s*=\s*(.+?)\s*$", text)
    return Path(found[1]) if found else None


def _hops(link: str) -> list[str] | None:
    """Every path the kernel reads on its way from the symlink ``link`` to what it leads to: each
    symlink met (``link`` first, any met in a target's folders: a ``..`` after a link goes up from
    where that link leads, helper-59), then the end; None for a loop (more than ``_MAX_HOPS``)."""
    hops: list[str] = []
    end = _resolve(link, hops)
    return None if end is None else [*hops, end]


def _resolve(path: str, hops: list[str]) -> str | None:
    """``path`` (absolute) resolved component by component, as the kernel does, each symlink met
    appended to ``hops``; None past ``_MAX_HOPS`` links (a loop)."""
    here = "/"
    parts = [p for p in path.split("/") if p not in ("", ".")]
    for i, part in enumerate(parts):
        if part == "..":
            here = os.path.dirname(here)
            continue
        step = os.path.join(here, part)
        if not os.path.islink(step):
            here = step
            continue
        if len(hops) >= _MAX_HOPS:
            return None
        hops.append(step)
        try:
            target = os.readlink(step)
        except OSError:
            return os.path.join(step, *parts[i + 1 :])  # (gone meanwhile)
        found = _resolve(os.path.join(here, target), hops)  # (an absolute target: join keeps it)
        if found is None:
            return None
        here = found
    return here


def _inside(hops: Sequence[str], root: Path) -> bool:
    """Whether every path of ``hops`` (``_hops``) is in the project's folder ``root``."""
    return all(Path(h).is_relative_to(root) for h in hops)


def _links_out(path: str, root: Path) -> bool:
    """Whether ``path`` is a symlink that leads, or passes on its way, out of the project's folder
    ``root``, or one of a loop (``_hops``)."""
    if not os.path.islink(path):
        return False
    hops = _hops(path)
    return hops is None or not _inside(hops, root)


def _interpreter_out(hops: Sequence[str], owners: frozenset[int]) -> bool:
    """Whether a venv's ``bin/python`` link (``hops``, ``_hops``: its links, then its end) leads to
    a file only ``owners`` may write (/usr/bin's python, pyenv's), through links only they may change
    in folders only they may write."""
    for hop in hops[:-1]:
        try:
            if os.lstat(hop).st_uid not in owners or _open_to_others(Path(hop).parent, owners, above=True):
                return False
        except OSError:
            return False
    last = Path(hops[-1])
    return last.is_file() and not _open_to_others(last, owners) and not _open_to_others(last.parent, owners)


def _not_looked_in(word: str, here: Path, root: Path) -> bool:
    """Whether ``word``, read as a path from the folder ``here``, goes through a folder whose files
    the walk does not look at one by one (``_NOT_LOOKED_IN``: ``pytest -q .git`` collects there)."""
    path = Path(os.path.normpath(here / os.path.expanduser(word)))
    return path.is_relative_to(root) and not _NOT_LOOKED_IN.isdisjoint(path.relative_to(root).parts)


def _tool(prefix: Sequence[str]) -> str:
    """The tool a listed command's words name: ``python -m pytest`` is ``pytest``, ``python
    manage.py test`` is ``manage.py``."""
    if len(prefix) > 2 and PYTHON_NAME.fullmatch(prefix[0]) and prefix[1] == "-m":
        return prefix[2]
    if len(prefix) > 1 and PYTHON_NAME.fullmatch(prefix[0]):
        return os.path.basename(prefix[1])
    name = prefix[0] if prefix[0].startswith("./") else os.path.basename(prefix[0])
    return _SAME_TOOL.get(name, name)


def project_root(cwd: Path) -> Path:
    """The project's folder, resolved: ``cwd``'s repository root, else ``cwd`` (``_project_dirs``)."""
    return _project_dirs(cwd)[0].resolve()


def rule_words(wrap: Wrap) -> tuple[tuple[str, ...], ...]:
    """The commands of ``wrap`` that a user's rule asking about or forbidding a command holds for:
    each part the shell runs, the command behind ``timeout``, ``env`` or a runner (``timeout 30
    pytest``: ``pytest``), and its other names (``wrap.names_of``: ``python -m pytest``)."""
    return tuple(dict.fromkeys((*wrap.parts, *names_of(wrap.body))))


def _project_dirs(cwd: Path) -> list[Path]:
    """``cwd`` and its parents up to its repository's root (the first with ``.git``), root first;
    ``cwd`` alone when it is in no repository, or in one whose root others may write to or own (a
    ``.git`` made in /tmp made /tmp the project of every folder in it, helper-46; as root, another
    user's folder above a project of root's, helper-58: ``_owners``)."""
    dirs = []
    owners = _owners()
    for folder in (cwd, *cwd.parents):
        dirs.append(folder)
        if (folder / ".git").exists():
            if not _yours(folder, owners):
                return [cwd]
            break
    else:
        dirs = [cwd]  # (not in a repository: the working directory alone)
    return dirs[::-1]


def _yours(folder: Path, owners: frozenset[int]) -> bool:
    """Whether ``folder`` and its ``.git`` are ``owners``' and others may not write to the folder."""
    try:
        git = (folder / ".git").lstat()
    except OSError:
        return False
    return git.st_uid in owners and not _open_to_others(folder, owners)


def _owners() -> frozenset[int]:
    """Who may own what a command reads in a project: the user and root. (Root's own
    files only, for root: a checkout of another user's, even a container's mounted one, is theirs
    to change, helper-61.)"""
    return frozenset((os.getuid(), 0))


def _open_to_others(
    path: Path, owners: frozenset[int], above: bool = False, info: os.stat_result | None = None
) -> bool:
    """Whether others than ``owners`` (``_owners``) may change ``path`` (its ``info``, lstat's, when
    given; False when it cannot be looked at): it is theirs, or anyone may write to it (o+w), or a
    group that is not ``owners``' alone (g+w: with a group of one's own, umask 002, one's files are
    g+w; ``_group_of_one``), or a user or group its ACL names (``_acl_writers``). ``above``: a folder
    above the project, where a sticky bit (/tmp) keeps others from replacing what is in it."""
    try:
        info = info or path.stat()
    except OSError:
        return False
    if info.st_uid not in owners:
        return True
    sticky = above and info.st_mode & stat.S_ISVTX
    if info.st_mode & 0o002 and not sticky:
        return True
    if not info.st_mode & 0o020 or sticky:  # (with an ACL, the group bits are its mask: no writer named)
        return False
    return not _group_of_one(info.st_gid, owners) or _acl_writers(path, owners)


@functools.lru_cache(maxsize=64)
def _group_of_one(gid: int, owners: frozenset[int]) -> bool:
    """Whether only ``owners`` are in the group ``gid``: as its members, or with it as their own
    (a group of one's own; ``users``, every user's, is not)."""
    users = pwd.getpwall()
    if any(p.pw_gid == gid and p.pw_uid not in owners for p in users):
        return False
    names = {p.pw_name for p in users if p.pw_uid in owners}
    try:
        return set(grp.getgrgid(gid).gr_mem) <= names
    except KeyError:
        return True  # (no such group: no member; a user's primary one is looked at above)


def _acl_writers(path: Path, owners: frozenset[int]) -> bool:
    """Whether the POSIX access ACL of ``path`` lets a user or group other than ``owners`` write
    (``setfacl -m u:nobody:rwx``: the mode shows it only as g+w; helper-58). Its format: a 4-byte
    version, then entries of a 2-byte tag, 2-byte permissions and 4-byte id (acl_ea.h)."""
    try:
        data = os.getxattr(path, "system.posix_acl_access", follow_symlinks=False)
    except OSError:
        return False  # (none, or none the file system keeps)
    for at in range(4, len(data) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", data, at)
        if perm & 2 and ((tag == 2 and ident not in owners) or (tag == 8 and not _group_of_one(ident, owners))):
            return True
    return False


def codex_rules_say(parts: Sequence[Sequence[str]], cwd: str, env: Mapping[str, str]) -> str | None:
    """What the user's Codex rules say of a command's ``parts`` (each part's words; ``cd`` parts
    need no rule): ``ask`` when a rule that matches a part prompts or forbids (or a rules file
    cannot be read), ``allow`` when rules allow every part, else None."""
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    trusted = _trusted(home / "config.toml")
    folders = [(home / "rules", True), (Path("/etc/codex/rules"), True)]
    for project in _project_dirs(Path(cwd or ".")):
        is_trusted = any(d == project or d in project.parents for d in trusted)
        folders.append((project / ".codex" / "rules", is_trusted))
    decisions: list[list[int]] = [[] for _ in parts]
    for folder, may_allow in folders:
        for path in sorted(folder.glob("*.rules")) if folder.is_dir() else []:
            import ast  # (only when there are rules to read: the hook runs before every command)

            try:
                text = path.read_text()
                if re.search(r"\bprefix_rule\b(?!\s*\()", text):
                    return "ask"  # (prefix_rule under another name: deny = prefix_rule, helper-39)
                tree = ast.parse(text)
                calls = [
                    n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "prefix_rule"
                ]
                found = [{k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg} for call in calls]
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                return "ask"  # (rules it cannot read may forbid anything)
            for rule in found:
                decision, pattern = rule.get("decision", "allow"), rule.get("pattern")
                if decision not in _CODEX_STRICTNESS or not isinstance(pattern, list) or not pattern:
                    return "ask"
                if decision == "allow" and not may_allow:
                    continue
                # a rule that asks or forbids holds under its own other names too (one on `npm run
                # test` for `npm test`, helper-66); an approval stays as narrow as the rule
                named = decision != "allow" and all(isinstance(w, str) for w in pattern)
                patterns: list[Sequence[object]] = list(names_of(pattern)) if named else [pattern]
                for said, part in zip(decisions, parts, strict=True):
                    if any(_holds(p, part, _same_codex_word, anywhere=decision != "allow") for p in patterns if p):
                        said.append(_CODEX_STRICTNESS[decision])
    if any(max(said, default=0) > 0 for said in decisions):
        return "ask"
    asked = [said for said, part in zip(decisions, parts, strict=True) if part[:1] != ("cd",)]
    return "allow" if asked and all(asked) else None


def _same_codex_word(word: str, pattern: object) -> bool:
    """Whether a command's word is what a Codex rule's pattern names at its place (a word, or a
    list of the words it may be)."""
    return word == pattern or (isinstance(pattern, list) and word in pattern)


def _holds(
    pattern: Sequence[object], part: Sequence[str], same: Callable[[str, Any], bool], anywhere: bool = False
) -> bool:
    """Whether a user's rule of the words ``pattern`` holds for a command's words ``part``: they
    begin with the rule's words (``same(word, rule's word)``), or, for a rule that asks about or
    forbids a command (``anywhere``), the first word is the rule's and its other words come in order
    among the rest: a rule on ``make install`` holds for ``make -C . install`` and ``make -j 4
    install``, whose options take values (helper-40). Asking about more than the rule names only
    leaves a command to the agent; an approval stays as narrow as the rule."""
    if len(part) >= len(pattern) and all(same(w, p) for w, p in zip(part, pattern, strict=False)):
        return True
    if not anywhere or not part or not pattern or not same(part[0], pattern[0]):
        return False
    return among(part[1:], pattern[1:], same)


def _trusted(config: Path) -> set[Path]:
    """The projects Codex's ``config.toml`` trusts (``[projects."DIR"] trust_level = "trusted"``);
    none when it cannot be read."""
    try:
        text = config.read_text()
    except (OSError, UnicodeDecodeError):
        return set()
    import tomllib  # (only when there is a file)

    try:
        projects = tomllib.loads(text).get("projects", {})
    except tomllib.TOMLDecodeError:
        return set()
    if not isinstance(projects, dict):
        return set()
    return {Path(d) for d, v in projects.items() if isinstance(v, dict) and v.get("trust_level") == "trusted"}


def _cursor_files(cwd: str, env: Mapping[str, str]) -> list[Path]:
    """Cursor CLI's permission files: the user's, then the project's from its root to ``cwd``."""
    if env.get("XDG_CONFIG_HOME"):
        user = Path(env["XDG_CONFIG_HOME"]) / "cursor" / "cli-config.json"
    else:
        user = Path(env.get("HOME") or Path.home()) / ".cursor" / "cli-config.json"
    return [user, *(d / ".cursor" / "cli.json" for d in _project_dirs(Path(cwd or ".")))]


def cursor_rules_say(parts: Sequence[Sequence[str]], cwd: str, env: Mapping[str, str]) -> str | None:
    """What the user's Cursor permissions say of a command's ``parts``: ``deny`` when a deny rule
    matches a part's first word (or a permissions file cannot be read), ``allow`` when allow rules
    match every part but ``cd``, else None."""
    rules: dict[str, list[str]] = {"allow": [], "deny": []}
    for path in _cursor_files(cwd, env):
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return "deny"  # (permissions it cannot read may deny anything)
        permissions = doc.get("permissions") if isinstance(doc, dict) else None
        for kind, found in rules.items():
            listed = permissions.get(kind, []) if isinstance(permissions, dict) else []
            found.extend(r[6:-1] for r in listed if isinstance(r, str) and r.startswith("Shell(") and r.endswith(")"))
    bases = [part[0] for part in parts if part and part[0] != "cd"]

    def matches(base: str, patterns: list[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns for name in {base, os.path.basename(base)})

    def denied(part: Sequence[str]) -> bool:
        # a deny rule that names arguments (``Shell(cargo test)``, ``cargo:test``, ``cargo test:*``)
        # holds for the commands its words begin (it was ignored: helper-28); an allow rule is read
        # by its command's name alone, as before (an approval is never wider than that)
        for rule in rules["deny"]:
            words = [w for w in re.split(r"[\s:]+", rule) if w]
            while words and words[-1] == "*":
                words.pop()
            if not words:
                return True
            # (the first word as matches() reads it: by its name too, ./bin/make as make; and under
            # the rule's other names: one on `npm run test` holds for `npm test`, helper-66)
            for name in names_of(words):
                if name and matches(part[0], [name[0]]) and among(part[1:], name[1:], fnmatch.fnmatchcase):
                    return True
        return False

    if any(denied(part) for part in parts if part):
        return "deny"
    return "allow" if bases and all(matches(b, rules["allow"]) for b in bases) else None


def approves(agent: str, wrap: Wrap, rules: Rules, cwd: str, env: Mapping[str, str], mode: str = "") -> bool:
    """Whether the ``agent`` (``codex`` or ``cursor``) hook may approve the rewrite ``wrap`` of a
    command run in ``cwd`` (``refusal`` says none).

    Raises:
        KeyError: another agent.
    """
    return refusal(agent, wrap, rules, cwd, env, mode) is None


def refusal(agent: str, wrap: Wrap, rules: Rules, cwd: str, env: Mapping[str, str], mode: str = "") -> str | None:
    """Why the ``agent`` (``codex`` or ``cursor``) hook may not approve the rewrite ``wrap`` of a
    command run in ``cwd`` (see the module docstring), or None when it may; ``mode``: the
    session's permission mode as the agent's payload names it (Codex: ``bypassPermissions`` asks
    about nothing). ``hook explain`` prints it.

    Raises:
        KeyError: another agent.
    """
    if wrap.command is None:
        return "not wrapped"
    if not wrap.plain:
        return "not plain: an expansion, a program by its path, a sourced script or an assignment its rules cannot see"
    # a rule that asks about ``pytest`` or forbids it also holds for ``timeout 30 pytest`` and
    # ``python -m pytest``, which the built-in list approves
    said = {"codex": codex_rules_say, "cursor": cursor_rules_say}[agent](rule_words(wrap), cwd, env)
    if said in ("ask", "deny"):
        if said == "deny":
            return f"your {agent.capitalize()} rules forbid it"
        return f"your {agent.capitalize()} rules ask about it, forbid it, or cannot be read"
    if (said == "allow" and wrap.simple) or (agent == "codex" and mode == "bypassPermissions"):
        return None
    # (the command as written, or behind timeout or env; not behind a runner: approve = ["pytest"]
    # approved npx pytest, which downloads a package of that name, helper-44)
    if any(starts(list(wrap.parts[-1]), p) or (not wrap.runner and starts(list(wrap.body), p)) for p in rules.approve):
        # (the list names commands, not a folder to run them in, nor a script to source from elsewhere)
        root = project_root(Path(cwd))
        walked = _walk(wrap, Path(cwd), root, env)
        if walked is None:
            return f"a cd may leave the project ({root})"
        # (nor a program by a path out of the project: ./run-tests.sh a symlink out, helper-49)
        sourced = [(part[1], here) for part, here in walked if part[0] in ("source", ".")]
        programs = [(part[0], here) for part, here in walked if "/" in part[0]]
        out = next((w for w, here in sourced + programs if outside(w, here, root)), None)
        if out is not None:
            return f"{out} names a place outside the project ({root})"
        # (nor in a folder others may write to: make test in a /tmp folder another user filled, helper-58)
        return _tree_refusal(root, env)
    if not rules.builtin_approve:
        return "builtin = false, and neither your rules nor your approve list allow it"
    return _default_refusal(wrap, Path(cwd), env)


def what_it_approves(agent: str, hooks_file: Path) -> str:
    """What ``install AGENT`` says the hook approves (``codex`` or ``cursor``), in a few lines."""
    own = {
        "codex": "the commands your Codex rules allow (rules/*.rules in $CODEX_HOME, /etc/codex and a trusted "
        "project's .codex/), or all in a bypassPermissions session",
        "cursor": "the commands your Cursor permissions allow (Shell(...) in ~/.cursor/cli-config.json and the "
        "project's .cursor/cli.json)",
    }[agent]
    listed = ", ".join(p for p in DEFAULT_APPROVED if " run " not in p)
    return (
        f"{agent.capitalize()} runs a rewritten command only if the hook approves it, so the hook wraps only:\n"
        f"  - {own};\n"
        f"  - the commands listed in `approve` in {hooks_file};\n"
        f"  - commands that build, check or test the project in place: {listed}, and the npm and pnpm "
        "scripts build, test, lint, typecheck, check (no installs, no runner such as uv run or npx, no path "
        "outside the project, only options known to be harmless such as -q, -x, -k, -j; make, ninja, mvn, "
        "gradle, rake and sbt only with build and test targets, meson with none).\n"
        "Every other command is left alone, for you to approve as before. A rule of yours that asks about a "
        "command or forbids it always wins.\n"
    )
