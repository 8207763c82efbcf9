"""``%memory``: what the agent remembers across runs and kernels (``MEMORY.md`` / ``USER.md``), shown and edited."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line

__all__ = ["MemoryMagics", "MemoryView"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryView:
    """Both memory files as the next run's system prompt will hold them (HTML, text in a terminal)."""

    entries: dict[str, list[str]]
    usage: dict[str, str]
    folder: str
    message: str = ""

    def _repr_html_(self) -> str:
        from hermes_nb.display import colours
        from hermes_nb.display.escaping import escape_html

        parts = ['<div style="font-family:sans-serif;font-size:13px">']
        if self.message:
            parts.append(f'<div style="color:{colours.OK}">{escape_html(self.message)}</div>')
        for target, title in (("memory", "🧠 MEMORY.md — the agent's notes"), ("user", "👤 USER.md — about you")):
            items = "".join(f'<li style="color:{colours.TEXT}">{escape_html(e)}</li>' for e in self.entries[target])
            parts.append(f'<div style="margin-top:4px"><b>{title}</b> <span style="color:{colours.MUTED}">'
                         f'{escape_html(self.usage[target])}</span><ol style="margin:2px 0">'
                         f'{items or f"<li style=list-style:none;color:{colours.MUTED}>(empty)</li>"}</ol></div>')
        parts.append(f'<div style="color:{colours.MUTED}">{escape_html(self.folder)}</div></div>')
        return "".join(parts)

    def __repr__(self) -> str:
        lines = [self.message] if self.message else []
        for target in ("memory", "user"):
            lines.append(f"{'MEMORY.md' if target == 'memory' else 'USER.md'} ({self.usage[target]})")
            lines += [f"  {n}. {e}" for n, e in enumerate(self.entries[target], 1)] or ["  (empty)"]
        return "\n".join(lines)


@magics_class
class MemoryMagics(Magics):
    """The agent's durable memory (the ``memory`` tool's files)."""

    @magic_arguments()
    @argument("action", nargs="?", default="show", choices=("show", "add", "replace", "remove"),
              help="show (default), add TEXT, replace OLD --new TEXT, remove OLD.")
    @argument("text", nargs="*", help="The entry (add), or a short unique part of it (replace, remove).")
    @argument("--user", action="store_true", help="USER.md (what the agent knows about you) instead of MEMORY.md.")
    @argument("--new", nargs="+", default=None, metavar="TEXT", help="The replacement text (replace), to the end.")
    @line_magic
    def memory(self, line: str) -> MemoryView:
        """Show or edit what the agent remembers; it is put in the system prompt when a run starts.

        The memory tool (toolset ``memory``) writes the same files: $HERMES_NB_HOME/memories/MEMORY.md
        (the agent's notes) and USER.md (about you), with Hermes's character limits.

        Example::

            %memory                                     # both files, with how full they are
            %memory add The team data lives in s3://lab-data
            %memory add --user Prefers answers in French
            %memory replace s3://lab-data --new The team data lives in s3://lab-archive
            %memory remove lab-archive
        """
        from hermes_nb.agent.memory_store import MemoryStore, MemoryTarget

        # options may come after the words (%memory add --user Prefers French): intermixed
        args = parse_line(self.memory, line, "%memory", intermixed=True)
        store = MemoryStore()
        target: MemoryTarget = "user" if args.user else "memory"
        text = " ".join(args.text).strip()
        message = ""
        if args.action != "show":
            if not text:
                raise UsageError(f"%memory {args.action}: say which text, e.g. %memory {args.action} some words")
            if args.action == "add":
                result = store.add(target, text)
            elif args.action == "remove":
                result = store.remove(target, text)
            else:
                if not args.new:
                    raise UsageError("%memory replace OLD --new TEXT: --new gives the replacement")
                result = store.replace(target, text, " ".join(args.new))
            if not result.get("success"):
                raise UsageError(f"%memory {args.action}: {result['error']}")
            message = f"{result['message']} ({result['usage']})"
        return _view(store, message)


def _view(store: Any, message: str) -> MemoryView:
    return MemoryView(entries={t: store.entries(t) for t in ("memory", "user")},
                      usage={t: store.usage(t) for t in ("memory", "user")},
                      folder=str(store.path("memory").parent), message=message)
