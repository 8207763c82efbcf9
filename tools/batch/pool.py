"""The process-wide worker pool for sync tool handlers, which survives handlers that never return.

A Python thread cannot be stopped. A call that outlives its timeout is therefore *abandoned*: its thread
keeps running the handler, but it no longer counts as one of the pool's workers, and a replacement is
started so later calls do not queue behind it. Abandoned threads are bounded (``max_stuck``); past that,
new calls wait for a worker, and their batch's timeout still bounds the wait (they come back as "never
started"). ``stuck_calls()`` lists the abandoned calls still running (``%tools doctor`` shows them); an
abandoned thread ends as soon as its handler returns.

Threads are daemons: a handler blocked forever must not keep the kernel from shutting down.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MAX_STUCK", "StuckCall", "ToolPool"]

#: Abandoned threads allowed at once before new calls have to wait for a worker.
DEFAULT_MAX_STUCK = 128


@dataclass(frozen=True, slots=True, kw_only=True)
class StuckCall:
    """A call that outlived its timeout and still holds a thread."""

    name: str
    tool_call_id: str
    started: float  # time.monotonic() when its handler started
    abandoned: float  # time.monotonic() when its timeout abandoned it


class _Work:
    __slots__ = ("future", "fn", "args", "label", "started")

    def __init__(self, future: concurrent.futures.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...],
                 label: tuple[str, str]):
        self.future, self.fn, self.args, self.label = future, fn, args, label
        self.started = 0.0


class _Worker:
    __slots__ = ("work", "abandoned")

    def __init__(self) -> None:
        self.work: _Work | None = None
        self.abandoned: StuckCall | None = None


class ToolPool(concurrent.futures.Executor):
    """``size`` workers for sync handlers, each replaced when its call is abandoned (up to ``max_stuck``)."""

    def __init__(self, size: int, *, max_stuck: int = DEFAULT_MAX_STUCK, name: str = "hermes-nb-tool"):
        self.size, self.max_stuck, self._name = size, max_stuck, name
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers: set[_Worker] = set()  # live workers, idle or busy, not abandoned
        self._stuck: set[_Worker] = set()
        self._idle = 0
        self._queued = 0
        self._counter = itertools.count()
        self._shutdown = False

    # -- Executor ---------------------------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if kwargs:
            return self.submit_call(("", ""), lambda: fn(*args, **kwargs))
        return self.submit_call(("", ""), fn, *args)

    def submit_call(self, label: tuple[str, str], fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)``; ``label`` (tool name, call id) names the call if it gets stuck."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("the tool pool is shut down")
            self._queued += 1
            self._queue.put(_Work(future, fn, args, label))
            self._grow()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            for _ in range(len(self._workers)):
                self._queue.put(None)
        # never joins: a stuck handler would make shutdown hang, and the threads are daemons

    # -- abandonment --------------------------------------------------------------------------------

    def abandon(self, future: concurrent.futures.Future[Any]) -> bool:
        """The call behind ``future`` timed out: cancel it if queued, else give its worker up and replace it."""
        if future.cancel():
            return True
        with self._lock:
            for worker in self._workers:
                work = worker.work
                if work is not None and work.future is future:
                    break
            else:
                return False  # already finished
            self._workers.discard(worker)
            worker.abandoned = StuckCall(name=work.label[0], tool_call_id=work.label[1], started=work.started,
                                         abandoned=time.monotonic())
            self._stuck.add(worker)
            self._grow()
        return True

    def stuck_calls(self) -> list[StuckCall]:
        """Abandoned calls still running, oldest first."""
        with self._lock:
            return sorted((w.abandoned for w in self._stuck if w.abandoned is not None), key=lambda s: s.started)

    def resize(self, size: int) -> None:
        with self._lock:
            self.size = max(self.size, size)
            self._grow()

    # -- workers ----------------------------------------------------------------------------------

    def _grow(self) -> None:
        """Start workers for queued work, within ``size`` live and ``max_stuck`` abandoned (lock held)."""
        while (self._queued > self._idle and len(self._workers) < self.size
               and len(self._stuck) <= self.max_stuck and not self._shutdown):
            worker = _Worker()
            self._workers.add(worker)
            self._idle += 1  # counted idle until it takes its first work
            threading.Thread(target=self._serve, args=(worker,), daemon=True,
                             name=f"{self._name}-{next(self._counter)}").start()

    def _serve(self, worker: _Worker) -> None:
        while True:
            work = self._queue.get()
            with self._lock:
                self._idle -= 1
                if work is None:
                    self._workers.discard(worker)
                    return
                self._queued -= 1
                if not work.future.set_running_or_notify_cancel():
                    self._idle += 1
                    continue
                work.started = time.monotonic()
                worker.work = work
            _run(work)
            with self._lock:
                worker.work = None
                if worker.abandoned is not None:  # replaced long ago: this thread's job is done
                    self._stuck.discard(worker)
                    self._grow()  # at the ceiling, queued work may have been waiting for this
                    return
                self._idle += 1
            del work  # an idle worker holds nothing of its last call


def _run(work: _Work) -> None:
    try:
        result = work.fn(*work.args)
    except BaseException as exc:  # the future carries it; a worker thread must not die of it
        work.future.set_exception(exc)
    else:
        work.future.set_result(result)
