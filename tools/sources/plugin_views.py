"""What a plugin's code gets when it imports the registry: a view bound to that plugin when it loaded.

Every module hermes_nb loads for a plugin (its ``__init__``, its helpers, a tool file) runs with
``__builtins__`` whose ``__import__`` maps Hermes's names (``hermes_imports``) and answers
``from tools.registry import registry`` (and ``hermes_nb.tools.registry``, ``import tools``...) with this
plugin's own ``registry``: its ``register`` and ``deregister`` go through the plugin's context, which knows
which tools the plugin owns. The binding is made at load, not found by walking the stack at call time, so
a call made later (a stored callback, a thread) is still that plugin's.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_nb.tools.sources.hermes_imports import alias_import, compat_builtins

if TYPE_CHECKING:
    from hermes_nb.tools.sources.plugin_context import PluginContext

__all__ = ["RegistryView", "builtins_with_view"]


class RegistryView:
    """The ``registry`` a plugin sees: ``register`` / ``deregister`` as its context allows, the rest as is."""

    def __init__(self, real: Any, context: Callable[[], PluginContext]) -> None:
        self._real = real
        self._context = context  # the plugin's live context (raises once the plugin is unloaded)

    def register(self, name: str, toolset: str, schema: dict[str, Any], handler: Any,
                 *args: Any, **kwargs: Any) -> Any:  # fmt: skip
        """``registry.register`` for this plugin (``PluginContext.register_tool``)."""
        return self._context().register_tool(name, toolset, schema, handler, *args, **kwargs)

    def deregister(self, name: str, **kwargs: Any) -> Any:
        """Remove a tool this plugin owns; another's is refused (``PermissionError``)."""
        return self._context().deregister_tool(name)

    def set_disabled(self, name: str, reason: str | None) -> Any:
        """Disable or enable a tool this plugin owns; another's (an MCP tool held back until re-approved,
        say) is refused."""
        return self._context().set_disabled(name, reason)

    def restore(self, snapshot: Any) -> None:
        raise PermissionError("a plugin cannot restore the registry (it would replace tools it does not own)")

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real, attr)


class _ModuleView(types.ModuleType):
    """A module that answers some attributes itself and forwards the rest to the real module."""

    def __init__(self, real: types.ModuleType, overrides: Mapping[str, Any]) -> None:
        super().__init__(real.__name__, real.__doc__)
        self._real = real
        self.__dict__.update(overrides)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real, attr)


def builtins_with_view(context: Callable[[], PluginContext]) -> dict[str, Any]:
    """``__builtins__`` for one plugin (``context()`` gives its live context): Hermes's names mapped, the
    registry its view."""
    import hermes_nb
    import hermes_nb.tools as core
    import hermes_nb.tools.registry as real_module

    registry_module = _ModuleView(real_module, {"registry": RegistryView(real_module.registry, context)})
    core_package = _ModuleView(core, {"registry": registry_module})
    top_package = _ModuleView(hermes_nb, {"tools": core_package})
    views = {id(real_module): registry_module, id(core): core_package, id(hermes_nb): top_package}

    def view_import(
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> Any:
        module = alias_import(name, globals, locals, fromlist, level)
        return views.get(id(module), module)  # from tools.registry import registry; import hermes_nb.tools...

    return compat_builtins(view_import)
