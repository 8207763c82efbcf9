"""%%agent's load/undo mirror each other on a plain InteractiveShell."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from hermes_nb import startup
from hermes_nb.magics import agent as agent_magics


def test_load_undo_leaves_nothing_behind():
    ip = InteractiveShell.instance()
    before = (dict(ip.magics_manager.magics["line"]), dict(ip.magics_manager.magics["cell"]), list(ip.configurables))
    undo = startup.agent(ip)
    assert "agent" in ip.magics_manager.magics["cell"] and "agent" in ip.magics_manager.magics["line"]
    ip.find_magic("agent", "cell").__doc__  # noqa: B018  (help makes the real instance)
    assert any(isinstance(c, agent_magics.AgentMagics) for c in ip.configurables)
    undo()
    undo()  # idempotent
    after = (dict(ip.magics_manager.magics["line"]), dict(ip.magics_manager.magics["cell"]), list(ip.configurables))
    assert after == before
