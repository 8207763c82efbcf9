"""Memory providers: a plugin's ``ctx.register_memory_provider(provider)`` (Hermes's hook name).

A provider is an object with a ``name`` and, as Hermes's ``MemoryProvider`` has them (``is_available()`` and
``initialize(session_id, hermes_home=..., platform="notebook")`` are called first when it has them):
``get_tool_schemas()`` (OpenAI function schemas, registered here under toolset ``memory-<name>``),
``handle_tool_call(tool_name, args)`` (their handler), and optionally ``prefetch(query)`` (text added to the
system prompt before a run) and ``sync(messages)`` or Hermes's ``sync_turn(user, assistant, messages=...)``
(after a run). A provider is isolated: one that fails to register, or whose ``prefetch``/``sync`` raises, is
recorded (``%tools doctor`` lists it) and the others and the run go on. The agent calls the hooks
(``hermes_nb.agent.providers``); this module is the core's record of who is registered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.load_report import clear_failures, record_failure

__all__ = ["ProviderRecord", "memory_providers", "provider_failed", "register_memory_provider",
           "unregister_memory_provider"]

log = logging.getLogger(__name__)
SOURCE = "memory-provider"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRecord:
    """A registered provider: its name, the object, its toolset and tools, and the plugin it came from."""

    name: str
    provider: Any
    toolset: str
    tools: tuple[str, ...]
    plugin: str


_providers: dict[str, ProviderRecord] = {}
_lock = threading.Lock()


def register_memory_provider(provider: Any, *, plugin: str = "", source: str = "plugin") -> ProviderRecord | None:
    """Register ``provider``'s tools under ``memory-<name>``; None (and a ``%tools doctor`` line) if it fails."""
    raw = getattr(provider, "name", None)
    name = raw() if callable(raw) else raw
    label = plugin or type(provider).__name__
    if not isinstance(name, str) or not name.strip():
        provider_failed(label, f"memory provider {type(provider).__name__} has no name")
        return None
    try:
        if hasattr(provider, "is_available") and not provider.is_available():  # Hermes's lifecycle, first
            why = provider.unavailable_reason() if hasattr(provider, "unavailable_reason") else ""
            provider_failed(name, f"unavailable{': ' + why if why else ''} (is_available() is False)")
            return None
        if hasattr(provider, "initialize"):
            from hermes_nb.tools.config import hermes_home

            provider.initialize(session_id="hermes-nb", hermes_home=str(hermes_home()), platform="notebook",
                                agent_context="primary")
        schemas = list(provider.get_tool_schemas() or ())
    except Exception as exc:  # boundary: a provider's own code
        provider_failed(name, f"setting up failed: {type(exc).__name__}: {exc}")
        return None
    toolset, tools = f"memory-{name}", []
    unregister_memory_provider(name)
    for schema in schemas:
        tool = schema.get("name") if isinstance(schema, dict) else None
        if not isinstance(tool, str) or (registry.get_entry(tool) is not None):
            provider_failed(name, f"tool {tool!r} not registered: no name, or the name is taken")
            continue
        try:
            registry.register(tool, toolset, {k: v for k, v in schema.items() if k != "name"},
                              _handler(provider, tool), emoji="🧠", source=source, origin=plugin or name)
        except ValueError as exc:
            provider_failed(name, f"tool {tool!r} not registered: {exc}")
            continue
        tools.append(tool)
    record = ProviderRecord(name=name, provider=provider, toolset=toolset, tools=tuple(tools), plugin=plugin)
    with _lock:
        _providers[name] = record
    return record


def unregister_memory_provider(name: str, *, record: ProviderRecord | None = None) -> None:
    """Remove a provider and the tools it registered; with ``record``, only that registration (not a
    newer provider of the same name)."""
    with _lock:
        if record is not None and _providers.get(name) is not record:
            return
        old = _providers.pop(name, None)
    clear_failures(SOURCE, name)
    for tool in old.tools if old else ():
        registry.deregister(tool)


def memory_providers() -> list[ProviderRecord]:
    """The providers registered now (those whose tools are still in the registry), in registration order."""
    with _lock:
        records = list(_providers.values())
    return [r for r in records if all(registry.get_entry(t) is not None for t in r.tools)]


def provider_failed(name: str, message: str) -> None:
    """Record a provider's failure for ``%tools doctor`` (and the log)."""
    log.warning("memory provider %s: %s", name, message)
    record_failure(SOURCE, name, message)


def _handler(provider: Any, tool: str) -> Callable[..., Any]:
    def handle(args: dict[str, Any], **kwargs: Any) -> Any:
        return provider.handle_tool_call(tool, args)

    handle.__name__ = f"{tool}_provider"
    return handle
