"""``%plugins``: the plugins discovery found (loaded, disabled, not enabled, failed), and switching one.

``%plugins enable NAME`` / ``disable NAME`` edit ``plugins.enabled`` / ``plugins.disabled`` in
config.yaml line by line (the person's comments stay; ``tools.sources.plugin_config``), then discover
again so the change holds at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented

if TYPE_CHECKING:
    from hermes_nb.display.cards import Table

__all__ = ["PluginMagics", "plugins_table"]


def plugins_table(note: str = "") -> Table:
    """One row per plugin found: name, kind, state, tools, and why it is not loaded."""
    from hermes_nb.display.cards import Table
    from hermes_nb.tools.sources.plugins import found_plugins, loaded_plugins

    loaded = {p.name: p for p in loaded_plugins()}
    rows = tuple(
        (p.name, p.kind, p.state, ", ".join(loaded[p.name].tools) if p.name in loaded else "", p.reason or p.location)
        for p in found_plugins()
    )
    title = f"{len(rows)} plugin{'s' * (len(rows) != 1)} found" + (f" — {note}" if note else "")
    return Table(headers=("plugin", "kind", "state", "tools", "why / where"), rows=rows, title=title,
                 empty="no plugins found (folders in $HERMES_NB_HOME/plugins, tool files in $HERMES_NB_HOME/tools, "
                       "entry points)")


@magics_class
class PluginMagics(Magics):
    """Hermes-style plugins in this kernel."""

    @magic_arguments()
    @argument("action", nargs="?", default="list", choices=("list", "enable", "disable", "reload"),
              help="list (default), enable NAME, disable NAME, reload (discover again).")
    @argument("name", nargs="?", default=None, help="The plugin (its plugin.yaml name, folder, entry point or "
                                                    "tool file name).")
    @line_magic
    @uncommented
    def plugins(self, line: str) -> Table:
        """List plugins, or switch one on or off in config.yaml.

        Without ``plugins.enabled`` in config.yaml every plugin found loads; with it, only those listed.
        ``plugins.disabled`` always wins. ``enable`` removes NAME from ``disabled`` (and adds it to
        ``enabled`` when that list exists); ``disable`` adds it to ``disabled`` (and removes it from
        ``enabled``). Comments in config.yaml are kept.

        Example::

            %plugins                  # found, loaded, disabled, not enabled, failed (and why)
            %plugins disable noisy    # never load it; its tools leave now
            %plugins enable noisy
        """
        from hermes_nb.tools.errors import ConfigError
        from hermes_nb.tools.sources.plugin_config import edit_plugin_list, plugin_policy
        from hermes_nb.tools.sources.plugins import discover_plugins

        args = parse_line(self.plugins, line, "%plugins")
        if args.action in ("list", "reload"):
            if args.name:
                raise UsageError(f"%plugins {args.action} takes no name; use %plugins enable|disable NAME")
            if args.action == "reload" or not _discovered():
                discover_plugins()
            return plugins_table()
        if not args.name:
            raise UsageError(f"%plugins {args.action}: name the plugin, e.g. %plugins {args.action} guard")
        name = args.name
        try:
            if args.action == "enable":
                changed = edit_plugin_list("disabled", name, add=False)
                if plugin_policy().enabled is not None:
                    changed = edit_plugin_list("enabled", name, add=True) or changed
            else:
                changed = edit_plugin_list("disabled", name, add=True)
                changed = edit_plugin_list("enabled", name, add=False) or changed
        except ConfigError as exc:
            raise UsageError(f"%plugins {args.action}: {exc}") from None
        discover_plugins()
        known = any(p.name == name for p in _found())
        note = f"{name} {args.action}d in config.yaml" if changed else f"{name} was already {args.action}d"
        if not known:
            note += f" (no plugin named {name!r} is found now)"
        return plugins_table(note)


def _found() -> list:
    from hermes_nb.tools.sources.plugins import found_plugins

    return found_plugins()


def _discovered() -> bool:
    """Whether plugins were discovered from the home in use now (not before a move of HERMES_NB_HOME)."""
    from hermes_nb.tools.config import hermes_home
    from hermes_nb.tools.sources.plugins import discovered_home

    return discovered_home() == hermes_home()
