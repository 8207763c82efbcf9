"""Built-in tool ``process`` (toolset ``terminal``, as in Hermes): the background jobs ``terminal`` started.

Actions and results in Hermes 0.19.0's shapes: ``list`` (``{processes: [...]}``), ``poll`` (status and the
newest output), ``log`` (lines, paged with ``offset``/``limit``; the last 200 by default), ``wait`` (until it
ends or ``timeout`` seconds), ``kill``, ``write`` (raw stdin), ``submit`` (stdin plus Enter), ``close``
(end of input). Jobs live in ``tools.jobs``.
"""

from __future__ import annotations

import time
from typing import Any

from hermes_nb.tools import jobs
from hermes_nb.tools.calls.results import tool_error
from hermes_nb.tools.registry import registry

__all__ = ["process"]

WAIT_DEFAULT = 180  # seconds a wait without timeout blocks (Hermes's TERMINAL_TIMEOUT default)
WAIT_MAX = 3600
_ACTIONS = ("list", "poll", "log", "wait", "kill", "write", "submit", "close")


def _ended(job: jobs.Job) -> dict[str, Any]:
    return {"exit_code": job.exit_code, "completion_reason": job.completion_reason,
            "termination_source": job.termination_source}


def _listed(job: jobs.Job) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "session_id": job.id, "command": job.command[:200], "cwd": job.cwd, "pid": job.pid,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(job.started)),
        "uptime_seconds": job.uptime(), "status": job.status, "output_preview": job.output(200)}
    if job.watch_patterns:
        entry["watch_patterns"] = list(job.watch_patterns)
    if job.notify_on_complete:
        entry["notify_on_complete"] = True
    if job.exited:
        entry["exit_code"] = job.exit_code
    return entry


def _log(job: jobs.Job, offset: int, limit: int) -> dict[str, Any]:
    lines = job.output().splitlines()
    chosen = lines[-limit:] if offset == 0 else lines[offset:offset + limit]
    return {"session_id": job.id, "command": job.command, "status": job.status, "output": "\n".join(chosen),
            "total_lines": len(lines), "showing": f"{len(chosen)} lines"}


def _wait(job: jobs.Job, timeout: int | None) -> dict[str, Any]:
    wanted = timeout or WAIT_DEFAULT
    limit = min(wanted, WAIT_MAX)
    if job.ended.wait(limit):
        return {"status": "exited", "command": job.command, **_ended(job), "output": job.output(2000)}
    note = (f"Waited {limit}s, process still running" if limit == wanted else
            f"Requested wait of {wanted}s was clamped to {limit}s")
    return {"status": "timeout", "command": job.command, "output": job.output(1000), "timeout_note": note}


def _kill(job: jobs.Job) -> dict[str, Any]:
    if not job.kill(source="process.kill"):
        return {"status": "already_exited", "command": job.command, **_ended(job), "output": job.output(2000)}
    return {"status": "killed", "session_id": job.id, "completion_reason": job.completion_reason,
            "termination_source": job.termination_source, "output": job.output(2000)}


def process(args: dict[str, Any]) -> Any:
    action = args["action"]
    if action == "list":
        return {"processes": [_listed(j) for j in jobs.jobs()]}
    session_id = str(args.get("session_id") or "")
    if not session_id:
        return tool_error(f"session_id is required for {action}")
    job = jobs.find(session_id)
    if job is None:
        return {"status": "not_found", "error": f"No process with ID {session_id}"}
    if action == "poll":
        out = {"session_id": job.id, "command": job.command, "status": job.status, "pid": job.pid,
               "uptime_seconds": job.uptime(), "output_preview": job.output(1000)}
        return {**out, **_ended(job)} if job.exited else out
    if action == "log":
        return _log(job, int(args.get("offset") or 0), int(args.get("limit") or 200))
    if action == "wait":
        return _wait(job, args.get("timeout"))
    if action == "kill":
        return _kill(job)
    if action == "write":
        return job.write(str(args.get("data", "")))
    if action == "submit":
        return job.write(str(args.get("data", "")) + "\n")
    return job.close_stdin()


registry.register(
    name="process",
    toolset="terminal",
    schema={
        "description": (
            "Manage background processes started with terminal(background=true). Actions: 'list' (show all), "
            "'poll' (status and the newest output), 'log' (output with pagination), 'wait' (block until done or "
            "timeout), 'kill' (end it and all it started), 'write' (send raw stdin data without newline), "
            "'submit' (send data + Enter, for answering prompts), 'close' (close stdin / send EOF)."),
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(_ACTIONS), "description": "What to do."},
                "session_id": {"type": "string", "description": "The job's session_id (from terminal's "
                                                                "background result); all actions but 'list'."},
                "data": {"type": "string", "description": "Text for the job's stdin ('write' and 'submit')."},
                "timeout": {"type": "integer", "minimum": 1,
                            "description": f"Seconds 'wait' blocks at most (default {WAIT_DEFAULT}); partial "
                                           "output on timeout."},
                "offset": {"type": "integer", "minimum": 0,
                           "description": "'log': the first line to return (default: the last 'limit' lines)."},
                "limit": {"type": "integer", "minimum": 1, "description": "'log': at most this many lines "
                                                                          "(default 200)."},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: process(args),
    emoji="⚙️",
)
