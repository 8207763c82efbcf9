"""hermes_nb's tool core (kernel-independent), installed as ``hermes_nb.tools``.

The repository keeps it in the top-level ``tools/`` folder; the distribution installs it under our own
name so that it never collides with a notebook folder's ``tools/`` package or with hermes-agent's.
Hermes's public module names sit at the top (``registry``, ``model_tools``, ``toolsets``, ``mcp_tool``,
``approval``, the ``*_tool.py`` built-ins); internals are grouped in ``batch``, ``mcp_client``,
``schema`` and ``safety``. Importing this package has no side effects.
"""

from __future__ import annotations

__all__ = ["tool"]


def __getattr__(name: str):  # lazy, so `import hermes_nb.tools` stays cheap
    if name == "tool":
        from hermes_nb.tools.schema.derive import tool

        return tool
    raise AttributeError(name)
