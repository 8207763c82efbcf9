"""Serving the notebook's tools over MCP: the server (``server``), its app (``app``), the panel in the
serving cell (``panel``) and the stdio proxy (``proxy``, the ``hermes-nb-mcp-proxy`` command)."""
