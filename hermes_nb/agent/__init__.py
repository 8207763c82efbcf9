"""The agent: its loop, the typed events a run emits, and the run's own tools' state (the model seam is
``hermes_nb.models``; its old paths here, ``hermes_nb.agent.models``, ``.replay``, ``.local``..., still import it).

``hermes_nb.agent.Agent`` is the loop's ``Agent`` (imported on first use, so the events stay cheap to import)."""

from __future__ import annotations

from hermes_nb._moved import forward

__all__ = ["Agent", "AgentResult"]

#: ``Agent`` and the other names of the old ``hermes_nb.agent`` module, from the loop (on first use)
__getattr__ = forward(__name__, "hermes_nb.agent.loop")
