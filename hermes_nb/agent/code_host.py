"""The run's side of ``execute_code``: which tools its scripts call, where their nested cards go, their namespace.

``install_code_host(agent, emit)`` gives the run (its task, a context variable) a ``CodeHost``
(``hermes_nb.tools.execute_code_tool``): the tools a script may call are the ones the model is offered this
turn, a script's tool calls reach the view as cards whose ``parent`` is the script's call, and the scripts of
one agent share a namespace (``CodeSession``) seeded with the person's ``Agent(code_vars=...)``. Threads the
run's scripts start are stopped when the run ends (``tools.code_execution.threads``); one that cannot be stopped
is named in a line, as still running.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Protocol

from hermes_nb.agent.events import Emit, Notice, ToolCallQueued, tool_event

__all__ = ["install_code_host"]

class Agent(Protocol):
    """What the host needs of ``hermes_nb.agent.loop.Agent`` (a protocol: the loop imports this module)."""

    code_vars: dict[str, Any] | None

    def _definitions(self) -> Any: ...  # a ``tools.search.Assembly``: this turn's definitions and catalog


_sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _session(agent: Agent, reset: bool) -> Any:
    from hermes_nb.tools.code_execution.script import CodeSession

    found = _sessions.get(agent)
    if found is None or reset:
        found = _sessions[agent] = CodeSession(agent.code_vars)
    return found


def _offered(agent: Agent) -> list[dict[str, Any]]:
    """The definitions a script gets: the run's now, within what this turn offered (scope); the turn's offer
    stays the one the script's calls are checked against, whatever the selection became since."""
    from hermes_nb.tools.batch.scope import current_offer, set_offer

    offer = current_offer()
    definitions = agent._definitions().definitions  # (sets the offer of the selection as it is now)
    set_offer(offer)
    if offer is None:
        return definitions
    return [d for d in definitions if d.get("function", {}).get("name") in offer.names]


def install_code_host(agent: Agent, emit: Emit) -> Callable[[], None]:
    """Serve ``execute_code`` for the run in the calling context; returns the undo."""
    from hermes_nb.tools.code_execution.threads import Threads, stop, watch
    from hermes_nb.tools.execute_code_tool import CodeHost, use_code_host

    def queued(parent: str, call_id: str, name: str, arguments: str) -> None:
        emit(ToolCallQueued(index=0, id=call_id, name=name, arguments=arguments, parent=parent))

    threads = Threads()
    unwatch = watch()
    host = CodeHost(definitions=lambda: _offered(agent), session=lambda reset: _session(agent, reset),
                    on_queued=queued, on_event=lambda event: emit(tool_event(event)), threads=threads)
    scope = use_code_host(host)
    scope.__enter__()

    def undo() -> None:
        scope.__exit__(None, None, None)
        try:
            threads.close()  # no thread starts from here on; one a script's thread was starting gets to its start
            running = threads.running()
            left = stop(running) if running else []
            stopped = [t.name for t in running if t not in left]
            if stopped:
                emit(Notice(message=f"the run ended: stopped {len(stopped)} thread(s) execute_code started: "
                                    f"{', '.join(stopped)}", level="info"))
            if left:
                emit(Notice(message=f"still running after the run ended: thread(s) {', '.join(t.name for t in left)}, "
                                    "started by execute_code (each was asked to stop; it is blocked in a call Python "
                                    "cannot interrupt, or caught the stop)", level="warning"))
        finally:
            unwatch()

    return undo
