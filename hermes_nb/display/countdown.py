"""The line under ``%tools call`` while a tool runs: how long until its timeout, counted down in place.

A display handle made in the cell's thread and updated from a daemon thread once a second (ARCHITECTURE: a
``DisplayHandle.update`` from the background reaches its own output); outside a kernel nothing is shown.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

__all__ = ["Countdown", "countdown_text"]


def countdown_text(name: str, left: float, limit: float) -> str:
    """``⏳ area running: times out in 58 s (of 60 s)``."""
    return f"⏳ {name} running: times out in {max(0, round(left))} s (of {limit:g} s)"


class Countdown:
    """``with Countdown(name, limit):`` shows the countdown while the block runs, then clears it."""

    def __init__(self, name: str, limit: float, *, display: bool | None = None, every: float = 1.0) -> None:
        self.name, self.limit, self.every = name, limit, every
        self._stop = threading.Event()
        self._handle: Any = None
        self._thread: threading.Thread | None = None
        self._start = time.monotonic()
        from hermes_nb.display.kernel import in_kernel

        self._show = display if display is not None else in_kernel()

    def text(self) -> str:
        return countdown_text(self.name, self.limit - (time.monotonic() - self._start), self.limit)

    def _bundle(self, text: str) -> dict[str, str]:
        html = f'<div style="color:{colours.MUTED}">{escape_html(text)}</div>' if text else ""
        return {"text/plain": text, "text/html": html}

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._handle.update(self._bundle(self.text()), raw=True)

    def __enter__(self) -> Countdown:
        self._start = time.monotonic()
        if self._show:
            from IPython.display import display

            self._handle = display(self._bundle(self.text()), raw=True, display_id=True)
            self._thread = threading.Thread(target=self._tick, name="hermes-nb-countdown", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._handle is not None:
            self._handle.update(self._bundle(""), raw=True)  # gone once the result is there
