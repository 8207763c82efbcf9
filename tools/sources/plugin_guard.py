"""The registry's last word on a replacement made by plugin code, whatever path that code took.

A plugin's imports give it a registry view (``plugin_views``) that asks its context; code that digs the
real registry out another way (``importlib.import_module``) still reaches ``registry.register``, and there
this guard (``registry.add_register_guard``) looks at where the new handler was written: a handler from a
plugin's modules replaces only a tool that plugin owns, unless config.yaml allows it; a handler from plugin
code that is no longer loaded replaces nothing. Bound to the handler's defining module (fixed when the
function was made), as Hermes does, not to a walk of the caller's stack.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hermes_nb.tools.errors import PluginToolOverrideError

if TYPE_CHECKING:
    from hermes_nb.tools.calls.entry import ToolEntry
    from hermes_nb.tools.sources.plugin_context import PluginContext

__all__ = ["defining_module", "ownership_guard"]

#: Module-name prefixes of code hermes_nb loads for plugins (folder plugins, home tool files).
PLUGIN_MODULE_PREFIXES = ("hermes_nb_plugins.", "hermes_nb_home_tools.")


def defining_module(handler: Any) -> str:
    """The module a handler was written in (through partials, bound methods and wrappers)."""
    seen: set[int] = set()
    current = handler
    while id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, functools.partial):
            current = current.func
        elif getattr(current, "__func__", None) is not None:
            current = current.__func__
        elif isinstance(getattr(current, "__globals__", None), dict):
            return str(current.__globals__.get("__name__") or "")
        elif getattr(current, "__wrapped__", None) is not None:
            current = current.__wrapped__
        else:
            break
    return str(getattr(current, "__module__", "") or getattr(type(current), "__module__", "") or "")


def ownership_guard(contexts: Callable[[], Iterable[PluginContext]]) -> Callable[..., None]:
    """A register guard for the plugins whose live contexts ``contexts()`` gives."""

    def guard(entry: ToolEntry, old: ToolEntry | None, override: bool) -> None:
        if old is None:
            return
        module = defining_module(entry.handler)
        owner = next((c for c in contexts() if any(module == p or module.startswith(p + ".") for p in c.modules)),
                     None)
        if owner is None:
            if module.startswith(PLUGIN_MODULE_PREFIXES):
                raise PluginToolOverrideError(f"tool {entry.name!r} not replaced: its handler comes from plugin "
                                              f"code ({module}) that is no longer loaded")
            return
        if owner.owns(old) or owner.policy.may_override(owner.plugin):
            return
        raise owner.refuse(entry.name, old, "replace")

    return guard
