"""The toolset selection: which toolsets the model sees. The picker edits it; the agent reads it.

It starts at the default, the same in a notebook and in plain Python: the person's own toolsets (their
``%%tool``/``@tool`` tools, plugins they enabled, MCP servers they added, Hermes's tools once they ran
``%hermes on``), followed live as those come and go, plus whatever config.yaml's ``toolsets: {default: [...]}``
ticks. The built-ins (``file``, ``terminal``, ``code``, ``code_execution``, ``delegation``, ``memory``,
``session_search``, ...) are offered only when the person ticks them: measured, a notebook that offered every
toolset sent the embedded model 15 tools (3 390 of its 4 096 tokens), ``terminal`` and ``write_file`` among them,
for "What is 100 C in F?".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from traitlets import Bool, HasTraits, List, Unicode

from hermes_nb.tools.errors import ConfigError, OneLineError

__all__ = ["DefaultToolsetsError", "Selection", "configured_default", "current", "default_line", "enabled_toolsets",
           "offered_by", "offered_toolsets", "own_toolsets", "select", "selection"]

#: The word that selects the default again (``select(["default"])``, ``%toolsets default``).
DEFAULT = "default"
_ALL = ("all", "*")


class DefaultToolsetsError(OneLineError, ConfigError):
    """config.yaml's ``toolsets:`` block does not fit; the one line names the key and the fix."""


class Selection(HasTraits):
    """Observable selection: ``mode`` 'default' is the person's own toolsets plus config.yaml's
    ``toolsets.default`` (computed afresh at every read), 'all' every toolset, 'list' exactly ``enabled``.

    (Subtracting toolsets is the agent's own ``disabled_toolsets`` argument, not part of the picker's state.)
    """

    enabled = List(Unicode(), help="Enabled toolset names (mode 'list' only).")
    mode = Unicode(DEFAULT, help="'default' (your own toolsets and config's toolsets.default), 'all', or 'list'.")
    hermes_tools = Bool(False, help="Hermes's tools count as the person's own: they ran %hermes on (the automatic "
                                    "read at load lists them in the picker, unticked).")

    def select(self, names: Iterable[str] | None) -> None:
        """Enable exactly these toolsets (``None`` or ``["all"]``: every toolset; ``["default"]``: the default)."""
        names = None if names is None else list(dict.fromkeys(names))
        if names is None or any(n in _ALL for n in names):
            self.mode, self.enabled = "all", []
            return
        from hermes_nb.tools.errors import UnknownToolsetError
        from hermes_nb.tools.toolsets import get_all_toolsets, validate_toolset

        if DEFAULT in names and not validate_toolset(DEFAULT):
            if len(names) > 1:
                raise UnknownToolsetError("'default' stands alone (your own toolsets and config.yaml's "
                                          "toolsets.default); select it, then tick more")
            self.use_default()
            return
        bad = [n for n in names if not validate_toolset(n)]
        if bad:
            known = ", ".join(sorted(get_all_toolsets()))
            raise UnknownToolsetError(f"unknown toolset {bad[0]!r}; known toolsets: {known}, all, default")
        self.enabled = names
        self.mode = "list"

    def use_default(self) -> None:
        """Back to the default: the person's own toolsets plus config.yaml's ``toolsets.default``."""
        self.mode, self.enabled = DEFAULT, []

    def enabled_toolsets(self) -> list[str] | None:
        """What ``get_tool_definitions(enabled_toolsets=...)`` takes: ``None`` means all. In mode 'default' a
        config.yaml ``toolsets:`` block that does not fit raises ``DefaultToolsetsError``."""
        if self.mode == "all":
            return None
        if self.mode == "list":
            return list(self.enabled)
        ticked = configured_default()
        if ticked is None:
            return None
        own = own_toolsets(hermes=self.hermes_tools)
        return own + [n for n in ticked if n not in own]

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` whenever the selection changes. Returns an undo."""
        names = ["enabled", "mode", "hermes_tools"]

        def handler(_change: object) -> None:
            callback()

        self.observe(handler, names=names)
        return lambda: self.unobserve(handler, names=names)


def own_toolsets(reg: Any = None, *, hermes: bool = False) -> list[str]:
    """The toolsets every registered tool of which is the person's own (``source`` not ``"builtin"``; Hermes's
    only with ``hermes``), sorted. A toolset that mixes in a built-in tool is a built-in one: offering it would
    offer that built-in unticked."""
    if reg is None:
        from hermes_nb.tools.model_tools import registry as reg
    theirs = {"builtin"} if hermes else {"builtin", "hermes"}
    kinds: dict[str, bool] = {}
    for entry in reg.entries():
        kinds[entry.toolset] = kinds.get(entry.toolset, True) and entry.source not in theirs
    return sorted(name for name, own in kinds.items() if own)


# (path, config generation, (mtime_ns, size, inode) or None, the parsed value): one stat per read
_read: tuple[str, int, Any, tuple[str, ...] | None] | None = None


def configured_default() -> tuple[str, ...] | None:
    """config.yaml's ``toolsets: {default: [...]}``: the toolsets ticked from the start besides the person's own
    (``()`` when it says nothing, ``None`` for ``[all]``). A value that does not fit, a key nobody knows or a
    toolset nobody knows is a ``DefaultToolsetsError``: a typo must neither offer more nor silently offer less."""
    global _read
    from hermes_nb.tools import config

    path = config.config_file()
    try:
        st = os.stat(path)
        stamp: Any = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    cached = _read
    if cached is not None and cached[:3] == (path, config.generation, stamp):
        raw = cached[3]
    else:
        raw = _parse(config.load_config() if stamp is not None else {}, path)
        _read = (path, config.generation, stamp, raw)
    if raw is None or any(n in _ALL for n in raw):
        return None
    _check_names(raw, path)  # every read: a toolset may come or go with the registry
    return raw


def _parse(cfg: dict[str, Any], path: str) -> tuple[str, ...] | None:
    block = cfg.get("toolsets")
    if block is None:
        return ()
    example = "toolsets: {default: [file, terminal]}"
    if not isinstance(block, dict):
        raise DefaultToolsetsError(f"{path}: toolsets must be a mapping such as {example}, "
                                   f"got {type(block).__name__}")
    unknown = [k for k in block if k != DEFAULT]
    if unknown:
        raise DefaultToolsetsError(f"{path}: toolsets: unknown key {unknown[0]!r} (the one key is default, "
                                   f"as in {example})")
    names = block.get(DEFAULT)
    if names is None:
        return ()
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise DefaultToolsetsError(f"{path}: toolsets.default must be a list of toolset names, as in {example}; "
                                   f"got {names!r}")
    return tuple(dict.fromkeys(n.strip() for n in names))


def _check_names(names: tuple[str, ...], path: str) -> None:
    from hermes_nb.tools.toolsets import get_all_toolsets, validate_toolset

    bad = [n for n in names if not validate_toolset(n)]
    if bad:
        raise DefaultToolsetsError(f"{path}: toolsets.default: unknown toolset {bad[0]!r}; known toolsets: "
                                   f"{', '.join(sorted(get_all_toolsets()))}, all")


def default_line(sel: Selection | None = None) -> str:
    """One line: what the default offers and how to change it (the picker shows it)."""
    from hermes_nb.tools.config import config_file

    sel = sel if sel is not None else selection
    own = own_toolsets(hermes=sel.hermes_tools)
    what = f"your own toolsets ({', '.join(own)})" if own else "your own toolsets (none yet: %%tool, plugins, MCP)"
    try:
        ticked = configured_default()
    except DefaultToolsetsError as exc:
        return f"default: {what}; {exc}"
    if ticked is None:
        what = "every toolset (config.yaml toolsets.default: [all])"
    elif ticked:
        what += f" + {', '.join(ticked)} (config.yaml toolsets.default)"
    return (f"default: {what}; built-ins such as file and terminal only when ticked: tick them here, or for every "
            f"notebook set toolsets: {{default: [file, terminal]}} in {config_file()}")


#: The one selection of this process (module state survives ``%reload_ext``: only hermes_nb/__init__ reloads).
selection = Selection()


def select(names: Iterable[str] | None) -> None:
    """Set the toolsets the model sees; the picker widget follows."""
    selection.select(names)


def enabled_toolsets() -> list[str] | None:
    return selection.enabled_toolsets()


def offered_toolsets() -> list[str] | None:
    """What an agent with no toolsets of its own offers: the selection (the default until someone chooses),
    in a notebook and in plain Python alike."""
    return selection.enabled_toolsets()


def offered_by(own: list[str] | None) -> list[str] | None:
    """The toolsets of an agent whose own list is ``own`` (None: all): that list, else ``offered_toolsets()``
    as its loop offers them, so the run's system prompt (memory), its providers and a sub-agent's toolsets
    follow the tools it is sent."""
    enabled = own if own is not None else offered_toolsets()
    return None if enabled is None or any(n in _ALL for n in enabled) else list(enabled)


def current() -> Selection:
    return selection
