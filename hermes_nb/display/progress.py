"""A progress line for long runs (``%tools fuzz``, ``evaluate``): a display handle updated in place in a
notebook, a few printed lines elsewhere. Called only from the thread that made it (ARCHITECTURE rule 6).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from hermes_nb.display.escaping import escape_html

__all__ = ["Progress"]


class Progress:
    """``Progress(title, total)``; ``update(done, note)`` as often as you like; ``close(note)`` at the end."""

    def __init__(self, title: str, total: int, *, display: bool | None = None, every: float = 0.2) -> None:
        self.title, self.total, self.every = title, max(total, 0), every
        self.done, self.note = 0, ""
        self.summary = ""  # at the end: the measures, which lead the line instead of the count of cases
        self._last = 0.0
        self._printed = -1
        self._start = time.monotonic()
        self._handle: Any = None
        from hermes_nb.display.kernel import in_kernel

        if display if display is not None else in_kernel():
            from IPython.display import HTML
            from IPython.display import display as show

            self._handle = show(HTML(self._html()), display_id=True)

    def update(self, done: int, note: str = "", *, force: bool = False) -> None:
        self.done, self.note = done, note
        now = time.monotonic()
        if not force and now - self._last < self.every:
            return
        self._last = now
        if self._handle is not None:
            from IPython.display import HTML

            self._handle.update(HTML(self._html()))
            return
        tenth = (10 * done // self.total) if self.total else 10
        # 0 %, 50 %, 100 %: a log, not a flood; the closing line always (its summary leads with the measures)
        if force or (tenth != self._printed and tenth % 5 == 0):
            self._printed = tenth
            print(self.text(), file=sys.stderr)

    def close(self, note: str = "", *, summary: str = "") -> None:
        """The last state; with ``summary`` (what was measured), the line leads with it, not with "n/n (100%)"."""
        self.summary = summary
        self.update(self.done, note or self.note, force=True)

    def text(self) -> str:
        pct = 100 * self.done // self.total if self.total else 100
        elapsed = time.monotonic() - self._start
        if self.summary:
            return f"{self.title}: {self.summary} ({self.done} of {self.total} run, {elapsed:.1f}s)"
        return f"{self.title}: {self.done}/{self.total} ({pct}%) {elapsed:.1f}s" + (f" — {self.note}" if self.note else "")

    def _html(self) -> str:
        pct = 100 * self.done / self.total if self.total else 100.0
        return (f'<div class="hermes-nb-progress"><progress value="{pct:.0f}" max="100" style="width:16em"></progress> '
                f"{escape_html(self.text())}</div>")
