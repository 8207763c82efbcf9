"""MCP client internals: server configuration, one long-lived session per server, result conversion.

``hermes_nb.tools.mcp_tool`` (Hermes's name) is the public face; these modules are what it is made of.
"""
