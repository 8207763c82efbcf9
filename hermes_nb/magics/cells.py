"""Which notebook cell is running: its prompt number and its id, read from IPython's ``pre_run_cell``
(the hook is ``hermes_nb.startup.cells``, installed at ``%load_ext``; it records into ``hermes_nb._state``).

``%%tool`` runs its body with a nested ``run_cell``, which IPython would label with the *next* number
(``Cell In[5], line 1`` under prompt ``[4]``, for an error on the cell's second line). ``body_run``
runs it under the outer cell's own number, with the body starting on the cell's second line, so a
``SyntaxError`` or a tool's traceback names the line the person sees. The cell id (JupyterLab and
nbclient send one) lets a cell own the tools it registered (``CellTools``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_nb import _state

__all__ = ["CellInfo", "CellTools", "body_run", "current"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CellInfo:
    """The cell a person ran: the number its prompt shows, and the front end's cell id (None when none)."""

    number: int | None = None
    cell_id: str | None = None


def current() -> CellInfo:
    """The outermost cell running now (a nested ``run_cell`` does not replace it): what ``%load_ext``'s
    ``pre_run_cell`` hook (``hermes_nb.startup.cells``) last recorded."""
    number, cell_id = _state.cell
    return CellInfo(number=number, cell_id=cell_id)


def body_run(shell: Any, body: str, *, first_line: int = 2) -> Any:
    """Run a cell magic's ``body`` as the person's own cell: its prompt number, its line numbers."""
    number = _state.cell[0]
    # the body's first line is the cell's ``first_line``-th (comment lines: IPython drops leading blank ones)
    code = "#\n" * (first_line - 1) + body
    if number is None:
        return shell.run_cell(code, store_history=False)
    saved = shell.execution_count
    shell.execution_count = number  # the name IPython gives the code it compiles: "Cell In[number]"
    try:
        return shell.run_cell(code, store_history=False)
    finally:
        shell.execution_count = saved


class CellTools:
    """Which tools each cell registered, so re-running a cell replaces all of them (issue 26, item 2)."""

    def __init__(self) -> None:
        self._by_cell: dict[str, set[str]] = {}

    def claim(self, cell_id: str | None, names: set[str]) -> list[str]:
        """``cell_id`` now defines ``names``: returns the names it defined before and no longer does
        (the caller removes them). A name another cell defined moves to this one."""
        if cell_id is None:
            return []
        for other, owned in self._by_cell.items():
            if other != cell_id:
                owned -= names
        before = self._by_cell.get(cell_id, set())
        self._by_cell[cell_id] = set(names)
        return sorted(before - names)

    def forget(self) -> None:
        self._by_cell.clear()
