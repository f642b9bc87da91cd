"""The MCP server: the memory's tools, resources and prompts for agent tools that speak the
Model Context Protocol, over stdio (``mnemolog mcp``) and streamable HTTP (``/mcp``).

A thin shell, like the REST API: it parses, calls the core, renders. Named ``mcp_server``
because ``mcp`` is the SDK it is built on.
"""

from .server import build_server
from .stdio import ServerUnreachable, relay_server, run_stdio, server_url
from .streamable import PATH, McpHttp
from .tools import MCP

__all__ = [
    "MCP",
    "PATH",
    "McpHttp",
    "ServerUnreachable",
    "build_server",
    "relay_server",
    "run_stdio",
    "server_url",
]
