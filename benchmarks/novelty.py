#!/usr/bin/env python3
"""Novelty against the last green run, measured on pairs of real runs (issue 32).

Usage:
    python benchmarks/novelty.py [--keep DIR] [--only NAME ...] [--live]

Each pair is a small project copied from ``benchmarks/novelty/NAME/`` into a temporary folder (one of six kinds:
pytest, unittest, make with gcc, cargo with the standard library only, ``npm test`` with node's
built-in runner, a shell script; beyond the 22 pairs of issue 32, also mypy, ruff, and javac with
a test runner of its own), a run of its command that passes, then one real change (a file
edited or removed) and a run that fails. The failing run's output is filtered twice, as
``streamfilter filter fail.log`` and as ``streamfilter filter --baseline pass.log fail.log`` do
(default query), and the table gives for each pair

- recall: the share of its labels (regexes of the lines a developer needs to fix that change: what
  went wrong and where) of which at least one matching line is kept verbatim;
- bytes: the text output's length, as for a file named ``fail.log`` (its summaries' refs);

with and without the baseline, then the totals. ``--keep DIR`` keeps the logs (``NAME.pass.log``,
``NAME.fail.log``); ``--live`` also runs each pair through ``streamfilter run`` (a state directory
of its own: the passing run stores the baseline, the failing run is weighed with it, and once more
with ``--no-baseline``) and gives those output bytes too (live decisions depend on pauses).

Issue 39's pairs (the last ones) are of what a baseline must not hide and what a green run must
show: a test filter that now matches nothing (cargo's ``0 passed; 32 filtered out``), a lone line
no green run printed among those it did (node), and green runs whose every target's counts a
reader needs (cargo's library and integration tests, node's ``# tests`` and ``# pass``): a change
that keeps the run green (``Pair.passes``) is read as ``run`` reads a green run, with its success
tail and every test target's result line.

Needs python3 with pytest, gcc and make, cargo (no crates), node and npm; a pair beyond issue 32's
whose tool is missing (mypy, ruff, a JDK) is skipped, and the table says so. The runs print paths of
the temporary folder and timings, so bytes vary by a few between runs of this script.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamfilter.core.baseline import Baseline  # noqa: E402
from streamfilter.core.filter import FilterConfig, StreamFilter  # noqa: E402
from streamfilter.core.output import render  # noqa: E402
from streamfilter.live.baselines import baseline_of_files  # noqa: E402
from streamfilter.live.envelope import SUCCESS_TAIL_LINES  # noqa: E402
from streamfilter.live.expand import TextRefs, ref_of  # noqa: E402


@dataclass(frozen=True)
class Pair:
    """One pair of runs: the passing run of ``command`` in ``project``, then the failing run after
    ``change``.

    Attributes:
        name: the pair's name (unique).
        kind: pytest, unittest, make, cargo, npm or shell.
        project: a folder of ``PROJECTS_DIR``.
        command: the argv, run in the project's folder (``{python}`` is this interpreter).
        change: ``(path, old, new)``: ``old`` replaced by ``new`` once in the file at ``path``
            (``new`` None: the file is removed).
        labels: regexes (Python ``re``, searched in each line) of the lines a developer needs.
        passes: the change keeps the run green (exit 0): it is read as ``run`` reads a green run
            (its success tail, ``SUCCESS_TAIL_LINES``, and every test target's result line).
    """

    name: str
    kind: str
    project: str
    command: tuple[str, ...]
    change: tuple[str, str, str | None]
    labels: tuple[str, ...]
    passes: bool = False


# the projects, one folder each under benchmarks/novelty/: ledger (pytest), textkit (unittest), clib
# (make with gcc), geom (cargo, std only), units (npm test with node's runner), release (a shell
# script), stock (mypy and ruff), calc (javac with a test runner of its own)
PROJECTS_DIR = Path(__file__).resolve().parent / "novelty"
_MYPY = ("{python}", "-m", "mypy", "stock")
_RUFF = ("{python}", "-m", "ruff", "check", "--no-cache", "stock")

_PYTEST_V = ("{python}", "-m", "pytest", "-v")
_PYTEST = ("{python}", "-m", "pytest")
_UNITTEST_V = ("{python}", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
_UNITTEST = ("{python}", "-m", "unittest", "discover", "-s", "tests", "-t", ".")

PAIRS: tuple[Pair, ...] = (
    # pytest
    Pair(
        "pytest-rounding",
        "pytest",
        "ledger",
        _PYTEST_V,
        ("ledger/money.py", "rounding=ROUND_HALF_UP", 'rounding="ROUND_HALF_EVEN"'),
        (r"test_round_cents\[1\.005-1\.01\]", r"^E\s+AssertionError: assert Decimal\('1.00'\) == Decimal\('1.01'\)"),
    ),
    Pair(
        "pytest-no-raise",
        "pytest",
        "ledger",
        _PYTEST,
        ("ledger/accounts.py", "        if amount > self.balance:\n", "        if amount > self.balance + 1:\n"),
        (r"test_withdraw_error_when_insufficient", r"^E\s+Failed: DID NOT RAISE"),
    ),
    Pair(
        "pytest-name-error",
        "pytest",
        "ledger",
        _PYTEST_V,
        ("ledger/importer.py", "raise ParseError(number, str(exc))", "raise ParseError(number, str(error))"),
        (r"^E\s+NameError: name 'error' is not defined", r"^ledger/importer.py:\d+: NameError"),
    ),
    Pair(
        "pytest-import-error",
        "pytest",
        "ledger",
        _PYTEST,
        ("ledger/report.py", "def monthly_totals(entries):", "def totals_by_month(entries):"),
        (r"ImportError: cannot import name 'monthly_totals'", r"ERROR tests/test_report.py"),
    ),
    # unittest
    Pair(
        "unittest-slug",
        "unittest",
        "textkit",
        _UNITTEST_V,
        ("textkit/slug.py", "text.lower())", "text)"),
        (r"^FAIL: test_unique_slug_free|^FAIL: test_simple|^FAIL: test_punctuation", r"^AssertionError: '"),
    ),
    Pair(
        "unittest-exception",
        "unittest",
        "textkit",
        _UNITTEST_V,
        (
            "textkit/tokens.py",
            '            tokens.append(("op", ch))\n',
            '            tokens.append(("op", ch.kind))\n',
        ),
        (r"^ERROR: test_\w+ \(tests.test_tokens", r"AttributeError: 'str' object has no attribute 'kind'"),
    ),
    Pair(
        "unittest-wrap",
        "unittest",
        "textkit",
        _UNITTEST,
        ("textkit/wrap.py", "len(line) + 1 + len(word) > width", "len(line) + 1 + len(word) >= width"),
        (r"^FAIL: test_wrap_10", r"^AssertionError: Lists differ"),
    ),
    Pair(
        "unittest-syntax",
        "unittest",
        "textkit",
        _UNITTEST_V,
        ("textkit/wrap.py", 'def indent(lines, prefix="    "):', 'def indent(lines, prefix="    ")'),
        (r"textkit/wrap.py\", line \d+", r"SyntaxError: expected ':'"),
    ),
    # make with gcc
    Pair(
        "make-undeclared",
        "make",
        "clib",
        ("make", "test"),
        (
            "src/csv.c",
            "        if (len < 63) fields[n][len++] = *p;",
            "        if (length < 63) fields[n][len++] = *p;",
        ),
        (r"src/csv.c:\d+:\d+: error: .length. undeclared", r"make: \*\*\*"),
    ),
    Pair(
        "make-link",
        "make",
        "clib",
        ("make", "test"),
        (
            "src/hashmap.c",
            "int hashmap_remove(hashmap *m, const char *key) {",
            "int hashmap_delete(hashmap *m, const char *key) {",
        ),
        (r"undefined reference to `hashmap_remove'", r"ld returned 1 exit status"),
    ),
    Pair(
        "make-test-fails",
        "make",
        "clib",
        ("make", "test"),
        (
            "src/strbuf.c",
            "while (end > start && b->data[end - 1] == ' ') end--;",
            "while (end > start + 1 && b->data[end - 2] == ' ') end--;",
        ),
        (r"test strbuf_trim\s+FAILED: expected \"abc\"", r"make: \*\*\* \[Makefile:\d+: test\] Error 1"),
    ),
    Pair(
        "make-segfault",
        "make",
        "clib",
        ("make", "test"),
        ("src/csv.c", "    fields[0][0] = 0;\n", "    fields = NULL;\n    fields[0][0] = 0;\n"),
        (r"^test hashmap_remove_missing\s+ok", r"make: \*\*\* \[Makefile:\d+: test\] Segmentation fault"),
    ),
    # cargo
    Pair(
        "cargo-assert",
        "cargo",
        "geom",
        ("cargo", "test"),
        ("src/shapes.rs", "    twice.abs() / 2.0", "    twice / 2.0"),
        (
            r"^test shapes::tests::clockwise_polygon_area \.\.\. FAILED",
            r"assertion `left == right` failed",
            r"^\s+left: -6\.0",
        ),
    ),
    Pair(
        "cargo-type-error",
        "cargo",
        "geom",
        ("cargo", "test"),
        ("src/parse.rs", "    let mut total = 0.0;", "    let mut total = 0;"),
        (r"error\[E0277\]|error\[E0308\]", r"--> src/parse.rs:\d+:\d+"),
    ),
    Pair(
        "cargo-moved",
        "cargo",
        "geom",
        ("cargo", "test"),
        (
            "src/vec2.rs",
            "    let labels: Vec<String> = points.iter()",
            "    let owned = points;\n    let _n = owned.len();\n    let labels: Vec<String> = points.iter()",
        ),
        (r"error\[E0382\]: borrow of moved value: `points`", r"--> src/vec2.rs:\d+:\d+"),
    ),
    Pair(
        "cargo-unwrap",
        "cargo",
        "geom",
        ("cargo", "test"),
        ("tests/integration.rs", 'parse_shape("poly 0 0 4 0 4 4 0 4")', 'parse_shape("poly 0 0 4 0 4 4 0")'),
        (
            r"called `Result::unwrap\(\)` on an `Err` value: BadNumber|on an `Err` value",
            r"^test polygon_from_text \.\.\. FAILED",
        ),
    ),
    # npm test
    Pair(
        "npm-assert",
        "npm",
        "units",
        ("npm", "test"),
        ("src/convert.js", "km: 1000,", "km: 100,"),
        (r"not ok \d+ - km to m", r"Expected values to be strictly equal|200 !== 2000"),
    ),
    Pair(
        "npm-type-error",
        "npm",
        "units",
        ("npm", "test"),
        ("src/format.js", "${formatQuantity(r.quantity)}", "${formatQuantity(r.amount)}"),
        (r"not ok \d+ - aligns labels", r"Cannot read properties of undefined"),
    ),
    Pair(
        "npm-syntax",
        "npm",
        "units",
        ("npm", "test"),
        (
            "src/parse.js",
            "  return { value: Number(match[1]), unit: match[2].toLowerCase() };",
            "  return { value: Number(match[1]), unit: match[2].toLowerCase() ;",
        ),
        (r"SyntaxError: Unexpected token", r"src/parse.js:\d+"),
    ),
    # shell script
    Pair(
        "shell-missing-file",
        "shell",
        "release",
        ("bash", "scripts/ci.sh"),
        ("config/app.conf", "", None),
        (r"cp: cannot stat 'config/app.conf'",),
    ),
    Pair(
        "shell-debug-left",
        "shell",
        "release",
        ("bash", "scripts/ci.sh"),
        ("src/03-config.txt", "config line 1:", "DEBUG_ONLY config line 1:"),
        (r"^src/03-config.txt:\d+:DEBUG_ONLY", r"error: debug statements left in src/"),
    ),
    Pair(
        "shell-checksum",
        "shell",
        "release",
        ("bash", "scripts/ci.sh"),
        ("config/app.conf", "port = 8080", "port = 8081"),
        (r"app.conf: FAILED", r"WARNING: 1 computed checksum did NOT match"),
    ),
    # -- beyond the 22 pairs of issue 32 (EXTRA): lint and type checks, a JVM build --------------------
    # mypy
    Pair(
        "mypy-arg-type",
        "mypy",
        "stock",
        _MYPY,
        ("stock/report.py", "money(shelf.value_cents())", "money(str(shelf.value_cents()))"),
        (r'report.py:\d+: error: Argument 1 to "money" has incompatible type "str"',),
    ),
    Pair(
        "mypy-return",
        "mypy",
        "stock",
        _MYPY,
        ("stock/load.py", '    return int(whole) * 100 + int((frac + "00")[:2])', "    return whole"),
        (r"load.py:\d+: error: Incompatible return value type",),
    ),
    # ruff
    Pair(
        "ruff-unused-import",
        "ruff",
        "stock",
        _RUFF,
        ("stock/items.py", "from dataclasses import", "import os\nfrom dataclasses import"),
        (r"F401.*`os` imported but unused", r"stock/items.py:\d+:\d+"),
    ),
    Pair(
        "ruff-none-compare",
        "ruff",
        "stock",
        _RUFF,
        ("stock/report.py", "if best is None or", "if best == None or"),
        (r"E711", r"stock/report.py:\d+:\d+"),
    ),
    # java (javac, a test runner of its own)
    Pair(
        "java-assert",
        "java",
        "calc",
        ("sh", "build.sh"),
        ("src/Stats.java", "sorted[(sorted.length - 1) / 2]", "sorted[sorted.length / 2]"),
        (r"^test medianEven\s+FAILED", r"AssertionError: expected <2> but was <3>"),
    ),
    Pair(
        "java-exception",
        "java",
        "calc",
        ("sh", "build.sh"),
        ("src/Text.java", "        if (s.isEmpty()) return s;\n", ""),
        (
            r"^test capitalizedEmpty\s+FAILED",
            r"StringIndexOutOfBoundsException",
            r"at Text.capitalize\(Text.java:\d+\)",
        ),
    ),
    Pair(
        "java-compile",
        "java",
        "calc",
        ("sh", "build.sh"),
        ("src/Calc.java", "return Integer.parseInt(text.trim());", "return text.trim();"),
        (r"src/Calc.java:\d+: error: incompatible types: String cannot be converted to int",),
    ),
    # -- issue 39: a line that changed only in its numbers, a lone novel line, a green run's counts ----------
    Pair(
        "cargo-zero-tests",
        "cargo",
        "geom",
        ("cargo", "test", "shapes::tests"),
        ("src/shapes.rs", "mod tests {", "mod checks {"),  # the filter now matches no test of the library
        (r"test result: ok\. 0 passed; .* 32 filtered out",),  # the library's line (its 32 tests)
        passes=True,
    ),
    Pair(
        "cargo-green-targets",
        "cargo",
        "geom",
        ("cargo", "test"),
        (
            "src/shapes.rs",
            "    #[test]\n    fn circle_area() {",
            "    #[test]\n    fn unit_square_area() {\n"
            "        let r = Shape::Rect { min: Vec2::new(0.0, 0.0), max: Vec2::new(1.0, 1.0) };\n"
            "        assert_eq!(r.area(), 1.0);\n    }\n    #[test]\n    fn circle_area() {",
        ),
        (r"test result: ok\. 33 passed", r"test result: ok\. 4 passed"),
        passes=True,
    ),
    Pair(
        "npm-green-counts",
        "npm",
        "units",
        ("npm", "test"),
        (
            "test/convert.test.js",
            "test('minus forty'",
            "test('absolute zero', () => assert.ok(Math.abs(celsiusToFahrenheit(-273.15) + 459.67) < 1e-9));\n"
            "test('minus forty'",
        ),
        (r"^# tests 33", r"^# pass 33"),
        passes=True,
    ),
    Pair(
        "npm-lone-line",
        "npm",
        "units",
        ("npm", "test"),
        (
            "src/convert.js",
            "  return (value * LENGTH[from]) / LENGTH[to];\n}\n\nfunction celsiusToFahrenheit(c) {\n"
            "  return (c * 9) / 5 + 32;\n}\n\nfunction fahrenheitToCelsius(f) {\n  return ((f - 32) * 5) / 9;",
            "  if (from === 'km') console.log('unit table: km read from the legacy table, its factor unchecked');\n"
            "  return (value * LENGTH[from]) / LENGTH[to];\n}\n\nfunction celsiusToFahrenheit(c) {\n"
            "  return (c * 9) / 5 + 32;\n}\n\nfunction fahrenheitToCelsius(f) {\n"
            "  return Math.round(((f - 32) * 5) / 9) + 1;",
        ),
        (r"unit table: km read from the legacy table", r"not ok \d+ - minus forty"),
    ),
)
ISSUE_PAIRS = 22  # the first pairs, those issue 32 asked for; the rest are EXTRA
EXTRA_PAIRS = 29  # then issue 32's extra pairs; the rest are issue 39's


ENV = {"CARGO_NET_OFFLINE": "true", "NO_COLOR": "1", "LC_ALL": "C.UTF-8"}


def write_project(folder: Path, project: str) -> None:
    """Copy the project's files (``PROJECTS_DIR / project``) to ``folder``."""
    shutil.copytree(PROJECTS_DIR / project, folder)


def change(folder: Path, pair: Pair) -> None:
    """Make the pair's one change in ``folder``."""
    path, old, new = pair.change
    target = folder / path
    if new is None:
        target.unlink()
        return
    text = target.read_text()
    if old not in text:
        raise SystemExit(f"{pair.name}: {old!r} is not in {path}")
    target.write_text(text.replace(old, new, 1))


# the commands each kind of pair runs, besides python
NEEDS = {
    "make": ("make", "gcc"),
    "cargo": ("cargo",),
    "npm": ("npm", "node"),
    "shell": ("bash",),
    "java": ("javac", "java"),
}


def missing(pair: Pair) -> str | None:
    """The command or Python module ``pair`` needs that is not installed, or None."""
    if pair.command[:2] == ("{python}", "-m"):
        return None if importlib.util.find_spec(pair.command[2]) else f"python -m {pair.command[2]}"
    return next((tool for tool in NEEDS.get(pair.kind, ()) if shutil.which(tool) is None), None)


def command(pair: Pair) -> list[str]:
    return [sys.executable if arg == "{python}" else arg for arg in pair.command]


def run(argv: list[str], folder: Path, env: dict[str, str] | None = None) -> tuple[int, bytes]:
    done = subprocess.run(
        argv, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **ENV, **(env or {})}
    )
    return done.returncode, done.stdout


def make_pair(pair: Pair, work: Path) -> tuple[bytes, bytes]:
    """The passing and the failing run's output of ``pair``, made in a folder under ``work``."""
    folder = work / pair.name
    write_project(folder, pair.project)
    status, passed = run(command(pair), folder)
    if status != 0:
        raise SystemExit(f"{pair.name}: the passing run exited {status}:\n{passed.decode(errors='replace')}")
    change(folder, pair)
    status, failed = run(command(pair), folder)
    if (status == 0) != pair.passes:
        raise SystemExit(f"{pair.name}: the change made the run exit {status}")
    return passed, failed


def filtered(data: bytes, baseline: Baseline | None, passes: bool = False) -> tuple[bytes, set[int]]:
    """The text output of ``data`` as ``streamfilter filter`` writes it for a file named ``fail.log``
    (refs shortened after the first, which says how to use one), and the numbers of the lines kept.
    ``passes``: the run exited 0, and is read as ``run`` reads a green run."""
    config = FilterConfig(tail_lines=SUCCESS_TAIL_LINES, results=True) if passes else FilterConfig()
    sf = StreamFilter(config, baseline=baseline)
    runs = sf.feed(data) + sf.flush()
    refs = TextRefs()
    out = bytearray()
    for r in runs:
        ref = refs(ref_of("fail.log", r))
        out += render(r, "text", "fail.log", ref, None, refs.note(ref))
    kept = {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    return bytes(out), kept


def recall(pair: Pair, data: bytes, kept: set[int]) -> int:
    """How many of the pair's labels have a line kept."""
    lines = data.decode("utf-8", "replace").split("\n")
    found = 0
    for label in pair.labels:
        hits = {i + 1 for i, line in enumerate(lines) if re.search(label, line)}
        if not hits:
            raise SystemExit(f"{pair.name}: label {label!r} matches no line of the failing run")
        found += bool(hits & kept)
    return found


def live_bytes(pair: Pair, work: Path) -> tuple[int, int]:
    """Output bytes of the failing run through ``streamfilter run``, weighed with the baseline the
    passing run stored, and with ``--no-baseline``."""
    folder = work / f"{pair.name}-live"
    write_project(folder, pair.project)
    state = {"XDG_STATE_HOME": str(work / f"{pair.name}-state")}
    sf = [sys.executable, "-m", "streamfilter", "run", "--tee", "fail.log", "--"]
    status, _ = run(sf + command(pair), folder, state)
    assert status == 0, pair.name
    change(folder, pair)
    _, weighed = run(sf + command(pair), folder, state)
    _, plain = run([*sf[:4], "--no-baseline", *sf[4:], *command(pair)], folder, state)
    return len(plain), len(weighed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the pairs' logs in this folder")
    parser.add_argument("--only", nargs="+", help="these pairs only")
    parser.add_argument("--live", action="store_true", help="also through streamfilter run")
    args = parser.parse_args()
    pairs = [p for p in PAIRS if not args.only or p.name in args.only]
    header = "| pair | kind | input B | recall without | recall with | bytes without | bytes with | saved |"
    if args.live:
        header += " run without | run with |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    totals = [0, 0, 0, 0, 0, 0, 0]
    # the totals of issue 32's 22 pairs, of its 29 (with the extra ones), and of issue 39's
    groups: dict[str, list[int]] = {}
    skipped: list[tuple[Pair, str]] = []
    by_kind: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="sf-novelty-") as tmp:
        work = Path(tmp)
        for pair in pairs:
            tool = missing(pair)
            if tool is not None:
                skipped.append((pair, tool))
                continue
            passed, failed = make_pair(pair, work)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"{pair.name}.pass.log").write_bytes(passed)
                (args.keep / f"{pair.name}.fail.log").write_bytes(failed)
            good = work / f"{pair.name}.pass.log"
            good.write_bytes(passed)
            baseline = baseline_of_files([str(good)], StreamFilter().config.max_line_bytes)
            plain, plain_kept = filtered(failed, None, pair.passes)
            weighed, weighed_kept = filtered(failed, baseline, pair.passes)
            n = len(pair.labels)
            r0, r1 = recall(pair, failed, plain_kept), recall(pair, failed, weighed_kept)
            saved = 1 - len(weighed) / len(plain)
            row = f"| {pair.name} | {pair.kind} | {len(failed)} | {r0}/{n} | {r1}/{n} | {len(plain)} | {len(weighed)} |"
            row += f" {saved:.0%} |"
            if args.live:
                a, b = live_bytes(pair, work)
                row += f" {a} | {b} |"
                totals[5] += a
                totals[6] += b
            print(row, flush=True)
            for i, v in enumerate((n, r0, r1, len(plain), len(weighed))):
                totals[i] += v
            index = PAIRS.index(pair)
            sums = [by_kind.setdefault(pair.kind, [0, 0, 0, 0, 0])]
            if index < EXTRA_PAIRS:
                sums.append(groups.setdefault(f"issue 32's {EXTRA_PAIRS} pairs", [0, 0, 0, 0, 0]))
            if index < ISSUE_PAIRS:
                sums.append(groups.setdefault(f"issue 32's first {ISSUE_PAIRS} pairs", [0, 0, 0, 0, 0]))
            if index >= EXTRA_PAIRS:
                sums.append(groups.setdefault(f"issue 39's {len(PAIRS) - EXTRA_PAIRS} pairs", [0, 0, 0, 0, 0]))
            for i, v in enumerate((n, r0, r1, len(plain), len(weighed))):
                for sum_ in sums:
                    sum_[i] += v
    n, r0, r1, b0, b1 = totals[:5]
    print()
    print("| kind | labels | recall without | recall with | bytes without | bytes with | saved |")
    print("|---|---|---|---|---|---|---|")
    for kind, (kn, k0, k1, kb0, kb1) in [*by_kind.items(), *groups.items()]:
        print(f"| {kind} | {kn} | {k0 / kn:.1%} | {k1 / kn:.1%} | {kb0} | {kb1} | {1 - kb1 / kb0:.1%} |")
    print(f"| all {len(pairs)} pairs | {n} | {r0 / n:.1%} | {r1 / n:.1%} | {b0} | {b1} | {1 - b1 / b0:.1%} |")
    for pair, tool in skipped:
        print(f"\n{pair.name}: skipped, {tool} is not installed")
    if args.live:
        print(
            f"\nthrough streamfilter run: {totals[5]} bytes without the baseline, {totals[6]} with "
            f"({1 - totals[6] / totals[5]:.1%} fewer)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
