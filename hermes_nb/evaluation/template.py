"""An ``Agent`` as ``evaluate``'s template: its configuration copied, a fresh conversation per case.

``evaluate(cases, agent=Agent(model=..., enabled_toolsets=[...], system_prompt=...))`` takes the agent's
settings (toolsets, system prompt, limits, approval callback) and shares its model client, as the dict
template shares one client; the agent's own conversation is left alone. A replaying agent gives each
case its cassette from the start; a recording agent's cases are not written into its cassette (use
``evaluate(..., record=DIR)`` for one cassette per case).
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["from_agent"]

#: Agent arguments that belong to the run of one case, not to the template.
_PER_CASE = frozenset({"self", "model", "base_url", "api_key", "display", "record"})


def from_agent(agent: Any) -> dict[str, Any]:
    """The template dict for ``agent`` (an ``hermes_nb.Agent``)."""
    model = agent.model
    inner = getattr(model, "inner", None)
    if inner is not None:  # a RecordingModel: the cases use what it records
        model = inner
    if getattr(model, "replays_recording", False):
        model = model.fresh()  # from the first turn, not from this agent's place (each case gets its own copy)
    parameters = set(inspect.signature(type(agent).__init__).parameters) - _PER_CASE
    settings = {name: getattr(agent, name) for name in sorted(parameters) if hasattr(agent, name)}
    return {"stream": False, **settings, "model": model}
