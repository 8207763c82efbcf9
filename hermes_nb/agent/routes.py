"""The agent-loop tools' routes: ``todo``, ``memory``, ``session_search``, ``delegate_task``, by one table.

The seed's dispatch diagram sends the tools that need the run's state to the agent, everything else to the
registry. Here those tools are registered like any other (their handler is ``tools.run_routes.route``), and
each run installs a router for its own task (``begin``) that looks the tool up in ``ROUTES`` and calls the
handler with the ``Run``: the agent, its conversation, its display's ``emit``. Outside a run (``%tools call
memory ...``) the default router serves what needs no run (memory, session search) and says what does.

``begin`` also does a run's bookkeeping, as Hermes's agent does at a turn's start: the memory files go
into the system prompt (frozen for the run), providers' ``prefetch`` text with them, and the run's
messages are stored as it goes (``Run.store``) for ``session_search``; a store that fails is said once and
the run goes on without it.
"""

from __future__ import annotations

import json
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_nb.agent.events import Emit, MemoryLoaded, Notice, TodoUpdated
from hermes_nb.agent.memory_store import MemoryStore
from hermes_nb.agent.recall import current_notebook as _notebook
from hermes_nb.agent.session_store import SessionStoreError, session_store
from hermes_nb.tools.agent_loop.routes import set_default_router, use_router
from hermes_nb.tools.calls.call_hooks import call_fields
from hermes_nb.tools.calls.results import tool_error

__all__ = ["ROUTES", "Run", "begin", "install_default"]

Route = Callable[["Run | None", dict[str, Any]], "Awaitable[Any] | Any"]


@dataclass(kw_only=True)
class Run:
    """One ``Agent.run``'s state, as its routes see it (mutable: the store's progress)."""

    agent: Any
    run_id: str
    emit: Emit
    depth: int = 0
    parent_run: str | None = None
    label: str = ""  # a child's name in prompts ("sub-agent 1: ...")
    notebook: str = ""
    stored: int = 0  # messages of agent.messages already stored
    store_failed: bool = False
    undo: Callable[[], None] = field(default=lambda: None, repr=False)
    #: the results of the sub-agents this run delegated to (their usage and cost count in the run's total)
    children: list[Any] = field(default_factory=list, repr=False)

    def store(self, messages: list[dict[str, Any]]) -> None:
        """Store the messages added since the last call (the first failure is said once; then no more tries)."""
        new = messages[self.stored:]
        if not new or self.store_failed:
            self.stored = len(messages)
            return
        try:
            session_store().add(self.run_id, [m for m in new if m.get("role") != "system"], notebook=self.notebook)
        except SessionStoreError as exc:
            self._failed(exc)
        self.stored = len(messages)

    def _failed(self, exc: Exception) -> None:
        self.store_failed = True
        self.emit(Notice(message=f"{exc}; this run is not stored for session_search, and goes on", level="warning"))

    def end(self, messages: list[dict[str, Any]]) -> None:
        self.store(messages)
        if not self.store_failed:
            try:
                session_store().end(self.run_id)  # a child's session_search sees it from now on
            except SessionStoreError as exc:
                self._failed(exc)
        self.undo()
        from hermes_nb.agent.providers import sync_providers

        sync_providers(messages, emit=self.emit, offers=lambda toolset: _offers(self.agent, toolset))


def begin(agent: Any, prompt: str, emit: Emit) -> Run:
    """Start a run's state for ``agent``: its router installed for this task, memory in the system prompt,
    the run recorded. Call ``Run.end`` when the run ends (same task)."""
    from hermes_nb.agent.delegation import child_info

    info = child_info(agent)
    run = Run(agent=agent, run_id=uuid.uuid4().hex[:12], emit=emit, depth=info.depth if info else 0,
              parent_run=info.parent_run if info else None, label=info.label if info else "",
              notebook=_notebook())
    _frame_system_prompt(agent, run, prompt)
    run.stored = len(agent.messages)
    try:
        session_store().begin(run.run_id, notebook=run.notebook, model=str(getattr(agent.model, "name", "")),
                              prompt=prompt, parent=run.parent_run)
    except SessionStoreError as exc:
        run._failed(exc)

    async def router(name: str, args: dict[str, Any]) -> Any:
        return await _call(ROUTES.get(name), run, name, args)

    run.undo = use_router(router)
    return run


async def _call(route: Route | None, run: Run | None, name: str, args: dict[str, Any]) -> Any:
    if route is None:
        return tool_error(f"{name} has no route in this agent")
    result = route(run, args)
    if isinstance(result, Awaitable):
        result = await result
    return result


# -- the routes -----------------------------------------------------------------------------------

def _todo(run: Run | None, args: dict[str, Any]) -> Any:
    if run is None:
        return tool_error("todo is the plan of an agent's run: it works inside Agent.run or %%agent (the run's "
                          "checklist), not from a cell")
    store = run.agent.todo_store
    todos = args.get("todos")
    if isinstance(todos, str):  # a model that sends the list as JSON text
        try:
            todos = json.loads(todos)
        except ValueError:
            return tool_error("todos must be a list of {id, content, status} objects")
    items = store.read() if todos is None else store.write(list(todos), bool(args.get("merge", False)))
    if todos is not None:
        run.emit(TodoUpdated(tool_call_id=str(call_fields().get("tool_call_id", "")), todos=tuple(items)))
    return store.answer(items)


def _memory(run: Run | None, args: dict[str, Any]) -> Any:
    store = MemoryStore()
    target = args.get("target", "memory")
    if target not in ("memory", "user"):
        return {"success": False, "error": f"Invalid target {target!r}: use 'memory' or 'user'."}
    ops = list(args["operations"]) if args.get("operations") else [
        {k: args[k] for k in ("action", "content", "old_text") if k in args}]
    result = store.apply(target, ops)
    if run is not None and result.get("success") and not str(result.get("message", "")).startswith("Entry already"):
        for op in ops:  # every write is a line in the transcript: the person sees what later prompts will carry
            run.emit(Notice(message=_written(target, op), level="memory"))
    return result


def _written(target: str, op: Any) -> str:
    from hermes_nb.tools.safety.approvals.visible import make_visible

    op = op if isinstance(op, dict) else {}
    where = " (about you, USER.md)" if target == "user" else ""
    if op.get("action") == "remove":
        return f"forgot{where}: the entry with {make_visible(str(op.get('old_text', '')), keep='')!r}"
    return f"remembered{where}: {make_visible(str(op.get('content', '')).strip(), keep='')}"


def _session_search(run: Run | None, args: dict[str, Any]) -> Any:
    from hermes_nb.agent.session_views import Reach, session_search

    scope = args.get("scope") or "current"
    if scope not in ("current", "all"):
        return {"success": False, "error": f"scope must be 'current' (this notebook's runs) or 'all', not {scope!r}"}
    # a child reads only runs that ended: its parent's (and its siblings') are still being written
    reach = Reach(notebook=None if scope == "all" else (run.notebook if run is not None else _notebook()),
                  ended_only=run is not None and run.depth > 0)
    return session_search(args, exclude_run=run.run_id if run is not None else None, reach=reach)


async def _delegate(run: Run | None, args: dict[str, Any]) -> Any:
    if run is None:
        return tool_error("delegate_task starts sub-agents of a running agent: it works inside Agent.run or "
                          "%%agent, not from a cell")
    from hermes_nb.agent.delegation import delegate

    return await delegate(run, args, str(call_fields().get("tool_call_id", "")))


#: Tool name → the handler that gets the run. Hermes main's ``todo_list`` is ``todo``.
ROUTES: Mapping[str, Route] = {
    "todo": _todo,
    "todo_list": _todo,
    "memory": _memory,
    "session_search": _session_search,
    "delegate_task": _delegate,
}


def install_default() -> Callable[[], None]:
    """Serve agent-loop tools called outside any run (the extension's load); returns the undo."""
    async def router(name: str, args: dict[str, Any]) -> Any:
        return await _call(ROUTES.get(name), None, name, args)

    return set_default_router(router)


# -- a run's system prompt ------------------------------------------------------------------------

def _frame_system_prompt(agent: Any, run: Run, prompt: str) -> None:
    """The agent's own system prompt, then (when offered) the memory files and providers' recall, as they
    are now: the first message for the whole run."""
    extra = []
    if run.depth == 0 and _offers(agent, "memory"):
        memory = MemoryStore().load()
        for left_out in memory.left_out:
            run.emit(Notice(message=left_out.line(), level="warning"))
        if memory.text:
            extra.append(memory.text)
            run.emit(MemoryLoaded(text=memory.text, entries=memory.entries))
    from hermes_nb.agent.providers import prefetch

    extra += prefetch(agent, prompt, emit=run.emit, offers=lambda ts: _offers(agent, ts))
    messages = agent.messages
    ours = bool(messages) and messages[0] is _framed.get(agent)
    if not extra and not ours:
        return  # nothing to add, nothing added before: the conversation stays exactly as it was
    has_system = bool(messages) and messages[0].get("role") == "system"
    base = agent.system_prompt if ours else messages[0].get("content") if has_system else None
    content = "\n\n".join(p for p in (base or "", *extra) if p)
    system = {"role": "system", "content": content}
    if has_system and not content:
        del messages[0]
    elif has_system:
        messages[0] = system
    else:
        messages.insert(0, system)
    _framed[agent] = system


#: The system message ``_frame_system_prompt`` wrote last, per agent (the next run replaces it).
_framed: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _offers(agent: Any, toolset: str) -> bool:
    """Whether ``agent`` offers ``toolset`` now (as the loop offers tools: ``selection.offered_by``)."""
    if toolset in (agent.disabled_toolsets or ()):
        return False
    from hermes_nb.selection import offered_by

    enabled = offered_by(agent.enabled_toolsets)
    return enabled is None or toolset in enabled
