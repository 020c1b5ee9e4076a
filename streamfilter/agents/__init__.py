"""What coding agents use: the MCP server (``streamfilter mcp``) and the defaults it shares with
the agents' hooks. Beside the command line: it may use core and live, which never use it."""
