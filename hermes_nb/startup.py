"""What ``%load_ext hermes_nb`` sets up, each part cheap and each returning its undo.

The magics go in as stand-ins (``magics.registry``): their modules, with their argument parsers, import on
first use. What only a tool call needs (built-in discovery, plugins, the inline prompts) waits for the
registry's first use (``tools.sources.first_use``). Configured MCP servers start on a background thread
(``tools.mcp_client.start``); ``%mcp`` and the registry's first use wait for that thread.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from typing import Any

from hermes_nb.magics.registry import add_magics, resolve_on_config
from hermes_nb.tools.mcp_client.start import start_configured_servers, wait_for_mcp_start
from hermes_nb.tools.sources.first_use import defer_until_used

__all__ = ["agent", "hermes", "mcp", "plugins", "prompts", "tool_magics", "wait_for_mcp_start"]

log = logging.getLogger(__name__)


def tool_magics(ip: Any) -> Callable[[], None]:
    """``%%tool``, ``%tools`` and ``%toolsets`` (``hermes_nb.magics.tools.ToolMagics``, configurable)."""
    return add_magics(ip, "hermes_nb.magics.tools:ToolMagics", line=("tools", "toolsets"), cell=("tool",),
                      configurable=True).remove


def agent(ip: Any) -> Callable[[], None]:
    """``%%agent`` and ``%agent reset``, ``%memory`` and ``%sessions``; on the registry's first use, the routes of
    the agent-loop tools called outside a run and the built-in ``sessions`` memory provider. The undo forgets
    the kernel's agent."""
    handle = add_magics(ip, "hermes_nb.magics.agent:AgentMagics", line=("agent",), cell=("agent",))
    state = [add_magics(ip, "hermes_nb.magics.memory:MemoryMagics", line=("memory",)),
             add_magics(ip, "hermes_nb.magics.sessions:SessionMagics", line=("sessions",))]
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

    The load only asks whether hermes-agent is findable and whether ``HermesMagics.enabled`` is configured
    off; the start (importing the bridge, and with it the registry) waits for the cell to end
    (``interop.start``)."""
    handle = add_magics(ip, "hermes_nb.magics.hermes:HermesMagics", line=("hermes",), configurable=True)
    cancel_start: Callable[[], None] | None = None
    if _hermes_findable() and _configured(ip, "HermesMagics", "enabled", True):
        from hermes_nb.interop.start import schedule

        cancel_start = schedule(ip, _start_bridge)  # after this cell: the bridge's import never slows the load

    def undo() -> None:
        used = cancel_start is not None or handle.instance is not None  # scheduled, or %hermes was used
        handle.remove()
        if cancel_start is not None:
            cancel_start()  # a start under way finishes first, so the stop below sees what it began
        if used:
            from hermes_nb.interop.hermes_tools import bridge

            bridge.stop()

    return undo


def _start_bridge() -> None:
    from hermes_nb.interop.hermes_tools import bridge

    bridge.start()


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
    stop_start = start_configured_servers()
    cancel_wait = defer_until_used(wait_for_mcp_start)  # the first prompt sees the servers, as starting
    done = False

    def undo() -> None:
        nonlocal done
        if done:
            return
        done = True
        cancel_wait()
        cancel_plugins()
        stop_start()
        handle.remove()
        from hermes_nb.tools.mcp_tool import shutdown_mcp_servers

        shutdown_mcp_servers()
        if plugins_loaded:
            from hermes_nb.tools.sources.plugins import unload_plugins

            unload_plugins()

    return undo
