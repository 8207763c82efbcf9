"""The toolset selection: which toolsets the model sees. The picker edits it; the agent reads it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from traitlets import Bool, HasTraits, List, Unicode

__all__ = ["Selection", "current", "enabled_toolsets", "offered_by", "offered_toolsets", "select", "selection"]


class Selection(HasTraits):
    """Observable selection: ``mode`` 'all' means every toolset, 'list' means exactly ``enabled``.

    (Subtracting toolsets is the agent's own ``disabled_toolsets`` argument, not part of the picker's state.)
    """

    enabled = List(Unicode(), help="Enabled toolset names; [] with mode 'all' means everything.")
    mode = Unicode("all", help="'all' (every toolset) or 'list' (only `enabled`).")
    chosen = Bool(False, help="Whether the person chose (the picker, %toolsets, select()) since the process began.")

    def select(self, names: Iterable[str] | None) -> None:
        """Enable exactly these toolsets (``None`` or ``["all"]`` selects every toolset)."""
        names = None if names is None else list(dict.fromkeys([names] if isinstance(names, str) else names))
        self.chosen = True
        if names is None or any(n in ("all", "*") for n in names):
            self.mode, self.enabled = "all", []
            return
        from hermes_nb.tools.errors import UnknownToolsetError
        from hermes_nb.tools.toolsets import get_all_toolsets, validate_toolset

        bad = [n for n in names if not validate_toolset(n)]
        if bad:
            known = ", ".join(sorted(get_all_toolsets()))
            raise UnknownToolsetError(f"unknown toolset {bad[0]!r}; known toolsets: {known}, all")
        self.enabled = names
        self.mode = "list"

    def enabled_toolsets(self) -> list[str] | None:
        """What ``get_tool_definitions(enabled_toolsets=...)`` takes: ``None`` means all."""
        return None if self.mode == "all" else list(self.enabled)

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` whenever the selection changes. Returns an undo."""

        def handler(_change: object) -> None:
            callback()

        self.observe(handler, names=["enabled", "mode"])
        return lambda: self.unobserve(handler, names=["enabled", "mode"])


#: The one selection of this process (module state survives ``%reload_ext``: only hermes_nb/__init__ reloads).
selection = Selection()


def select(names: Iterable[str] | None) -> None:
    """Set the toolsets the model sees; the picker widget follows."""
    selection.select(names)


def enabled_toolsets() -> list[str] | None:
    return selection.enabled_toolsets()


def offered_toolsets() -> list[str] | None:
    """What an agent with no toolsets of its own offers: the selection; outside a notebook, when nobody
    chose, only the toolsets that hold the person's own tools (``@tool``/``%%tool``, plugins, MCP, Hermes's),
    none of the built-ins, so ``terminal`` and ``python`` are offered only when asked for (two turns of a small
    local model cost 2 829 prompt tokens with the eight built-ins, ~520 with the one toolset needed)."""
    from hermes_nb import _state

    if selection.chosen or _state.shell is not None:
        return selection.enabled_toolsets()
    from hermes_nb.tools.model_tools import registry

    return sorted(name for name, tools in registry.get_toolsets().items()
                  if any((entry := registry.get_entry(tool)) is not None and entry.source != "builtin"
                         for tool in tools))


def offered_by(own: list[str] | None) -> list[str] | None:
    """The toolsets of an agent whose own list is ``own`` (None: all): that list, else ``offered_toolsets()``
    as its loop offers them, so the run's system prompt (memory), its providers and a sub-agent's toolsets
    follow the tools it is sent."""
    enabled = own if own is not None else offered_toolsets()
    return None if enabled is None or any(n in ("all", "*") for n in enabled) else list(enabled)


def current() -> Selection:
    return selection
