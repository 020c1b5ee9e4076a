"""Defaults shared by the agent adapters (hooks and the MCP server)."""

from __future__ import annotations

__all__ = ("DEFAULT_BUDGET_TOKENS",)

# A wrapped command's output, in estimated tokens: an agent reads the whole of it. Chosen by
# measurement (benchmarks/quality.md, "Agents' default budget"): recall on the corpus at this
# budget beside the tail at the same bytes, well under Claude Code's 30,000-character cut.
DEFAULT_BUDGET_TOKENS = 2000
