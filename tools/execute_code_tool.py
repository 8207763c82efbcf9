"""Built-in toolset ``code_execution``: ``execute_code``, a Python script that calls the run's tools as functions.

Hermes's tool, name and arguments (``code``, ``reset``): the model writes a script, ``from hermes_tools
import read_file, my_cell_tool`` gives it the tools of its run as typed functions (``tools.code_execution.module``),
and only what the script prints comes back. It runs in the kernel's process (a thread of its own) but in a
namespace of its own, kept for the run (``tools.code_execution.script``): the notebook's variables are not visible
unless the person passes them (``Agent(code_vars={...})``).

Every call a script makes is one tool call of the run: a one-call batch (``tools.batch``), so the approval
gate, the tool's timeout, hooks and the result budget are the same as for the model's own calls, and the
run shows it as a card nested under the script's. ``execute_code`` and ``delegate_task`` are not callable
from inside. The run provides a ``CodeHost`` (``use_code_host``); without one (outside an agent run)
the tool says it needs a run.

Limits (``config.yaml`` ``code_execution: {timeout, max_tool_calls, max_output_chars}``): 300 s, 50 tool
calls, 50 000 printed chars in the result (more is spilled to a file, like any large result). A script
past its time or stopped by ■ ends at its next tool call or print, or at once when it runs Python.

Safety: the script is arbitrary code in the kernel, not sandboxed. Every script asks the person, showing
the code, whatever ``code: {require_approval}`` says; "for this session" does not carry to the next script, and
"always" holds for this code only while every file it names (``tools.code_execution.named_files``: what it
imports, opens, runs or starts) has the content it had, as a terminal command's does; a script that names what it
runs only at run time gets a yes for once. Threads a script starts are named in its result (``threads_running``)
and stopped when the run ends (``tools.code_execution.threads``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from hermes_nb.tools.registry import registry, tool_error

__all__ = ["NOT_INSIDE", "CodeHost", "Limits", "code_limits", "execute_code", "use_code_host"]

NAME = "execute_code"
#: Tools a script cannot call: a script inside a script, a sub-agent from a script.
NOT_INSIDE = frozenset({"execute_code", "delegate_task"})
PATTERN_KEY = "execute-code"
_DESCRIPTION = ("The model wants to run a Python script in the kernel's process (not sandboxed: it can do "
                "anything Python can). Each tool the script calls is approved like the model's own calls.")
_NO_RUN = ("execute_code runs inside an agent run (Agent.run, %%agent): its script calls that run's tools. "
           "Call the tools directly instead.")
#: Seconds to wait for a stopped script's thread before answering without it.
_GRACE = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    timeout: float = 300.0
    max_tool_calls: int = 50
    max_output_chars: int = 50_000


def code_limits() -> Limits:
    """The limits in ``config.yaml`` (``code_execution:``), each falling back to its default when not a positive number."""
    from hermes_nb.tools.config import load_config

    section = load_config().get("code_execution")
    section = section if isinstance(section, dict) else {}
    default = Limits()

    def number(key: str, fallback: float) -> Any:
        value = section.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
        return value if ok else fallback

    return Limits(timeout=float(number("timeout", default.timeout)),
                  max_tool_calls=int(number("max_tool_calls", default.max_tool_calls)),
                  max_output_chars=int(number("max_output_chars", default.max_output_chars)))


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeHost:
    """What ``execute_code`` needs of the run calling it; the agent installs one per run (``use_code_host``)."""

    definitions: Callable[[], list[dict[str, Any]]]  # the tool definitions the run offers now
    session: Callable[[bool], Any]  # (reset) -> the run's ``tools.code_execution.script.CodeSession``
    # a nested call was queued: (parent call id, call id, tool name, arguments as JSON)
    on_queued: Callable[[str, str, str, str], None] | None = None
    on_event: Callable[[Any], None] | None = None  # a nested call's ``BatchEvent`` (start, end)
    #: the run's record of the threads its scripts start (``tools.code_execution.threads.Threads``), stopped when
    #: the run ends; None: nobody stops them
    threads: Any = None


_host: contextvars.ContextVar[CodeHost | None] = contextvars.ContextVar("hermes_nb_code_host", default=None)


@contextmanager
def use_code_host(host: CodeHost | None) -> Iterator[None]:
    """Let ``host`` serve the ``execute_code`` calls of this context (a run's task) only."""
    token = _host.set(host)
    try:
        yield
    finally:
        _host.reset(token)


def code_ask(code: str) -> Any:
    """The judge: every script asks, showing its code (no switch turns this off); "always" is tied to the
    files the script names."""
    from hermes_nb.tools.code_execution.named_files import bound
    from hermes_nb.tools.safety.approvals.gate import Ask
    from hermes_nb.tools.workspace import workspace_root

    tied = bound(code, workspace_root())
    return Ask(tool=NAME, subject=code, key=PATTERN_KEY, description=_DESCRIPTION + tied.sentence(), scopes=frozenset(),
               bound=tied.text, lasting=not tied.dynamic)


# -- one nested call ------------------------------------------------------------------------------

def _nested_call(host: CodeHost, parent: str, deadline: float, script: Any, name: str, args: dict[str, Any]) -> Any:
    from hermes_nb.tools.batch.records import BatchEvent
    from hermes_nb.tools.batch.scheduling import run_tool_batch
    from hermes_nb.tools.budget import maybe_persist_tool_result
    from hermes_nb.tools.search.scope import unwrap_calls

    call_id = f"{parent}.{script.tool_calls}"
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
    (call,) = unwrap_calls([call])  # tool search's tool_call: the real tool, as for the model's own calls
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    if name in NOT_INSIDE:
        return _value(tool_error(f"{name} cannot be called from an execute_code script"))
    if host.on_queued is not None:
        host.on_queued(parent, call_id, name, arguments)

    def on_event(event: BatchEvent) -> None:
        if event.kind == "start" and host.on_event is not None:
            host.on_event(event)

    left = max(deadline - time.monotonic(), 0.001)
    result = run_tool_batch([call], timeout=left, on_event=on_event)[0]
    content = maybe_persist_tool_result(result.content, name, call_id)
    if host.on_event is not None:
        host.on_event(BatchEvent(kind="end", index=0, tool_call_id=call_id, name=name, time=result.ended,
                                 result=replace(result, content=content)))
    return _value(content)


def _value(content: str) -> Any:
    """What a script gets: JSON results as Python values, other text as str."""
    text = str(content)
    if text[:1] in "{[\"-" or text[:1].isdigit() or text in ("true", "false", "null"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


# -- the tool -------------------------------------------------------------------------------------

def _current_call_id() -> str:
    from hermes_nb.tools.calls.call_hooks import call_fields

    found = call_fields().get("tool_call_id")
    return found if isinstance(found, str) and found else "execute_code"


async def execute_code(args: dict[str, Any], **_: Any) -> dict[str, Any] | str:
    """The handler: run ``args["code"]`` in the run's namespace, in a thread, within the limits."""
    from hermes_nb.tools.code_execution.module import build_module
    from hermes_nb.tools.code_execution.script import Script
    from hermes_nb.tools.code_execution.threads import Threads

    host = _host.get()
    if host is None:
        return tool_error(_NO_RUN)
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        return tool_error("execute_code needs Python source in 'code' (use terminal for shell commands)")
    limits = code_limits()
    session = host.session(bool(args.get("reset")))
    if session.current is not None:
        return tool_error("the run's previous script is still running (stuck in a call Python cannot interrupt); "
                          "pass reset=true to run in a fresh namespace")
    parent = _current_call_id()
    deadline = time.monotonic() + limits.timeout
    allowed = [d for d in host.definitions() if d.get("function", {}).get("name") not in NOT_INSIDE]
    script: Script

    def call(script: Script, name: str, call_args: dict[str, Any]) -> Any:
        return _nested_call(host, parent, deadline, script, name, call_args)

    module = build_module(allowed, lambda name, call_args: script.call_tool(name, call_args))
    script = Script(session, code, module=module, call=call, max_tool_calls=limits.max_tool_calls,
                    threads=Threads(parent=host.threads))
    context = contextvars.copy_context()  # the run's approver and host reach the script's tool calls
    ended: concurrent.futures.Future[None] = concurrent.futures.Future()

    def run() -> None:  # its own thread: a script stuck in C code holds nothing of the loop's or the pool's
        context.run(script.run)  # never raises
        ended.set_result(None)

    threading.Thread(target=run, name="hermes-nb-execute-code", daemon=True).start()
    finished = asyncio.wrap_future(ended)
    try:
        await asyncio.wait_for(asyncio.shield(finished), limits.timeout)
    except TimeoutError:
        script.stop("timeout")
        await asyncio.wait({finished}, timeout=_GRACE)
    except asyncio.CancelledError:  # ■, or the batch's own timeout: the batch answers the call
        script.stop("interrupted")
        raise
    return _result(script, limits, parent)


def _result(script: Any, limits: Limits, parent: str) -> dict[str, Any]:
    from hermes_nb.tools.budget import maybe_persist_tool_result

    status = script.status if script.done.is_set() else "timeout"
    output = maybe_persist_tool_result(script.printed, NAME, f"{parent}-output", threshold=limits.max_output_chars)
    ended = script.ended if script.ended is not None else time.monotonic()
    result: dict[str, Any] = {"status": status, "output": output, "tool_calls_made": script.tool_calls,
                              "duration_seconds": round(ended - script.started, 2)}
    if status == "timeout":
        result["error"] = f"the script ran out of its {limits.timeout:g} s and was stopped"
        if not script.done.is_set():
            result["error"] += (" (its thread is still in a call Python cannot interrupt; it ends when that "
                                "returns)")
    elif status == "error":
        result["error"] = script.error
        result["traceback"] = script.traceback
    started = script.threads.started
    alive = script.threads.running()  # with any a script's thread is starting right now
    running = [t.name for t in alive]
    if running:  # the card and the model both see them: Python keeps running there after the script ended
        result["threads_running"] = running
        result["threads_note"] = ("threads this script started are still running; they are stopped when this run "
                                  "ends (join them in the script to wait for them)")
    if len(running) < len(started):
        result["threads_ended"] = [t.name for t in started if t not in alive]
    return result


registry.register(
    name=NAME,
    toolset="code_execution",
    schema={
        "description": (
            "Run a Python script that calls your tools as functions: use it for 3+ tool calls with logic between "
            "them (loops, filtering large results before they reach you, branching). Every tool you are offered "
            "in this conversation is importable under its own name and arguments, e.g. `from hermes_tools import "
            "read_file`; each returns the tool's result (JSON as Python values, else text). Only what the script "
            "print()s comes back to you. hermes_tools also has Hermes's json_parse, shell_quote and retry. Variables persist between execute_code calls of this run (reset=true "
            "starts fresh). Limits: 300 s, 50 tool calls, 50 KB of printed output (more is saved to a file). "
            "The notebook's own variables are not visible. execute_code and delegate_task cannot be called "
            "from a script. Each script needs the person's approval."),
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Python source; print() what you want back."},
                "reset": {"type": "boolean", "description": "Start from a fresh namespace before running."},
            },
            "required": ["code"],
        },
    },
    handler=execute_code,
    is_async=True,
    emoji="🐍",
    max_result_size_chars=100_000,
    metadata={"approval_judge": lambda args: code_ask(args["code"])},
)
