"""hermes_nb: Hermes Agent's tool system as an IPython extension.

``%load_ext hermes_nb`` makes the tool registry live in the kernel and adds ``%%tool``, ``%tools`` and
``%toolsets``. Importing this package is cheap: the agent, ``openai`` and ``mcp`` load on first use.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from hermes_nb import _moved, _state

__all__ = [
    "Agent",
    "compare",
    "enable_nest_asyncio",
    "evaluate",
    "load_ipython_extension",
    "registry",
    "rollback",
    "timeline",
    "tool",
    "toolsets",
    "unload_ipython_extension",
]

log = logging.getLogger(__name__)

_moved.install()  # old module paths (hermes_nb.replay, hermes_nb.tools.plugins, ...) keep importing

#: Feature modules set up on load, in order: (module, function returning an undo). Each is cheap: the
#: magics are stand-ins until first used, and what only a tool call needs waits for the registry's first use.
_FEATURES: tuple[tuple[str, str], ...] = (
    ("hermes_nb.tools.safety.writes.imports", "install"),  # hermes_nb's own imports never come from the workspace
    ("hermes_nb.startup", "cells"),  # which cell runs: its number and id (%%tool's errors, its tools)
    ("hermes_nb.startup", "interrupts"),  # ■ inside hermes_nb: one line, not library frames
    ("hermes_nb.startup", "tool_magics"),  # %%tool, %tools, %toolsets (hermes_nb.magics.tools, on first use)
    ("hermes_nb.startup", "prompts"),  # inline approval and clarify prompts, before the first tool call
    ("hermes_nb.startup", "mcp"),  # %mcp; plugins on first use; configured MCP servers in the background
    ("hermes_nb.startup", "jobs"),  # background jobs' live cards; unloading ends the jobs
    ("hermes_nb.startup", "agent"),  # %%agent, %memory, %sessions, %trace; the agent-loop tools' routes outside a run
    ("hermes_nb.startup", "hermes"),  # %hermes; Hermes's own tools when hermes-agent is installed
    ("hermes_nb.startup", "plugins"),  # %plugins (list, enable, disable)
    ("hermes_nb.startup", "rollback"),  # %rollback (checkpoints of tool calls' changes), %trust (the import guard)
)


def load_ipython_extension(ip: Any) -> None:
    """Install the registry, magics and callbacks into ``ip``; prints one summary line.

    Built-in tool discovery, plugins and the prompts wait for the registry's first use (a listing, a
    look-up, a call), so the load itself stays as cheap as an extension that only adds its magics.
    """
    if _state.undos:  # loaded before and never unloaded: start clean so nothing is doubled
        unload_ipython_extension(ip)
    from hermes_nb.tools.sources.hermes_imports import install_fallback

    _state.shell = ip
    _forget_lazy_load(ip)  # loaded now: after an %unload_ext, a magic must not load it again
    _state.undos.append(_forget_configurables(ip))
    _state.undos.append(install_fallback())  # a cell's `import tools.registry`, when no `tools` exists
    try:
        for module_name, function in _FEATURES:
            module = importlib.import_module(module_name)
            undo = getattr(module, function)(ip)
            if callable(undo):
                _state.undos.append(undo)
    except BaseException:
        unload_ipython_extension(ip)
        raise
    print(_SUMMARY)


def unload_ipython_extension(ip: Any) -> None:
    """Remove every magic and callback the load added, and stop what it started."""
    while _state.live:
        obj = _state.live.pop()
        try:
            obj.close()
        except Exception:  # boundary: one broken picker must not keep the rest installed
            log.exception("hermes_nb: closing %r failed", obj)
    while _state.undos:
        undo = _state.undos.pop()
        try:
            undo()
        except Exception:  # boundary: keep undoing the rest
            log.exception("hermes_nb: undo %r failed", undo)
    _state.shell = None


def _forget_configurables(ip: Any) -> Any:
    """An undo that drops hermes_nb configurables added after now (Magics register themselves)."""
    before = {id(c) for c in getattr(ip, "configurables", [])}

    def undo() -> None:
        if hasattr(ip, "configurables"):
            ip.configurables[:] = [
                c for c in ip.configurables
                if id(c) in before or not type(c).__module__.startswith("hermes_nb")
            ]

    return undo


#: One line, known without reading any tool (the count would cost built-in discovery at load).
_SUMMARY = ("hermes_nb: %%tool, %tools, %toolsets, %%agent, %memory, %sessions, %trace, %mcp, %hermes, %plugins ready; "
            "tools are read on first use "
            "(%tools lists them, %tools doctor says why one is unavailable)")


def enable_nest_asyncio() -> None:
    """Opt in to running async ``%%tool`` functions on the kernel's own loop when called from sync code.

    Use it only for a notebook async tool that awaits objects made on the kernel loop (a Queue, Event
    or Future created in a cell) and is called from a sync cell (``%tools call``, ``registry.dispatch``).
    It patches the kernel loop with ``nest_asyncio`` and affects ``%%tool`` cells run *after* the call.
    Limits: nest_asyncio is archived; it does not work with anyio-based code (MCP), uvloop or
    Python 3.14, and it cannot be undone until the kernel restarts. Without it, async tools run on
    hermes_nb's background loop, which is the safe default.
    """
    import asyncio

    import nest_asyncio

    nest_asyncio.apply(asyncio.get_event_loop())
    _state.nest_asyncio_enabled = True


def __getattr__(name: str) -> Any:
    # Lazy attributes keep `import hermes_nb` (and %load_ext) cheap.
    if name == "tool":
        from hermes_nb.tools.schema.derive import tool

        return tool
    if name == "registry":  # through model_tools: built-in discovery waits for the registry's first use
        from hermes_nb.tools.model_tools import registry as reg

        return reg
    if name == "toolsets":
        return importlib.import_module("hermes_nb.selection")
    if name == "compare":  # two toolset selections side by side (issue 35)
        from hermes_nb.evaluation.compare import compare

        return compare
    if name == "evaluate":  # issue 13
        from hermes_nb.evaluation import evaluate

        return evaluate
    if name == "timeline":  # batch timelines, one line in a cell
        from hermes_nb.display.timeline import timeline

        return timeline
    if name == "Agent":
        from hermes_nb.agent.loop import Agent

        return Agent
    if name == "rollback":  # issue 32: undo tool calls' file changes (%rollback)
        from hermes_nb.magics.rollback import rollback

        return rollback
    raise AttributeError(f"module 'hermes_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    """``hermes_nb.`` + Tab shows the public API (the lazy names too), not this module's imports."""
    return sorted(__all__)


#: Every magic the load adds, by kind (``_SUMMARY`` names them for the person).
_MAGICS = {"line": ("tools", "toolsets", "agent", "memory", "sessions", "mcp", "hermes", "plugins"),
           "cell": ("tool", "agent")}


def _load_on_first_magic() -> None:
    """After a kernel restart a cell's ``from hermes_nb import ...`` often runs before the ``%load_ext`` cell:
    ``%tools`` was then "Line magic function `%tools` not found". Imported into a shell that has not loaded the
    extension, hermes_nb declares its magics lazily (IPython's ``register_lazy``), so the first one loads the
    extension (its summary line says so) and runs."""
    import sys

    getipython = sys.modules.get("IPython.core.getipython")
    ip = getipython.get_ipython() if getipython is not None else None
    manager = getattr(ip, "magics_manager", None)
    if manager is None or _state.undos or not hasattr(manager, "register_lazy"):
        return
    getattr(manager, "_loaded_lazy", set()).discard(__name__)  # a load after an unload is a load again
    for kind, names in _MAGICS.items():
        for name in names:
            if name in manager.magics[kind]:
                continue
            try:
                manager.register_lazy(name, __name__, kind)
            except TypeError:  # IPython 8's register_lazy(name, fully_qualified_name)
                manager.register_lazy(name, __name__)


def _forget_lazy_load(ip: Any) -> None:
    """Drop the lazy declarations ``_load_on_first_magic`` made (the load's own magics replace them)."""
    manager = getattr(ip, "magics_manager", None)
    lazy = getattr(manager, "lazy_magics", None)
    if not isinstance(lazy, dict):
        return
    for name in [n for n, spec in lazy.items() if spec == __name__]:
        del lazy[name]
        for table in getattr(manager, "magics", {}).values():
            if getattr(table.get(name), "spec", None) == __name__:
                del table[name]


_load_on_first_magic()
