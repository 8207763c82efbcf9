"""What a notebook tool showed the person but not the model: its traceback and its printed output.

The model gets one line for a tool that raised, and nothing of what the tool printed. The person who
wrote the cell needs both: ``watched(fn, tool)`` wraps a ``%%tool`` function so that each call leaves an
``Aside`` (the traceback cut to the person's own frames, the text it printed), and whoever shows the
result (``%tools call``, the agent transcript) takes it with ``take(tool)``.

Printed text is captured per call (a context variable, so parallel calls in threads and concurrent
coroutines each keep their own) by the core's stdout/stderr router (``hermes_nb.tools.calls.printed``),
in place only while a call runs.
"""

from __future__ import annotations

import collections
import functools
import inspect
import io
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.calls import printed

__all__ = ["Aside", "take", "watched"]

#: Printed text kept per call (the rest is counted, not kept): a tool printing in a loop must not flood.
MAX_PRINTED_CHARS = 20_000
#: Asides nobody took are dropped past this many per tool (a tool called by a run that shows nothing).
_KEEP = 16

_HERE = str(Path(__file__).resolve().parents[1])  # hermes_nb/: frames of our own code


@dataclass(frozen=True, slots=True, kw_only=True)
class Aside:
    """One call's output for the person: ``traceback`` ("" when it returned), ``printed`` text."""

    tool: str
    traceback: str = ""
    printed: str = ""
    printed_chars: int = 0  # all that was printed, ``printed`` may be cut
    converted: str = ""  # what the model got instead of a returned DataFrame, numpy value, ... (one line)

    @property
    def printed_lines(self) -> int:
        return self.printed.count("\n") + (1 if self.printed and not self.printed.endswith("\n") else 0)


_lock = threading.Lock()
_pending: dict[str, collections.deque[Aside]] = {}


def take(tool: str) -> Aside | None:
    """The oldest aside of ``tool`` not yet shown, or None."""
    with _lock:
        queue = _pending.get(tool)
        return queue.popleft() if queue else None


def _put(aside: Aside) -> None:
    with _lock:
        _pending.setdefault(aside.tool, collections.deque(maxlen=_KEEP)).append(aside)


# -- printed output ------------------------------------------------------------------------------

class _Capture:
    def __init__(self) -> None:
        self.parts = io.StringIO()
        self.chars = 0

    def write(self, text: str) -> None:
        self.chars += len(text)
        room = MAX_PRINTED_CHARS - self.parts.tell()
        if room > 0:
            self.parts.write(text[:room])


# -- the wrapper ---------------------------------------------------------------------------------


def _person_traceback(exc: BaseException) -> str:
    """The traceback without hermes_nb's frames: it starts in the person's cell."""
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not str(Path(f.filename).resolve() if f.filename[:1] != "<" else f.filename)
         .startswith(_HERE)])
    return "".join(te.format()).rstrip()


def _finish(tool: str, capture: _Capture, exc: BaseException | None, result: Any = None) -> None:
    printed = capture.parts.getvalue()
    trace = _person_traceback(exc) if exc is not None else ""
    converted = ""
    if exc is None and not isinstance(result, (str, int, float, bool, list, dict, type(None))):
        from hermes_nb.tools.calls.result_values import conversion_note

        converted = conversion_note(result)
    if trace or printed or converted:
        _put(Aside(tool=tool, traceback=trace, printed=printed, printed_chars=capture.chars, converted=converted))


def _begin() -> tuple[_Capture, Any]:
    capture = _Capture()
    return capture, printed.start(capture.write)


def _end(token: Any) -> None:
    printed.stop(token)


def watched(fn: Callable[..., Any], tool: str) -> Callable[..., Any]:
    """``fn``, leaving an ``Aside`` for ``tool`` when a call prints or raises (the exception still rises).

    The wrappers reach module state (a ContextVar) only through module-level functions, which cloudpickle
    sends by reference: a notebook tool still travels to Dask workers."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            capture, token = _begin()
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                _finish(tool, capture, exc)
                raise
            finally:
                _end(token)
            _finish(tool, capture, None, result)
            return result
        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        capture, token = _begin()
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            _finish(tool, capture, exc)
            raise
        finally:
            _end(token)
        _finish(tool, capture, None, result)
        return result
    return run
