"""Where tools come from: AST discovery, plugins (files, hooks, contexts), Hermes imports and compat, discovery
on first use, and the load report."""
