"""Background jobs: ``terminal(background=true)`` starts one, the ``process`` tool looks after it.

A job runs in the same sandbox as a foreground command (``tools.safety.sandbox.box.Box``: bubblewrap and the
overlay where there is one); when it ends (it exits, is killed, or outlives its ``timeout``) everything it
started dies, and its write-set lands through the landing policy, as a foreground command's does, in the
context (the run's approver) of the call that started it. Output (stdout and stderr together, or a pty's) is
kept as its last ``OUTPUT_CAP`` characters. Jobs end with the kernel (``atexit``, and the extension's unload
calls ``end_all``) or on ``%tools processes kill``.

Two seams keep the core free of the display and the agent: ``set_viewer`` (the extension draws each job as a
live card, updated through a display handle) and ``use_inbox`` (a run collects ``notify_on_complete`` and
``watch_patterns`` notices; the agent loop says them at its next turn).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = ["Inbox", "Job", "current_inbox", "end_all", "find", "inbox_for", "inbox_in", "jobs", "set_viewer", "start", "use_inbox"]

OUTPUT_CAP = 200_000  # characters of output kept (the last ones)
WATCH_COOLDOWN = 15.0  # seconds between two watch_patterns notices of one job (Hermes's rate)
_KILL_GRACE = 2.0
_EXIT_WAIT = 10.0  # seconds the kernel's exit waits for each killed job's write-set to be judged
_STDIN_EOF = b"\x04"  # a pty's end of input (Ctrl-D at the start of a line)


class Inbox:
    """Notices of background jobs for the run (or agent) that started them; drained between model turns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: list[str] = []

    def put(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)

    def drain(self) -> list[str]:
        with self._lock:
            lines, self._lines = self._lines, []
        return lines


_jobs_lock = threading.Lock()
_inbox: ContextVar[Inbox | None] = ContextVar("hermes_nb_job_inbox", default=None)
Viewer = Callable[["Job"], None]
"""Shows a new job (the extension: a live card, which it keeps drawn with ``Job.add_view``)."""
_viewer: list[Viewer] = []


_inboxes: weakref.WeakKeyDictionary[Any, Inbox] = weakref.WeakKeyDictionary()


def inbox_for(owner: Any) -> Inbox:
    """``owner``'s inbox (an agent's: a job that ends after its run is told at the agent's next run)."""
    with _jobs_lock:
        return _inboxes.setdefault(owner, Inbox())


def use_inbox(inbox: Inbox) -> Callable[[], None]:
    """Jobs started in this context (a run's task) notify ``inbox``; returns the undo (same context)."""
    token = _inbox.set(inbox)
    return lambda: _inbox.reset(token)


def current_inbox() -> Inbox | None:
    return _inbox.get()


@contextlib.contextmanager
def inbox_in(inbox: Inbox | None) -> Iterator[None]:
    """``use_inbox`` for a block (a batch's worker thread, which does not inherit the run's context)."""
    if inbox is None:
        yield
        return
    undo = use_inbox(inbox)
    try:
        yield
    finally:
        undo()


def set_viewer(viewer: Viewer) -> Callable[[], None]:
    """Show each new job with ``viewer`` (the extension's live card); returns the undo."""
    _viewer.append(viewer)
    return lambda: _viewer.remove(viewer) if viewer in _viewer else None


class Job:
    """One background command: its process, its sandbox, its output, and how it ended."""

    def __init__(self, command: str, cwd: str, *, notify_on_complete: bool, watch_patterns: tuple[str, ...],
                 timeout: float | None) -> None:
        self.id = "proc_" + secrets.token_hex(6)
        self.command, self.cwd, self.timeout = command, cwd, timeout
        self.notify_on_complete, self.watch_patterns = notify_on_complete, watch_patterns
        self.started = time.time()
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.completion_reason = ""  # exited, killed, timeout, kernel exit
        self.termination_source = ""  # who ended it: the command itself, process.kill, %tools processes kill...
        self.notes: list[str] = []  # what did not land, one line each
        self.ended = threading.Event()
        self._lock = threading.Lock()
        self._output = ""
        self._dropped = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdin: int | None = None  # the pipe's or the pty's file descriptor
        self._pty = False
        self._inbox = _inbox.get()
        self._last_watch = -WATCH_COOLDOWN
        self._views: list[Callable[[], None]] = []  # live cards: redrawn from the job's threads
        self._ending: str | None = None  # the reason a kill gave, before the process is seen to end

    @property
    def exited(self) -> bool:
        return self.ended.is_set()

    @property
    def status(self) -> str:
        return "exited" if self.exited else "running"

    def output(self, tail: int | None = None) -> str:
        with self._lock:
            return self._output if tail is None else self._output[-tail:]

    def uptime(self) -> int:
        return int(time.time() - self.started)

    # -- input -----------------------------------------------------------------------------------------

    def write(self, data: str) -> dict[str, Any]:
        if self.exited:
            return {"status": "already_exited", "error": "Process has already finished"}
        if self._stdin is None:
            return {"status": "error", "error": "Process stdin is closed"}
        raw = data.encode()
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(self._stdin, view):]
        except OSError as exc:
            return {"status": "error", "error": f"could not write to the process: {exc.strerror or exc}"}
        return {"status": "ok", "bytes_written": len(data)}

    def close_stdin(self) -> dict[str, Any]:
        if self.exited:
            return {"status": "already_exited", "error": "Process has already finished"}
        if self._stdin is None:
            return {"status": "error", "error": "Process stdin is closed"}
        if self._pty:  # the pty stays the output's path too: end the input with the terminal's EOF
            self.write(_STDIN_EOF.decode())
            return {"status": "ok", "message": "EOF sent"}
        fd, self._stdin = self._stdin, None
        os.close(fd)
        return {"status": "ok", "message": "stdin closed"}

    # -- ending ----------------------------------------------------------------------------------------

    def kill(self, source: str = "process.kill", reason: str = "killed", wait: float | None = None) -> bool:
        """End the job and everything it started; False when it had ended already. Returns once it is over
        (its write-set judged), or after ``wait`` seconds (the kernel's exit: a landing question nobody can
        answer any more must not hold the exit; the job's processes are killed either way)."""
        if self.exited:
            return False
        with self._lock:
            self._ending = self._ending or reason
            self.termination_source = self.termination_source or source
        proc = self._proc
        if proc is not None:
            _kill_group(proc)
        self.ended.wait(wait)
        return True

    # -- the job's own threads -------------------------------------------------------------------------

    def _add(self, text: str) -> None:
        with self._lock:
            self._output += text
            if len(self._output) > OUTPUT_CAP:
                self._dropped += len(self._output) - OUTPUT_CAP
                self._output = self._output[-OUTPUT_CAP:]
        if self.watch_patterns:
            self._watch(text)
        self._draw()

    def _watch(self, text: str) -> None:
        now = time.monotonic()
        if now - self._last_watch < WATCH_COOLDOWN:
            return  # Hermes's rate: one notice per job per 15 s; the output keeps what was dropped
        for line in text.splitlines():
            hit = next((p for p in self.watch_patterns if p in line), None)
            if hit is not None:
                self._last_watch = now
                self._notify(f"background process {self.id} ({_short(self.command)}) printed {hit!r}: "
                             f"{line.strip()[:300]}")
                return

    def _notify(self, line: str) -> None:
        if self._inbox is not None:
            self._inbox.put(line)

    def add_view(self, redraw: Callable[[], None]) -> None:
        """Call ``redraw`` (a display handle's update) whenever the job's output or state changes."""
        self._views.append(redraw)

    def _draw(self) -> None:
        for redraw in list(self._views):
            try:
                redraw()
            except Exception:  # boundary: a card that cannot draw never stops the job
                pass


_jobs: dict[str, Job] = {}
_atexit = False


def jobs() -> list[Job]:
    """Every job of this kernel, oldest first (running and ended)."""
    with _jobs_lock:
        return list(_jobs.values())


def find(session_id: str) -> Job | None:
    with _jobs_lock:
        return _jobs.get(session_id)


def start(command: str, *, line: str, env: dict[str, str], workspace: Path, cwd: Path, use_pty: bool = False,
          notify_on_complete: bool = False, watch_patterns: tuple[str, ...] = (),
          timeout: float | None = None) -> tuple[Job, str | None]:
    """Start ``line`` (``command`` as bash runs it from ``cwd``) in the sandbox with ``env``; returns the job and
    a note when a pty was asked for and none could be had. Raises RuntimeError when the sandbox cannot start
    (the command did not run)."""
    from hermes_nb.tools.safety.sandbox.box import open_box

    global _atexit
    if not _atexit:  # the kernel's exit ends every job (and lands or refuses what each wrote)
        atexit.register(end_all, "kernel exit")
        _atexit = True
    job = Job(command, str(cwd), notify_on_complete=notify_on_complete, watch_patterns=watch_patterns,
              timeout=timeout)
    note = None
    master = slave = None
    if use_pty:
        try:
            import pty

            master, slave = pty.openpty()
        except (ImportError, OSError) as exc:
            note = f"no pseudo-terminal here ({exc}); the job runs with pipes"
    tmp = tempfile.mkdtemp(prefix="hermes-nb-job-")
    env = {**env, "TMPDIR": tmp}
    box = None
    try:
        box = open_box(workspace, tmp)
        if slave is not None:
            io = (slave, slave, slave)
        else:
            io = (subprocess.PIPE, subprocess.PIPE, subprocess.STDOUT)
        if box is not None:
            proc = box.spawn(line, env, io)
        else:
            proc = subprocess.Popen(["bash", "-c", line], cwd=workspace, env=env, stdin=io[0], stdout=io[1],
                                    stderr=io[2], start_new_session=True)
    except BaseException:
        for fd in (master, slave):
            if fd is not None:
                os.close(fd)
        if box is not None:
            box.sweep()
            box.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if slave is not None:
        os.close(slave)  # the child holds it: the master reads EOF (EIO) once the job's side is gone
        job._pty, job._stdin, out = True, master, master
    else:
        assert proc.stdin is not None and proc.stdout is not None
        job._stdin, out = os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno())
        proc.stdin.close()
        proc.stdout.close()
    job._proc, job.pid = proc, proc.pid
    with _jobs_lock:
        _jobs[job.id] = job
    if _viewer:
        _viewer[-1](job)
    context = contextvars.copy_context()  # the run's approver answers for what the job wrote
    reader = threading.Thread(target=_read, args=(job, out), daemon=True, name=f"hermes-nb-job-{job.id}")
    reader.start()
    threading.Thread(target=context.run, args=(_follow, job, box, tmp, reader), daemon=True,
                     name=f"hermes-nb-job-wait-{job.id}").start()
    return job, note


def _read(job: Job, fd: int) -> None:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # a pty's master reads EIO once the other side is closed
                break
            if not chunk:
                break
            job._add(decoder.decode(chunk))
    finally:
        if not job._pty:
            os.close(fd)


def _follow(job: Job, box: Any, tmp: str, reader: threading.Thread) -> None:
    """Wait for the job's end, kill what it left, land what it wrote, say so."""
    proc = job._proc
    assert proc is not None
    try:
        proc.wait(timeout=job.timeout)
    except subprocess.TimeoutExpired:
        with job._lock:
            job._ending = job._ending or "timeout"
            job.termination_source = job.termination_source or "timeout"
        _kill_group(proc)
    _kill_leftovers(proc.pid)
    if box is not None:
        box.sweep()
    reader.join(timeout=5.0)
    fd, job._stdin = job._stdin, None  # nothing reads it any more (a pty's master: its output's end too)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
    notes = box.close() if box is not None else []
    shutil.rmtree(tmp, ignore_errors=True)
    with job._lock:
        job.exit_code = proc.returncode
        job.completion_reason = job._ending or "exited"
        job.termination_source = job.termination_source or "exit"
        job.notes = list(notes)
        if job._dropped:
            job._output = f"[{job._dropped} earlier characters not kept]\n" + job._output
        job._output += "".join(f"\n[hermes_nb: {line}]" for line in notes)
    job.ended.set()
    if job.notify_on_complete or (job.watch_patterns and job.completion_reason != "exited"):
        job._notify(f"background process {job.id} ({_short(job.command)}) ended: {job.completion_reason}, exit "
                    f"code {job.exit_code}" + (f"; {len(notes)} of its writes did not land" if notes else ""))
    job._draw()


def _short(command: str) -> str:
    line = command.strip().splitlines()[0] if command.strip() else ""
    return line if len(line) <= 60 else line[:57] + "..."


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the job's process group (bubblewrap takes its pid namespace with it), SIGKILL after a grace."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        proc.wait(timeout=_KILL_GRACE)
    except subprocess.TimeoutExpired:
        _kill_leftovers(proc.pid)


def _kill_leftovers(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end_all(source: str = "%tools processes kill") -> list[Job]:
    """Kill every running job (the kernel's exit, the extension's unload, ``%tools processes kill``); returns
    the ones it ended."""
    ended = []
    exiting = source == "kernel exit"
    for job in jobs():
        if job.kill(source=source, reason="kernel exit" if exiting else "killed", wait=_EXIT_WAIT if exiting else None):
            ended.append(job)
    return ended
