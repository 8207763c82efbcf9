"""What ``%load_ext hermes_nb`` sets up, each part cheap and each returning its undo.

The magics go in as stand-ins (``magic_registry``): their modules, with their argument parsers, import on
first use. What only a tool call needs (built-in discovery, plugins, the inline prompts) waits for the
registry's first use (``tools.first_use``). Configured MCP servers start on a background thread, since
reading config.yaml and starting servers takes long; ``%mcp`` and the registry's first use wait for that
thread, so they see the servers as a synchronous start would have shown them.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import logging
import threading
from collections.abc import Callable
from typing import Any

from hermes_nb.magic_registry import add_magics, resolve_on_config
from hermes_nb.tools.first_use import defer_until_used

__all__ = ["agent", "hermes", "mcp", "prompts", "tool_magics", "wait_for_mcp_start"]

log = logging.getLogger(__name__)

#: How long ``%mcp`` and the registry's first use wait for the MCP start thread (it reads a file, then
#: hands the servers to the background loop; only a hung file system makes it take long).
MCP_START_WAIT = 60.0

_mcp_start: threading.Thread | None = None


def tool_magics(ip: Any) -> Callable[[], None]:
    """``%%tool``, ``%tools`` and ``%toolsets`` (``hermes_nb.magics.ToolMagics``, configurable)."""
    return add_magics(ip, "hermes_nb.magics:ToolMagics", line=("tools", "toolsets"), cell=("tool",),
                      configurable=True).remove


def agent(ip: Any) -> Callable[[], None]:
    """``%%agent`` and ``%agent reset``; the undo forgets the kernel's agent."""
    handle = add_magics(ip, "hermes_nb.agent_magics:AgentMagics", line=("agent",), cell=("agent",))

    def undo() -> None:
        used = handle.instance
        handle.remove()
        if used is not None:  # only a used %%agent can have made an agent
            used.forget_agent()

    return undo


def hermes(ip: Any) -> Callable[[], None]:
    """``%hermes``, and the start of reading Hermes's tools when hermes-agent is installed."""
    handle = add_magics(ip, "hermes_nb.hermes_magics:HermesMagics", line=("hermes",), configurable=True)
    if _hermes_findable() and handle.resolve().enabled:  # made now: its `enabled` trait decides
        from hermes_nb.hermes_tools import bridge

        bridge.start()

    def undo() -> None:
        used = handle.instance is not None  # started above, or %hermes was used: stop what it started
        handle.remove()
        if used:
            from hermes_nb.hermes_tools import bridge

            bridge.stop()

    return undo


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
            from hermes_nb.prompts import install as install_prompts

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
    handle = add_magics(ip, "hermes_nb.mcp_magics:MCPMagics", line=("mcp",))
    plugins_loaded = False

    def discover() -> None:
        nonlocal plugins_loaded
        from hermes_nb.tools.plugins import discover_plugins

        plugins_loaded = True
        discover_plugins()

    cancel_plugins = defer_until_used(discover)
    stop_start = _start_mcp_servers()
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
            from hermes_nb.tools.plugins import unload_plugins

            unload_plugins()

    return undo


def wait_for_mcp_start() -> None:
    """Return once the configured MCP servers are handed to the background loop (not once they are up)."""
    thread = _mcp_start
    if thread is not None and thread is not threading.current_thread():
        thread.join(MCP_START_WAIT)


def _start_mcp_servers() -> Callable[[], None]:
    """Read config.yaml and start its MCP servers off the loading thread; the undo waits for that and
    cancels what it started."""
    global _mcp_start
    from hermes_nb.tools.config import config_path

    if not config_path().is_file():  # no config.yaml, no configured servers: no thread
        return lambda: None
    lock = threading.Lock()
    futures: list[concurrent.futures.Future[Any]] = []
    stopped = False

    def start() -> None:
        try:
            future = _submit_configured_servers()
        except Exception:  # boundary: a broken config is reported by %mcp and %tools doctor, not here
            log.exception("hermes_nb: starting the configured MCP servers failed")
            return
        with lock:
            if future is not None:
                futures.append(future)
                if stopped:
                    future.cancel()

    thread = threading.Thread(target=start, name="hermes-nb-mcp-start", daemon=True)
    _mcp_start = thread
    thread.start()

    def undo() -> None:
        nonlocal stopped
        thread.join(MCP_START_WAIT)
        with lock:
            stopped = True
            for future in futures:
                future.cancel()

    return undo


def _submit_configured_servers() -> concurrent.futures.Future[Any] | None:
    """Start the configured servers on the background loop; None when none are configured."""
    from hermes_nb.tools import async_bridge
    from hermes_nb.tools.mcp_client.config import load_mcp_server_configs
    from hermes_nb.tools.mcp_tool import adiscover_mcp_tools

    configs = load_mcp_server_configs()
    if not any(c.enabled for c in configs):
        return None
    future = async_bridge.submit(adiscover_mcp_tools(configs))

    def report(done: concurrent.futures.Future[Any]) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.error("hermes_nb: MCP discovery failed", exc_info=done.exception())

    future.add_done_callback(report)
    return future
