"""Process state that must survive ``%reload_ext hermes_nb`` (which re-executes only ``__init__``).

The undo list of the loaded extension lives here, so a reload can undo exactly what the previous load
did, and nothing is ever installed twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Undo callables of the current load, in the order they were installed (run in reverse).
undos: list[Callable[[], None]] = []

#: The shell the extension is loaded into, or None.
shell: Any = None

#: Live objects (pickers) that hold listeners; closed on unload.
live: list[Any] = []

#: True once ``hermes_nb.enable_nest_asyncio()`` ran: async %%tool cells then run on the kernel loop.
nest_asyncio_enabled: bool = False

#: The outermost notebook cell running now, as ``(prompt number, front end's cell id)`` (``None`` each when
#: unknown): recorded by ``hermes_nb.startup.cells``'s ``pre_run_cell`` hook, read by ``magics.cells``.
cell: tuple[int | None, str | None] = (None, None)

#: The functions ``%%tool`` cells registered, by their name in the namespace: ``(tool name, the function)``; a plain
#: cell that redefines one is told the tool did not change (``hermes_nb.startup.cells``'s ``post_run_cell``).
cell_functions: dict[str, tuple[str, Any]] = {}
