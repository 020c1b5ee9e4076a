"""The filter's stateless stages, on one block: ``LineBlock -> BlockFacts``.

Everything the filter learns of a block from its bytes alone: the scoring text,
tokens and query-term counts per line, the layout for segmentation, and the lines
that carry a failure signature (with their shapes, for the repeat gate). What
depends on the stream so far (windows, BM25 statistics, cuts, signature limits,
repeats) is left to ``StreamFilter``. Being a pure function of the block, it can
run ahead of the filter in another process (``streamfilter.core.worker``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .normalize import NormalizedBlock, normalize_block
from .prior import PriorModel, content_features
from .records import LineBlock
from .segment import LineLayout, line_layout
from .signatures import EXIT_VERDICTS, SignatureSet
from .summarize import event_text, mask_shapes, shape_text, warn_counts
from .tokens import KeySet, Query, TokenTable, count_terms, token_key, token_table

__all__ = ("BlockFacts", "Preparer")

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BlockFacts:
    """What the stateless stages found in one block (per-line arrays have shape ``(n_lines,)``).

    Attributes:
        first_line: 1-based number of the block's first line (``LineBlock.first_line``).
        n_bytes: length of the block's raw bytes.
        norm: the scoring text.
        tokens: int64, tokens per line.
        tf: shape ``(n_lines, n_terms)`` int64: occurrences of each query term per line; none on
            a line that reports a passing check (its query words are in the check's name).
        layout: what segmentation needs.
        hits: int64, 0-based lines that carry a signature (sorted), before any
            signature's ``max_hits`` limit.
        hit_ids: int64, the first signature each of ``hits`` matched.
        hit_shapes: the masked shape of each of ``hits`` (``summarize.mask_shapes``).
        above_shapes: for each of ``hits`` whose signature tells repeats apart by the line above
            (``Signature.shape_above``), that line's ``summarize.shape_text`` with its line end;
            ``b""`` for the others and for a hit on the block's first line (``last_shape`` of the
            block before).
        last_shape: ``summarize.shape_text`` of the block's last line, with its line end if it has one.
        shapes: ``summarize.event_text`` of the scoring text (for DROP summaries).
        shape_ends: int64, end offset of each line in ``shapes``.
        warnings: int64, ``summarize.warn_counts`` per line.
        section_stops: int64, 0-based lines that end a failure section before them: those
            whose first non-blank bytes are ``===`` (pytest's banners), ``⎯`` (vitest's rules) or ``test result: ``
            (cargo's verdict after its failures list), ``Finished in `` at column 0 (RSpec's
            and minitest's, after their failures), rules of 20 or more ``-``
            (unittest's, between one report and the next), and pre-commit's line for
            each hook (``mypy.....Passed``).
        verdicts: int64, 0-based lines among ``hits`` that report a command's non-zero
            exit (``exit code 1``, ``exited with 2``, ``returned non-zero exit status``).
        prior_logits: shape ``(n_lines, 3)`` float64: the prior's word logits of each line
            (``PriorModel.line_logits``); ``(0, 3)`` without a prior.
        prior_static: shape ``(n_lines, 4)`` int64: the prior's static line features
            (``LineFeatures.static``); ``(0, 4)`` without a prior.
        shape_hashes: int64, ``prior.shape_hashes`` of each line (``LineFeatures.shapes``); shape
            ``(0,)`` without a prior.
    """

    first_line: int
    n_bytes: int
    norm: NormalizedBlock
    tokens: Int64Array
    tf: Int64Array
    layout: LineLayout
    hits: Int64Array
    hit_ids: Int64Array
    hit_shapes: tuple[bytes, ...]
    above_shapes: tuple[bytes, ...]
    last_shape: bytes
    shapes: bytes
    shape_ends: Int64Array
    warnings: Int64Array
    section_stops: Int64Array
    verdicts: Int64Array
    prior_logits: npt.NDArray[np.float64]
    prior_static: Int64Array
    shape_hashes: Int64Array

    def matches(self, block: LineBlock) -> bool:
        """Whether these are the facts of ``block`` (same first line, line count and length)."""
        return (
            self.first_line == block.first_line
            and self.n_bytes == len(block.data)
            and int(self.tokens.shape[0]) == block.n_lines
        )


class Preparer:
    """``Preparer(query, signatures, max_line_bytes, prior)(block) -> BlockFacts``; holds no stream state.

    Args:
        query: the parsed query.
        signatures: the compiled signatures (only ``SignatureSet.find_all`` is used,
            which keeps no state).
        max_line_bytes: scoring cap per line, in bytes.
        prior: the line prior's weights, or None for none.
    """

    def __init__(
        self, query: Query, signatures: SignatureSet, max_line_bytes: int, prior: PriorModel | None = None
    ) -> None:
        self.query = query
        self.signatures = signatures
        self.max_line_bytes = max_line_bytes
        self.prior = prior

    def __call__(self, block: LineBlock) -> BlockFacts:
        """The facts of ``block``."""
        norm = normalize_block(block.data, block.n_lines, self.max_line_bytes, block.ends)
        table = token_table(norm.text, norm.ends)
        starts = np.zeros(block.n_lines, dtype=np.int64)
        starts[1:] = norm.ends[:-1]
        tokens, tf = count_terms(norm.text, norm.ends, self.query, table)
        _uncount_passes(norm.text, starts, norm.ends, tf)
        layout = line_layout(norm.text, norm.ends, table)
        hits, ids = self.signatures.find_all(norm.text, norm.ends, table, layout.first)
        shapes: tuple[bytes, ...] = ()
        above: tuple[bytes, ...] = ()
        verdicts = np.zeros(0, dtype=np.int64)
        if not self.signatures.builtin:  # no table finds the exit verdicts: look for them alone
            verdicts = _verdict_lines(norm.text, starts, norm.ends)
        if hits.shape[0]:
            spans = zip(starts[hits].tolist(), norm.ends[hits].tolist(), strict=True)
            texts = [norm.text[a:b].rstrip(b"\n") for a, b in spans]
            shapes = tuple(mask_shapes(b"\n".join(texts) + b"\n").split(b"\n")[: hits.shape[0]])  # line by line
            exits = [i for i, line in enumerate(texts) if _EXIT_VERDICT.search(line) and not _PASS_LINE.search(line)]
            verdicts = hits[np.asarray(exits, dtype=np.int64)].astype(np.int64)
            above = _above_shapes(norm.text, starts, norm.ends, hits[self.signatures.shape_above[ids]], hits)
        last = norm.text[int(starts[-1]) :] if block.n_lines else b""
        masked = event_text(norm.text)
        shape_ends = np.flatnonzero(np.frombuffer(masked, dtype=np.uint8) == 0x0A) + 1
        if shape_ends.shape[0] < block.n_lines:  # the last line has no line end
            shape_ends = np.append(shape_ends, len(masked))
        logits, hashes = np.zeros((0, 3), dtype=np.float64), np.zeros(0, dtype=np.int64)
        static = np.zeros((0, 4), dtype=np.int64)
        if self.prior is not None:
            features = content_features(norm.text, norm.ends, table, layout)
            logits = self.prior.line_logits(features, block.n_lines)
            hashes = features.shapes
            static = features.static
        return BlockFacts(
            block.first_line,
            len(block.data),
            norm,
            tokens,
            tf,
            layout,
            hits,
            ids,
            shapes,
            above,
            shape_text(last),
            masked,
            shape_ends.astype(np.int64),
            warn_counts(norm.text, norm.ends),
            _section_stops(norm.text, norm.ends, layout, table),
            verdicts,
            logits,
            static,
            hashes,
        )


def _above_shapes(
    text: bytes, starts: Int64Array, ends: Int64Array, told: Int64Array, hits: Int64Array
) -> tuple[bytes, ...]:
    """For each of ``hits``: ``summarize.shape_text`` of the line above it, with its line end, if
    it is in ``told`` (and not the block's first line); else ``b""``."""
    told = told[told > 0]
    if not told.shape[0]:
        return (b"",) * int(hits.shape[0])
    spans = zip(starts[told - 1].tolist(), ends[told - 1].tolist(), strict=True)
    masked = shape_text(b"".join(text[a:b] for a, b in spans))  # (line by line: each ends in "\n")
    lines = [line + b"\n" for line in masked.split(b"\n")[: told.shape[0]]]
    found: dict[int, bytes] = dict(zip(told.tolist(), lines, strict=True))
    return tuple(found.get(i, b"") for i in hits.tolist())


# a command's non-zero exit (the exit-status signature's forms but Travis's "failed. Retrying")
_EXIT_VERDICT = re.compile("|".join(EXIT_VERDICTS).encode())
# a check that passed (or was skipped), its verdict at the line's start or end (TAP's "ok 3", mocha's "✓", pytest -v's
# "PASSED [ 10%]", Gradle's "SKIPPED", unittest's and cargo's "... ok", tasty's "OK (0.04s)", gtest's "[       OK ]"):
# the query words on it are in the check's name ("testThatErrorIsThrown"), and so is an exit verdict
# ("cli returns exit code 2 ... ok")
_PASS_LINE = re.compile(
    "^[ \t]*(?:✓|✔|√|ok [0-9]|PASS\\b|--- PASS:|\\[ +(?:OK|PASSED) +\\])"
    "|(?:\\bok|\\bOK|\\bPASSED|\\bpassed|\\bSKIPPED|\\bskipped|✓|✔)"
    "(?:[ \t]+(?:\\(\\d[^)\n]*\\)|\\[ *\\d+%\\]))?[ \t\r]*$".encode(),
    re.M,
)


def _verdict_lines(text: bytes, starts: Int64Array, ends: Int64Array) -> Int64Array:
    """Shape ``(v,)``, sorted: the lines of ``text`` (lines from ``starts`` to ``ends``) that report a
    command's non-zero exit (``_EXIT_VERDICT``) and no passing check, as the exit-status signature's
    hits give them when the signature table is on."""
    found = np.unique(np.searchsorted(ends, [m.start() for m in _EXIT_VERDICT.finditer(text)], side="right"))
    lines = [i for i in found.tolist() if not _PASS_LINE.search(text, int(starts[i]), int(ends[i]))]
    return np.asarray(lines, dtype=np.int64)


def _uncount_passes(text: bytes, starts: Int64Array, ends: Int64Array, tf: Int64Array) -> None:
    """Zero, in place, the term counts ``tf`` (shape ``(n_lines, n_terms)``) of the lines of ``text``
    (from ``starts`` to ``ends``) that report a passing check (``_PASS_LINE``): neither their
    window's BM25 score nor its having a query term counts them."""
    for i in np.flatnonzero(tf.any(axis=1)).tolist():
        if _PASS_LINE.search(text, int(starts[i]), int(ends[i])):
            tf[i] = 0


_VERDICT_LINE = re.compile(rb"\n[ \t]*test result: ")  # cargo's, after its failures list
_FINISHED_LINE = re.compile(rb"\nFinished in \d")  # RSpec's and minitest's, after their failures
_SUBTEST_LINE = re.compile(rb"\n# Subtest: ")  # node --test's next top-level test or suite, after a failed one
# CTest's next test started or done, after a failed one's output (``--output-on-failure``)
_CTEST_LINE = re.compile(rb"\n[ \t]*(?:Start +\d+: |\d+/\d+ Test +#\d+: )")
_NINJA_LINE = re.compile(rb"\n[ \t]*\[\d+/\d+\] ")  # ninja's next step, after a failed one's output
_RULE = re.compile(rb"-{20,}[ \t\r]*")  # unittest's, after each report
# pre-commit's line for each hook: "ruff.....Passed", "check json....(no files to check)Skipped",
# looked for only in lines whose last token is its status
_HOOK_LINE = re.compile(rb"\S[^\n]*\.\.\.\.(?:\([^\n)]*\))?(?:Passed|Failed|Skipped)[ \t\r]*$", re.MULTILINE)
_HOOK_STATUS = KeySet.of(token_key(w) for w in (b"passed", b"failed", b"skipped"))


def _section_stops(text: bytes, ends: Int64Array, layout: LineLayout, table: TokenTable) -> Int64Array:
    """Lines whose first non-blank bytes are ``===``, vitest's ``⎯`` or cargo's ``test result: ``,
    RSpec's ``Finished in 4.2 seconds``, node's ``# Subtest: `` at column 0 (its next test or suite),
    CTest's ``Start 9:`` and ``8/40 Test  #8:``, ninja's ``[7/506] `` in a block with its
    ``FAILED: ``, rules of ``-``, and pre-commit's hook lines."""
    arr = np.frombuffer(text, dtype=np.uint8)
    n = arr.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = layout.first
    head = np.minimum(first, n - 1)
    lines = np.flatnonzero(
        ~layout.blank & (first + 2 < n) & ((arr[head] == 0x3D) | (arr[head] == 0x2D) | (arr[head] == 0xE2))
    )
    at = first[lines]
    three = (arr[at + 1] == arr[at]) & (arr[at + 2] == arr[at])
    # and "⎯" (U+23AF, E2 8E AF): vitest's rules, between one failure report and the next
    vitest = (arr[at] == 0xE2) & (arr[at + 1] == 0x8E) & (arr[at + 2] == 0xAF)
    equals = (three & (arr[at] == 0x3D)) | vitest
    # a line that starts with three dashes is a rule when dashes fill it (few lines are looked at)
    dashes = three & (arr[at] == 0x2D)
    spans = zip(lines[dashes].tolist(), at[dashes].tolist(), ends[lines[dashes]].tolist(), strict=True)
    rules = [line for line, a, e in spans if _RULE.fullmatch(text, a, e - (text[e - 1 : e] == b"\n"))]
    stops = np.union1d(lines[equals], np.asarray(rules, dtype=np.int64))
    for literal, regex in (
        (b"test result: ", _VERDICT_LINE),
        (b"Finished in ", _FINISHED_LINE),
        (b"# Subtest: ", _SUBTEST_LINE),
        (b" Test ", _CTEST_LINE),
        (b"FAILED: ", _NINJA_LINE),
    ):
        if literal in text:
            # the "\n" before each such line is at the line's offset in text
            found = [m.start() for m in regex.finditer(b"\n" + text)]
            stops = np.union1d(stops, np.searchsorted(ends, np.asarray(found, dtype=np.int64), side="right"))
    status, _ = table.find(_HOOK_STATUS)
    if status.shape[0]:
        last = np.cumsum(table.per_line) - 1  # each line's last token (of a line with tokens)
        lines = table.line_of(status)
        lines = lines[last[lines] == status]
        begins = np.where(lines > 0, ends[np.maximum(lines - 1, 0)], 0)
        spans = zip(lines.tolist(), begins.tolist(), ends[lines].tolist(), strict=True)
        hooks = [line for line, a, e in spans if _HOOK_LINE.match(text, a, e)]
        stops = np.union1d(stops, np.asarray(hooks, dtype=np.int64))
    result: Int64Array = stops.astype(np.int64)
    return result
