"""One ``execute_code`` script as it runs: its namespace, its printed output, its tool calls and its stop.

``CodeSession`` is the namespace a run's scripts share (a module namespace of its own, never the
notebook's), with ``import hermes_tools`` bound to the script running in it now. What the script's thread
writes to ``sys.stdout`` / ``sys.stderr`` (``print`` included) is its output (``tools.calls.printed``). ``Script``
runs one piece of code in the calling thread and keeps what the model gets back: what it printed,
the calls it made, how it ended. ``Script.stop`` ends it from another thread: at its next tool call or
printed line, and by an exception raised into its thread (``PyThreadState_SetAsyncExc``), which a blocking C
call (a long ``time.sleep``, a socket read) only sees when it returns.
"""

from __future__ import annotations

import builtins
import ctypes
import io
import itertools
import linecache
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from hermes_nb.tools.calls import printed
from hermes_nb.tools.code_execution.threads import Threads

__all__ = ["CodeSession", "Script", "ScriptStopped", "ToolCallLimitError"]

#: Printed text kept at most (a runaway print loop must not fill the memory); the rest is counted.
HARD_OUTPUT_CHARS = 5_000_000
_numbers = itertools.count(1)


class ScriptStopped(KeyboardInterrupt):
    """Raised inside a script that ran out of time or was stopped by ■ (a KeyboardInterrupt, so that
    ``except Exception`` in the script does not swallow it and a tool batch it waits on settles its call)."""


class ToolCallLimitError(RuntimeError):
    """The script made more tool calls than its run allows."""


class CodeSession:
    """The namespace a run's scripts share: variables persist from one ``execute_code`` to the next."""

    def __init__(self, variables: Mapping[str, Any] | None = None) -> None:
        self.current: Script | None = None
        own = dict(vars(builtins))
        own["__import__"] = _script_import(self._hermes_tools)
        # a function a script defines keeps these builtins (CPython binds them when it is made), so they
        # look up the script running now instead of holding the one that defined them
        self.namespace: dict[str, Any] = {"__name__": "__execute_code__", "__builtins__": own, **(variables or {})}

    def _hermes_tools(self, name: str, level: int) -> Any:
        script = self.current
        return script.module if level == 0 and name == "hermes_tools" and script is not None else None


#: The script's ``__import__``, made outside hermes_nb's modules: the kernel's import guard
#: (``tools.safety.writes.imports``) treats an import by hermes_nb's own frames as hermes_nb's, and a script's
#: imports are the script's (the person's approved code), like a cell's.
_IMPORT = """
def __import__(name, globals=None, locals=None, fromlist=(), level=0):
    module = _hermes_tools(name, level)
    return module if module is not None else _real(name, globals, locals, fromlist, level)
"""


def _script_import(hermes_tools: Callable[[str, int], Any]) -> Any:
    scope: dict[str, Any] = {"__name__": "__execute_code__", "_hermes_tools": hermes_tools,
                             "_real": builtins.__import__}
    exec(compile(_IMPORT, "<execute_code import>", "exec"), scope)
    return scope["__import__"]


class Script:
    """One script: run it with ``run`` (in the thread it should use), read the outcome afterwards."""

    def __init__(self, session: CodeSession, code: str, *, module: Any, call: Callable[[Script, str, dict[str, Any]], Any],
                 max_tool_calls: int, threads: Threads | None = None) -> None:
        self.session, self.code, self.module = session, code, module
        self.threads = threads if threads is not None else Threads()  # the threads it starts (tools.code_execution.threads)
        self._call, self.max_tool_calls = call, max_tool_calls
        self.tool_calls = 0
        self.status = "running"  # then: success | error | timeout | interrupted
        self.error: str | None = None
        self.traceback = ""
        self.started = time.monotonic()
        self.ended: float | None = None
        self._parts = io.StringIO()
        self.printed_chars = 0
        self._stop: str | None = None
        self._thread: int | None = None
        self._raised = False
        self._lock = threading.Lock()
        self.done = threading.Event()

    # -- inside the script's thread -----------------------------------------------------------------

    def run(self) -> None:
        """Execute the code in the session's namespace, here; never raises."""
        with self._lock:
            self._thread = threading.get_ident()
        unadopt = self.threads.adopt_current()
        try:
            try:
                self._execute()
            except ScriptStopped:  # raised into this thread just as the script ended, in the bookkeeping
                if self.status == "running":
                    self.status = self._stop or "interrupted"
            finally:
                with self._lock:  # from here on nothing is raised into this thread
                    self._thread = None
        except ScriptStopped:  # one raised just before that, landing here
            if self.status == "running":
                self.status = self._stop or "interrupted"
        unadopt()
        self.session.current = None
        self.ended = time.monotonic()
        self.done.set()

    def _execute(self) -> None:
        filename = f"<execute_code #{next(_numbers)}>"
        linecache.cache[filename] = (len(self.code), None, self.code.splitlines(keepends=True), filename)
        self.session.current = self
        token = printed.start(self._printed)  # print(), sys.stdout/stderr writes: this thread's, the script's
        try:
            exec(compile(self.code, filename, "exec"), self.session.namespace)
            self.status = "success"
        except KeyboardInterrupt as exc:  # ScriptStopped, or a tool batch it waited on, interrupted by it
            self.status = self._stop or "error"
            if self._stop is None:
                self._failed(exc, filename)
        except BaseException as exc:  # the script failing (SystemExit included) is its result
            self.status = "interrupted" if self._stop == "interrupted" else "error"
            self._failed(exc, filename)
        finally:
            printed.stop(token)

    def _failed(self, exc: BaseException, filename: str) -> None:
        self.error = f"{type(exc).__name__}: {exc}"
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if f.filename == filename]  # the script's own lines are what the model wrote
        lines = traceback.format_list(own[-10:]) + traceback.format_exception_only(exc)
        self.traceback = "".join(lines)

    def check(self) -> None:
        """Raise ``ScriptStopped`` when the script was stopped (called at every tool call and print)."""
        if self._stop is not None:
            raise ScriptStopped(self._stop)

    def _printed(self, text: str) -> None:
        self.check()  # a script that prints in a loop stops at its next line once stopped
        self.write(text)

    def write(self, text: str) -> None:
        self.printed_chars += len(text)
        room = HARD_OUTPUT_CHARS - self._parts.tell()
        if room > 0:
            self._parts.write(text[:room])

    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        """One tool call from the script (the ``hermes_tools`` functions end here)."""
        self.check()
        if self.tool_calls >= self.max_tool_calls:
            raise ToolCallLimitError(f"execute_code allows {self.max_tool_calls} tool calls per script; "
                                     f"this was call {self.tool_calls + 1}")
        self.tool_calls += 1
        result = self._call(self, name, args)
        self.check()
        return result

    # -- from outside ---------------------------------------------------------------------------------

    def stop(self, why: str) -> None:
        """End the script (``why``: "timeout" or "interrupted"); its thread sees it as soon as it runs Python."""
        if self._stop is None:
            self._stop = why
        with self._lock:  # once, and only while the script's thread is inside ``run``
            if self._thread is not None and not self._raised:
                self._raised = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), ctypes.py_object(ScriptStopped))

    @property
    def printed(self) -> str:
        text = self._parts.getvalue()
        if self.printed_chars > len(text):
            text += f"\n[{self.printed_chars - len(text):,} more printed chars were not kept]"
        return text
