"""The agent loop's side of tool search (``hermes_nb.tools.search``): each turn's definitions, and the
run's catalog set where the turn's batch and the bridge tools read it; with it, the turn's offer
(``hermes_nb.tools.batch.scope``), which the batch checks every call against.

``turn_tools`` sets both in the calling task's context: each run's core is its own task (``run``,
``arun``, and each case of an evaluation), so concurrent runs keep their own, and a turn with
nothing deferred sets no catalog, so the bridge answers nothing from an earlier turn.
"""

from __future__ import annotations

from collections.abc import Iterable

from hermes_nb.tools.batch.scope import offer_of, set_offer
from hermes_nb.tools.search.assembly import Assembly, with_listing
from hermes_nb.tools.search.scope import set_catalog, unwrap_calls

__all__ = ["turn_tools", "unwrap_calls", "with_listing"]


def turn_tools(enabled: Iterable[str] | None, disabled: Iterable[str] | None, model: str, *,
               withheld: Iterable[str] = ()) -> Assembly:
    """The definitions of this turn for ``model``; the catalog of its deferred tools is this run's from now,
    and what it offers (definitions and deferred tools, less ``withheld``) is all this turn's calls may run."""
    from hermes_nb.tools.model_tools import assemble_tool_definitions

    assembly = assemble_tool_definitions(enabled, disabled, model=model)
    set_catalog(assembly.catalog)
    set_offer(offer_of(assembly.definitions, assembly.catalog.by_name if assembly.catalog else (), withheld))
    return assembly
