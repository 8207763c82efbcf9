"""The tool registry: every source of tools ends in ``registry.register(...)``.

Import-compatible with Hermes Agent: a tool file that does ``from tools.registry import registry`` and
calls ``registry.register(name=..., toolset=..., schema=..., handler=...)`` loads unchanged. The records
live in ``tools.calls.entry``, the text at the boundary in ``tools.calls.results``, Hermes's extra names in
``tools.sources.hermes_compat``; all are re-exported here. Calling a handler is ``tools.calls.calling``; a call's result
stays ``(content, is_error)`` inside (``tools.calls.outcome``): ``dispatch`` returns Hermes's string, ``execute``
the ``Outcome`` record, and a batch records the flag it was given.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from time import perf_counter
from typing import Any

from hermes_nb.tools.calls.call_hooks import CallHook
from hermes_nb.tools.calls.calling import acall_handler, call_handler, settled, settled_async
from hermes_nb.tools.calls.entry import (
    SOURCES,
    Availability,
    ChecksRun,
    Source,
    ToolEntry,
    availability,
    check_result,
    checked_callables,
    checked_examples,
    checked_packages,
    checked_schema,
    checked_source,
    is_available,
    schema_overrides,
    validator_for,
)
from hermes_nb.tools.calls.outcome import Outcome, Settled
from hermes_nb.tools.calls.results import (
    MultimodalResult,
    execution_failed,
    parse_arguments,
    serialize_result,
    tool_error,
    tool_result,
)
from hermes_nb.tools.errors import ToolArgumentError
from hermes_nb.tools.safety.approvals.gate import adecide, blocked, decide
from hermes_nb.tools.sources.hermes_compat import (
    HermesQueries,
    caller_globals,
    discover_builtin_tools,
    invalidate_check_fn_cache,
    is_hermes_style,
    keep_existing,
    no_cache_check_fn,
)
from hermes_nb.tools.sources.hermes_names import note_scope, renamed_target

__all__ = [
    "SOURCES", "Availability", "Outcome", "Source", "ToolEntry", "ToolRegistry", "discover_builtin_tools",
    "invalidate_check_fn_cache", "no_cache_check_fn", "parse_arguments", "registry", "serialize_result",
    "tool_error", "tool_result",
]

log = logging.getLogger(__name__)


class ToolRegistry(HermesQueries):
    """Tools by name, toolsets by name; thread-safe."""

    _call_hooks: tuple[CallHook, ...] = ()  # replaced whole on change, so dispatch reads it without a lock
    _batch_hooks: tuple[tuple[Callable[[], Any], Callable[[], Awaitable[Any]]], ...] = ()  # likewise
    _register_guards: tuple[Callable[[ToolEntry, ToolEntry, bool], None], ...] = ()  # likewise

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}
        self._toolsets: dict[str, set[str]] = {}
        self._lock = threading.RLock()
        self._listeners: list[Callable[[str, str], None]] = []

    # -- registration -----------------------------------------------------------------------------

    def register(
        self,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: Iterable[str] | str | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        max_result_size_chars: float | None = None,
        *,
        read_only: bool = False,
        interactive: bool = False,
        path_params: Iterable[str] = (),
        needs_approval: bool = False,
        source: str | None = None,
        origin: str | None = None,
        override: bool = False,
        disabled_reason: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        dynamic_schema_overrides: Callable[[], Any] | None = None,
        examples: Iterable[Any] = (),
        scope: Any = None,
        requires_packages: Iterable[str] | str | None = None,
    ) -> ToolEntry:
        """Register (or replace) a tool. Hermes's positional order; hermes_nb's additions keyword-only.

        Re-registering a name from the same toolset and source replaces it. Taking a name that belongs
        to another toolset or source needs ``override=True`` (and is logged); from a Hermes-style file
        without it, the existing tool is kept and the refusal logged, as Hermes does. A bad schema is a
        ``ValueError`` (``ToolSchemaError``) saying what is wrong. ``scope`` (Hermes main's profile overlay)
        is recorded in the metadata; a foreign one is said by ``%tools doctor`` (``hermes_names``).
        """
        checked_callables(name, toolset, handler, check_fn=check_fn, dynamic_schema_overrides=dynamic_schema_overrides)
        schema = checked_schema(name, schema, description)
        validator = validator_for(name, schema)
        source = checked_source(name, source)
        caller = caller_globals()
        entry = ToolEntry(
            name=name,
            toolset=toolset,
            schema=schema,
            handler=handler,
            check_fn=check_fn,
            requires_env=(requires_env,) if isinstance(requires_env, str) else tuple(requires_env or ()),
            requires_packages=checked_packages(name, requires_packages),
            is_async=bool(is_async) or inspect.iscoroutinefunction(handler),
            description=schema.get("description", ""),
            emoji=emoji or "",
            max_result_size_chars=max_result_size_chars,
            dynamic_schema_overrides=dynamic_schema_overrides,
            read_only=read_only,
            interactive=interactive,
            path_params=tuple(path_params),
            needs_approval=needs_approval,
            source=source,
            origin=caller.get("__name__") if origin is None else origin,
            disabled_reason=disabled_reason,
            metadata={**(metadata or {}), **note_scope(name, scope, origin)},
            validator=validator,
            examples=checked_examples(name, examples),
        )
        stored = self._store(entry, override=override, hermes_style=lambda: is_hermes_style(caller))
        if stored is entry:
            self._notify("register", name)
        return stored

    def _store(self, entry: ToolEntry, *, override: bool, hermes_style: Callable[[], bool]) -> ToolEntry:
        """Put ``entry`` in the table under its name, unless the name belongs to another toolset or source
        and ``override`` is not given: then a Hermes-style caller keeps the old tool (returned), others raise."""
        name, toolset, source = entry.name, entry.toolset, entry.source
        with self._lock:
            old = self._tools.get(name)
            if old is not None:
                for guard in self._register_guards:
                    guard(entry, old, override)  # may refuse (a plugin replacing what it does not own)
            if old is not None and (old.toolset != toolset or old.source != source):
                if not override:
                    if hermes_style():  # as Hermes: logged, the existing tool kept, the file goes on
                        return keep_existing(old, name, toolset, entry.origin)
                    raise ValueError(
                        f"tool {name!r} already belongs to toolset {old.toolset!r} ({old.source}); "
                        f"pass override=True to take the name"
                    )
                log.warning(
                    "tool %r moved from toolset %r (%s) to %r (%s)", name, old.toolset, old.source, toolset, source
                )
            if old is not None:
                self._drop_from_toolset(old)
            self._tools[name] = entry
            self._toolsets.setdefault(toolset, set()).add(name)
        return entry

    def add_register_guard(self, guard: Callable[[ToolEntry, ToolEntry, bool], None]) -> Callable[[], None]:
        """Run ``guard(new, old, override)`` before a tool is replaced (it refuses by raising); an undo."""
        with self._lock:
            self._register_guards = (*self._register_guards, guard)
        return lambda: setattr(self, "_register_guards", tuple(g for g in self._register_guards if g is not guard))

    def deregister(self, name: str, *, scope: Any = None) -> ToolEntry | None:
        """Remove a tool; its toolset goes too when it empties. Returns the removed entry."""
        with self._lock:
            entry = self._tools.pop(name, None)
            if entry is not None:
                self._drop_from_toolset(entry)
        if entry is not None:
            self._notify("deregister", name)
        return entry

    def set_disabled(self, name: str, reason: str | None) -> ToolEntry | None:
        """Disable a tool with a reason (``None`` enables it again) without unregistering it."""
        with self._lock:
            entry = self._tools.get(name)
            if entry is None:
                return None
            entry = replace(entry, disabled_reason=reason)
            self._tools[name] = entry
        self._notify("update", name)
        return entry

    def snapshot(self) -> dict[str, ToolEntry]:
        """The entries as they are now (records are frozen, so this captures the whole tool table)."""
        with self._lock:
            return dict(self._tools)

    def restore(self, snapshot: Mapping[str, ToolEntry]) -> None:
        """Hold exactly ``snapshot``'s entries again; listeners hear each change (tests, undo of a trial)."""
        with self._lock:
            before = self._tools
            self._tools = dict(snapshot)
            self._toolsets = {}
            for entry in self._tools.values():
                self._toolsets.setdefault(entry.toolset, set()).add(entry.name)
        for name in sorted(before.keys() | snapshot.keys()):
            if before.get(name) is not snapshot.get(name):
                event = "deregister" if name not in snapshot else "register" if name not in before else "update"
                self._notify(event, name)

    def _drop_from_toolset(self, entry: ToolEntry) -> None:
        members = self._toolsets.get(entry.toolset)
        if members is not None:
            members.discard(entry.name)
            if not members:
                del self._toolsets[entry.toolset]

    def add_listener(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``callback(event, name)`` on register/deregister/update. Returns an undo."""
        with self._lock:
            self._listeners.append(callback)

        def undo() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)

        return undo

    def _notify(self, event: str, name: str) -> None:
        for callback in list(self._listeners):
            try:
                callback(event, name)
            except Exception:  # a listener (display, picker) must never break registration
                log.exception("registry listener failed")

    # -- queries ----------------------------------------------------------------------------------

    def get_entry(self, name: str, *, scope: Any = None) -> ToolEntry | None:  # scope: Hermes main's, one registry here
        return self._tools.get(name)

    def get_all_tool_names(self) -> list[str]:
        return sorted(self._tools)

    def get_toolset_for_tool(self, name: str) -> str | None:
        entry = self._tools.get(name)
        return entry.toolset if entry else None

    def get_toolsets(self) -> dict[str, list[str]]:
        """Toolsets that exist in the registry, with their tool names."""
        with self._lock:
            return {ts: sorted(names) for ts, names in sorted(self._toolsets.items())}

    def get_tool_names_for_toolset(self, toolset: str) -> list[str]:
        with self._lock:
            return sorted(self._toolsets.get(toolset, ()))

    def entries(self) -> list[ToolEntry]:
        with self._lock:
            return [self._tools[n] for n in sorted(self._tools)]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    # -- availability -----------------------------------------------------------------------------

    def availability(self, name: str, _cache: ChecksRun | None = None) -> Availability:
        """Can this tool be offered? Missing env var names, a false or raising check, or disabled."""
        entry = self._tools.get(name)
        if entry is None:
            return Availability(available=False, reason="unknown tool")
        return availability(entry, _cache)

    def get_unavailable(self) -> dict[str, Availability]:
        """Every unavailable tool with the reason; each distinct check runs once."""
        cache: ChecksRun = {}
        out = {}
        for entry in self.entries():
            status = availability(entry, cache)
            if not status.available:
                out[entry.name] = status
        return out

    def get_definitions(self, tool_names: Iterable[str], quiet: bool = False) -> list[dict[str, Any]]:
        """OpenAI definitions for the available tools among ``tool_names``, sorted by name.

        Availability is ``tools.calls.entry.is_available`` (the one computation, with its per-pass cache: each
        distinct ``check_fn`` runs at most once per call; a raising check hides its tools).
        ``quiet`` is accepted for Hermes compatibility; reasons are in ``get_unavailable()``.
        Every call builds new dicts (the nested ``parameters`` is the entry's own, as in Hermes).
        """
        cache: ChecksRun = {}
        get = self._tools.get
        out: list[dict[str, Any]] = []
        append = out.append
        last = None
        # sorted() of the names as given keeps the caller's runs (usually already in order); a
        # repeated name is then next to itself, so skipping it needs no set.
        for name in sorted(tool_names):
            if name == last:
                continue
            last = name
            entry = get(name)
            if entry is None:
                continue
            if entry.disabled_reason or entry.requires_env or entry.requires_packages:  # rare: one test on the hot path
                if not is_available(entry, cache):
                    continue
            elif entry.check_fn is not None and check_result(entry.check_fn, cache) is not True:
                continue  # (is_available's last step, called directly: this loop is what bench_registry times)
            function = {**entry.schema, "name": name}
            if entry.dynamic_schema_overrides is not None:
                function.update(schema_overrides(entry))
            append({"type": "function", "function": function})
        return out

    # -- dispatch ---------------------------------------------------------------------------------
    # One sequence of named steps for every way in (``dispatch``, ``execute``, their async twins, a batch):
    # ``prepare`` (lookup, validate) → the gate (``decide``) → ``call_handler`` (call, settle). Each step is
    # written once; inside, a result is ``Settled`` (content, is_error) until the edge (``dispatch``'s
    # string, ``execute``'s ``Outcome``). Speed comes from the steps' own short cases, never from a copy.

    def prepare(self, name: Any, args: Any) -> tuple[ToolEntry, dict[str, Any]] | str:
        """Look up and validate a call: ``(entry, args)``, or the JSON error result for the model."""
        entry = self._tools.get(name) if type(name) is str else None
        if entry is None:
            renamed = renamed_target(name, self._tools)  # Hermes main's todo_list for our todo, ...
            if renamed is None:
                return _unknown(name, self._tools)
            entry = self._tools[renamed]
        if entry.disabled_reason:
            return tool_error(f"Tool {entry.name} is disabled: {entry.disabled_reason}")
        if type(args) is not dict:  # a dict needs no parsing: the model's JSON text, None, ... do
            args = parse_arguments(args)
            if isinstance(args, str):
                return tool_error(f"Invalid arguments for {entry.name}: {args}")
        if entry.validator is None:
            return entry, args
        try:
            return entry, entry.validator(args)
        except ToolArgumentError as exc:
            return tool_error(f"Invalid arguments for {entry.name}: {exc}")

    def dispatch(self, name: str, args: Any, **kwargs: Any) -> str | dict[str, Any]:
        """Run one tool call and return its result as a string (Hermes's multimodal envelope as its dict).
        Never raises (except KeyboardInterrupt).

        Lookup and validation, then the approval gate (``tools.safety.approvals.gate``; an ``approval_callback``
        keyword answers its prompts), then ``call``. ``execute`` is the same with the ``Outcome`` record.
        Hermes main's ``scope`` keyword is accepted and not passed to the handler.
        """
        try:  # ``settled``'s boundary, written out: a call less on the path every dispatch takes
            if kwargs:
                kwargs.pop("scope", None)
            content = self._run(name, args, kwargs)[0]
            return content.envelope() if type(content) is MultimodalResult else content
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a raising validator, GeneratorExit, a custom BaseException
            return execution_failed(exc)

    def execute(self, name: str, args: Any, **kwargs: Any) -> Outcome:
        """``dispatch`` returning the ``Outcome`` (content, is_error, timing) instead of the string."""
        started = perf_counter()
        content, is_error = settled(self._run, name, args, kwargs)
        return Outcome(content=content, is_error=is_error, started=started, ended=perf_counter())

    async def dispatch_async(self, name: str, args: Any, **kwargs: Any) -> str | dict[str, Any]:
        """The same contract as ``dispatch``; async handlers are awaited on the caller's loop.

        Cancelling the awaiting task still cancels (asyncio's contract); a handler's own stray
        ``CancelledError`` is an error result like any other exception."""
        kwargs.pop("scope", None)
        content = (await settled_async(self._run_async(name, args, kwargs)))[0]
        return content.envelope() if type(content) is MultimodalResult else content

    async def aexecute(self, name: str, args: Any, **kwargs: Any) -> Outcome:
        """``dispatch_async`` returning the ``Outcome``."""
        started = perf_counter()
        content, is_error = await settled_async(self._run_async(name, args, kwargs))
        return Outcome(content=content, is_error=is_error, started=started, ended=perf_counter())

    def _run(self, name: Any, args: Any, kwargs: dict[str, Any]) -> Settled:
        prepared = self.prepare(name, args)
        if isinstance(prepared, str):
            return prepared, True
        entry, call_args = prepared
        decision = decide(entry, call_args, kwargs.pop("approval_callback", None) if kwargs else None)
        if not decision.approved:
            return blocked(decision)
        return call_handler(self._call_hooks, entry, call_args, kwargs)

    async def _run_async(self, name: Any, args: Any, kwargs: dict[str, Any]) -> Settled:
        prepared = self.prepare(name, args)
        if isinstance(prepared, str):
            return prepared, True
        entry, call_args = prepared
        decision = await adecide(entry, call_args, kwargs.pop("approval_callback", None))
        if not decision.approved:
            return blocked(decision)
        return await acall_handler(self._call_hooks, entry, call_args, kwargs)

    def call(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> str:
        """Call a prepared entry's handler (no policy here); the result as a string. Never raises (except
        KeyboardInterrupt).

        Plugins' tool-call hooks (``tools.calls.call_hooks``) run around the handler on every path: a
        ``dispatch`` and a batch's call alike."""
        return self.call_settled(entry, call_args, **kwargs)[0]

    def call_settled(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> Settled:
        """``call`` returning ``(content, is_error)`` (what a batch records)."""
        return settled(call_handler, self._call_hooks, entry, call_args, kwargs)

    async def acall(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> str:
        """``call`` for the caller's loop: async handlers awaited here, sync ones in a thread."""
        return (await self.acall_settled(entry, call_args, **kwargs))[0]

    async def acall_settled(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> Settled:
        """``acall`` returning ``(content, is_error)``."""
        return await settled_async(acall_handler(self._call_hooks, entry, call_args, kwargs))

    def add_batch_hook(self, sync: Callable[[], Any], asynchronous: Callable[[], Awaitable[Any]]) -> Callable[[], None]:
        """Run ``sync()`` (or, from a loop, ``await asynchronous()``) before every batch and model turn: what
        a source must bring up to date first (MCP's pending list_changed). Installed by whoever needs it;
        later stages only call ``before_batch`` and never look the source up. Returns an undo."""
        pair = (sync, asynchronous)
        with self._lock:
            self._batch_hooks = (*self._batch_hooks, pair)

        def undo() -> None:
            with self._lock:
                self._batch_hooks = tuple(h for h in self._batch_hooks if h is not pair)

        return undo

    def before_batch(self) -> None:
        """Run the batch hooks (sync callers); a failing hook is logged, the batch goes on."""
        for sync, _ in self._batch_hooks:
            try:
                sync()
            except Exception:  # boundary: a source that cannot refresh keeps its current tools
                log.exception("before-batch hook %r failed", sync)

    async def abefore_batch(self) -> None:
        """``before_batch`` for callers on an event loop."""
        for _, asynchronous in self._batch_hooks:
            try:
                await asynchronous()
            except Exception:  # boundary, as above
                log.exception("before-batch hook %r failed", asynchronous)

    def add_call_hook(self, hook: CallHook) -> Callable[[], None]:
        """Run ``hook`` around every dispatched call (``tools.calls.call_hooks``). Returns an undo."""
        with self._lock:
            self._call_hooks = (*self._call_hooks, hook)

        def undo() -> None:
            with self._lock:
                self._call_hooks = tuple(h for h in self._call_hooks if h is not hook)

        return undo


def _unknown(name: Any, tools: Mapping[str, ToolEntry]) -> str:
    if not isinstance(name, str):
        return tool_error(f"Unknown tool: {name!r}")
    from hermes_nb.tools.schema.lint import did_you_mean  # the error path only

    return tool_error(f"Unknown tool: {name}{did_you_mean(name, tools)}")


#: The process-wide registry (Hermes's name).
registry = ToolRegistry()
