"""What ``%load_ext hermes_nb`` sets up, each part cheap and each returning its undo.

The magics go in as stand-ins (``magics.registry``): their modules, with their argument parsers, import on
first use. What only a tool call needs (built-in discovery, plugins, the inline prompts) waits for the
registry's first use (``tools.sources.first_use``). What starts in the background waits for the loading
cell to end (``_after_cell``): the configured MCP servers (``tools.mcp_client.start``; ``%mcp`` and the
registry's first use begin it sooner and wait for it) and, when hermes-agent is findable, Hermes's tools
(``interop.start``).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any

from hermes_nb import _state
from hermes_nb.magics.registry import add_magics, resolve_on_config
from hermes_nb.tools.mcp_client.start import (
    begin_deferred_start,
    start_configured_servers,
    wait_for_mcp_start,
)
from hermes_nb.tools.sources.first_use import defer_until_used

__all__ = ["agent", "cells", "hermes", "interrupts", "jobs", "mcp", "plugins", "prompts", "rollback", "tool_magics",
           "wait_for_mcp_start"]

log = logging.getLogger(__name__)


def cells(ip: Any) -> Callable[[], None]:
    """Follow the cells ``ip`` runs (``magics.cells`` reads it: ``%%tool``'s line numbers, the tools a cell
    owns); the hook is here, so that the load imports nothing for it."""


    def restarted() -> None:  # runs a restart cut off: their cards still say "⏳ running" (issue 35)
        from hermes_nb.display.running import restart_lines

        for line in restart_lines():
            print(line)

    unhook_restarted = _after_cell(ip, restarted)  # under the loading cell, without slowing the load
    def pre_run_cell(info: Any) -> None:
        cell_id = getattr(info, "cell_id", None)
        if not getattr(info, "store_history", True) and cell_id is None:
            return  # a nested run (``%%tool``'s body): the person's cell is still the outer one
        # run_cell has already counted this cell when it stores history: the prompt shows one less
        count = int(getattr(ip, "execution_count", 0) or 0)
        _state.cell = (count - 1 if info.store_history else count, cell_id)

    def post_run_cell(result: Any) -> None:
        info = getattr(result, "info", None)
        if not _state.cell_functions or info is None or (not info.store_history and info.cell_id is None):
            return  # no %%tool function to watch, or a nested run
        if (info.raw_cell or "").lstrip().startswith("%%tool"):
            return  # the cell re-registers what it defines
        for name, (tool, registered) in list(_state.cell_functions.items()):
            now = ip.user_ns.get(name)
            if callable(now) and now is not registered:
                # a plain cell redefined it: the tool still runs the %%tool cell's version (issue 35)
                print(f"note: {name} is redefined here, but the tool {tool} still runs the %%tool cell's version; "
                      f"put %%tool on this cell (or re-run that one) to update it")
                _state.cell_functions[name] = (tool, now)  # said once per redefinition

    ip.events.register("pre_run_cell", pre_run_cell)
    ip.events.register("post_run_cell", post_run_cell)

    def undo() -> None:
        unhook_restarted()
        for event, callback in (("pre_run_cell", pre_run_cell), ("post_run_cell", post_run_cell)):
            try:
                ip.events.unregister(event, callback)
            except ValueError:  # already gone
                pass
        _state.cell_functions.clear()

    return undo


def interrupts(ip: Any) -> Callable[[], None]:
    """■ inside hermes_nb in one line (``display.interrupts``, imported at the first interrupt), through
    IPython's ``set_custom_exc`` only when nothing else uses it; the undo puts back what was there."""
    if getattr(ip, "custom_exceptions", None) or not hasattr(ip, "set_custom_exc"):
        return lambda: None  # someone else's handler: leave theirs alone
    before = (ip.custom_exceptions, ip.CustomTB)

    def handler(shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None,
                tb_offset: int | None = None) -> list[str]:
        from hermes_nb.display.interrupts import interrupt_line

        # IPython's CustomTB callers show nothing themselves: show it here, as showtraceback would
        line = interrupt_line(tb)
        if line is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return []
        shell._showtraceback(etype, value, [line])  # the kernel sends it as the cell's error
        return [line]

    ip.set_custom_exc((KeyboardInterrupt,), handler)

    def undo() -> None:
        if ip.custom_exceptions == (KeyboardInterrupt,):
            ip.custom_exceptions, ip.CustomTB = before

    return undo


def tool_magics(ip: Any) -> Callable[[], None]:
    """``%%tool``, ``%tools`` and ``%toolsets`` (``hermes_nb.magics.tools.ToolMagics``, configurable)."""
    return add_magics(ip, "hermes_nb.magics.tools:ToolMagics", line=("tools", "toolsets"), cell=("tool",),
                      configurable=True).remove


def rollback(ip: Any) -> Callable[[], None]:
    """``%rollback`` and ``%trust`` (``hermes_nb.magics.rollback.RollbackMagics``)."""
    return add_magics(ip, "hermes_nb.magics.rollback:RollbackMagics", line=("rollback", "trust")).remove


def jobs(ip: Any) -> Callable[[], None]:
    """Background jobs (``terminal(background=true)``): from the registry's first use (no job starts before),
    each started in a cell is shown as a live card; the undo (the extension's unload) ends every job, as the
    kernel's exit does."""
    undos: list[Callable[[], None]] = []

    def install() -> None:
        from hermes_nb.display.jobs import install_viewer

        undos.append(install_viewer())

    cancel = defer_until_used(install)

    def undo() -> None:
        cancel()
        while undos:
            undos.pop()()
        if "hermes_nb.tools.jobs" in sys.modules:  # a job can only exist once the module is imported
            from hermes_nb.tools.jobs import end_all

            end_all("extension unload")

    return undo


def agent(ip: Any) -> Callable[[], None]:
    """``%%agent`` and ``%agent reset``, ``%memory``, ``%sessions`` and ``%trace``; on the registry's first use, the routes of
    the agent-loop tools called outside a run and the built-in ``sessions`` memory provider. The undo forgets
    the kernel's agent."""
    handle = add_magics(ip, "hermes_nb.magics.agent:AgentMagics", line=("agent",), cell=("agent",))
    state = [add_magics(ip, "hermes_nb.magics.memory:MemoryMagics", line=("memory",)),
             add_magics(ip, "hermes_nb.magics.sessions:SessionMagics", line=("sessions",)),
             add_magics(ip, "hermes_nb.magics.trace:TraceMagics", line=("trace",))]
    undos: list[Callable[[], None]] = []

    def install() -> None:
        from hermes_nb.agent.recall import SessionsProvider
        from hermes_nb.agent.routes import install_default
        from hermes_nb.tools.agent_loop.providers import register_memory_provider, unregister_memory_provider

        undos.append(install_default())
        if register_memory_provider(SessionsProvider(), source="builtin") is not None:
            undos.append(lambda: unregister_memory_provider(SessionsProvider.name))

    cancel = defer_until_used(install)

    def undo() -> None:
        used = handle.instance
        handle.remove()
        for magics in state:
            magics.remove()
        cancel()
        while undos:
            undos.pop()()
        if used is not None:  # only a used %%agent can have made an agent
            used.forget_agent()

    return undo


def hermes(ip: Any) -> Callable[[], None]:
    """``%hermes``, and the start of reading Hermes's tools when hermes-agent is installed.

    The load only asks whether ``HermesMagics.enabled`` is configured off; the start waits for the cell to
    end (``interop.start``) and begins by asking whether hermes-agent is findable (two ``find_spec`` calls,
    through the import guard, cost more than the rest of the load), then imports the bridge."""
    handle = add_magics(ip, "hermes_nb.magics.hermes:HermesMagics", line=("hermes",), configurable=True)
    began: list[bool] = []  # the bridge's start ran (hermes-agent was findable)
    cancel_start: Callable[[], None] | None = None

    def start_bridge() -> None:
        if _hermes_findable():
            from hermes_nb.interop.hermes_tools import bridge

            began.append(True)
            bridge.start()

    unhook: Callable[[], None] | None = None
    if _configured(ip, "HermesMagics", "enabled", True):
        from hermes_nb.interop.start import begin, schedule

        cancel_start = schedule(start_bridge)
        unhook = _after_cell(ip, begin)  # after this cell: neither find_spec nor the import slows the load

    def undo() -> None:
        used = handle.instance is not None  # %hermes was used
        handle.remove()
        if unhook is not None:
            unhook()
        if cancel_start is not None:
            cancel_start()  # a start under way finishes first, so the stop below sees what it began
        if used or began:
            from hermes_nb.interop.hermes_tools import bridge

            bridge.stop()

    return undo


def _configured(ip: Any, section: str, name: str, default: Any) -> Any:
    """A configurable's trait as the person's config sets it, without importing the class."""
    config = getattr(ip, "config", None)
    try:
        return config[section][name] if config is not None and section in config and name in config[section] \
            else default
    except (KeyError, TypeError):
        return default


def plugins(ip: Any) -> Callable[[], None]:
    """``%plugins`` (``hermes_nb.magics.plugins``): the plugins found, and enabling or disabling one."""
    return add_magics(ip, "hermes_nb.magics.plugins:PluginMagics", line=("plugins",)).remove


def _hermes_findable() -> bool:
    """``hermes_tools.hermes_installed``'s two find_spec calls, without importing the bridge (and with it
    the registry) into every load where hermes-agent is absent."""
    try:
        return importlib.util.find_spec("hermes_cli") is not None and importlib.util.find_spec("model_tools") is not None
    except (ImportError, ValueError):
        return False


def prompts(ip: Any) -> Callable[[], None]:
    """``prompts.install`` on the registry's first use (or on ``%config``, for ``Prompts.timeout``)."""
    undos: list[Callable[[], None]] = []

    def install() -> None:
        if not undos:
            from hermes_nb.display.prompts import install as install_prompts

            undos.append(install_prompts(ip))

    cancel = defer_until_used(install)
    unhook = resolve_on_config(ip, install)

    def undo() -> None:
        cancel()
        unhook()
        while undos:
            undos.pop()()

    return undo


def mcp(ip: Any) -> Callable[[], None]:
    """``%mcp``; plugins on the registry's first use; configured MCP servers started in the background."""
    handle = add_magics(ip, "hermes_nb.magics.mcp:MCPMagics", line=("mcp",))
    plugins_loaded = False

    def discover() -> None:
        nonlocal plugins_loaded
        from hermes_nb.tools.sources.plugins import discover_plugins

        plugins_loaded = True
        discover_plugins()

    cancel_plugins = defer_until_used(discover)
    stop_start = start_configured_servers(deferred=True)
    unhook_start = _after_cell(ip, begin_deferred_start)  # the start never competes with the load
    cancel_wait = defer_until_used(wait_for_mcp_start)  # the first prompt sees the servers, as starting
    done = False

    def undo() -> None:
        nonlocal done
        if done:
            return
        done = True
        cancel_wait()
        cancel_plugins()
        unhook_start()
        stop_start()
        handle.remove()
        from hermes_nb.tools.mcp_tool import shutdown_mcp_servers

        shutdown_mcp_servers()
        if plugins_loaded:
            from hermes_nb.tools.sources.plugins import unload_plugins

            unload_plugins()

    return undo


def _after_cell(ip: Any, fn: Callable[[], None]) -> Callable[[], None]:
    """Run ``fn`` once, when the current cell has ended (at once without IPython's events); returns the
    unhook."""
    events = getattr(ip, "events", None)
    if events is None:
        fn()
        return lambda: None

    def after_cell(*_: Any) -> None:
        unhook()
        fn()

    def unhook() -> None:
        try:
            events.unregister("post_run_cell", after_cell)
        except ValueError:  # already gone
            pass

    events.register("post_run_cell", after_cell)
    return unhook
