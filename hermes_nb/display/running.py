"""Agent runs that a kernel restart cut off: their card in the saved notebook still says "⏳ running…".

A run shown in a notebook leaves a small marker file (``HOME/running/PID-ID.json``: its cell, prompt and start)
while it runs; the run's end removes it. The next ``%load_ext`` finds the markers of processes that no longer
exist and says, in one line each, which run the restart ended (issue 35: the cards stayed "running" forever).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["begin", "end", "ended_by_restart", "restart_lines"]


def _folder() -> Path:
    from hermes_nb.tools.config import hermes_home

    return hermes_home() / "running"


def begin(display_id: str, *, prompt: str, cell: int | None) -> Path | None:
    """Mark a run as going; None when the home cannot be written (nothing to say later then)."""
    path = _folder() / f"{os.getpid()}-{display_id}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pid": os.getpid(), "cell": cell, "prompt": prompt[:60],
                                    "started": time.strftime("%H:%M", time.localtime())}), encoding="utf-8")
    except OSError:
        return None
    return path


def end(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: it exists
        return True
    return True


def ended_by_restart() -> list[dict[str, Any]]:
    """The runs whose process is gone (a restart or a crash); their markers are removed."""
    out = []
    try:
        paths = sorted(_folder().glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pid = int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid != os.getpid() and not _alive(pid):
            out.append(data)
            end(path)
    return out


def restart_lines() -> list[str]:
    """One line per run the last kernel left unfinished."""
    lines = []
    for run in ended_by_restart():
        cell = f"cell [{run['cell']}]" if run.get("cell") is not None else "a cell"
        lines.append(f"hermes_nb: the kernel restarted during the agent run in {cell} (started {run.get('started')}, "
                     f"{run.get('prompt', '')!r}); its card's \"⏳ running\" is stale: re-run that cell")
    return lines
