"""■ inside hermes_nb shows one line, as the agent's own interrupt does, not frames of library code.

A ``KeyboardInterrupt`` that passes through hermes_nb's code (``%tools call``, ``registry.dispatch`` in a
cell, an approval prompt waiting for a click) is shown as ``KeyboardInterrupt: interrupted while …``;
one raised in the person's own code elsewhere keeps IPython's usual traceback. The handler is installed at
``%load_ext`` (``hermes_nb.startup.interrupts``, through IPython's ``set_custom_exc``, only when nothing else
uses it); this module loads at the first interrupt.
"""

from __future__ import annotations

import os
from types import TracebackType

__all__ = ["interrupt_line"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # hermes_nb/
_PROMPTS = os.path.join(_PACKAGE, "display", "prompts.py")


def _ours() -> tuple[str, ...]:
    """The folders of hermes_nb's code: the extension, and the core (``hermes_nb.tools`` lives in ``tools/``)."""
    import importlib.util

    spec = importlib.util.find_spec("hermes_nb.tools")
    core = list(spec.submodule_search_locations or ()) if spec is not None else []
    return tuple(os.path.abspath(p) + os.sep for p in [_PACKAGE, *core])


def interrupt_line(tb: TracebackType | None) -> str | None:
    """The one line for an interrupt whose traceback passes through hermes_nb, else None."""
    ours = _ours()
    files, tool = [], None
    while tb is not None:
        frame = tb.tb_frame
        files.append(os.path.abspath(frame.f_code.co_filename))
        name = frame.f_locals.get("name")
        if tool is None and isinstance(name, str) and files[-1].startswith(ours):
            tool = name
        tb = tb.tb_next
    if not any(f.startswith(ours) for f in files):
        return None
    if _PROMPTS in files:
        return "KeyboardInterrupt: interrupted while an approval prompt waited; the call was not run"
    what = f"the tool call {tool!r}" if tool else "a tool call"
    return f"KeyboardInterrupt: interrupted while {what} ran; it was cancelled, the next cell runs as usual"
