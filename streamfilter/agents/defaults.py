"""Defaults shared by the agent adapters (hooks and the MCP server)."""

from __future__ import annotations

__all__ = ("DEFAULT_BUDGET_TOKENS", "MAX_BUDGET_TOKENS")

# A wrapped command's output, in estimated tokens (o200k, ``core.budget.estimate_tokens``): an
# agent reads all of it. Chosen by measurement (docs/performance.md, "Agents"; default query,
# benchmarks/budget.py): mean recall 0.693 / 0.801 / 0.865 at 1000 / 2000 / 4000 tokens, against
# the tail's 0.391 / 0.485 / 0.547 at the same bytes: the step to 4000 still pays (+0.10 full
# recall), and about 14,000 characters of log text stay well under Claude Code's 30,000 cut.
DEFAULT_BUDGET_TOKENS = 4000
# the largest budget ``run --budget-tokens`` takes (``core.settings.MAX_COUNT``, not imported: the
# hooks answer an agent before each command and load nothing of the filter)
MAX_BUDGET_TOKENS = 1 << 40
