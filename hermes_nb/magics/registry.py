"""Adding and removing the extension's magics: cheap stand-ins at load, the real magics on first use.

``add_magics(ip, "hermes_nb.magics.tools:ToolMagics", line=("tools",), cell=("tool",))`` puts a
:class:`LazyMagic` under each name without importing the module. The first call, ``%tools?`` or
``%config`` imports it, makes the one ``Magics`` instance (which joins ``ip.configurables``) and hands
over. ``remove()`` takes out exactly the names it added, and only while the table still holds them:
an extension that registered the same name afterwards keeps it.
"""

from __future__ import annotations

import importlib
import threading
import types
from collections.abc import Callable
from typing import Any

from traitlets.config import Configurable

__all__ = ["LazyMagic", "MagicsHandle", "add_magics", "resolve_on_config"]


class LazyMagic:
    # No class docstring: ``__doc__`` below is the real magic's, so ``%tools?`` shows its usage.
    __slots__ = ("_handle", "_kind", "_name")

    def __init__(self, handle: MagicsHandle, kind: str, name: str) -> None:
        self._handle, self._kind, self._name = handle, kind, name

    def real(self) -> Any:
        """The real magic (a bound method); imports its module the first time."""
        return self._handle.resolve().magics[self._kind][self._name]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.real()(*args, **kwargs)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.real().__doc__

    @property
    def __wrapped__(self) -> Any:  # `%tools??` and IPython's inspector follow it to the source
        return self.real()

    def __getattr__(self, attr: str) -> Any:  # what IPython reads off a magic (needs_local_scope, ...)
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self.real(), attr)

    def __repr__(self) -> str:
        state = "loaded" if self._handle.instance is not None else "not imported yet"
        return f"<hermes_nb magic {self._name} from {self._handle.spec} ({state})>"


class _ResolveOnConfig(Configurable):
    """Sits in ``ip.configurables``: ``%config`` asks every configurable's class for its config traits,
    and that question runs ``callback`` (which makes the real configurables) before it lists them."""

    callback: Callable[[], Any] = staticmethod(lambda: None)  # set per subclass by resolve_on_config

    @classmethod
    def class_traits(cls, **metadata: Any) -> Any:
        if metadata.get("config"):
            cls.callback()
        return super().class_traits(**metadata)  # none: this stand-in is never listed itself


def resolve_on_config(ip: Any, callback: Callable[[], Any]) -> Callable[[], None]:
    """Run ``callback`` when ``%config`` looks at the configurables (so a deferred ``Configurable`` can be
    made in time, and ``%config Prompts.timeout = 60`` works before first use); returns the undo."""
    configurables = getattr(ip, "configurables", None)
    if configurables is None:
        return lambda: None
    hook = type("_ResolveOnConfigHook", (_ResolveOnConfig,), {"callback": staticmethod(callback)})()
    configurables.append(hook)

    def undo() -> None:
        configurables[:] = [c for c in configurables if c is not hook]

    return undo


class MagicsHandle:
    """The magics one ``add_magics`` call added; ``remove()`` is its undo (idempotent)."""

    def __init__(self, ip: Any, spec: str, names: dict[str, tuple[str, ...]]) -> None:
        self.ip, self.spec, self.names = ip, spec, names
        self.instance: Any = None
        self.stubs: dict[tuple[str, str], LazyMagic] = {}
        self._lock = threading.RLock()
        self._unhook: Callable[[], None] = lambda: None
        self._removed = False

    def resolve(self) -> Any:
        """The real Magics instance, made once (it registers itself in ``ip.configurables``)."""
        with self._lock:
            if self.instance is None:
                if self._removed:
                    raise RuntimeError(f"{self.spec} was unloaded")
                module_name, _, class_name = self.spec.partition(":")
                cls = getattr(importlib.import_module(module_name), class_name)
                self.instance = cls(shell=self.ip)
                self.ip.magics_manager.registry[class_name] = self.instance  # what register_magics records
            return self.instance

    def remove(self) -> None:
        """Take out the names this handle added that are still ours, and its instance."""
        with self._lock:
            if self._removed:
                return
            self._removed = True
            tables = self.ip.magics_manager.magics
            for (kind, name), stub in self.stubs.items():
                current = tables.get(kind, {}).get(name)
                # never resolve another extension's lazy magic: compare identities only
                ours = current is stub or (
                    isinstance(current, types.MethodType) and self.instance is not None
                    and current.__self__ is self.instance
                )
                if ours:
                    del tables[kind][name]
            class_name = self.spec.partition(":")[2]
            registry = self.ip.magics_manager.registry
            if self.instance is not None and class_name in registry and registry.get(class_name) is self.instance:
                del registry[class_name]
            self._unhook()
            if self.instance is not None and hasattr(self.ip, "configurables"):
                self.ip.configurables[:] = [c for c in self.ip.configurables if c is not self.instance]

    def _install(self, *, configurable: bool) -> None:
        tables = self.ip.magics_manager.magics
        for kind, names in self.names.items():
            for name in names:
                stub = LazyMagic(self, kind, name)
                tables[kind][name] = stub
                self.stubs[(kind, name)] = stub
        if configurable:
            self._unhook = resolve_on_config(self.ip, self._resolve_unless_removed)

    def _resolve_unless_removed(self) -> None:
        with self._lock:
            if not self._removed:
                self.resolve()


def add_magics(ip: Any, spec: str, *, line: tuple[str, ...] = (), cell: tuple[str, ...] = (),
               configurable: bool = False) -> MagicsHandle:
    """Register stand-ins for ``module:MagicsClass``'s magics; the module is imported on first use.

    ``configurable``: the class has ``%config`` traits, so ``%config`` makes the instance first.
    """
    handle = MagicsHandle(ip, spec, {"line": tuple(line), "cell": tuple(cell)})
    handle._install(configurable=configurable)
    return handle
