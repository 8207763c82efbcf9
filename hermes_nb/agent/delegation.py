"""``delegate_task``: sub-agents on the background loop, each a fresh conversation under its parent's card.

A child is an ``Agent`` sharing its parent's model client (a replay or recording model gets a sibling
cassette per child, so offline notebooks replay concurrent children exactly), with:

- toolsets that are a subset of what its parent was offered (anything else is refused for that task), never
  ``clarify`` or ``memory``, and ``delegation`` only for an ``orchestrator`` child above ``MAX_DEPTH``; the
  same tools are ``withheld`` from its offer whatever its toolsets say, so the batch refuses them (scope);
- its own iteration budget, and the parent's approver: the prompts it raises name the child;
- its events wrapped in ``ChildEvent`` and sent up the parent's display, so the transcript shows it nested
  and live; ■ cancels the parent's task, which cancels the children (each answers its own open calls).

Tasks run concurrently, at most ``MAX_CONCURRENT_CHILDREN`` at a time. With ``output_schema`` the child's
final answer must be JSON that matches: a miss gets one correction turn, and the result says ``schema_valid``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hermes_nb.agent.cost import run_cost
from hermes_nb.agent.events import ChildEvent, ModelNamed
from hermes_nb.tools.agent_loop.tool import MAX_CONCURRENT_CHILDREN, MAX_DEPTH
from hermes_nb.tools.calls.results import tool_error

__all__ = ["ChildInfo", "child_info", "delegate", "withheld"]

DEFAULT_CHILD_ITERATIONS = 10
#: Tokens (prompt + completion, as the server reports them) a child may spend before its next turn is refused.
DEFAULT_CHILD_TOKENS = 200_000
_NEVER = ("clarify", "memory")  # a child cannot ask the person, nor write the shared memory (Hermes's rule)
_DELEGATION = "delegation"  # the toolset of delegate_task: an orchestrator child's only
_EXIT = {"done": "completed", "max_iterations": "max_iterations", "interrupted": "interrupted", "error": "error"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildInfo:
    """What a child agent's runs need to know about where they sit."""

    depth: int
    parent_run: str
    label: str
    may_delegate: bool = False  # an orchestrator above the depth limit


_children: weakref.WeakKeyDictionary[Any, ChildInfo] = weakref.WeakKeyDictionary()


def child_info(agent: Any) -> ChildInfo | None:
    return _children.get(agent)


def withheld(agent: Any) -> frozenset[str]:
    """The tools ``agent`` is never offered, whatever its toolsets: none for a top-level agent; for a child, every
    tool of the toolsets ``clarify`` and ``memory`` (and ``delegation`` unless it may delegate), by the registry's
    record of each tool's toolset and by the toolset table, and those tools' own names."""
    info = _children.get(agent)
    if info is None:
        return frozenset()
    from hermes_nb.tools.registry import registry
    from hermes_nb.tools.toolsets import resolve_toolset, validate_toolset

    toolsets = _NEVER if info.may_delegate else (*_NEVER, _DELEGATION)
    names = {*_NEVER, *(() if info.may_delegate else ("delegate_task",))}
    for toolset in toolsets:
        names.update(registry.get_tool_names_for_toolset(toolset))
        if validate_toolset(toolset):
            names.update(resolve_toolset(toolset))
    return frozenset(names)


async def delegate(run: Any, args: dict[str, Any], call_id: str) -> Any:
    """Run the call's tasks; Hermes's result ``{"results": [...], "total_duration_seconds"}``."""
    tasks = args.get("tasks")
    if not tasks:
        if not str(args.get("goal") or "").strip():
            return tool_error("Provide either 'goal' (one task) or 'tasks' (several).")
        tasks = [{k: args[k] for k in ("goal", "context", "toolsets", "output_schema", "role") if k in args}]
    if run.depth >= MAX_DEPTH:
        return tool_error(f"delegation is {MAX_DEPTH} levels deep at most; do this task yourself")
    limit = asyncio.Semaphore(MAX_CONCURRENT_CHILDREN)
    started = time.monotonic()
    results = await asyncio.gather(*(
        _task(run, i, t if isinstance(t, dict) else {}, call_id, limit, args.get("max_iterations"))
        for i, t in enumerate(tasks)))
    return {"results": list(results), "total_duration_seconds": round(time.monotonic() - started, 2)}


async def _task(run: Any, index: int, task: dict[str, Any], call_id: str, limit: asyncio.Semaphore,
                max_iterations: Any) -> dict[str, Any]:
    goal = str(task.get("goal") or "").strip()
    if not goal:
        return _entry(index, status="error", error="the task has no goal")
    toolsets = _child_toolsets(run.agent, task.get("toolsets"))
    if isinstance(toolsets, str):
        return _entry(index, status="error", error=toolsets)
    schema = task.get("output_schema") if isinstance(task.get("output_schema"), dict) else None
    if schema is not None and (broken := _unusable(schema)) is not None:
        return _entry(index, status="error", error=f"output_schema is not a usable JSON schema: {broken}")
    label = f"sub-agent {index + 1}: {goal if len(goal) <= 100 else goal[:99] + '…'}"
    async with limit:
        child = _make_child(run, index, task, toolsets, call_id, schema, max_iterations)
        child._trace_label = label  # its invoke_agent span's gen_ai.agent.name
        _children[child] = ChildInfo(depth=run.depth + 1, parent_run=run.run_id, label=label,
                                     may_delegate=_may_delegate(run, task))

        def emit(event: Any) -> None:
            run.emit(ChildEvent(tool_call_id=call_id, index=index, label=label, event=event))

        emit(ModelNamed(name=child.model.name))  # its header names its own model (a replay: its own cassette)

        begun = time.monotonic()
        from hermes_nb.tools.safety.approvals.gate import use_approver

        with use_approver(_naming_approver(label)):
            result = await child._core(goal, emit)
            results = [result]
            valid = None
            if schema is not None and result.stopped_reason == "done":
                error = _schema_error(schema, result.text)
                if error is not None:  # one correction turn, in the same conversation
                    result = await child._core(_correction(schema, error), emit)
                    results.append(result)
                    error = _schema_error(schema, result.text)
                valid = error is None
    run.children.extend(replace(r, cost=run_cost(r.turns, child.model, [c.cost for c in r.children if c.cost]))
                        for r in results)  # the parent's total includes what its sub-agents used
    entry = _entry(index, status=_status(result), summary=result.text,
                   api_calls=sum(r.iterations for r in results),
                   duration_seconds=round(time.monotonic() - begun, 2), model=result.model,
                   exit_reason=_EXIT.get(result.stopped_reason, result.stopped_reason),
                   tokens={"input": sum(r.usage.get("prompt_tokens", 0) for r in results),
                           "output": sum(r.usage.get("completion_tokens", 0) for r in results)},
                   tool_trace=[{"tool": c.name, "status": "error" if c.is_error else "ok"}
                               for r in results for c in r.tool_calls])
    if result.error:
        entry["error"] = result.error
    if schema is not None:
        entry["schema_valid"] = bool(valid)
        if valid:
            entry["output"] = _parse(result.text)
    return entry


def _entry(index: int, **fields: Any) -> dict[str, Any]:
    return {"task_index": index, "summary": None, "api_calls": 0, "duration_seconds": 0, **fields}


def _status(result: Any) -> str:
    if result.stopped_reason == "interrupted":
        return "interrupted"
    if result.stopped_reason == "error":
        return "error"
    return "completed" if result.text else "failed"


def _child_toolsets(parent: Any, asked: Any) -> list[str] | None | str:
    """The child's toolsets (None: all its parent had), or why they cannot be given."""
    from hermes_nb.selection import offered_by

    offered = offered_by(parent.enabled_toolsets)
    if asked is None:
        return offered
    if not isinstance(asked, list) or not all(isinstance(n, str) for n in asked):
        return "toolsets must be a list of toolset names"
    from hermes_nb.tools.toolsets import validate_toolset

    for name in asked:
        if name in (parent.disabled_toolsets or ()) or (offered is not None and name not in offered):
            return f"toolset {name!r} was not offered to you, so a sub-agent cannot have it"
        if not validate_toolset(name):
            return f"unknown toolset {name!r}"
    return list(asked)


def _may_delegate(run: Any, task: dict[str, Any]) -> bool:
    """A child may delegate only when its task says ``role="orchestrator"`` and it sits above ``MAX_DEPTH``."""
    return task.get("role") == "orchestrator" and run.depth + 1 < MAX_DEPTH


def _make_child(run: Any, index: int, task: dict[str, Any], toolsets: list[str] | None, call_id: str,
                schema: dict[str, Any] | None, max_iterations: Any) -> Any:
    from hermes_nb.tools.toolsets import validate_toolset

    parent = run.agent
    never = [*_NEVER, *(() if _may_delegate(run, task) else (_DELEGATION,)), *(parent.disabled_toolsets or ())]
    lines = ["You are a sub-agent working on one task for another agent. Work on it with your tools, then "
             "answer with a concise final summary of what you found or did; nobody can answer questions."]
    if task.get("context"):
        lines.append(f"Context from the agent that delegated:\n{task['context']}")
    if schema is not None:
        lines.append(f"Your final answer must be only JSON matching this schema:\n{json.dumps(schema)}")
    iterations = max_iterations if isinstance(max_iterations, int) and max_iterations > 0 else DEFAULT_CHILD_ITERATIONS
    model = _Budgeted(_child_model(parent.model, f"{call_id}.{index}"), DEFAULT_CHILD_TOKENS)
    return type(parent)(model=model, enabled_toolsets=toolsets,
                 disabled_toolsets=[n for n in dict.fromkeys(never) if validate_toolset(n)] or None,
                 system_prompt="\n\n".join(lines), max_iterations=min(iterations, 50), display=False,
                 tool_timeout=parent.tool_timeout, max_workers=parent.max_workers)


def _child_model(model: Any, key: str) -> Any:
    """The parent's model for a child; a cassette (recording or replaying) gets one sibling file per child."""
    from hermes_nb.models.replay import RecordingModel, ReplayModel

    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key)
    if isinstance(model, _Budgeted):  # a grandchild: its parent's own model, not the budget around it
        model = model.inner
    if isinstance(model, ReplayModel):
        return ReplayModel(_sibling(model.path, safe), stream=model.stream, chunk_delay=model.chunk_delay,
                           on_drift=model.on_drift)
    if isinstance(model, RecordingModel):
        return RecordingModel(model.inner, _sibling(model.path, safe))
    return model


class _Budgeted:
    """A child's model with a token budget: once spent, the next turn is a ``ModelError`` (the child stops and
    its summary says why)."""

    def __init__(self, inner: Any, tokens: int) -> None:
        self.inner, self.tokens, self.used = inner, tokens, 0
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:  # check_config, rewind, ...
        return getattr(self.inner, attr)

    async def complete(self, messages: list[dict[str, Any]], tools: Any, **kwargs: Any) -> Any:
        from hermes_nb.models import ModelError

        if self.used >= self.tokens:
            raise ModelError(f"the sub-agent spent its token budget ({self.used:,} of {self.tokens:,})")
        turn = await self.inner.complete(messages, tools, **kwargs)
        self.used += int(turn.usage.get("total_tokens") or 0)
        return turn


def _sibling(path: Path, key: str) -> Path:
    return path.with_name(f"{path.stem}.{key}{path.suffix}")


def _naming_approver(label: str) -> Any:
    """The parent's approver (its run's, else the notebook's prompt), with the child named in the question."""
    from hermes_nb.tools.safety.approvals.gate import run_approver

    return _NamingApprover(label, run_approver())


class _NamingApprover:
    """Asks whoever answers the parent's approvals, naming the child; ``available()`` is False when no one
    does (the gate then says no one could approve, as it would for the parent)."""

    def __init__(self, label: str, parent: Any) -> None:
        self.label, self.parent = label, parent

    def _callback(self) -> Any:
        from hermes_nb.tools.safety.approvals.gate import default_approvers

        return self.parent or default_approvers().current()

    def available(self) -> bool:
        return self._callback() is not None

    def __call__(self, subject: str, key: str, description: str) -> str:
        callback = self._callback()
        if callback is None:  # gone between available() and the question: nobody answered
            return "no-answer"
        return callback(subject, key, f"{self.label} asks: {description}")


def _parse(text: str) -> Any:
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, re.DOTALL)
    return json.loads(fenced.group(1) if fenced else stripped)


def _unusable(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` cannot check an answer (None when it can); the model wrote it, so anything may be in it."""
    from hermes_nb.tools.schema.validation import compile_validator

    try:
        compile_validator({"type": "object", "properties": {"answer": schema}}, coerce=False)
    except (ValueError, TypeError, RecursionError) as exc:
        return str(exc)
    return None


def _schema_error(schema: dict[str, Any], text: str) -> str | None:
    """Why ``text`` is not JSON matching ``schema`` (None when it is)."""
    from hermes_nb.tools.errors import ToolArgumentError
    from hermes_nb.tools.schema.validation import compile_validator

    try:
        value = _parse(text)
    except ValueError as exc:
        return f"the answer is not JSON ({exc})"
    try:
        check = compile_validator({"type": "object", "properties": {"answer": schema}, "required": ["answer"]},
                                  coerce=False)
        check({"answer": value})
    except (ToolArgumentError, RecursionError) as exc:
        return str(exc) or type(exc).__name__
    return None


def _correction(schema: dict[str, Any], error: str) -> str:
    return (f"Your final answer does not match the required schema: {error}. Reply with only the corrected "
            f"JSON, matching:\n{json.dumps(schema)}")


