"""MCP servers as tool sources: stdio subprocesses and streamable HTTP endpoints."""

from thalos_bot.tools.mcp.envrefs import MissingVariableError
from thalos_bot.tools.mcp.servers import McpServers
from thalos_bot.tools.mcp.supervisor import McpServerSource

__all__ = ["McpServerSource", "McpServers", "MissingVariableError"]
