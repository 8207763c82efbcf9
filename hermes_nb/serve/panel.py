"""What a served call shows in the notebook: a card per call (as the agent's), and approval prompts.

Everything is drawn through outputs made in the cell that ran ``%mcp serve`` (a display handle, and a
widget box for approval prompts) and then updated from the background: ARCHITECTURE's rule 6, since a
``print`` or a new ``display`` from a worker thread lands in whatever cell runs last.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from hermes_nb.display import colours, live
from hermes_nb.display.escaping import escape_html

__all__ = ["ServePanel"]

#: Cards kept in the panel (the oldest finished ones leave first).
MAX_CARDS = 30
#: Display updates per second at most; the last state is always drawn.
MAX_UPDATES_PER_S = 10


class ServePanel:
    """Served calls as cards under the serving cell; also answers approvals that served calls ask."""

    def __init__(self, *, title: str, widgets: bool) -> None:
        from IPython.display import HTML, display

        self.title = title
        self._lock = threading.Lock()
        self._cards: OrderedDict[str, tuple[str, live.Card]] = OrderedDict()
        self._last = 0.0
        self._timer: threading.Timer | None = None
        self.prompts: list[Any] = []  # ApprovalPrompts asked so far (tests answer them with .choose)
        self._handle = display(HTML(self.html()), display_id=True)  # made here, in the serving cell
        self._box: Any = None
        if widgets:
            import ipywidgets

            self._box = ipywidgets.VBox()
            display(self._box)

    # -- CallEvents -------------------------------------------------------------------------------

    def call_started(self, call_id: str, client: str, name: str, arguments: str) -> None:
        card = live.Card(id=call_id, name=name, arguments=arguments, emoji=live.tool_emoji(name))
        with self._lock:
            self._cards[call_id] = (client, card)
            while len(self._cards) > MAX_CARDS:
                oldest = next((k for k, (_, c) in self._cards.items() if c.state not in ("queued", "running")), None)
                if oldest is None:
                    break
                del self._cards[oldest]
        self._redraw()

    def call_running(self, call_id: str) -> None:
        with self._lock:
            found = self._cards.get(call_id)
            if found is not None:
                found[1].state, found[1].started = "running", time.perf_counter()
        self._redraw()

    def call_ended(self, call_id: str, content: str, is_error: bool, note: str = "") -> None:
        with self._lock:
            found = self._cards.get(call_id)
            if found is not None:
                card = found[1]
                card.state, card.ended, card.content = ("error" if is_error else "done"), time.perf_counter(), content
                card.started = card.started or card.ended
                if note:
                    card.notes.append((note, "warning"))
        self._redraw(force=True)

    def changed(self) -> None:
        self._redraw()

    # -- approvals --------------------------------------------------------------------------------

    def ask_approval(self, command: str, pattern_key: str, description: str, client: str) -> str:
        """Show an approval prompt in the serving cell, naming the client; wait for the person ("deny"
        without widgets: no one could answer, so the call must not run)."""
        if self._box is None:
            return "deny"
        from hermes_nb.display.prompts import ApprovalPrompt

        prompt = ApprovalPrompt(command, pattern_key, f"{description} (asked by MCP client {client})")
        self.prompts.append(prompt)
        self._box.children = (*self._box.children, prompt.box)
        choice = prompt.wait()  # not the main thread: it waits for a click the kernel delivers when idle
        with self._lock:
            for who, card in self._cards.values():
                if who == client and card.state in ("queued", "running") and command.startswith(card.name):
                    card.notes.append((f"approval asked by {client} → {choice}",
                                       "approval" if choice in ("once", "session", "always") else "denied"))
                    break
        self._redraw()
        return choice

    def ask_clarify(self, question: str, choices: list[str] | None, client: str) -> str:
        """The ``clarify`` tool, called by a client: the question in the serving cell ("" without widgets)."""
        if self._box is None:
            return ""
        from hermes_nb.display.prompts import ClarifyPrompt

        prompt = ClarifyPrompt(f"{question} (asked by MCP client {client})", choices)
        self.prompts.append(prompt)
        self._box.children = (*self._box.children, prompt.box)
        return prompt.wait()

    # -- drawing ----------------------------------------------------------------------------------

    def _redraw(self, force: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            wait = self._last + 1 / MAX_UPDATES_PER_S - now
            if wait > 0 and not force:
                if self._timer is None:  # draw the latest state once the interval has passed
                    self._timer = threading.Timer(wait, self._redraw, kwargs={"force": True})
                    self._timer.daemon = True
                    self._timer.start()
                return
            self._last = now
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            bundle = {"text/plain": self.text(), "text/html": self.html()}
        self._handle.update(bundle, raw=True)

    def html(self) -> str:
        parts = [f'<div style="font-family:sans-serif;font-size:13px;border-left:3px solid #00897b;'
                 f'padding:4px 10px;margin:4px 0"><div style="color:{colours.MUTED}">🛰 {escape_html(self.title)}</div>']
        if not self._cards:
            parts.append(f'<div style="color:{colours.MUTED}">No calls yet.</div>')
        for client, card in self._cards.values():
            parts.append(f'<div style="color:{colours.MUTED};font-size:11px;margin-top:4px">from {escape_html(client)}</div>')
            parts.append(live.card_html(card))
        parts.append("</div>")
        return "".join(parts)

    def text(self) -> str:
        lines = [f"🛰 {self.title}"]
        for client, card in self._cards.values():
            lines.append(f"{live.card_text(card)}   (from {client})")  # its notes first, as in the HTML
        return "\n".join(lines)

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
