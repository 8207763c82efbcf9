"""Work that waits for the registry's first use: built-in tool discovery, then what was deferred to it.

The first listing, look-up, registration or call on the process-wide registry runs
``ensure_discovered()`` before it answers. That is done by swapping the one registry object's class for
a subclass whose methods discover first and then swap it back, so a used registry costs nothing extra
and the registry module needs no hook of its own. This module imports nothing heavy: ``%load_ext``
defers plugins and prompts here without importing the registry; if the registry is not imported yet,
it is armed the moment it is.
"""

from __future__ import annotations

import importlib.abc
import inspect
import logging
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["arm", "defer_until_used", "ensure_discovered"]

log = logging.getLogger(__name__)

_REGISTRY_MODULE = "hermes_nb.tools.registry"
# Adding listeners and hooks is not a use: the picker and the batch layer add them before any read.
_NOT_USES = frozenset({"add_listener", "add_call_hook", "add_batch_hook"})

_lock = threading.RLock()  # a registry listener may ask for definitions mid-discovery
_discovered = False
_busy = False  # set while the lock's holder runs: its own re-entrant uses go straight through
_pending: list[Callable[[], None]] = []
_armed_classes: dict[type, type] = {}
_watching = False


def ensure_discovered() -> None:
    """Run built-in tool discovery once per process, then the deferred set-ups (later calls are free)."""
    global _discovered, _busy
    if _discovered and not _pending:
        return
    with _lock:
        if _busy or (_discovered and not _pending):
            return
        _busy = True
        try:
            if not _discovered:
                from hermes_nb.tools.sources.discovery import discover_builtin_tools

                discover_builtin_tools()
                _discovered = True
            while _pending:
                callback = _pending.pop(0)
                try:
                    callback()
                except Exception:  # boundary: one failed set-up (a plugin folder) must not stop the rest
                    log.exception("deferred set-up %r failed", callback)
        finally:
            _busy = False
            _disarm()


def defer_until_used(callback: Callable[[], None]) -> Callable[[], None]:
    """Run ``callback`` once, just before the registry's next use (after built-in discovery).

    Returns an undo that cancels it if it has not run yet.
    """
    with _lock:
        _pending.append(callback)
    arm()

    def undo() -> None:
        with _lock:
            if callback in _pending:
                _pending.remove(callback)

    return undo


def arm() -> None:
    """Make the registry's next use run :func:`ensure_discovered` first (now, or once it is imported)."""
    module = sys.modules.get(_REGISTRY_MODULE)
    if module is not None and hasattr(module, "registry"):
        _swap_in(module)
    else:
        _watch_import()


def _swap_in(module: ModuleType) -> None:
    reg = module.registry
    plain = module.ToolRegistry
    if type(reg) is plain and (_pending or not _discovered):
        reg.__class__ = _undiscovered(plain)


def _disarm() -> None:
    module = sys.modules.get(_REGISTRY_MODULE)
    reg = getattr(module, "registry", None)
    if reg is not None and type(reg) in _armed_classes.values():
        reg.__class__ = type(reg).__bases__[0]


def _first_use(plain: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        ensure_discovered()
        return plain(self, *args, **kwargs)

    method.__name__, method.__doc__ = plain.__name__, plain.__doc__
    return method


def _undiscovered(plain: type) -> type:
    """``plain`` with every use (public method, ``in``, ``len``) running discovery first."""
    if plain not in _armed_classes:
        methods = {}
        for name in dir(plain):
            attr = inspect.getattr_static(plain, name)
            public = not name.startswith("_") or name in ("__contains__", "__len__", "__iter__")
            if inspect.isfunction(attr) and public and name not in _NOT_USES:
                methods[name] = _first_use(attr)
        _armed_classes[plain] = type(f"Undiscovered{plain.__name__}", (plain,), methods)
    return _armed_classes[plain]


class _ArmOnImport(importlib.abc.MetaPathFinder):
    """One-shot: arms the registry right after its module runs, for whoever imports it first."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _REGISTRY_MODULE:
            return None
        _stop_watching()
        for finder in sys.meta_path:  # the spec the import would have found without us
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module: ModuleType) -> None:
            run(module)
            _swap_in(module)

        loader.exec_module = exec_module  # type: ignore[union-attr]  # this module's own loader object
        return spec


_finder = _ArmOnImport()


def _watch_import() -> None:
    global _watching
    with _lock:
        if not _watching:
            _watching = True
            sys.meta_path.insert(0, _finder)


def _stop_watching() -> None:
    global _watching
    with _lock:
        _watching = False
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
