"""Questions for the person, asked on the main thread.

A tool running in a worker thread (a parallel batch, the agent loop) may need the person: an
approval, a clarify question. In a kernel only the main thread can receive a widget click while a
cell is running, so such a call is handed to the main thread when the main thread is blocked waiting
for that very work (``main_thread_waiting``), and serviced there between wait slices (``service``).
When nothing waits on the main thread (top-level ``await``, plain scripts), the call runs where it is.

An interrupt (■) while the main thread shows a question is the main thread's: ``KeyboardInterrupt``
leaves ``service()`` so the waiting code stops as it would at any other moment. The asking thread gets
``Interrupted``, but only once the main thread has stopped waiting (by then a batch has settled every
call as interrupted, so its late answer is dropped); questions queued meanwhile are never shown.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

__all__ = ["CallbackStack", "Interrupted", "asking", "main_thread_waiting", "post", "run_on_main", "service"]

T = TypeVar("T")
C = TypeVar("C")

_requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
_waiting = 0
_lock = threading.Lock()
_interrupted = False  # set by ■ during a question; cleared when the main thread stops waiting
_held: list[_Request] = []  # interrupted questions, answered when the main thread stops waiting
_asking = 0  # questions (run_on_main) waiting for or being answered on the main thread


def asking() -> bool:
    """Whether a question for the person is waiting for the main thread or being answered there (a live view
    draws "waiting for you" then, not "waiting for the model")."""
    return _asking > 0


class Interrupted(KeyboardInterrupt):
    """The person pressed ■ while a question waited (or before it could be shown)."""


class _Request:
    __slots__ = ("_claim", "args", "done", "error", "fn", "kwargs", "posted", "result")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._claim = threading.Lock()
        self.posted = False  # nobody waits for it (``post``): it runs even after ■

    def claim(self) -> bool:
        """Exactly one runner (the main thread or, if it left, the asker) gets the request."""
        return self._claim.acquire(blocking=False)

    def run(self) -> None:
        try:
            self.result = self.fn(*self.args, **self.kwargs)
        except KeyboardInterrupt:
            if not _on_main():
                raise
            _hold(self)  # ■ belongs to the main thread's wait; the asker hears of it later
            raise
        except BaseException as exc:  # handed back to the asking thread, which re-raises it
            self.error = exc
        self.done.set()


def _hold(request: _Request) -> None:
    """Answer ``request`` with ``Interrupted`` once the main thread stops waiting."""
    global _interrupted
    request.error = Interrupted("the person interrupted the run (■) before answering")
    with _lock:
        _interrupted = True
        _held.append(request)


def _release_held() -> None:
    global _interrupted
    with _lock:
        held, _held[:] = list(_held), []
        _interrupted = False
    for request in held:
        request.done.set()


def _on_main() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def main_thread_waiting() -> Iterator[None]:
    """Mark the main thread as blocked waiting (it promises to call ``service()`` often)."""
    global _waiting
    if not _on_main():
        yield
        return
    with _lock:
        _waiting += 1
    try:
        yield
    finally:
        with _lock:
            _waiting -= 1
        if _waiting == 0:
            service()  # nobody will pick these up any more: run them now (or, after ■, drop them)
            _release_held()


def service() -> int:
    """Run the requests queued for the main thread; returns how many ran. Main thread only."""
    if not _on_main():
        return 0
    count = 0
    while True:
        try:
            request = _requests.get_nowait()
        except queue.Empty:
            return count
        if not request.claim():
            continue
        if _interrupted and not request.posted:  # after ■ no further question is shown in this wait
            _hold(request)
            continue
        request.run()
        count += 1


def post(fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn`` on the main thread without waiting for it (e.g. print a line under the cell)."""
    if _on_main() or _waiting == 0:
        fn(*args)
        return
    request = _Request(fn, args, {})
    request.posted = True
    _requests.put(request)


def run_on_main(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call ``fn`` on the main thread if it is blocked waiting for us; otherwise call it here."""
    global _asking
    if _on_main() or _waiting == 0:
        return fn(*args, **kwargs)
    request = _Request(fn, args, kwargs)
    with _lock:
        _asking += 1
    try:
        _requests.put(request)
        _wait_for(request)
    finally:
        with _lock:
            _asking -= 1
    if request.error is not None:
        raise request.error
    return request.result


def _wait_for(request: _Request) -> None:
    while not request.done.wait(0.05):
        if _waiting == 0 and request.claim():  # the main thread stopped waiting: run it here
            if _interrupted:  # ...because ■ stopped the run this question belonged to: not asked
                request.error = Interrupted("the person interrupted the run (■) before this question")
                break
            request.run()


class CallbackStack(Generic[C]):
    """Who answers a kind of question (approval, clarify): the last installed, undone in any order."""

    def __init__(self) -> None:
        self._items: list[C] = []
        self._lock = threading.Lock()

    def push(self, callback: C) -> Callable[[], None]:
        """Install ``callback``; returns an idempotent undo."""
        with self._lock:
            self._items.append(callback)

        def undo() -> None:
            with self._lock:
                if callback in self._items:
                    self._items.remove(callback)

        return undo

    def current(self) -> C | None:
        """The last installed callback that can answer now (one with ``available()`` False stands aside)."""
        with self._lock:
            items = list(self._items)
        for callback in reversed(items):
            available = getattr(callback, "available", None)
            if available is None or available():
                return callback
        return None
