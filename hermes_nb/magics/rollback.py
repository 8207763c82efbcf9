"""``%rollback`` (this kernel's checkpoints, listed and undone) and ``%trust`` (a model-written file the
person lets the kernel import)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented
from hermes_nb.tools.safety.writes import checkpoints

__all__ = ["CheckpointList", "RollbackMagics", "rollback"]

#: Files named in a row of the list before "and N more".
_FILES_SHOWN = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointList:
    """This kernel's checkpoints as a table: call id, tool, time, files, state."""

    items: tuple[checkpoints.Checkpoint, ...]

    def __iter__(self) -> Iterator[checkpoints.Checkpoint]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def _table(self) -> object:
        from hermes_nb.display.cards import Table

        rows = tuple((cp.call_id, cp.tool, time.strftime("%H:%M:%S", time.localtime(cp.time)), _files(cp),
                      "undone" if cp.undone else "partly undone" if cp.undone_files else "")
                     for cp in self.items)
        return Table(headers=("call id", "tool", "time", "files", "state"), rows=rows,
                     title="checkpoints of this kernel (%rollback CALL_ID undoes one)",
                     empty="no checkpoints: no tool call has changed a file in this kernel")

    def _repr_html_(self) -> str:
        return self._table().html()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return str(self._table())


def rollback(call_id: str | None = None, *, since: str | None = None) -> Any:
    """``hermes_nb.rollback``: this kernel's checkpoints as a table (no arguments), or undo one call's changes
    (``rollback("call_8f2c1a")``) or every call's since one (``rollback(since="call_8f2c1a")``), returning
    what was restored and what was kept (``.restored``, ``.kept``); ``RollbackError`` for an unknown call."""
    from hermes_nb.tools.safety.writes.rollback import rollback as undo

    if call_id is None and since is None:
        return CheckpointList(items=tuple(checkpoints.checkpoints()))
    return undo(call_id, since=since)


def _files(cp: checkpoints.Checkpoint) -> str:
    names = [os.path.relpath(s.path, cp.workspace) + ("" if s.kind == "modified" else f" ({s.kind})")
             for s in cp.files]
    more = len(names) - _FILES_SHOWN
    return ", ".join(names[:_FILES_SHOWN]) + (f" and {more} more" if more > 0 else "")


@magics_class
class RollbackMagics(Magics):
    """Undo what tool calls wrote; let the kernel import a file the model wrote."""

    @magic_arguments()
    @argument("call_id", nargs="?", default=None, help="The call whose changes to undo (a unique prefix will do); "
                                                       "none: list this kernel's checkpoints.")
    @argument("--since", metavar="CALL_ID", default=None,
              help="Undo every call from CALL_ID to the latest, newest first.")
    @line_magic
    @uncommented
    def rollback(self, line: str) -> CheckpointList | None:
        """List this kernel's checkpoints, or undo one call's file changes, or every call's since one.

        Every change a tool call lands (write_file, patch, a sandboxed command) keeps what the file was
        before. Rolling back deletes the files the call created, restores the ones it deleted or changed
        (content, mode, link target), and keeps — naming it — any file you edited by hand since, or that a
        later call changed. The same from Python: hermes_nb.rollback("call_…"), hermes_nb.rollback(since=…).

        Example::

            %rollback                         # the table: call id, tool, time, files
            %rollback call_8f2c1a             # undo that call's changes
            %rollback --since call_8f2c1a     # undo that call and every later one
        """
        from hermes_nb.tools.safety.writes.rollback import RollbackError, rollback

        args = parse_line(self.rollback, line, "%rollback")
        if args.call_id is None and args.since is None:
            return CheckpointList(items=tuple(checkpoints.checkpoints()))
        if args.call_id is not None and args.since is not None:
            raise UsageError("%rollback: give CALL_ID or --since CALL_ID, not both")
        try:
            result = rollback(args.call_id, since=args.since)
        except RollbackError as exc:
            raise UsageError(f"%rollback: {exc}") from None
        print(result)
        return None

    @magic_arguments()
    @argument("path", nargs="?", default=None, help="A file (or a folder: every model-written file in it) the "
                                                    "kernel may import as it is now; none: list the files the "
                                                    "kernel will not import.")
    @line_magic
    @uncommented
    def trust(self, line: str) -> None:
        """Let the kernel import a file the model wrote, as it is now (or list the files it refuses).

        hermes_nb's import guard refuses to import a module file the model created or changed (a tool call
        wrote it, and nobody has said yes to it since): a library's optional import then carries on without
        it, and your own import fails with a line naming the file and this command. Read the file first; a
        later change by the model makes it untrusted again. Your own edit to the file trusts it too.

        Example::

            %trust                  # the model-written files the kernel will not import
            %trust helpers.py       # read it, then let `import helpers` load it
            %trust mypkg/           # every model-written file in a folder
        """
        from hermes_nb.tools.safety.writes import ledger

        args = parse_line(self.trust, line, "%trust")
        if args.path is None:
            written = [e for e in ledger.entries() if e.loadable() and e.still_written()]
            for e in written:
                print(f"{e.path}  (call {e.call_id}, {e.tool})")
            if not written:
                print("no model-written file is waiting for a yes: the kernel imports everything it finds")
            return
        gone = []
        for path in _candidates(args.path):
            gone += ledger.trust(path)
        if not gone:
            raise UsageError(f"%trust: {args.path} is not a file the model wrote (nothing to trust)")
        for e in gone:
            print(f"trusted {e.path} (written by call {e.call_id}, {e.tool}): the kernel may import it now")


def _candidates(path: str) -> list[str]:
    """``path`` against the kernel's folder and against the workspace root (the model's paths)."""
    from hermes_nb.tools.workspace import workspace_root

    text = os.path.expanduser(path)
    return list(dict.fromkeys([os.path.abspath(text), os.path.join(str(workspace_root()), text)]))
