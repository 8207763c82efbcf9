"""Background jobs as live cards: the command, its state and its newest output, redrawn as it runs.

A card is a display handle made in the cell's thread (the one running ``%tools call terminal ...`` or
``%tools processes``), then updated from the job's threads, at most every ``EVERY`` seconds and once more when
it ends (ARCHITECTURE: output from the background only through display handles made in the cell first).
A job started by a tool call in a worker thread has no cell to draw in: ``%tools processes`` shows it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html
from hermes_nb.tools.jobs import Job

__all__ = ["install_viewer", "job_bundle", "job_text", "show_job"]

EVERY = 0.5  # seconds between two redraws of one card
TAIL = 2000  # characters of output a card shows


def job_text(job: Job) -> str:
    """``⚙️ proc_ab12 running 12 s: make test`` and the newest output."""
    if job.exited:
        state = f"{job.completion_reason} (exit code {job.exit_code})"
    else:
        state = f"running {job.uptime()} s"
    return f"⚙️ {job.id} {state}: {job.command}\n{job.output(TAIL)}".rstrip()


def job_bundle(job: Job) -> dict[str, str]:
    colour = colours.MUTED if not job.exited else (colours.OK if job.exit_code == 0 else colours.ERROR)
    if job.exited:
        state = f"{job.completion_reason} (exit code {job.exit_code})"
    else:
        state = f"running {job.uptime()} s"
    head = (f'<div><strong>⚙️ {escape_html(job.id)}</strong> <span style="color:{colour}">{escape_html(state)}'
            f'</span> <code>{escape_html(job.command[:200])}</code></div>')
    body = (f'<pre style="max-height:16em;overflow:auto;margin:2px 0">{escape_html(job.output(TAIL))}</pre>'
            if job.output(1) else "")
    return {"text/plain": job_text(job), "text/html": f'<div style="border-left:3px solid {colours.BORDER};'
                                                      f'padding-left:6px">{head}{body}</div>'}


def show_job(job: Job) -> None:
    """Display ``job``'s card here (the cell's thread) and keep it drawn until the job ends."""
    from IPython.display import display

    handle = display(job_bundle(job), raw=True, display_id=True)
    if handle is None:
        return
    lock = threading.Lock()
    last = [0.0]

    def redraw() -> None:
        now = time.monotonic()
        with lock:
            if not job.exited and now - last[0] < EVERY:
                return  # throttled: the next chunk or the end draws it
            last[0] = now
        handle.update(job_bundle(job), raw=True)

    job.add_view(redraw)
    if job.exited:
        redraw()


def install_viewer() -> Any:
    """Show each job started in a cell's own thread (``%tools call terminal background=true``) as a card;
    returns the undo."""
    from hermes_nb.display.kernel import in_kernel
    from hermes_nb.tools import jobs

    def viewer(job: Job) -> None:
        if threading.current_thread() is threading.main_thread() and in_kernel():
            show_job(job)

    return jobs.set_viewer(viewer)
