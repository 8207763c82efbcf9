"""Hermes's import paths (``tools.registry``, ``model_tools``, ``toolsets``) for the code hermes_nb loads.

A Hermes-style tool file or plugin says ``from tools.registry import registry``. hermes_nb installs its
core as ``hermes_nb.tools`` and owns no top-level ``tools``, so that a notebook folder's own ``tools/``
package and hermes-agent's keep theirs. The alias is scoped: a module that hermes_nb loads (discovered
tool files, ``$HERMES_NB_HOME/tools``, plugin folders and their submodules, entry-point plugins) runs
with ``__builtins__`` whose ``__import__`` maps Hermes's names onto ours; every other module, Hermes's
own included, imports as usual.

``install_fallback()`` (used by ``%load_ext``) adds one more, weaker rule: when no ``tools`` /
``model_tools`` / ``toolsets`` exists at all, a cell's ``import tools.registry`` gets ours. A real
package of that name always wins, because the fallback finder runs last.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "ALIASED_PREFIXES",
    "CompatSourceLoader",
    "add_plugin_package",
    "alias_import",
    "builtins_for",
    "compat_builtins",
    "hermes_name",
    "install_fallback",
    "scope_package",
    "set_scope_builtins",
]

CORE = "hermes_nb.tools"
#: Hermes's top-level module names → ours.
_TOP = {"tools": CORE, "model_tools": f"{CORE}.model_tools", "toolsets": f"{CORE}.toolsets"}

#: Module-name prefixes whose modules run with the alias (submodules included).
ALIASED_PREFIXES: set[str] = {"hermes_nb_plugins", "hermes_nb_home_tools", "hermes_nb_user_tools"}


def hermes_name(name: str) -> str | None:
    """``tools.registry`` → ``hermes_nb.tools.registry``; ``None`` for a name that is not Hermes's."""
    head, dot, rest = name.partition(".")
    target = _TOP.get(head)
    if target is None:
        return None
    if head != "tools" and dot:
        return None  # model_tools / toolsets are modules, not packages
    return f"{target}.{rest}" if dot else target


#: Hermes's ``hermes_plugins.<slug>`` (a folder plugin's own package) → the module hermes_nb loaded it as.
_PLUGIN_PACKAGES: dict[str, str] = {}
_PLUGIN_NAMESPACE = "hermes_plugins"


def add_plugin_package(slug: str, module_name: str) -> Callable[[], None]:
    """Let plugin code import ``hermes_plugins.<slug>[.sub]`` (Hermes's name) as ``module_name``; the undo."""
    _PLUGIN_PACKAGES[slug] = module_name

    def undo() -> None:
        if _PLUGIN_PACKAGES.get(slug) == module_name:
            del _PLUGIN_PACKAGES[slug]

    return undo


#: Where Hermes's plugins import themselves from: ``hermes_plugins.<slug>`` (how Hermes loads a folder
#: plugin) and ``plugins.<slug>`` (a bundled plugin of the hermes-agent wheel, copied into a plugins folder).
_SELF_IMPORT_HEADS = (_PLUGIN_NAMESPACE, "plugins")


def _plugin_target(name: str) -> str | None:
    """``hermes_plugins.guard.helpers`` → ``hermes_nb_plugins.user_guard.helpers`` (``None``: not one)."""
    head, _, rest = name.partition(".")
    if head not in _SELF_IMPORT_HEADS or not rest:
        return None
    slug, dot, sub = rest.partition(".")
    real = _PLUGIN_PACKAGES.get(slug)
    if real is None:
        return None
    return f"{real}.{sub}" if dot else real


def _plugin_namespace(head: str) -> types.ModuleType:
    """What ``import hermes_plugins.x`` binds: a view whose attributes are the loaded plugin packages.

    Never put in ``sys.modules``: hermes-agent owns those names in a process that has both."""
    view = types.ModuleType(head)
    view.__path__ = []  # type: ignore[attr-defined]
    for slug, real in _PLUGIN_PACKAGES.items():
        if real in sys.modules:
            setattr(view, slug, sys.modules[real])
    return view


def alias_import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> Any:
    """``__import__`` with Hermes's absolute names mapped onto hermes_nb's core (and a plugin's own
    ``hermes_plugins.<name>`` package onto the module it was loaded as)."""
    if level == 0 and name.partition(".")[0] in _SELF_IMPORT_HEADS:
        real = _plugin_target(name)
        if real is not None:
            module = builtins.__import__(real, globals, locals, fromlist or (), 0)
            return module if fromlist else _plugin_namespace(name.partition(".")[0])
    target = hermes_name(name) if level == 0 else None
    if target is None:
        return builtins.__import__(name, globals, locals, fromlist or (), level)
    try:
        module = builtins.__import__(target, globals, locals, fromlist or (), 0)
    except ModuleNotFoundError as exc:
        if exc.name != target:
            raise
        raise ModuleNotFoundError(
            f"No module named {name!r}: hermes_nb provides Hermes's tools.registry, model_tools, toolsets "
            "and the modules of hermes_nb.tools, not the rest of hermes-agent",
            name=name,
        ) from None
    if fromlist:
        return module
    return sys.modules[_TOP[name.partition(".")[0]]]  # `import tools.registry` binds `tools`


def compat_builtins(import_func: Callable[..., Any] = alias_import) -> dict[str, Any]:
    """A ``__builtins__`` mapping whose ``__import__`` is ``import_func``."""
    return {**builtins.__dict__, "__import__": import_func}


class CompatSourceLoader(importlib.machinery.SourceFileLoader):
    """Loads a source file fresh (no bytecode cache: a same-second edit is never stale) with the alias.

    Bytecode caches are keyed on (mtime in whole seconds, size), so an edit saved within the same second
    at the same size would otherwise reload the old code.
    """

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)  # type: ignore[return-value]

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = builtins_for(module.__name__)
        super().exec_module(module)


#: Module-name prefix → the ``__builtins__`` its modules get (a plugin's: imports of the registry give
#: that plugin's own view). Set when the plugin loads, so a submodule imported later gets the same.
_SCOPED_BUILTINS: dict[str, dict[str, Any]] = {}


def set_scope_builtins(prefix: str, scoped: dict[str, Any]) -> Callable[[], None]:
    """Modules named ``prefix`` or ``prefix.*`` loaded from now on run with ``scoped``; returns the undo."""
    _SCOPED_BUILTINS[prefix] = scoped

    def undo() -> None:
        if _SCOPED_BUILTINS.get(prefix) is scoped:
            del _SCOPED_BUILTINS[prefix]

    return undo


def builtins_for(module_name: str) -> dict[str, Any]:
    """The ``__builtins__`` for a module hermes_nb loads: its plugin's (longest prefix), else the plain alias."""
    best = ""
    for prefix in _SCOPED_BUILTINS:
        if (module_name == prefix or module_name.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return _SCOPED_BUILTINS[best] if best else compat_builtins()


def _aliased(fullname: str) -> bool:
    return any(fullname == p or fullname.startswith(p + ".") for p in ALIASED_PREFIXES)


class _ScopedFinder(importlib.abc.MetaPathFinder):
    """Gives the modules under ``ALIASED_PREFIXES`` the alias (a plugin's ``from . import helpers`` too)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not _aliased(fullname):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = CompatSourceLoader(fullname, spec.origin or "")
        return spec


def _install_scoped_finder() -> None:
    if not any(isinstance(f, _ScopedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _ScopedFinder())


def scope_package(top_level: str) -> None:
    """Give an installed package (an entry-point plugin's) the alias from its next import on."""
    ALIASED_PREFIXES.add(top_level)
    _install_scoped_finder()


_install_scoped_finder()


class _ExistingModuleLoader(importlib.abc.Loader):
    """Hands out an already-imported module under another name (the very same object)."""

    def __init__(self, target: str) -> None:
        self._target = target

    def create_module(self, spec: Any) -> types.ModuleType:
        return importlib.import_module(self._target)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _FallbackFinder(importlib.abc.MetaPathFinder):
    """Top-level names: runs last, so only when nothing else provides ``tools`` / ``model_tools`` /
    ``toolsets``. Submodules (``tools.registry``) of a ``tools`` that is ours: runs first, so the path
    finder never loads a second copy of a core module under the other name."""

    def __init__(self, *, submodules: bool) -> None:
        self._submodules = submodules

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if ("." in fullname) != self._submodules:
            return None
        if self._submodules and sys.modules.get(fullname.partition(".")[0]) is not sys.modules.get(CORE):
            return None
        ours = hermes_name(fullname)
        if ours is None or importlib.util.find_spec(ours) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _ExistingModuleLoader(ours), is_package=fullname == "tools")


def install_fallback() -> Callable[[], None]:
    """Let a cell's ``import tools.registry`` reach ours when no ``tools`` exists; returns the undo."""
    first, last = _FallbackFinder(submodules=True), _FallbackFinder(submodules=False)
    sys.meta_path.insert(0, first)
    sys.meta_path.append(last)

    def undo() -> None:
        for finder in (first, last):
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n in _TOP or n.startswith("tools.")]:
            ours = sys.modules.get(hermes_name(name) or "")
            if ours is not None and sys.modules[name] is ours:
                del sys.modules[name]  # forget only the aliases we handed out

    return undo
