"""The threads an ``execute_code`` script starts: known by who started them, named in its card, stopped at the run's end.

Which threads are the script's is decided by who started them, not by a name or a guess from timing: while a run
serves ``execute_code``, ``threading.Thread.start`` (wrapped once, for as long as any run needs it; ``watch``)
looks at the thread calling it. The script's own thread carries its ``Threads`` record, and a thread started from
a thread that carries one carries the same record, so a thread that a script's thread starts (or a pool the
script made, or a thread one of those starts) is the script's. A thread hermes_nb itself starts while serving the
script (a worker for one of its tool calls, on the script's thread) is not: the nearest code on the stack that asked
for it is hermes_nb's, not the script's.

Stopping: Python cannot kill a thread. ``stop`` raises ``ThreadStopped`` (a ``SystemExit``: a thread ending by it
prints no traceback, and ``except Exception`` does not catch it) into each thread with
``PyThreadState_SetAsyncExc``, a few times, waiting briefly between. Its limits, said where they show: a thread
blocked in a call that does not return to Python (a long ``time.sleep``, a socket read, a lock) sees it only when
that call returns; one that catches ``BaseException`` (or uses a bare ``except:``) can go on; ``finally`` blocks
run. Threads started without ``threading`` (``_thread.start_new_thread``, a C extension's own) are not seen.
Whatever is still alive is named by the caller as still running.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["ThreadStopped", "Threads", "stop", "watch"]

_MARK = "_hermes_nb_threads"


class ThreadStopped(SystemExit):
    """Raised into a thread a script started, when its run ends."""


class Threads:
    """The threads started from one place (one script), and, through ``parent``, the run's record of them all.

    A thread is listed before it starts and counts as running from then on: between ``start()`` and its first line
    it is in ``threading.enumerate()`` but not yet ``is_alive()`` (nor has it an id to be stopped by), and a thread
    a script's thread starts may be in that gap just as the script or the run ends. ``close`` (the run's end)
    refuses later starts and waits for those in the gap to arrive, so ``stop`` reaches every one.
    """

    def __init__(self, parent: Threads | None = None) -> None:
        self.parent = parent
        self._changed = threading.Condition()
        self._started: list[threading.Thread] = []
        self._starting: set[threading.Thread] = set()  # listed, not yet running its first line
        self._closed = False

    def add(self, thread: threading.Thread) -> None:
        """List ``thread``, about to start; ``ThreadStopped`` (raised in the starter) once the run's end began."""
        if self.parent is not None:
            self.parent.add(thread)  # the run's record first: its ``close`` and this check cannot interleave
        with self._changed:
            if not self._closed:
                if thread not in self._started:
                    self._started.append(thread)
                self._starting.add(thread)
                return
        if self.parent is not None:
            self.parent._forget(thread)
        raise ThreadStopped(f"thread {thread.name!r} not started: the run that started its starter has ended")

    def arrived(self, thread: threading.Thread) -> None:
        """``thread`` runs (it is alive from here), or its start failed: it is no longer in the gap."""
        with self._changed:
            self._starting.discard(thread)
            self._changed.notify_all()
        if self.parent is not None:
            self.parent.arrived(thread)

    def _forget(self, thread: threading.Thread) -> None:
        with self._changed:
            if thread in self._starting:  # listed by this ``add`` only: refused further down, it never starts
                self._starting.discard(thread)
                self._started.remove(thread)
            self._changed.notify_all()
        if self.parent is not None:
            self.parent._forget(thread)

    @property
    def started(self) -> tuple[threading.Thread, ...]:
        with self._changed:
            return tuple(self._started)

    def running(self) -> list[threading.Thread]:
        """The threads alive, or started and not yet at their first line (they will run)."""
        with self._changed:
            return [t for t in self._started if t in self._starting or t.is_alive()]

    def close(self, wait: float = 1.0) -> None:
        """Refuse the threads started from now on, and wait (up to ``wait`` s) for those started to arrive."""
        with self._changed:
            self._closed = True
            self._changed.wait_for(lambda: not self._starting, wait)

    def adopt_current(self) -> Callable[[], None]:
        """Count the threads the calling thread starts as this record's; returns the undo (same thread)."""
        me = threading.current_thread()
        before = getattr(me, _MARK, None)
        setattr(me, _MARK, self)
        return lambda: setattr(me, _MARK, before)


# -- the one wrapper of Thread.start ---------------------------------------------------------------

_lock = threading.Lock()
_users = 0
_original: Callable[..., None] | None = None


@functools.cache
def _own_folders() -> tuple[str, ...]:
    import hermes_nb
    import hermes_nb.tools

    return tuple(os.path.dirname(m.__file__ or "") + os.sep for m in (hermes_nb, hermes_nb.tools))


def _for_hermes_nb() -> bool:
    """Whether the nearest code that asked for this thread is hermes_nb's (a worker for the script's tool call)
    rather than the script's own (its lines, or a library it called): the stack is read outward from the caller."""
    frame = sys._getframe(2)
    own = _own_folders()
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<execute_code"):
            return False
        if filename.startswith(own) and not filename.endswith(f"{os.sep}threads.py"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _start(self: threading.Thread) -> None:
    assert _original is not None
    owner = getattr(threading.current_thread(), _MARK, None)
    if owner is None or _for_hermes_nb():
        _original(self)
        return
    setattr(self, _MARK, owner)  # before it runs: what it starts is the script's too
    self.run = _quiet(self.run, lambda: owner.arrived(self))  # type: ignore[method-assign]
    owner.add(self)  # before it starts: it is listed (and counted as running) by the time anything can see it
    try:
        _original(self)
    except Exception:  # it could not start
        owner.arrived(self)
        raise
    # A ThreadStopped (a BaseException) raised into the starter after the hand-over to the OS leaves the thread to
    # arrive by itself. One that lands in the few bytecodes before it leaves the thread listed and never started:
    # ``close`` then waits its whole ``wait`` and the card names it as still running (never as stopped). Python
    # cannot tell the two apart from here.


def _quiet(run: Callable[[], None], arrived: Callable[[], None]) -> Callable[[], None]:
    """The thread's ``run``: first saying it arrived, then ending without a word when it is stopped (no
    "Exception in thread" report)."""
    def guarded() -> None:
        try:
            arrived()
            run()
        except ThreadStopped:
            pass

    return guarded


def watch() -> Callable[[], None]:
    """Know which threads scripts start, from now until the returned undo (counted: runs may overlap)."""
    global _users, _original
    with _lock:
        if _users == 0:
            _original = threading.Thread.start
            threading.Thread.start = _start  # type: ignore[method-assign]
        _users += 1
    done = False

    def undo() -> None:
        global _users, _original
        nonlocal done
        with _lock:
            if done:
                return
            done = True
            _users -= 1
            if _users == 0 and _original is not None:
                if threading.Thread.start is _start:  # whoever wrapped it after us keeps theirs
                    threading.Thread.start = _original  # type: ignore[method-assign]
                _original = None

    return undo


def stop(threads: list[threading.Thread], *, wait: float = 1.0, tries: int = 3) -> list[threading.Thread]:
    """Raise ``ThreadStopped`` into each live thread (``tries`` times within ``wait`` seconds); those still alive
    (or never reached)."""
    # one not yet at its first line (``Threads.close`` waited for it in vain) has no id to raise into: it is left
    alive = [t for t in threads if (t.is_alive() or t.ident is None) and t is not threading.current_thread()]
    deadline = time.monotonic() + wait
    for attempt in range(tries):
        for thread in alive:
            if not thread.is_alive():  # checked just before: an ended thread's id may be given to a new one
                continue
            ident = ctypes.c_ulong(thread.ident or 0)
            if ctypes.pythonapi.PyThreadState_SetAsyncExc(ident, ctypes.py_object(ThreadStopped)) > 1:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ident, None)  # CPython's rule: more than one is undone
        slice_end = time.monotonic() + (deadline - time.monotonic()) / (tries - attempt)
        for thread in alive:
            if thread.is_alive():  # joining one not yet started raises
                thread.join(max(0.0, slice_end - time.monotonic()))
        alive = [t for t in alive if t.is_alive() or t.ident is None]
        if not alive:
            break
    return alive


def names(threads: list[threading.Thread]) -> list[str]:
    """How a card names threads: their names (``Thread-3 (worker)`` when the script gave none)."""
    return [t.name for t in threads]
