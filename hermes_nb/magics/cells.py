"""Which notebook cell is running: its prompt number and its id, read from IPython's ``pre_run_cell``.

``%%tool`` runs its body with a nested ``run_cell``, which IPython would label with the *next* number
(``Cell In[5], line 1`` under prompt ``[4]``, for an error on the cell's second line). ``body_run``
runs it under the outer cell's own number, with the body starting on the cell's second line, so a
``SyntaxError`` or a tool's traceback names the line the person sees. The cell id (JupyterLab and
nbclient send one) lets a cell own the tools it registered (``CellTools``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CellInfo", "CellTools", "body_run", "current", "install"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CellInfo:
    """The cell a person ran: the number its prompt shows, and the front end's cell id (None when none)."""

    number: int | None = None
    cell_id: str | None = None


_current = CellInfo()


def current() -> CellInfo:
    """The outermost cell running now (a nested ``run_cell`` does not replace it)."""
    return _current


def install(ip: Any) -> Callable[[], None]:
    """Follow the cells ``ip`` runs; returns the undo."""

    def pre_run_cell(info: Any) -> None:
        global _current
        if not getattr(info, "store_history", True) and getattr(info, "cell_id", None) is None:
            return  # a nested run (``%%tool``'s body): the person's cell is still the outer one
        # run_cell has already counted this cell when it stores history: the prompt shows one less
        count = int(getattr(ip, "execution_count", 0) or 0)
        _current = CellInfo(number=count - 1 if info.store_history else count, cell_id=getattr(info, "cell_id", None))

    ip.events.register("pre_run_cell", pre_run_cell)

    def undo() -> None:
        try:
            ip.events.unregister("pre_run_cell", pre_run_cell)
        except ValueError:  # already gone
            pass

    return undo


def body_run(shell: Any, body: str, *, first_line: int = 2) -> Any:
    """Run a cell magic's ``body`` as the person's own cell: its prompt number, its line numbers."""
    number = _current.number
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
