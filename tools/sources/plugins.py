"""Plugins: user and project plugin folders, Python entry points, and plain Hermes-style tool files.

- ``$HERMES_NB_HOME/plugins/<name>/`` with ``plugin.yaml`` (name, version, description) and an
  ``__init__.py`` defining ``register(ctx)``; its own modules import as ``from . import helpers`` or, as
  in Hermes, ``hermes_plugins.<name>.helpers`` (an alias for that plugin's code only); a category folder
  ``plugins/<category>/<name>/`` (no manifest of its own) holds plugins named ``<category>/<name>``;
- ``./.hermes/plugins/<name>/``, the same, only when ``HERMES_ENABLE_PROJECT_PLUGINS`` is set;
- entry points in the groups ``hermes_agent.plugins`` and ``hermes_nb.plugins`` (a ``register(ctx)``
  function, or a module that has one);
- ``$HERMES_NB_HOME/tools/*.py`` and ``tools/<name>/tool.py`` that call ``registry.register(...)`` at
  module level (AST scan).

``plugins.enabled`` (an allowlist) and ``plugins.disabled`` in config.yaml apply to every source
(``plugin_config``); without either key everything found loads. ``found_plugins()`` says what each
discovery found and why each one did or did not load (``%plugins``). Each failure is isolated and
recorded with ``record_failure("plugin", name, ...)``. What ``register(ctx)`` can do is
``plugin_context``; which tools a plugin may replace is decided there, for every path its code takes.
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
from hermes_nb.tools.errors import ConfigError, PluginToolOverrideError
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.hermes_imports import (
    CompatSourceLoader,
    add_plugin_package,
    scope_package,
    set_scope_builtins,
)
from hermes_nb.tools.sources.load_report import clear_failures, failures, record_failure
from hermes_nb.tools.sources.plugin_config import PluginPolicy, plugin_policy
from hermes_nb.tools.sources.plugin_context import PluginContext
from hermes_nb.tools.sources.plugin_guard import ownership_guard
from hermes_nb.tools.sources.plugin_hooks import SUPPORTED_HOOKS
from hermes_nb.tools.sources.plugin_views import builtins_with_view

__all__ = [
    "ENTRY_POINT_GROUPS",
    "FoundPlugin",
    "PluginContext",
    "PluginInfo",
    "discover_plugins",
    "discovered_home",
    "found_plugins",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class FoundPlugin:
    """A plugin the last discovery found: ``state`` is loaded, disabled, not enabled or failed."""

    name: str
    kind: str
    state: str
    location: str = ""
    reason: str = ""


_loaded: dict[str, PluginInfo] = {}
_contexts: dict[str, PluginContext] = {}  # plugin name -> its live context (tools, hooks, undos)
_file_digests: dict[str, str] = {}  # tool-file name -> digest of the content that loaded
_found: dict[str, FoundPlugin] = {}


def loaded_plugins() -> list[PluginInfo]:
    """The plugins loaded by the last ``discover_plugins()``."""
    return sorted(_loaded.values(), key=lambda p: p.name)


def found_plugins() -> list[FoundPlugin]:
    """Every plugin the last ``discover_plugins()`` found, loaded or not, with why."""
    return sorted(_found.values(), key=lambda p: p.name)


def discovered_home() -> Path | None:
    """The home folder the last ``discover_plugins()`` read (``None`` after ``unload_plugins()``)."""
    return _home[0] if _home else None


_home: list[Path] = []


def _live_context(name: str) -> Callable[[], PluginContext]:
    """What a plugin's registry view asks each time: its context, while the plugin is loaded."""

    def context() -> PluginContext:
        ctx = _contexts.get(name)
        if ctx is None:
            raise PluginToolOverrideError(f"plugin {name!r} is not loaded; its registry calls are refused")
        return ctx

    return context


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


def _import_folder(module_name: str, folder: Path, ctx: PluginContext, slug: str) -> types.ModuleType:
    init = folder / "__init__.py"
    if not init.exists():
        raise ImportError(f"{folder} has no __init__.py")
    if MODULE_PREFIX not in sys.modules:
        namespace = types.ModuleType(MODULE_PREFIX)
        namespace.__path__ = []
        sys.modules[MODULE_PREFIX] = namespace
    for stale in [m for m in sys.modules if m.startswith(module_name + ".")]:  # submodules of the last load
        del sys.modules[stale]
    ctx.modules.append(module_name)
    ctx.undos.append(set_scope_builtins(module_name, builtins_with_view(_live_context(ctx.plugin))))
    ctx.undos.append(add_plugin_package(slug, module_name))
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
    _loaded.pop(name, None)
    _file_digests.pop(name, None)
    ctx = _contexts.pop(name, None)
    clear_failures("plugin", f"{name}/unsupported")
    if ctx is None:
        return
    for undo in reversed(ctx.undos):
        undo()
    for tool in ctx.tools:
        entry = registry.get_entry(tool)
        if entry is not None and ctx.owns(entry):
            registry.deregister(tool)
    ctx.put_back()  # what an allowed override replaced comes back, unless something else took the name


def _run_register(ctx: PluginContext, kind: str, target: Any, meta: dict[str, Any], location: str) -> None:
    register = (
        target
        if callable(target) and not isinstance(target, types.ModuleType)
        else getattr(target, "register", None)
    )
    if not callable(register):
        raise TypeError(f"plugin {ctx.plugin!r} has no register(ctx) function")
    try:
        register(ctx)
    finally:
        _loaded[ctx.plugin] = PluginInfo(
            name=ctx.plugin,
            kind=kind,
            version=str(meta.get("version", "")),
            description=str(meta.get("description", "")),
            location=location,
            tools=tuple(ctx.tools),
            hooks=tuple(ctx.hooks),
        )
    _note_unsupported(ctx)


def _note_unsupported(ctx: PluginContext) -> None:
    """What a notebook never calls: one line in ``%tools doctor``; the plugin itself loaded."""
    hooks = sorted(set(ctx.hooks) - SUPPORTED_HOOKS)
    skipped = ([f"hook{'s' if len(hooks) > 1 else ''} {', '.join(hooks)}"] if hooks else [])
    skipped += sorted(set(ctx.unsupported))
    if skipped:
        record_failure("plugin", f"{ctx.plugin}/unsupported",
                       f"not supported in a notebook, never called: {'; '.join(skipped)} "
                       f"(the plugin's tools and tool-call hooks work)")


Loader = Callable[[PluginContext], tuple[Any, dict[str, Any], str]]


def _load_one(name: str, kind: str, location: str, policy: PluginPolicy, loader: Loader,
              origin: str | None = None) -> bool:  # fmt: skip
    _forget(name)
    for stale in failures():  # what the last load of this plugin left in %tools doctor (a refused tool...)
        if stale.source == "plugin" and stale.name.startswith(f"{name}/"):
            clear_failures("plugin", stale.name)
    ctx = PluginContext(name, origin=origin, policy=policy)
    _contexts[name] = ctx
    try:
        target, meta, location = loader(ctx)
        _run_register(ctx, kind, target, meta, location)
    except Exception as exc:  # boundary: one broken plugin never stops the others
        log.warning("plugin %s failed to load: %s: %s", name, type(exc).__name__, exc)
        detail = "".join(traceback.format_exception(exc)[-8:])
        record_failure("plugin", name, f"{type(exc).__name__}: {exc}", detail=detail)
        _forget(name)  # a half-run register(ctx) leaves nothing behind
        _found[name] = FoundPlugin(name=name, kind=kind, state="failed", location=location,
                                   reason=f"{type(exc).__name__}: {exc}")
        return False
    clear_failures("plugin", name)
    _found[name] = FoundPlugin(name=name, kind=kind, state="loaded", location=location)
    return True


def _skip(name: str, kind: str, location: str, policy: PluginPolicy, *names: str) -> None:
    _forget(name)
    state = "disabled" if any(n in policy.disabled for n in (name, *names)) else "not enabled"
    _found[name] = FoundPlugin(name=name, kind=kind, state=state, location=location,
                               reason=policy.why_not(name, *names))


def _plugin_folders(root: Path) -> list[tuple[str, Path]]:
    """``(key, folder)`` for each plugin under ``root``, in Hermes's two layouts: ``<root>/<name>/`` (key
    ``name``) and a category ``<root>/<category>/<name>/plugin.yaml`` whose own folder has no manifest
    (key ``category/name``, as Hermes's ``plugins.enabled`` names it)."""
    out: list[tuple[str, Path]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        members = [] if (folder / "plugin.yaml").exists() else sorted(
            p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")) and (p / "plugin.yaml").exists())
        out += [(f"{folder.name}/{p.name}", p) for p in members] if members else [(folder.name, folder)]
    return out


def _folder_plugins(root: Path, kind: str, policy: PluginPolicy) -> list[str]:
    if not root.is_dir():
        return []
    out = []
    for key, folder in _plugin_folders(root):
        try:
            meta = _read_manifest(folder)
        except Exception as exc:  # boundary: a bad manifest is that plugin's failure
            record_failure("plugin", key, f"plugin.yaml: {type(exc).__name__}: {exc}")
            _found[key] = FoundPlugin(name=key, kind=kind, state="failed", location=str(folder),
                                      reason=f"plugin.yaml: {exc}")
            continue
        name = key if "/" in key else str(meta.get("name") or folder.name)  # a category plugin: its key
        if not policy.allows(name, key, str(meta.get("name") or "")):
            _skip(name, kind, str(folder), policy, key)
            continue
        slug = key.replace("/", "__").replace("-", "_")  # Hermes's hermes_plugins.<slug>
        module_name = f"{MODULE_PREFIX}.{kind}_{''.join(c if c.isalnum() else '_' for c in slug)}"

        def loader(ctx: PluginContext, folder: Path = folder, meta: dict[str, Any] = meta,
                   module_name: str = module_name, slug: str = slug) -> Any:  # fmt: skip
            return _import_folder(module_name, folder, ctx, slug), meta, str(folder)

        if _load_one(name, kind, str(folder), policy, loader):
            out.append(name)
    return out


def _entry_point_plugins(policy: PluginPolicy) -> list[str]:
    from importlib.metadata import entry_points

    out = []
    for group in ENTRY_POINT_GROUPS:
        for ep in sorted(entry_points(group=group), key=lambda e: e.name):
            location = f"{group}: {ep.value}"
            if not policy.allows(ep.name):
                _skip(ep.name, "entry-point", location, policy)
                continue
            dist = getattr(ep, "dist", None)
            meta = {"version": getattr(dist, "version", "") or ""}

            def loader(ctx: PluginContext, ep: Any = ep, meta: dict[str, Any] = meta, location: str = location) -> Any:
                top = ep.module.partition(".")[0]
                scope_package(top)  # Hermes's import paths, for this plugin only
                ctx.modules.append(top)
                ctx.undos.append(set_scope_builtins(top, builtins_with_view(_live_context(ctx.plugin))))
                return ep.load(), meta, location

            if _load_one(ep.name, "entry-point", location, policy, loader):
                out.append(ep.name)
    return out


def _tool_files(policy: PluginPolicy) -> list[str]:
    """Load new and edited tool files, drop the tools of deleted or disabled ones; the names loaded."""
    from hermes_nb.tools.sources.plugin_files import load_tool_file, scan_tool_folder

    found, unreadable = scan_tool_folder(hermes_home() / "tools")
    current = {f.name: f for f in found if f.registers}
    for name, tool_file in list(current.items()):
        if not policy.allows(name):
            _skip(name, "tool-file", str(tool_file.path), policy)
            del current[name]
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
            _found[name] = FoundPlugin(name=name, kind="tool-file", state="loaded", location=str(tool_file.path))
            out.append(name)  # unchanged since it loaded: its tools stay as they are
            continue

        def loader(ctx: PluginContext, tool_file: Any = tool_file) -> Any:
            return _ToolFileTarget(tool_file=tool_file, run=load_tool_file), {}, str(tool_file.path)

        if _load_one(name, "tool-file", str(tool_file.path), policy, loader, origin=str(tool_file.path)):
            _file_digests[name] = tool_file.digest
            out.append(name)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _ToolFileTarget:
    """A tool file as a ``register(ctx)``: running the file registers through ``ctx``."""

    tool_file: Any
    run: Callable[..., Any]

    def __call__(self, ctx: PluginContext) -> None:
        from hermes_nb.tools.sources.plugin_files import TOOL_FILE_PREFIX

        ctx.modules.append(f"{TOOL_FILE_PREFIX}.{self.tool_file.name}")
        self.run(self.tool_file, ctx, _live_context(ctx.plugin))


_guard_undo: list[Callable[[], None]] = []  # installed once, on the first discovery, for the process's life


def discover_plugins() -> list[str]:
    """Load every enabled plugin (user, project, entry points, tool files); the names loaded."""
    try:
        policy = plugin_policy()
    except ConfigError as exc:  # fail closed: a config that cannot be read enables nothing
        record_failure("plugin", "config.yaml", f"{exc}; no plugin loaded")
        policy = PluginPolicy(enabled=frozenset())
    else:
        clear_failures("plugin", "config.yaml")
    for name in [n for n in _loaded if not policy.allows(n)]:
        _forget(name)
    _found.clear()
    _home[:] = [hermes_home()]
    if not _guard_undo:
        _guard_undo.append(registry.add_register_guard(ownership_guard(lambda: list(_contexts.values()))))
    loaded = _folder_plugins(hermes_home() / "plugins", "user", policy)
    if os.environ.get("HERMES_ENABLE_PROJECT_PLUGINS"):
        loaded += _folder_plugins(Path.cwd() / ".hermes" / "plugins", "project", policy)
    loaded += _entry_point_plugins(policy)
    loaded += _tool_files(policy)
    return loaded


def unload_plugins() -> None:
    """Remove the tools every loaded plugin (tool files included) registered. Idempotent."""
    for name in list(_contexts) + list(_loaded):
        _forget(name)
    _found.clear()
    _home.clear()  # the ownership guard stays: plugin code (a stored callback) can outlive its plugin
