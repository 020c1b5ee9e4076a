"""The signature table's examples: each is a hit of its own signature and of no other family's."""

from __future__ import annotations

import pytest

from streamfilter.core.filter import FilterConfig
from streamfilter.core.normalize import normalize_block
from streamfilter.core.segment import line_layout
from streamfilter.core.signature_table import TABLE, Entry
from streamfilter.core.signatures import DEFAULT_SIGNATURES, SignatureSet
from streamfilter.core.tokens import token_table

# (signature, another family's signature): every real line of the first matches the second too
EXCEPTIONS = {
    ("unittest-report", "generic-error"): "unittest's lines start with the catch-all's FAIL: or ERROR:",
    ("pytest-failed", "generic-error"): "pytest's lines start with the catch-all's FAILED or ERROR",
    ("maven-error", "bracketed-failure"): "Maven's [ERROR] is a bracketed level",
    ("gradle-task-failed", "test-failed"): "Gradle's FAILED ends the task's line",
    ("vitest-fail", "go-fail"): "vitest's lines start with go test's FAIL",
    ("vitest-fail", "generic-error"): "vitest's lines start with the catch-all's FAIL",
    ("ninja-failed", "generic-error"): "ninja's lines start with the catch-all's FAILED:",
    ("compiler-error", "tool-error"): "a compiler's FILE:LINE:COL: error: is also a tool's NAME: error:",
}

FAMILY = {e.name: e.family for e in TABLE}
# each signature alone, to tell every signature a line matches (a set names only the first)
ALONE = {s.name: SignatureSet([s]) for s in DEFAULT_SIGNATURES}
FULL = SignatureSet()
AT = 40  # the example's line (0-based), after as many lines of noise
NOISE = b"INFO starting\n" * AT


class _Block:
    """``line`` in the middle of a block of other lines, as the filter sees it (``Preparer``): its
    scoring text, token table and layout, for the trigger prefilter."""

    def __init__(self, line: str) -> None:
        data = NOISE + line.encode() + b"\n" + NOISE
        norm = normalize_block(data, data.count(b"\n"), FilterConfig().max_line_bytes)
        self.text, self.ends = norm.text, norm.ends
        self.table = token_table(self.text, self.ends)
        self.first = line_layout(self.text, self.ends, self.table).first

    def names(self, sigs: SignatureSet) -> list[str]:
        """The signatures of ``sigs`` the line is a hit of (with ``find_all``, as ``Preparer`` finds them)."""
        lines, ids = sigs.find_all(self.text, self.ends, self.table, self.first)
        return [sigs.names[i] for line, i in zip(lines.tolist(), ids.tolist(), strict=True) if line == AT]


def test_the_table_is_the_default_signatures_in_order_with_unique_names() -> None:
    assert [e.name for e in TABLE] == [s.name for s in DEFAULT_SIGNATURES]
    assert len(FAMILY) == len(TABLE)


@pytest.mark.parametrize("entry", TABLE, ids=[e.name for e in TABLE])
def test_an_example_is_a_hit_of_its_signature_and_of_no_other_familys(entry: Entry) -> None:
    block = _Block(entry.example)
    assert block.names(ALONE[entry.name]) == [entry.name]
    others = {name for name, sigs in ALONE.items() if FAMILY[name] != entry.family and block.names(sigs)}
    assert others == {other for name, other in EXCEPTIONS if name == entry.name}
    # and the filter's set names a signature of its family (the first of its hits in table order)
    assert [FAMILY[name] for name in block.names(FULL)] == [entry.family]
