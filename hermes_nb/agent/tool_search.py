"""The agent loop's side of tool search (``hermes_nb.tools.search``): each turn's definitions, and the
run's catalog set where the turn's batch and the bridge tools read it.

``turn_tools`` sets the catalog in the calling task's context: each run's core is its own task (``run``,
``arun``, and each case of an evaluation), so concurrent runs keep their own catalogs, and a turn with
nothing deferred sets none, so the bridge answers nothing from an earlier turn.
"""

from __future__ import annotations

from collections.abc import Iterable

from hermes_nb.tools.search.assembly import Assembly, with_listing
from hermes_nb.tools.search.scope import set_catalog, unwrap_calls

__all__ = ["turn_tools", "unwrap_calls", "with_listing"]


def turn_tools(enabled: Iterable[str] | None, disabled: Iterable[str] | None, model: str) -> Assembly:
    """The definitions of this turn for ``model``; the catalog of its deferred tools is this run's from now."""
    from hermes_nb.tools.model_tools import assemble_tool_definitions

    assembly = assemble_tool_definitions(enabled, disabled, model=model)
    set_catalog(assembly.catalog)
    return assembly
