"""What the model sees and how its calls are answered (Hermes's ``model_tools`` names).

Importing this module runs built-in tool discovery once, as in Hermes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from tools.registry import registry
from tools.toolsets import resolve_toolsets

__all__ = ["check_tool_availability", "ensure_discovered", "get_tool_definitions", "handle_function_call"]

log = logging.getLogger(__name__)
_discovered = False
_discover_lock = threading.RLock()  # a registry listener may ask for definitions mid-discovery


def ensure_discovered() -> None:
    """Run built-in tool discovery once per process (later calls are free)."""
    global _discovered
    if _discovered:
        return
    with _discover_lock:
        if _discovered:
            return
        try:
            from tools.discovery import discover_builtin_tools
        except ImportError:  # discovery not present: nothing built in to find
            log.debug("tools.discovery not available")
        else:
            discover_builtin_tools()
        _discovered = True


def get_tool_definitions(
    enabled_toolsets: Iterable[str] | None = None,
    disabled_toolsets: Iterable[str] | None = None,
    quiet_mode: bool = False,
) -> list[dict[str, Any]]:
    """OpenAI tool definitions for the enabled toolsets (all when None) minus the disabled ones.

    An unknown toolset name raises ``UnknownToolsetError`` listing the known ones: a typo must not
    silently give the model zero tools.
    """
    ensure_discovered()
    if enabled_toolsets is None:
        names = set(registry.get_all_tool_names())
    else:
        names = set(resolve_toolsets(list(enabled_toolsets)))
    if disabled_toolsets:
        names -= set(resolve_toolsets(list(disabled_toolsets)))
    return registry.get_definitions(names, quiet=quiet_mode)


def handle_function_call(function_name: str, function_args: Any, task_id: str | None = None, **kw: Any) -> str:
    """Dispatch one model tool call; never raises."""
    if task_id is not None:
        kw["task_id"] = task_id
    return registry.dispatch(function_name, function_args, **kw)


def check_tool_availability() -> tuple[list[str], dict[str, str]]:
    """``(available names, {unavailable name: reason})``."""
    ensure_discovered()
    unavailable = {name: status.reason for name, status in registry.get_unavailable().items()}
    available = [n for n in registry.get_all_tool_names() if n not in unavailable]
    return available, unavailable


ensure_discovered()
