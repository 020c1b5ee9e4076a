"""Adapters for coding agents: hooks that wrap an agent's build and test commands in
``streamfilter run --budget-tokens``, their installers, and the MCP server (``streamfilter mcp``).
They sit beside the command line: they import core and live, and nothing below imports them."""
