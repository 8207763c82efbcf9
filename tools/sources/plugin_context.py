"""What ``register(ctx)`` receives: Hermes's ``PluginContext``, for one plugin, bound when it loads.

- ``ctx.register_tool(...)`` takes ``registry.register``'s arguments; the tool is ``source="plugin"``,
  ``origin=<plugin>``. A name that belongs to another tool is never taken silently: without
  ``override=True`` that tool is skipped (said in ``%tools doctor``); with it, the replacement is refused
  with ``PluginToolOverrideError`` (a ``PermissionError``, as in Hermes) unless config.yaml names the
  plugin in ``plugins.allow_tool_override`` (or Hermes's ``plugins.entries.<name>.allow_tool_override``).
  A replaced tool comes back when the replacement is removed or the plugin unloads. The same holds for
  the ``registry`` the plugin's code imports (``plugin_views``), at load or any time later, and for its
  ``deregister`` and ``set_disabled``.
- ``ctx.profile_name``: ``"default"`` for ``~/.hermes_nb`` (or a home elsewhere), ``<name>`` for
  ``<root>/profiles/<name>``, ``"custom"`` for another folder inside ``~/.hermes_nb`` (Hermes's rule).
- ``ctx.llm``: ``complete(messages)`` through the model installed with ``set_plugin_llm`` (none by
  default: a clear error says so). ``ctx.inject_message`` returns ``False``: a notebook has no waiting
  conversation to put a message into (Hermes does the same outside its CLI).
- ``ctx.register_hook`` (``plugin_hooks``); ``ctx.register_memory_provider`` (``agent_loop.providers``);
  other ``ctx.register_*`` calls are accepted and listed by ``%tools doctor``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.tools.config import hermes_home
from hermes_nb.tools.errors import HermesNbError, PluginToolOverrideError
from hermes_nb.tools.registry import ToolEntry, registry
from hermes_nb.tools.sources.load_report import record_failure
from hermes_nb.tools.sources.plugin_config import PluginPolicy
from hermes_nb.tools.sources.plugin_hooks import add_hook

__all__ = ["PluginContext", "PluginLlm", "PluginLlmResult", "profile_name", "set_plugin_llm"]

log = logging.getLogger(__name__)

_llm_provider: list[Callable[..., Any]] = []


def set_plugin_llm(provider: Callable[..., Any]) -> Callable[[], None]:
    """``provider(messages, **options)`` answers plugins' ``ctx.llm.complete``: text, or a dict with
    ``text`` / ``model`` / ``provider``. Returns the undo."""
    _llm_provider.append(provider)

    def undo() -> None:
        if provider in _llm_provider:
            _llm_provider.remove(provider)

    return undo


class PluginLlmUnavailable(HermesNbError, RuntimeError):
    """``ctx.llm`` was used while no model is installed for plugins."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginLlmResult:
    """Hermes's ``PluginLlmCompleteResult`` fields that a notebook can fill."""

    text: str
    provider: str = ""
    model: str = ""
    agent_id: str = "default"
    audit: dict[str, Any] = field(default_factory=dict)


class PluginLlm:
    """``ctx.llm``: ``complete(messages, ...)`` / ``acomplete``; Hermes's structured variants are not here."""

    def __init__(self, plugin: str) -> None:
        self._plugin = plugin

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> PluginLlmResult:
        if not _llm_provider:
            raise PluginLlmUnavailable(
                f"ctx.llm: no model is set for plugins in this kernel (plugin {self._plugin!r}); "
                "hermes_nb.tools.sources.plugin_context.set_plugin_llm(provider) sets one")
        answer = _llm_provider[-1](messages, **options)
        fields = answer if isinstance(answer, dict) else {"text": str(answer)}
        return PluginLlmResult(text=str(fields.get("text", "")), provider=str(fields.get("provider", "")),
                               model=str(fields.get("model", "")),
                               audit={"plugin_id": self._plugin, "purpose": str(options.get("purpose") or "")})

    async def acomplete(self, messages: list[dict[str, Any]], **options: Any) -> PluginLlmResult:
        import asyncio

        return await asyncio.to_thread(self.complete, messages, **options)


def profile_name(home: Path | None = None) -> str:
    """Hermes's profile name for hermes_nb's home (Hermes 0.19.0's rule): the root is ``~/.hermes_nb``
    when the home is inside it, else the home itself (or the folder above its ``profiles/``). The root is
    ``default``, ``<root>/profiles/<name>`` is ``<name>``, anything else under the root ``custom``."""
    resolved = (home or hermes_home()).expanduser().resolve()
    native = (Path.home() / ".hermes_nb").resolve()
    if resolved == native or native in resolved.parents:
        root = native
    elif resolved.parent.name == "profiles":
        root = resolved.parent.parent
    else:
        root = resolved
    if resolved == root:
        return "default"
    if resolved.parent == root / "profiles":
        return resolved.name
    return "custom"


def _owner_text(entry: ToolEntry) -> str:
    return f"{entry.source} tool {entry.origin or ''} (toolset {entry.toolset!r})".replace("  ", " ")


class PluginContext:
    """The context of one plugin (``plugin``), with the policy read when it loaded."""

    def __init__(self, plugin: str, origin: str | None = None, *, policy: PluginPolicy | None = None) -> None:
        self.plugin = plugin
        self.origin = origin or plugin  # a tool file's tools name the file
        self.policy = policy or PluginPolicy()
        self.tools: list[str] = []
        self.hooks: list[str] = []
        self.undos: list[Callable[[], None]] = []  # hooks, import scopes: undone when the plugin unloads
        self.unsupported: list[str] = []  # Hermes ctx.register_* calls with no notebook meaning
        self.displaced: dict[str, ToolEntry] = {}  # tools it replaced (allowed), put back when it unloads
        self.modules: list[str] = []  # the module names its code runs under (a prefix each)
        self._llm: PluginLlm | None = None

    @property
    def profile_name(self) -> str:
        return profile_name()

    @property
    def llm(self) -> PluginLlm:
        if self._llm is None:
            self._llm = PluginLlm(self.plugin)
        return self._llm

    def inject_message(self, content: str, role: str = "user") -> bool:
        """Hermes's ``ctx.inject_message``: ``False``, nothing queued (no conversation waits for input)."""
        log.warning("plugin %s: inject_message is not supported in a notebook; the message was not sent", self.plugin)
        return False

    def dispatch_tool(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> Any:
        """Hermes's ``ctx.dispatch_tool``: call a tool the way the model would (never raises)."""
        return registry.dispatch(tool_name, args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        # Hermes's ctx has many more register_* methods (commands, middleware, skills, providers); a
        # plugin calling one still loads its tools and hooks, and %tools doctor lists what was skipped.
        if attr.startswith("register_"):
            def skipped(*args: Any, **kwargs: Any) -> None:
                self.unsupported.append(f"ctx.{attr}")

            return skipped
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Hermes's ``ctx.register_hook``: tool-call hooks run around dispatch; others are listed, not run."""
        if not isinstance(hook_name, str) or not hook_name:
            raise ValueError(f"hook name must be a non-empty string, got {hook_name!r}")
        self.undos.append(add_hook(self.plugin, hook_name, callback))
        self.hooks.append(hook_name)

    def owns(self, entry: ToolEntry) -> bool:
        return entry.source == "plugin" and entry.origin == self.origin

    def refuse(self, name: str, existing: ToolEntry, what: str) -> PluginToolOverrideError:
        message = (f"refused: plugin {self.plugin!r} may not {what} {_owner_text(existing)} {name!r}; "
                   f"name it in plugins.allow_tool_override in config.yaml to allow this")
        record_failure("plugin", f"{self.plugin}/{name}", message)
        log.error("%s", message)
        return PluginToolOverrideError(message)

    def register_memory_provider(self, provider: Any) -> None:
        """Hermes's ``ctx.register_memory_provider``: its tools under toolset ``memory-<name>``; the agent calls
        its ``prefetch`` / ``sync`` (``hermes_nb.tools.agent_loop.providers``)."""
        from hermes_nb.tools.agent_loop.providers import register_memory_provider, unregister_memory_provider

        record = register_memory_provider(provider, plugin=self.origin)
        if record is not None:
            self.tools.extend(record.tools)
            # unloading the plugin ends the provider too: one without tools would otherwise go on being
            # asked (prefetch) and told (sync) every run
            self.undos.append(lambda: unregister_memory_provider(record.name, record=record))

    def register_tool(self, name: str, toolset: str, schema: dict[str, Any], handler: Callable[..., Any],
                      *args: Any, override: bool = False, **kwargs: Any) -> ToolEntry | None:  # fmt: skip
        """Register a tool as ``source="plugin"``, ``origin=<plugin>`` (a tool file: its path).

        A name held by another tool: skipped (``None``) without ``override``; with it, refused
        (``PluginToolOverrideError``) unless the config allows this plugin to replace tools.
        """
        kwargs.pop("source", None)
        kwargs.pop("origin", None)
        existing = registry.get_entry(name)
        replacing = existing is not None and not self.owns(existing)
        if replacing and override and not self.policy.may_override(self.plugin):
            raise self.refuse(name, existing, "replace")  # type: ignore[arg-type]
        if replacing and not override:
            record_failure("plugin", f"{self.plugin}/{name}",
                           f"tool {name!r} not registered: the name belongs to {_owner_text(existing)}")  # type: ignore[arg-type]
            return None
        try:
            entry = registry.register(name, toolset, schema, handler, *args, source="plugin", origin=self.origin,
                                      override=replacing, **kwargs)
        except ValueError as exc:
            record_failure("plugin", f"{self.plugin}/{name}", f"tool {name!r} not registered: {exc}")
            return None
        if replacing and existing is not None:
            self.displaced.setdefault(name, existing)
            log.info("plugin %s replaced %s %r (allowed by plugins.allow_tool_override)",
                     self.plugin, _owner_text(existing), name)
        if name not in self.tools:
            self.tools.append(name)
        return entry

    def deregister_tool(self, name: str) -> ToolEntry | None:
        """Remove a tool this plugin registered; another's is refused unless the config allows it."""
        existing = registry.get_entry(name)
        if existing is None:
            return None
        if not self.owns(existing) and not self.policy.may_override(self.plugin):
            raise self.refuse(name, existing, "remove")
        if name in self.tools:
            self.tools.remove(name)
        removed = registry.deregister(name)
        self.put_back(name)
        return removed

    def set_disabled(self, name: str, reason: str | None) -> ToolEntry | None:
        """``registry.set_disabled`` for this plugin's own tools; another's is refused unless allowed."""
        existing = registry.get_entry(name)
        if existing is not None and not self.owns(existing) and not self.policy.may_override(self.plugin):
            raise self.refuse(name, existing, "disable or enable")
        return registry.set_disabled(name, reason)

    def put_back(self, *names: str) -> None:
        """The tools an allowed replacement displaced (``names``; every one when none given) come back when
        the replacement goes, unless something else took the name since (as Hermes main)."""
        back = {n: self.displaced.pop(n) for n in (names or list(self.displaced)) if n in self.displaced}
        if not back:
            return
        snapshot = registry.snapshot()
        for name, old in back.items():
            snapshot.setdefault(name, old)
        registry.restore(snapshot)
