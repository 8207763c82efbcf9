"""Built-in toolset ``code``: run Python in the live kernel namespace (or a private one outside a kernel).

Python can do anything a shell can, so the approval gate asks the person before every call (pattern key
``python-code``) unless the config says ``code: {require_approval: false}``.

Threading: the handler runs in whatever thread dispatches it (a scheduler worker, usually). Reading and
writing the kernel's ``user_ns`` from there is what the model asked for; what it cannot do safely is
print into the notebook, so stdout and stderr are captured (process-wide, for the duration of the call)
and returned in the result instead.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import linecache
import sys
import threading
import traceback
from typing import Any

from hermes_nb.tools.registry import registry

PATTERN_KEY = "python-code"
_DESCRIPTION = ("The model wants to run Python code in the kernel; code can do anything a shell command can. "
                "(Not sandboxed: it runs inside the kernel itself.)")
_MAX_REPR = 20_000
_MAX_STREAM = 100_000

_private_ns: dict[str, Any] = {"__name__": "__hermes_nb_python__"}
_call_numbers = itertools.count(1)
_run_lock = threading.RLock()  # one capture of sys.stdout at a time (re-entrant: code may call the tool)


def _namespace() -> dict[str, Any]:
    """The kernel's ``user_ns`` when running in IPython, else this module's private namespace."""
    ipython = sys.modules.get("IPython")  # never import IPython here: no shell can exist without it
    shell = ipython.get_ipython() if ipython is not None else None
    return shell.user_ns if shell is not None else _private_ns


def _code_config() -> dict[str, Any]:
    from hermes_nb.tools.config import load_config

    section = load_config().get("code")
    return section if isinstance(section, dict) else {}


def code_ask(code: str) -> Any:
    """The tool's judge (``tools.safety.approvals.gate``): every piece of code asks, unless the config turns it off.

    "session" and "always" hold for this exact code only: approving ``print(1)`` approves nothing else; and only
    while the files it names (``tools.code_execution.named_files``) hold what they held, as for a command.
    """
    if _code_config().get("require_approval") is False:
        return None
    from hermes_nb.tools.code_execution.named_files import bound
    from hermes_nb.tools.safety.approvals.gate import Ask
    from hermes_nb.tools.workspace import workspace_root

    tied = bound(code, workspace_root())
    return Ask(tool="python", subject=code, key=PATTERN_KEY, description=_DESCRIPTION + tied.sentence(),
               scopes=frozenset({"python:" + code + tied.text}), bound=tied.text, lasting=not tied.dynamic)


def _request_approval(code: str, callback: Any) -> str | None:
    """``None`` when the code may run, else the message for the model saying why it did not."""
    from hermes_nb.tools.safety.approvals.gate import decide_ask

    decision = decide_ask("python", code_ask(code), callback)
    return None if decision.approved else decision.message


def _cap(text: str, limit: int, what: str) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[{what} truncated: {len(text) - limit} more chars]"


def run_code(code: str, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """Execute ``code``; the last expression's repr is ``result``. Errors come back as values."""
    ns = _namespace() if namespace is None else namespace
    out, err = io.StringIO(), io.StringIO()
    result: dict[str, Any] = {}
    filename = f"<python tool #{next(_call_numbers)}>"
    # so tracebacks (here and later, from functions the code defined) show the source lines
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    with _run_lock, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            tree = ast.parse(code, filename, "exec")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, filename, "exec"), ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), ns)  # type: ignore[attr-defined]
                if value is not None:
                    result["result"] = _cap(repr(value), _MAX_REPR, "repr")
        except Exception as exc:  # the model's code failing is a result, not a tool failure
            lines = traceback.format_exception(exc)
            # drop this module's own frame: the model only needs its code's part
            lines = [line for line in lines if __file__ not in line]
            result["error"] = f"{type(exc).__name__}: {exc}"
            result["traceback"] = "".join(lines[-12:])
    result["stdout"] = _cap(out.getvalue(), _MAX_STREAM, "stdout")
    result["stderr"] = _cap(err.getvalue(), _MAX_STREAM, "stderr")
    return result


def python(code: str, *, approval_callback: Any = None) -> dict[str, Any]:
    """The tool: approval, then ``run_code`` in the live namespace."""
    blocked = _request_approval(code, approval_callback)
    if blocked is not None:
        return {"error": blocked, "blocked": True}
    return run_code(code)


registry.register(
    name="python",
    toolset="code",
    schema={
        "description": (
            "Run Python code in the person's live notebook kernel (variables persist between calls and are "
            "shared with the notebook). Returns captured stdout and stderr, and the repr of the last "
            "expression as 'result'. Exceptions come back as 'error' with the traceback's last lines. "
            "Each call may need the person's approval."),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python source; the last expression is returned."}},
            "required": ["code"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: run_code(args["code"]),  # the gate asked before this runs
    emoji="🐍",
    metadata={"approval_judge": lambda args: code_ask(args["code"])},
)
