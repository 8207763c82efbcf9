"""Why calls of a batch ran together or apart, in words a class reads: "read-only → shared time",
"same file notes.txt → one at a time", "asks the person → alone".

``explain(tool_calls)`` is ``plan_tool_batch``'s plan with a reason per segment (it shows itself as lines);
``timeline(...)`` labels each segment of its bars with the same reasons. The plan itself decides; this module says
why, from what the plan reads (each tool's ``read_only``, ``interactive``, ``needs_approval``, ``path_params`` and the
call's arguments), so the words follow the rules of ``hermes_nb.tools.batch.plan``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

__all__ = ["Plan", "Segment", "explain", "segment_reasons"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """One segment of a plan: its calls (by index and name), whether they share time, and why."""

    number: int  # from 0, in the order the segments run (as the timeline's "seg N")
    parallel: bool
    indices: tuple[int, ...]
    names: tuple[str, ...]
    reason: str

    def __str__(self) -> str:
        return f"segment {self.number}: {', '.join(self.names)} · {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A batch's segments, each with its reason; ``print(plan)`` or the cell's value shows them."""

    segments: tuple[Segment, ...]

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.segments)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        rows = "".join(f'<div><b>segment {s.number}</b> {escape_html(", ".join(s.names))} '
                       f'<span style="color:{colours.MUTED}">· {escape_html(s.reason)}</span></div>'
                       for s in self.segments)
        return f'<div style="color:{colours.TEXT};font-size:13px">{rows}</div>'


def explain(tool_calls: Sequence[Any], *, registry: Any = None) -> Plan:
    """``plan_tool_batch(tool_calls)`` with the reason for each segment."""
    from hermes_nb.tools.batch.plan import plan_tool_batch, unpack_call

    if registry is None:
        from hermes_nb.tools.registry import registry as registry_
        registry = registry_
    views = [unpack_call(c, i) for i, c in enumerate(tool_calls)]
    plan = plan_tool_batch(list(tool_calls), registry=registry)
    calls = [(v.name, v.arguments) for v in views]
    shape = [(s.parallel, tuple(s.indices)) for s in plan]
    reasons = segment_reasons(calls, shape, registry=registry)
    return Plan(segments=tuple(Segment(number=n, parallel=p, indices=ix, names=tuple(calls[i][0] for i in ix),
                                       reason=r) for n, ((p, ix), r) in enumerate(zip(shape, reasons, strict=True))))


def _args(arguments: Any) -> dict[str, Any] | None:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    return arguments if isinstance(arguments, dict) else None


def _paths(entry: Any, args: dict[str, Any], root: str) -> list[tuple[str, str]] | None:
    """``(resolved, as the model wrote it)`` for each path argument, or None when one is missing."""
    out = []
    for param in entry.path_params:
        value = args.get(param)
        for v in value if isinstance(value, list) else [value]:
            if not isinstance(v, str) or not v:
                return None
            out.append((os.path.realpath(os.path.join(root, os.path.expanduser(v))), v))
    return out


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep) or b.startswith(a.rstrip(os.sep) + os.sep)


def segment_reasons(calls: Sequence[tuple[str, Any]], segments: Sequence[tuple[bool, tuple[int, ...]]], *,
                    registry: Any) -> list[str]:
    """One reason per segment of ``segments`` (``(parallel, call indices)``) of the batch ``calls`` (name,
    arguments)."""
    from hermes_nb.tools.workspace import workspace_root

    root = str(workspace_root())
    entries = [registry.get_entry(name) for name, _ in calls]
    args = [_args(a) for _, a in calls]
    asks = [i for i, e in enumerate(entries) if e is not None and e.interactive]
    paths = [(_paths(e, a, root) if e is not None and a is not None and e.path_params else None)
             for e, a in zip(entries, args, strict=True)]
    out = []
    for n, (parallel, indices) in enumerate(segments):
        own = [entries[i] for i in indices]
        if parallel:
            out.append("read-only → shared time" if all(e is not None and e.read_only for e in own)
                       else "different files → shared time")
            continue
        i = indices[0]
        entry = entries[i]
        if len(calls) == 1:
            out.append("one call → alone")
        elif asks:
            out.append("asks the person → alone" if i in asks else
                       f"the batch has {calls[asks[0]][0]}, which asks the person → one at a time")
        elif any(a is None for a in args):
            out.append("arguments are not a JSON object → alone" if args[i] is None else
                       "a call's arguments are not a JSON object → one at a time")
        elif entry is None:
            out.append("unknown tool → alone")
        elif entry.needs_approval:
            out.append("needs approval → alone")
        elif not entry.read_only and not entry.path_params:
            out.append("may change anything (no path arguments) → alone")
        elif entry.path_params and paths[i] is None:
            out.append("cannot tell which file → alone")
        else:
            out.append(_neighbour_reason(n, segments, paths, entries) or "runs between calls that run alone")
    return out


def _neighbour_reason(n: int, segments: Sequence[tuple[bool, tuple[int, ...]]], paths: list[Any],
                      entries: list[Any]) -> str | None:
    """``same file X → one at a time`` when this segment's file is one the segment before or after touches, and
    one of the two writes it."""
    here = segments[n][1]
    near = [i for k in (n - 1, n + 1) if 0 <= k < len(segments) for i in segments[k][1]]
    for i in here:
        for j in near:
            if paths[i] is None or paths[j] is None:
                continue
            if entries[i].read_only and entries[j].read_only:
                continue
            for real, written in paths[i]:
                for other, _ in paths[j]:
                    if real == other:
                        return f"same file {os.path.basename(real) or written} → one at a time"
                    if _overlap(real, other):  # a folder and something inside it
                        outer, inner = sorted((real, other), key=len)
                        return f"{os.path.basename(outer)} holds {os.path.basename(inner)} → one at a time"
    return None
