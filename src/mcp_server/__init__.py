"""The MCP server: the memory's tools, resources and prompts for agent tools that speak the
Model Context Protocol, over stdio (``mnemolog mcp``) and streamable HTTP (``/mcp``).

A thin shell, like the REST API: it parses, calls the core, renders. Named ``mcp_server``
because ``mcp`` is the SDK it is built on. Nothing is imported here: the API imports only
``streamable``, which loads the SDK at the first call (``streamable.py`` says why).
"""
