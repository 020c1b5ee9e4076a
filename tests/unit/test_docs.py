"""The docs say what the code does: README.md and docs/*.md against the real parser, the config
loader and the installed command.

- every option of every subcommand is in that subcommand's section of docs/cli.md, with the
  parser's default where an options table gives one;
- every config key the loader accepts is in docs/daemon.md's key tables, for the tables and the
  types that take it, with the loader's default;
- the README's test command is what CI runs (``.ci/run``), and the README stays short;
- relative links between the pages resolve, anchors included;
- the shell examples run: a fenced ``sh`` block is run with bash in a temporary directory holding
  a copy of ``examples/`` (``sh no-run`` blocks are not), and a ``text output`` block right after
  it is what it prints (see docs/development.md, "Writing docs").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamfilter.cli.main import _parser
from streamfilter.core.signatures import DEFAULT_SIGNATURES
from streamfilter.live import config as config_module
from streamfilter.live.config import ConfigError, load_config, resolved

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
ELIDED = "…"  # a line of a ``text output`` block that stands for output lines left out


@dataclass(frozen=True)
class Block:
    """A fenced code block of a page: its info string (``sh``, ``sh no-run``, ``text output``), its
    text, and the line of the page its fence opens on (1-based)."""

    page: Path
    line: int
    info: str
    code: str


def _blocks(page: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})(.*)$", lines[i])
        if not opening:
            i += 1
            continue
        fence, info, start = opening.group(1), opening.group(2).strip(), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        blocks.append(Block(page, start + 1, info, "\n".join(body) + "\n"))
        i += 1
    return blocks


def _prose(text: str) -> str:
    """``text`` with its fenced blocks blanked, so a ``#`` in a block is no heading."""
    out, fence = [], ""
    for line in text.splitlines():
        opening = re.match(r"^(`{3,})", line)
        if fence:
            if line.strip() == fence:
                fence = ""
            out.append("")
        elif opening:
            fence = opening.group(1)
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def _sections(page: Path, level: int) -> dict[str, str]:
    """Each heading of ``level`` (2: ``##``) -> the page's text under it, up to the next heading of
    that level or above (code blocks included)."""
    text = page.read_text()
    lines, prose = text.splitlines(), _prose(text).splitlines()
    heads = [(i, m.group(2)) for i, line in enumerate(prose) if (m := re.match(r"^(#{1,6}) (.*)$", line))]
    out = {}
    for j, (i, title) in enumerate(heads):
        if len(prose[i]) - len(prose[i].lstrip("#")) != level:
            continue
        end = next(
            (k for k, _ in heads[j + 1 :] if len(prose[k]) - len(prose[k].lstrip("#")) <= level),
            len(lines),
        )
        out[title] = "\n".join(lines[i:end])
    return out


def _table_rows(text: str) -> list[list[str]]:
    """The cells of each row of the markdown tables in ``text`` (header and rule rows left out)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        rows.append(cells)
    return rows


def _mentions(text: str, option: str) -> bool:
    """Whether ``option`` (``--tail``) is in ``text`` as itself, not inside a longer one (``--tail-x``)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


# --- the command line -------------------------------------------------------------------------


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _cli_section(name: str) -> str:
    """The section of docs/cli.md headed ``streamfilter NAME`` (or ``streamfilter A and NAME``)."""
    found = [
        text
        for title, text in _sections(DOCS / "cli.md", 2).items()
        if title.startswith("streamfilter ") and name in re.split(r"\s+", title)[1:]
    ]
    assert len(found) == 1, f"docs/cli.md has {len(found)} sections headed 'streamfilter ... {name}'"
    return found[0]


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _names(action: argparse.Action) -> list[str]:
    """How the docs name an action: its option strings, or a positional's metavar (``FILE``)."""
    if action.option_strings:
        return list(action.option_strings)
    return [str(action.metavar or action.dest.upper())]


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_of_a_subcommand_is_in_its_section_of_the_cli_reference(name: str) -> None:
    section = _cli_section(name)
    missing = [n for action in _options(_subcommands()[name]) for n in _names(action) if not _mentions(section, n)]
    assert not missing, f"docs/cli.md, section of {name}, does not name {missing}"


def test_the_main_parsers_own_options_are_in_the_cli_reference() -> None:
    text = (DOCS / "cli.md").read_text()
    missing = [o for a in _options(_parser()) for o in a.option_strings if not _mentions(text, o)]
    assert not missing


def _option_rows(section: str) -> dict[str, str]:
    """Option (``--tail``, ``-q``, ``FILE``) -> the last cell of the table row that names it first
    (``| `--tail T` | ... | 25 |``)."""
    out: dict[str, str] = {}
    for cells in _table_rows(section):
        if len(cells) < 3:
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            out.setdefault(name.split()[0], cells[-1])
    return out


def _plain_default(action: argparse.Action) -> int | float | str | None:
    default = action.default
    if isinstance(default, bool) or not isinstance(default, int | float | str) or default == argparse.SUPPRESS:
        return None
    return default


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_the_defaults_in_the_cli_reference_are_the_parsers(name: str) -> None:
    own, shared = _option_rows(_cli_section(name)), _option_rows(_cli_section("filter"))
    for action in _options(_subcommands()[name]):
        default = _plain_default(action)
        if default is None:
            continue
        option = action.option_strings[-1]
        cell = own.get(option) or shared.get(option)
        assert cell is not None, f"no options table row of docs/cli.md gives {name} {option}'s default"
        if isinstance(default, str):
            assert f"`{default}`" in cell, f"{name} {option}: the docs say {cell!r}, the parser {default!r}"
        else:
            number = re.match(r"[\d.]+", cell)
            assert number and float(number.group()) == default, (
                f"{name} {option}: the docs say {cell!r}, the parser {default!r}"
            )


# --- the daemon's config ----------------------------------------------------------------------

TABLES = ("defaults", "source", "sink")


def _accepted_keys(tmp_path: Path) -> dict[str, set[str]]:
    """What the loader accepts in each table, from its own "known keys" list for an unknown key."""
    unknown = "zzzzzzzzzz"
    path = tmp_path / "unknown.toml"
    path.write_text(
        f'[defaults]\n{unknown} = 1\n[[source]]\ntype = "file"\npath = "a.log"\n{unknown} = 1\n'
        f'[[sink]]\nname = "s"\ntype = "file"\npath = "b.log"\n{unknown} = 1\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    keys = {}
    for line in str(caught.value).splitlines():
        found = re.search(rf": (defaults|source\[0\]|sink\[0\])\.{unknown}: unknown key; known keys: (.*)$", line)
        assert found, f"the loader's message changed: {line!r}"
        keys[found.group(1).split("[")[0]] = set(found.group(2).split(", "))
    assert set(keys) == set(TABLES)
    return keys


def test_the_loader_accepts_the_keys_of_the_config_schema(tmp_path: Path) -> None:
    # (the schema in streamfilter/live/config.py; the tests below take the loader's word for it)
    accepted = _accepted_keys(tmp_path)
    filters, timing = set(config_module._FILTER_KEYS), set(config_module._TIMING_KEYS)
    assert accepted["source"] == config_module._SOURCE_KEYS | filters | timing
    assert accepted["sink"] == config_module._SINK_KEYS
    assert accepted["defaults"] >= filters | timing


def _documented_keys() -> dict[tuple[str, str], tuple[set[str], str]]:
    """(table, key) -> (the types the docs say have it, empty for all; the default cell), from the
    rows of docs/daemon.md's key tables (``| `key` | defaults, source (file) | default | ... |``)."""
    out: dict[tuple[str, str], tuple[set[str], str]] = {}
    for cells in _table_rows((DOCS / "daemon.md").read_text()):
        key = re.fullmatch(r"`(\w+)`", cells[0])
        if not key or len(cells) != 4:
            continue
        places = re.findall(r"(defaults|source|sink)(?: \(([^)]*)\))?", cells[1])
        assert places, f"docs/daemon.md: {key.group(1)}: no table in {cells[1]!r}"
        for table, types in places:
            assert (table, key.group(1)) not in out, f"docs/daemon.md gives {table}.{key.group(1)} twice"
            out[table, key.group(1)] = ({t.strip() for t in types.split(",") if t.strip()}, cells[2])
    return out


def test_every_config_key_is_in_the_daemon_reference_and_no_other(tmp_path: Path) -> None:
    accepted = _accepted_keys(tmp_path)
    documented = _documented_keys()
    for table in TABLES:
        listed = {key for t, key in documented if t == table}
        assert accepted[table] - listed == set(), f"docs/daemon.md lacks these {table} keys"
        assert listed - accepted[table] == set(), f"docs/daemon.md lists {table} keys the loader refuses"


def test_the_daemon_reference_names_the_types_that_take_a_key() -> None:
    # ([defaults] takes a key whatever type it is for: it serves the sources that have it)
    types_of = {"source": config_module._KEY_TYPES, "sink": config_module._SINK_KEY_TYPES, "defaults": {}}
    for (table, key), (types, _) in _documented_keys().items():
        assert types == set(types_of[table].get(key, ())), f"docs/daemon.md: {table}.{key} is for {types or 'all'}"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str | list) else repr(value)


def test_the_defaults_in_the_daemon_reference_are_the_loaders(tmp_path: Path) -> None:
    path = tmp_path / "minimal.toml"
    path.write_text(
        '[[source]]\nname = "f"\ntype = "file"\npath = "a.log"\n'
        '[[source]]\nname = "u"\ntype = "unix"\npath = "u.sock"\nsinks = ["s"]\n'
        '[[sink]]\nname = "s"\ntype = "unix"\npath = "s.sock"\n'
    )
    config = resolved(load_config(path))
    given = {"name", "type", "path", "roots"}  # set above, or made from what is
    files, sockets = config["sources"]
    checked = 0
    for (table, key), (types, cell) in _documented_keys().items():
        if types and not types & {"file", "unix"}:  # (a nats key: this config has no nats source or sink)
            continue
        if table == "sink":
            values = config["sinks"][1]  # (0 is the built-in stdout)
        else:
            source = sockets if types and "file" not in types else files
            values = {**source["filter"], **source["timing"], **source}
        if key in given or values.get(key) in (None, ""):
            continue
        value = values[key]
        assert f"`{_literal(value)}`" in cell, f"docs/daemon.md: {table}.{key}'s default is {_literal(value)}"
        checked += 1
    assert checked > 30


def _blocks_marked(info: str) -> list[Block]:
    return [b for page in PAGES for b in _blocks(page) if b.info == info]


@pytest.mark.parametrize("block", _blocks_marked("toml"), ids=lambda b: f"{b.page.name}:{b.line}")
def test_a_config_in_the_docs_is_one_the_loader_accepts(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "streamfilter.toml"
    path.write_text(block.code)
    load_config(path)


@pytest.mark.parametrize("block", _blocks_marked("json"), ids=lambda b: f"{b.page.name}:{b.line}")
def test_jsonl_in_the_docs_is_json(block: Block) -> None:
    for line in block.code.splitlines():
        assert isinstance(json.loads(line), dict)


# --- signatures -------------------------------------------------------------------------------


def test_the_signatures_page_names_those_that_do_not_count_as_a_found_failure() -> None:
    text = " ".join((DOCS / "signatures.md").read_text().split())
    listed = text.split("do not count as a found failure:", 1)[1].split(".", 1)[0]
    names = {n.strip() for n in listed.split(",")}
    assert names == {s.name for s in DEFAULT_SIGNATURES if not s.found}


# --- README and CI ----------------------------------------------------------------------------


def test_the_readme_is_short() -> None:
    assert len(README.read_bytes()) <= 10 * 1024


def _ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_readmes_test_command_is_what_ci_runs() -> None:
    blocks = [b.code.strip() for b in _blocks(README) if b.info.split()[:1] == ["sh"] and "-m pytest" in b.code]
    assert len(blocks) == 1, "the README has one test command"
    steps = [step.strip() for step in blocks[0].split("&&")]
    ci = _ci_commands()
    assert steps[-1] == ci[-1] == ".venv/bin/python -m pytest -q"
    assert steps[0] in ci  # python3 -m venv .venv
    install = next(c for c in ci if c.startswith(".venv/bin/pip install") and "-e" in c.split())
    assert steps[1].split()[:2] == install.split()[:2] and steps[1].split()[-2:] == install.split()[-2:]


def test_the_readmes_fresh_machine_command_installs_and_runs_an_example_that_ships() -> None:
    blocks = [b for b in _blocks(README) if b.info == "sh no-run" and ".venv/bin/streamfilter" in b.code]
    assert len(blocks) == 1
    steps = [step.strip() for step in blocks[0].code.strip().split("&&")]
    assert steps[0] in _ci_commands()
    assert steps[1] == ".venv/bin/pip install -q -e ."
    run = steps[-1].removeprefix(".venv/bin/")
    assert (ROOT / run.split()[-1]).is_file()
    # the same command is one of the examples that run (below), so the main job is tested
    assert any(b.info == "sh" and b.code.strip() == run for b in _blocks(README))


# --- links ------------------------------------------------------------------------------------


def _slug(title: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: {target}: no {file}"
        if anchor:
            titles = re.findall(r"^#{1,6} (.*)$", _prose(file.read_text()), re.MULTILINE)
            assert anchor in {_slug(t) for t in titles}, f"{page.name}: {target}: no such heading"


# --- shell examples ---------------------------------------------------------------------------


def _examples() -> list[tuple[Block, Block | None]]:
    """Each runnable ``sh`` block, with the ``text output`` block right after it if there is one."""
    out = []
    for page in PAGES:
        blocks = _blocks(page)
        for i, block in enumerate(blocks):
            if block.info.split()[:1] != ["sh"]:
                continue
            assert block.info in ("sh", "sh no-run"), f"{page.name}:{block.line}: unknown mark {block.info!r}"
            if block.info == "sh":
                after = blocks[i + 1] if i + 1 < len(blocks) else None
                out.append((block, after if after and after.info == "text output" else None))
    return out


def test_every_output_block_follows_an_example() -> None:
    for page in PAGES:
        blocks = _blocks(page)
        for i, block in enumerate(blocks):
            if block.info == "text output":
                assert i and blocks[i - 1].info == "sh", f"{page.name}:{block.line}: output of no example"


_REF = re.compile(r"ref (?:\S*/)?([^/\s]+:\d+-\d+:[0-9a-f]{8})")


def _normal(line: str) -> str:
    """A line as compared: trailing blanks and a ref's directories left out."""
    return _REF.sub(r"ref \1", line.rstrip())


def _assert_shows(expected: str, actual: str, where: str) -> None:
    """Each stretch of ``expected`` between ``…`` lines is a stretch of ``actual``'s lines, in order;
    the first starts ``actual`` and the last ends it unless a ``…`` comes before or after it."""
    got = [_normal(line) for line in actual.splitlines()]
    lines = [_normal(line) for line in expected.splitlines()]
    chunks: list[list[str]] = [[]]
    for line in lines:
        if line == ELIDED:
            chunks.append([])
        else:
            chunks[-1].append(line)
    at = 0
    for n, chunk in enumerate(chunks):
        if not chunk:
            continue
        if n == 0:
            found = at if got[: len(chunk)] == chunk else -1
        else:
            found = next((i for i in range(at, len(got) - len(chunk) + 1) if got[i : i + len(chunk)] == chunk), -1)
        assert found >= 0, f"{where}: the output does not show\n" + "\n".join(chunk) + "\n--- it is:\n" + actual
        at = found + len(chunk)
    if chunks[-1]:
        assert at == len(got), f"{where}: the output goes on after what the docs show:\n{actual}"


EXAMPLES = _examples()


@pytest.mark.parametrize(("example", "output"), EXAMPLES, ids=[f"{b.page.name}:{b.line}" for b, _ in EXAMPLES])
def test_a_shell_example_runs_and_prints_what_the_docs_show(
    example: Block, output: Block | None, tmp_path: Path
) -> None:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "streamfilter").exists(), f"streamfilter is not installed beside {sys.executable}"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if k not in ("STATE_DIRECTORY", "STREAMFILTER_WORKER")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", example.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    where = f"{example.page.relative_to(ROOT)}:{example.line}"
    assert done.returncode == 0, f"{where} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    if output is not None:
        _assert_shows(output.code, done.stdout, where)
