"""Plugins: user and project plugin folders, Python entry points, and plain Hermes-style tool files.

- ``$HERMES_NB_HOME/plugins/<name>/`` with ``plugin.yaml`` (name, version, description) and an
  ``__init__.py`` defining ``register(ctx)``;
- ``./.hermes/plugins/<name>/``, the same, only when ``HERMES_ENABLE_PROJECT_PLUGINS`` is set;
- entry points in the groups ``hermes_agent.plugins`` and ``hermes_nb.plugins`` (a ``register(ctx)``
  function, or a module that has one);
- ``$HERMES_NB_HOME/tools/*.py`` that call ``registry.register(...)`` at module level (AST scan).

``plugins: {disabled: [name, ...]}`` in config.yaml switches any of them off. Each failure is isolated
and recorded with ``record_failure("plugin", name, ...)``.

``ctx.register_hook(name, callback)`` takes Hermes's hooks (``tools.plugin_hooks``): the tool-call hooks
run around dispatch until the plugin unloads; any other hook is accepted, not run, and listed by
``%tools doctor`` (as ``<plugin>/unsupported``) without failing the plugin. So are Hermes's other
``ctx.register_*`` calls (commands, middleware, skills, providers...), which have no notebook meaning.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.config import hermes_home
from hermes_nb.tools.errors import ConfigError
from hermes_nb.tools.registry import ToolEntry, registry
from hermes_nb.tools.sources.hermes_imports import CompatSourceLoader, scope_package
from hermes_nb.tools.sources.load_report import clear_failures, record_failure
from hermes_nb.tools.sources.plugin_hooks import SUPPORTED_HOOKS, add_hook

__all__ = [
    "ENTRY_POINT_GROUPS",
    "PluginContext",
    "PluginInfo",
    "discover_plugins",
    "loaded_plugins",
    "unload_plugins",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUPS = ("hermes_agent.plugins", "hermes_nb.plugins")
MODULE_PREFIX = "hermes_nb_plugins"


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginInfo:
    """A loaded plugin and the tools it registered."""

    name: str
    kind: str  # user / project / entry-point / tool-file
    version: str = ""
    description: str = ""
    location: str = ""
    tools: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()  # hook names it registered, run or not


_loaded: dict[str, PluginInfo] = {}
_hook_undos: dict[str, list[Callable[[], None]]] = {}  # plugin name -> undo of each hook it registered
_file_digests: dict[str, str] = {}  # tool-file name -> digest of the content that loaded


def loaded_plugins() -> list[PluginInfo]:
    """The plugins loaded by the last ``discover_plugins()``."""
    return sorted(_loaded.values(), key=lambda p: p.name)


class PluginContext:
    """What ``register(ctx)`` receives: ``ctx.register_tool(...)`` takes ``registry.register``'s arguments."""

    def __init__(self, plugin: str, origin: str | None = None) -> None:
        self.plugin = plugin
        self.origin = origin or plugin  # a tool file's tools name the file
        self.tools: list[str] = []
        self.hooks: list[str] = []
        self.hook_undos: list[Callable[[], None]] = []
        self.unsupported: list[str] = []  # Hermes ctx.register_* calls with no notebook meaning

    def dispatch_tool(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
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
        self.hook_undos.append(add_hook(self.plugin, hook_name, callback))
        self.hooks.append(hook_name)

    def register_memory_provider(self, provider: Any) -> None:
        """Hermes's ``ctx.register_memory_provider``: its tools under toolset ``memory-<name>``; the agent calls
        its ``prefetch`` / ``sync`` (``hermes_nb.tools.agent_loop.providers``)."""
        from hermes_nb.tools.agent_loop.providers import register_memory_provider

        record = register_memory_provider(provider, plugin=self.origin)
        if record is not None:
            self.tools.extend(record.tools)

    def register_tool(self, name: str, toolset: str, schema: dict[str, Any], handler: Callable[..., Any],
                      *args: Any, **kwargs: Any) -> ToolEntry | None:  # fmt: skip
        """Register a tool as ``source="plugin"``, ``origin=<plugin>`` (a tool file: its path).

        A name held by a built-in, notebook or MCP tool, or by another plugin, is never taken: that one
        tool is recorded as a failure and skipped (``None``).
        """
        kwargs.pop("source", None)
        kwargs.pop("origin", None)
        kwargs.pop("override", None)
        existing = registry.get_entry(name)
        if existing is not None and (existing.source != "plugin" or existing.origin != self.origin):
            record_failure(
                "plugin",
                f"{self.plugin}/{name}",
                f"tool {name!r} not registered: the name belongs to {existing.source} tool "
                f"{existing.origin or ''} (toolset {existing.toolset!r})".replace("  ", " "),
            )
            return None
        try:
            entry = registry.register(
                name, toolset, schema, handler, *args, source="plugin", origin=self.origin, **kwargs
            )
        except ValueError as exc:
            record_failure("plugin", f"{self.plugin}/{name}", f"tool {name!r} not registered: {exc}")
            return None
        self.tools.append(name)
        return entry


def _disabled_names() -> set[str]:
    from hermes_nb.tools.config import load_config

    try:
        section = load_config().get("plugins") or {}
    except ConfigError as exc:
        record_failure("plugin", "config.yaml", str(exc))
        return set()
    disabled = section.get("disabled") if isinstance(section, dict) else None
    return {str(n) for n in disabled} if isinstance(disabled, list) else set()


def _read_manifest(folder: Path) -> dict[str, Any]:
    import yaml

    path = folder / "plugin.yaml"
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping with name, version, description")
    return data


def _import_folder(module_name: str, folder: Path) -> types.ModuleType:
    init = folder / "__init__.py"
    if not init.exists():
        raise ImportError(f"{folder} has no __init__.py")
    if MODULE_PREFIX not in sys.modules:
        namespace = types.ModuleType(MODULE_PREFIX)
        namespace.__path__ = []
        sys.modules[MODULE_PREFIX] = namespace
    for stale in [m for m in sys.modules if m.startswith(module_name + ".")]:  # submodules of the last load
        del sys.modules[stale]
    spec = importlib.util.spec_from_file_location(
        module_name, init, loader=CompatSourceLoader(module_name, str(init)), submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {init}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # fresh on every discovery, so a reload picks up edits
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _forget(name: str) -> None:
    """Remove what an earlier load of this plugin registered (before loading it again)."""
    old = _loaded.pop(name, None)
    _file_digests.pop(name, None)
    for undo in _hook_undos.pop(name, []):
        undo()
    clear_failures("plugin", f"{name}/unsupported")
    if old is None:
        return
    origin = old.location if old.kind == "tool-file" else name
    for tool in old.tools:
        entry = registry.get_entry(tool)
        if entry is not None and entry.source == "plugin" and entry.origin == origin:
            registry.deregister(tool)


def _run_register(name: str, kind: str, target: Any, meta: dict[str, Any], location: str) -> bool:
    register = (
        target
        if callable(target) and not isinstance(target, types.ModuleType)
        else getattr(target, "register", None)
    )
    if not callable(register):
        raise TypeError(f"plugin {name!r} has no register(ctx) function")
    ctx = PluginContext(name, origin=location if kind == "tool-file" else None)
    try:
        register(ctx)
    finally:
        _hook_undos[name] = ctx.hook_undos
        _loaded[name] = PluginInfo(
            name=name,
            kind=kind,
            version=str(meta.get("version", "")),
            description=str(meta.get("description", "")),
            location=location,
            tools=tuple(ctx.tools),
            hooks=tuple(ctx.hooks),
        )
    _note_unsupported(name, ctx)
    return True


def _note_unsupported(name: str, ctx: PluginContext) -> None:
    """What a notebook never calls: one line in ``%tools doctor``; the plugin itself loaded."""
    hooks = sorted(set(ctx.hooks) - SUPPORTED_HOOKS)
    skipped = ([f"hook{'s' if len(hooks) > 1 else ''} {', '.join(hooks)}"] if hooks else [])
    skipped += sorted(set(ctx.unsupported))
    if skipped:
        record_failure("plugin", f"{name}/unsupported",
                       f"not supported in a notebook, never called: {'; '.join(skipped)} "
                       f"(the plugin's tools and tool-call hooks work)")


def _load_one(name: str, kind: str, loader: Callable[[], tuple[Any, dict[str, Any], str]]) -> bool:
    _forget(name)
    try:
        target, meta, location = loader()
        _run_register(name, kind, target, meta, location)
    except Exception as exc:  # boundary: one broken plugin never stops the others
        log.warning("plugin %s failed to load: %s: %s", name, type(exc).__name__, exc)
        detail = "".join(traceback.format_exception(exc)[-8:])
        record_failure("plugin", name, f"{type(exc).__name__}: {exc}", detail=detail)
        _forget(name)  # a half-run register(ctx) leaves nothing behind
        return False
    clear_failures("plugin", name)
    return True


def _folder_plugins(root: Path, kind: str, disabled: set[str]) -> list[str]:
    if not root.is_dir():
        return []
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            meta = _read_manifest(folder)
        except Exception as exc:  # boundary: a bad manifest is that plugin's failure
            record_failure("plugin", folder.name, f"plugin.yaml: {type(exc).__name__}: {exc}")
            continue
        name = str(meta.get("name") or folder.name)
        if name in disabled or folder.name in disabled:
            continue
        module_name = f"{MODULE_PREFIX}.{kind}_{''.join(c if c.isalnum() else '_' for c in folder.name)}"

        def loader(folder: Path = folder, meta: dict[str, Any] = meta, module_name: str = module_name) -> Any:
            return _import_folder(module_name, folder), meta, str(folder)

        if _load_one(name, kind, loader):
            out.append(name)
    return out


def _entry_point_plugins(disabled: set[str]) -> list[str]:
    from importlib.metadata import entry_points

    out = []
    for group in ENTRY_POINT_GROUPS:
        for ep in sorted(entry_points(group=group), key=lambda e: e.name):
            if ep.name in disabled:
                continue
            dist = getattr(ep, "dist", None)
            meta = {"version": getattr(dist, "version", "") or ""}

            def loader(ep: Any = ep, meta: dict[str, Any] = meta, group: str = group) -> Any:
                scope_package(ep.module.partition(".")[0])  # Hermes's import paths, for this plugin only
                return ep.load(), meta, f"{group}: {ep.value}"

            if _load_one(ep.name, "entry-point", loader):
                out.append(ep.name)
    return out


def _tool_files(disabled: set[str]) -> list[str]:
    """Load new and edited tool files, drop the tools of deleted or disabled ones; the names loaded."""
    from hermes_nb.tools.sources.plugin_files import load_tool_file, scan_tool_folder

    found, unreadable = scan_tool_folder(hermes_home() / "tools")
    current = {f.name: f for f in found if f.registers and f.name not in disabled}
    for name in [n for n, info in _loaded.items() if info.kind == "tool-file" and n not in current]:
        _forget(name)  # deleted, disabled, unreadable, or no longer registers anything
    for name, message in unreadable.items():
        record_failure("plugin", name, message)
    out = []
    for name, tool_file in current.items():
        old = _loaded.get(name)
        if old is not None and old.kind != "tool-file":
            record_failure("plugin", name, f"tool file {tool_file.path} not loaded: plugin {name!r} exists")
            continue
        if old is not None and _file_digests.get(name) == tool_file.digest:
            out.append(name)  # unchanged since it loaded: its tools stay as they are
            continue

        def loader(tool_file: Any = tool_file) -> Any:
            return _ToolFileTarget(tool_file=tool_file, run=load_tool_file), {}, str(tool_file.path)

        if _load_one(name, "tool-file", loader):
            _file_digests[name] = tool_file.digest
            out.append(name)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _ToolFileTarget:
    """A tool file as a ``register(ctx)``: running the file registers through ``ctx``."""

    tool_file: Any
    run: Callable[..., Any]

    def __call__(self, ctx: PluginContext) -> None:
        self.run(self.tool_file, ctx.register_tool)


def discover_plugins() -> list[str]:
    """Load every enabled plugin (user, project, entry points, tool files); the names loaded."""
    disabled = _disabled_names()
    for name in [n for n in _loaded if n in disabled]:
        _forget(name)
    loaded = _folder_plugins(hermes_home() / "plugins", "user", disabled)
    if os.environ.get("HERMES_ENABLE_PROJECT_PLUGINS"):
        loaded += _folder_plugins(Path.cwd() / ".hermes" / "plugins", "project", disabled)
    loaded += _entry_point_plugins(disabled)
    loaded += _tool_files(disabled)
    return loaded


def unload_plugins() -> None:
    """Remove the tools every loaded plugin (tool files included) registered. Idempotent."""
    for name in list(_loaded):
        _forget(name)
