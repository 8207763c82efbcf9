"""Planning a batch of tool calls: which calls may share time, in ordered segments.

The rules (ARCHITECTURE, "Scheduling a batch of tool calls"), applied in the order the model emitted
the calls:

- one call, any ``interactive`` tool, or arguments that are not a JSON object: the whole batch is serial;
- a tool that is unknown, ``needs_approval`` (its prompt must not interleave with others), or neither
  ``read_only`` nor declares ``path_params`` (a writer of unknown scope) runs alone;
- ``read_only`` tools are readers (of their ``path_params`` if any, else of nothing); other tools with
  ``path_params`` are writers of those paths. Paths are compared after ``os.path.realpath`` against the
  workspace root (``$HERMES_NB_WORKSPACE``, else the current folder), so the same file spelled two ways
  is the same file and a folder overlaps what is inside it. Readers may overlap readers; a writer may
  overlap nothing;
- a run of consecutive calls that may share time forms one parallel segment; the others run alone
  between them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_nb.tools.workspace import workspace_root

if TYPE_CHECKING:
    from hermes_nb.tools.registry import ToolEntry, ToolRegistry

__all__ = ["BatchSegment", "CallView", "plan_tool_batch", "should_parallelize_tool_batch", "unpack_call"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSegment:
    """Consecutive calls (by index) that run together (``parallel``) or one alone."""

    parallel: bool
    indices: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallView:
    """One tool call, whatever shape it came in (an openai object or a plain dict)."""

    index: int
    id: str
    name: str
    arguments: Any


def unpack_call(call: Any, index: int = 0) -> CallView:
    """Read ``id``, ``function.name`` and ``function.arguments`` from an openai tool call or a dict."""
    if isinstance(call, dict):
        function = call.get("function") or {}
        if not isinstance(function, dict):
            function = {}
        call_id, name, arguments = call.get("id"), function.get("name", call.get("name")), function.get("arguments")
    else:
        function = getattr(call, "function", None)
        call_id = getattr(call, "id", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
    return CallView(index=index, id=str(call_id) if call_id is not None else f"call_{index}",
                    name=name if isinstance(name, str) else str(name), arguments=arguments)


@dataclass(frozen=True, slots=True)
class _Access:
    alone: bool
    writes: bool = False
    paths: tuple[str, ...] = ()


_ALONE = _Access(alone=True)


def _object_args(arguments: Any) -> dict[str, Any] | None:
    """The arguments as a dict, or None when they are not a JSON object (empty means ``{}``)."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (str, bytes, bytearray)):
        # past the limit dispatch refuses it unparsed; parsing it here would make the copies it avoids
        # (small arguments skip the config look-up: parsing them costs little)
        if len(arguments) > 65_536:
            from hermes_nb.tools.budget import argument_limit

            if len(arguments) > argument_limit():
                return None
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    return arguments if isinstance(arguments, dict) else None


def _normalise(path: str, root: str, folders: dict[str, str]) -> str:
    """``realpath`` of ``path`` against ``root``; works for files that do not exist yet.

    ``folders`` caches resolved parent folders for one plan, so a batch of calls in the same folder
    pays the ``lstat`` of each shared component once.
    """
    full = os.path.join(root, os.path.expanduser(path))
    parent, base = os.path.split(full)
    if base in ("", ".", ".."):
        return os.path.realpath(full)
    real_parent = folders.get(parent)
    if real_parent is None:
        real_parent = folders[parent] = os.path.realpath(parent)
    candidate = os.path.join(real_parent, base)
    return os.path.realpath(candidate) if os.path.islink(candidate) else candidate


def _paths(entry: ToolEntry, args: dict[str, Any], root: str, folders: dict[str, str]) -> tuple[str, ...] | None:
    """Normalised paths named by the call, or None when a path argument is missing or not text."""
    out: list[str] = []
    properties = entry.schema.get("parameters", {}).get("properties", {})
    for param in entry.path_params:
        value = args.get(param, (properties.get(param) or {}).get("default"))
        values: list[Any] = value if isinstance(value, list) else [value]
        texts = [v for v in values if isinstance(v, str) and v]
        if not values or len(texts) != len(values):
            return None
        out.extend(_normalise(v, root, folders) for v in texts)
    return tuple(out)


def _access(entry: ToolEntry | None, args: dict[str, Any], root: str, folders: dict[str, str]) -> _Access:
    if entry is None or entry.needs_approval:
        return _ALONE
    if entry.read_only and not entry.path_params:
        return _Access(alone=False)
    if not entry.path_params:
        return _ALONE  # a writer of unknown scope
    paths = _paths(entry, args, root, folders)
    if paths is None:
        return _ALONE  # cannot tell what it touches
    return _Access(alone=False, writes=not entry.read_only, paths=paths)


def _lineage(path: str) -> list[str]:
    """``path`` and every folder above it (absolute, normalised)."""
    out = [path]
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return out
        out.append(parent)
        path = parent


class _Paths:
    """A set of paths that answers "does this path overlap any of you?" in time proportional to its depth."""

    def __init__(self) -> None:
        self.members: set[str] = set()
        self.lines: set[str] = set()  # every member and every folder above it

    def add(self, path: str) -> None:
        self.members.add(path)
        self.lines.update(_lineage(path))

    def overlaps(self, path: str) -> bool:
        # `path` is a member or above one, or a member is above `path`.
        return path in self.lines or any(p in self.members for p in _lineage(path))


class _Run:
    """The calls of the segment being built, with the paths they read and write."""

    def __init__(self) -> None:
        self.indices: list[int] = []
        self.reads = _Paths()
        self.writes = _Paths()

    def conflicts(self, access: _Access) -> bool:
        # Readers only need checking against writers; writers against everything.
        return any(self.writes.overlaps(p) or (access.writes and self.reads.overlaps(p)) for p in access.paths)

    def add(self, index: int, access: _Access) -> None:
        self.indices.append(index)
        for path in access.paths:
            (self.writes if access.writes else self.reads).add(path)


def _serial(n: int) -> list[BatchSegment]:
    return [BatchSegment(parallel=False, indices=(i,)) for i in range(n)]


def plan_tool_batch(tool_calls: Sequence[Any], *, registry: ToolRegistry | None = None) -> list[BatchSegment]:
    """Ordered segments covering every call once, in call order."""
    if registry is None:
        from hermes_nb.tools.registry import registry as registry_
        registry = registry_
    calls = [unpack_call(c, i) for i, c in enumerate(tool_calls)]
    if len(calls) <= 1:
        return _serial(len(calls))
    entries = [registry.get_entry(c.name) for c in calls]
    args = [_object_args(c.arguments) for c in calls]
    if any(e is not None and e.interactive for e in entries) or any(a is None for a in args):
        return _serial(len(calls))
    root = str(workspace_root())  # where relative paths resolve: the file tools' own root
    folders: dict[str, str] = {}
    segments: list[BatchSegment] = []
    run = _Run()

    def close() -> None:
        nonlocal run
        if run.indices:
            segments.append(BatchSegment(parallel=len(run.indices) > 1, indices=tuple(run.indices)))
            run = _Run()

    for call, entry, call_args in zip(calls, entries, args, strict=True):
        access = _access(entry, call_args or {}, root, folders)
        if access.alone:
            close()
            segments.append(BatchSegment(parallel=False, indices=(call.index,)))
            continue
        if run.conflicts(access):
            close()
        run.add(call.index, access)
    close()
    return segments


def should_parallelize_tool_batch(tool_calls: Sequence[Any] | Iterable[Any], *,
                                  registry: ToolRegistry | None = None) -> bool:
    """True when the plan lets at least two calls of the batch share time."""
    return any(s.parallel for s in plan_tool_batch(list(tool_calls), registry=registry))
