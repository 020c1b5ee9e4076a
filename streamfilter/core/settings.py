"""The filter's settings: ``FilterConfig``, its limits and default query, and the check of a
user's ``--protect`` regex.

Apart from the filter's stages (no numpy): a command line parses them, and a ``run`` whose
output is short never builds a filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UsageError

__all__ = ("DEFAULT_QUERY", "MAX_COUNT", "MIN_LINE_BYTES", "FilterConfig", "check_pattern")

# the largest count (lines, bytes, tokens, windows) a setting may hold: the stages add counts in
# int64 arrays (a line index plus a reach, say), which a count near 2**63 would overflow
MAX_COUNT = 1 << 40
MIN_LINE_BYTES = 64  # the smallest max_line_bytes: a shorter cap would score next to nothing of a line
# the words of a failure a user means by default; the learned prior (``prior``) keeps the lines of
# failures that say it otherwise ("exception", "panic", an assertion's expected/actual). "fatal" and
# "assert" (git's "fatal:", "Fatal Python error", AssertionError, "assertion failed") pay on the
# figure that predicts unseen logs (generalize.py, signatures off, out of fold, the same fold models:
# full / mean recall / median out_ratio 0.909 / 0.946 / 0.0820 -> 0.916 / 0.956 / 0.0820; chosen on
# four folds and scored on the fifth, 0.914 / 0.956); "exception", "traceback" or "panic" add
# nothing or only bytes there
DEFAULT_QUERY = "error failed fatal assert"


@dataclass(frozen=True, slots=True)
class FilterConfig:
    """Settings of one filter (units in the names; all counts are lines unless said).

    Attributes:
        query: the query text; split into terms by ``Query.parse``. A word with no
            letter or digit (``[-]``, ``=====``) is matched literally and keeps its lines;
            so is a word of letters and digits (an error code, ``F401``), as a whole word
            in any case, and its lines are never repeat-capped, as ``protect``'s.
        window_lines: N, most lines packed into a window.
        window_chars: M, most characters packed into a window.
        max_line_bytes: scoring cap per line in bytes (the line is still emitted whole).
        head_lines: H, first lines of the stream always kept.
        tail_lines: T, last lines of the stream always kept; when one of them reports a
            command's non-zero exit (``BlockFacts.verdicts``), the T lines up to the first such
            line instead: what a CI runner prints after it is its cleanup.
        found_tail_lines: the tail's T (at most ``tail_lines``) once a built-in failure signature
            that shows what failed (``Signature.found``) has protected a line of the stream, or the
            prior has rated one at ``hits.PRIOR_SURE``: the tail is the safety net for failures
            neither knows, and after a known one it need only show how the run ended.
        context_lines: C, lines kept before each protected hit (within its record).
        extend_lines: most lines a protected hit keeps after it, through its continuation lines.
        section_lines: lines kept after a signature that heads a section of failure
            reports (pytest's ``=== FAILURES ===``), whatever their indentation.
        min_score: floor of the BM25 cut.
        protect: extra signature regexes (Python syntax, matched anywhere in a line).
        k1, b, delta: BM25+ parameters (rank-bm25 defaults).
        group_windows: windows per cut group (decision look-ahead, in windows).
        top_shapes: K, shapes named in a DROP summary.
        summary_chars: longest DROP summary, in characters.
        max_keep_event_bytes: a KEEP run longer than this is emitted in pieces.
        min_drop_lines: a DROP run between two KEEP runs with fewer lines than this,
            and no more bytes than ``summary_chars``, is kept instead (its summary
            would cost as much as its lines).
        max_repeats: a failure signature protects the first this many lines of each
            line shape (numbers, paths masked); later repeats are left to BM25.
        explain: attach a ``WindowTrace`` per window to each run (at most
            ``MAX_TRACES`` per run; the rest are counted in ``Run.traces_omitted``).
        prior: the learned line prior (``streamfilter.core.prior``) keeps the lines it rates at or above
            its cut, as a failure signature keeps its hits (under the name ``prior``).
        results: keep every test target's result line (``results.RESULT_LINE``: cargo's ``test
            result:``, go's ``ok PKG``, node's ``# pass N``, ...): for a run known to have passed,
            whose terse tail shows only the last target's.
        signatures: the built-in failure signatures (``signature_table``) keep their hits; off, only
            the query, the prior, ``protect`` and the tail keep lines (exit verdicts are still found):
            how the filter does on a tool the table does not know (``benchmarks/generalize.py``).
    """

    query: str = DEFAULT_QUERY
    window_lines: int = 8
    window_chars: int = 1200
    max_line_bytes: int = 1 << 20
    head_lines: int = 0
    tail_lines: int = 25
    found_tail_lines: int = 3
    context_lines: int = 1
    extend_lines: int = 150
    section_lines: int = 150
    min_score: float = 0.0
    protect: tuple[str, ...] = ()
    k1: float = 1.5
    b: float = 0.75
    delta: float = 1.0
    group_windows: int = 32
    top_shapes: int = 3
    summary_chars: int = 140
    max_keep_event_bytes: int = 1 << 20
    min_drop_lines: int = 2
    explain: bool = False
    max_repeats: int = 50
    prior: bool = True
    results: bool = False
    signatures: bool = True

    @property
    def lookahead_lines(self) -> int:
        """Lines that must follow a line before it is decided."""
        return max(self.tail_lines, self.context_lines + max(self.extend_lines, self.section_lines))


def check_pattern(pattern: str) -> None:
    """Check a user's ``--protect`` regex (Python syntax) before anything is read.

    Raises:
        UsageError: it is not a valid regular expression (the message names it and why).
    """
    try:
        re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"--protect {pattern!r}: not a valid regular expression: {exc}") from None
