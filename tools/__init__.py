"""Hermes-compatible tool core (kernel-independent).

Kept tiny on purpose: ``tools`` is a generic top-level name, so importing it has no side effects.
"""

from __future__ import annotations

__all__ = ["tool"]


def __getattr__(name: str):  # lazy, so `import tools` stays cheap
    if name == "tool":
        from tools.schema import tool

        return tool
    raise AttributeError(name)
