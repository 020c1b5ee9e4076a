"""Defaults shared by everything an agent reads through (the MCP server, the hooks)."""

from __future__ import annotations

__all__ = ("DEFAULT_BUDGET_TOKENS",)

# estimated tokens (o200k, ``core.budget.estimate_tokens``) of one command's or file's filtered
# output when the caller names no budget; a first value, to be tuned by measurement
DEFAULT_BUDGET_TOKENS = 2000
