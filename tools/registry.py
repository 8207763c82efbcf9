"""The tool registry: every source of tools ends in ``registry.register(...)``.

Import-compatible with Hermes Agent: a tool file that does ``from tools.registry import registry`` and
calls ``registry.register(name=..., toolset=..., schema=..., handler=...)`` loads unchanged. The records
live in ``tools.entry``, the text at the boundary in ``tools.results``, Hermes's extra names in
``tools.hermes_compat``; all are re-exported here.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from hermes_nb.tools import async_bridge
from hermes_nb.tools.call_hooks import CallHook, hooked_entry
from hermes_nb.tools.entry import SOURCES, Availability, Source, ToolEntry, availability, checked_schema
from hermes_nb.tools.errors import ToolArgumentError, ToolSchemaError
from hermes_nb.tools.hermes_compat import (
    HermesQueries,
    discover_builtin_tools,
    invalidate_check_fn_cache,
    is_hermes_style,
    keep_existing,
    no_cache_check_fn,
)
from hermes_nb.tools.results import (
    execution_failed,
    parse_arguments,
    serialize_result,
    tool_error,
    tool_result,
)

__all__ = [
    "SOURCES", "Availability", "Source", "ToolEntry", "ToolRegistry", "discover_builtin_tools",
    "invalidate_check_fn_cache", "no_cache_check_fn", "parse_arguments", "registry", "serialize_result",
    "tool_error", "tool_result",
]

log = logging.getLogger(__name__)


class ToolRegistry(HermesQueries):
    """Tools by name, toolsets by name; thread-safe."""

    _call_hooks: tuple[CallHook, ...] = ()  # replaced whole on change, so dispatch reads it without a lock
    _batch_hooks: tuple[tuple[Callable[[], Any], Callable[[], Awaitable[Any]]], ...] = ()  # likewise

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
    ) -> ToolEntry:
        """Register (or replace) a tool. Hermes's positional order; hermes_nb's additions keyword-only.

        Re-registering a name from the same toolset and source replaces it. Taking a name that belongs
        to another toolset or source needs ``override=True`` (and is logged); from a Hermes-style file
        without it, the existing tool is kept and the refusal logged, as Hermes does. A bad schema is a
        ``ValueError`` (``ToolSchemaError``) saying what is wrong.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool name must be a non-empty string, got {name!r}")
        if not isinstance(toolset, str) or not toolset:
            raise ValueError(f"tool {name!r}: toolset must be a non-empty string, got {toolset!r}")
        if not callable(handler):
            raise ValueError(f"tool {name!r}: handler must be callable, got {type(handler).__name__}")
        for label, fn in (("check_fn", check_fn), ("dynamic_schema_overrides", dynamic_schema_overrides)):
            if fn is not None and not callable(fn):
                raise ValueError(f"tool {name!r}: {label} must be callable or None")
        schema = checked_schema(name, schema, description)
        from hermes_nb.tools.schema.validation import compile_validator

        try:
            validator = compile_validator(schema["parameters"])
        except ToolSchemaError as exc:
            raise ToolSchemaError(f"tool {name!r}: {exc}") from None
        _report_unenforced(name, validator)
        if source is None:
            source = "builtin"
        if source not in SOURCES:
            raise ValueError(f"tool {name!r}: source must be one of {', '.join(SOURCES)}, got {source!r}")
        caller = sys._getframe(1).f_globals
        if origin is None:
            origin = caller.get("__name__")
        if isinstance(requires_env, str):
            requires_env = (requires_env,)
        entry = ToolEntry(
            name=name,
            toolset=toolset,
            schema=schema,
            handler=handler,
            check_fn=check_fn,
            requires_env=tuple(requires_env or ()),
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
            origin=origin,
            disabled_reason=disabled_reason,
            metadata=dict(metadata or {}),
            validator=validator,
            examples=_examples(name, examples),
        )
        with self._lock:
            old = self._tools.get(name)
            if old is not None and (old.toolset != toolset or old.source != source):
                if not override:
                    if is_hermes_style(caller):  # as Hermes: logged, the existing tool kept, the file goes on
                        return keep_existing(old, name, toolset, origin)
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
        self._notify("register", name)
        return entry

    def deregister(self, name: str) -> ToolEntry | None:
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

    def get_entry(self, name: str) -> ToolEntry | None:
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

    def availability(self, name: str, _cache: dict[int, Availability] | None = None) -> Availability:
        """Can this tool be offered? Missing env var names, a false or raising check, or disabled."""
        entry = self._tools.get(name)
        if entry is None:
            return Availability(available=False, reason="unknown tool")
        return availability(entry, _cache)

    def get_unavailable(self) -> dict[str, Availability]:
        """Every unavailable tool with the reason; each distinct check runs once."""
        cache: dict[int, Availability] = {}
        out = {}
        for entry in self.entries():
            status = availability(entry, cache)
            if not status.available:
                out[entry.name] = status
        return out

    def get_definitions(self, tool_names: Iterable[str], quiet: bool = False) -> list[dict[str, Any]]:
        """OpenAI definitions for the available tools among ``tool_names``, sorted by name.

        Each distinct ``check_fn`` runs at most once per call; a raising check hides its tools.
        ``quiet`` is accepted for Hermes compatibility; reasons are in ``get_unavailable()``.
        Every call builds new dicts (the nested ``parameters`` is the entry's own, as in Hermes).
        """
        checks: dict[Any, bool] = {}
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
            if entry.disabled_reason or entry.requires_env:  # rare: one test for both on the hot path
                if entry.disabled_reason or not all(os.environ.get(v) for v in entry.requires_env):
                    continue
            check = entry.check_fn
            if check is not None:
                key: Any = check
                try:
                    ok = checks.get(key)
                except TypeError:  # an unhashable callable object: remember it by identity
                    key = id(check)
                    ok = checks.get(key)
                if ok is None:
                    ok = checks[key] = _passes(check)
                if not ok:
                    continue
            function = {**entry.schema, "name": name}
            if entry.dynamic_schema_overrides is not None:
                function.update(_overrides(entry))
            append({"type": "function", "function": function})
        return out

    # -- dispatch ---------------------------------------------------------------------------------

    def prepare(self, name: Any, args: Any) -> tuple[ToolEntry, dict[str, Any]] | str:
        """Look up and validate a call: ``(entry, args)``, or the JSON error result for the model."""
        entry = self._tools.get(name) if isinstance(name, str) else None
        if entry is None:
            if not isinstance(name, str):
                return tool_error(f"Unknown tool: {name!r}")
            from hermes_nb.tools.schema.lint import did_you_mean  # the error path only

            return tool_error(f"Unknown tool: {name}{did_you_mean(name, self._tools)}")
        if entry.disabled_reason:
            return tool_error(f"Tool {entry.name} is disabled: {entry.disabled_reason}")
        parsed = parse_arguments(args)
        if isinstance(parsed, str):
            return tool_error(f"Invalid arguments for {entry.name}: {parsed}")
        try:
            validated = entry.validator(parsed) if entry.validator else parsed
        except ToolArgumentError as exc:
            return tool_error(f"Invalid arguments for {entry.name}: {exc}")
        return entry, validated

    def dispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run one tool call and return its result as a string. Never raises (except KeyboardInterrupt).

        Lookup and validation, then the approval gate (``tools.safety.gate``; an ``approval_callback``
        keyword answers its prompts), then ``call``.
        """
        return _settled(self._dispatch, name, args, **kwargs)

    async def dispatch_async(self, name: str, args: Any, **kwargs: Any) -> str:
        """The same contract as ``dispatch``; async handlers are awaited on the caller's loop.

        Cancelling the awaiting task still cancels (asyncio's contract); a handler's own stray
        ``CancelledError`` is an error result like any other exception."""
        return await _settled_async(self._dispatch_async(name, args, **kwargs))

    def _dispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        prepared = self.prepare(name, args)
        if isinstance(prepared, str):
            return prepared
        entry, call_args = prepared
        from hermes_nb.tools.safety.gate import decide

        decision = decide(entry, call_args, kwargs.pop("approval_callback", None))
        if not decision.approved:
            return tool_error(decision.message, blocked=True)
        return self._call_entry(entry, call_args, **kwargs)

    async def _dispatch_async(self, name: str, args: Any, **kwargs: Any) -> str:
        import asyncio
        import contextvars

        prepared = self.prepare(name, args)
        if isinstance(prepared, str):
            return prepared
        entry, call_args = prepared
        from hermes_nb.tools.safety.gate import decide, decide_without_asking

        approver = kwargs.pop("approval_callback", None)
        decision = decide_without_asking(entry, call_args) if approver is None else None
        if decision is None:  # a person must answer: wait in a thread, with the run's approver (context)
            context = contextvars.copy_context()
            decision = await asyncio.to_thread(context.run, decide, entry, call_args, approver)
        if not decision.approved:
            return tool_error(decision.message, blocked=True)
        return await self._acall_entry(entry, call_args, **kwargs)

    def call(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> str:
        """Call a prepared entry's handler (no policy here); the result as a string. Never raises (except
        KeyboardInterrupt).

        Plugins' tool-call hooks (``tools.call_hooks``) run around the handler on every path: a
        ``dispatch`` and a batch's call alike."""
        return _settled(self._call_entry, entry, call_args, **kwargs)

    async def acall(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> str:
        """``call`` for the caller's loop: async handlers awaited here, sync ones in a thread."""
        return await _settled_async(self._acall_entry(entry, call_args, **kwargs))

    def _call_entry(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> str:
        if self._call_hooks:
            hooked = hooked_entry(self._call_hooks, entry, call_args, kwargs)
            if isinstance(hooked, str):
                return hooked
            entry = hooked
        try:
            if entry.is_async:  # the handler itself runs on the background loop (see async_bridge)
                result = async_bridge.run_sync(_call(entry.handler, call_args, kwargs))
            else:
                result = entry.handler(call_args, **kwargs)
                if inspect.isawaitable(result):  # a sync wrapper around an async function
                    result = async_bridge.run_sync(_await(result))
        except _HandlerExit as wrapped:
            if isinstance(wrapped.exc, KeyboardInterrupt):
                raise wrapped.exc from None
            return execution_failed(wrapped.exc)
        except (Exception, SystemExit) as exc:  # sys.exit() in a tool must not end the kernel or the run
            return execution_failed(exc)
        return serialize_result(result)

    async def _acall_entry(self, entry: ToolEntry, call_args: dict[str, Any], **kwargs: Any) -> str:
        import asyncio

        if self._call_hooks:  # hooks are plugin code that may block (a prompt): off the loop
            hooked = await asyncio.to_thread(hooked_entry, self._call_hooks, entry, call_args, kwargs)
            if isinstance(hooked, str):
                return hooked
            entry = hooked
        try:
            if entry.is_async:
                result = await _call(entry.handler, call_args, kwargs)
            else:
                result = await asyncio.to_thread(_caught, entry.handler, call_args, kwargs)
                if isinstance(result, _Raised):  # returned, not raised: the task would throw a GeneratorExit
                    return execution_failed(result.exc)  # into every frame at once (PEP 380), past our handlers
                if inspect.isawaitable(result):
                    result = await _await(result)
        except _HandlerExit as wrapped:
            if isinstance(wrapped.exc, KeyboardInterrupt):
                raise wrapped.exc from None
            return execution_failed(wrapped.exc)
        except (Exception, SystemExit) as exc:
            return execution_failed(exc)
        return serialize_result(result)

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
        """Run ``hook`` around every dispatched call (``tools.call_hooks``). Returns an undo."""
        with self._lock:
            self._call_hooks = (*self._call_hooks, hook)

        def undo() -> None:
            with self._lock:
                self._call_hooks = tuple(h for h in self._call_hooks if h is not hook)

        return undo


def _examples(name: str, examples: Iterable[Any]) -> tuple[Any, ...]:
    if not examples:  # the usual case: no import on the registration path
        return ()
    from hermes_nb.tools.examples import as_examples

    try:
        return as_examples(examples)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tool {name!r}: {exc}") from None


def _passes(check: Callable[[], Any]) -> bool:
    try:
        return bool(check())
    except Exception:  # a raising check never escapes; get_unavailable() / %tools doctor say why
        return False


def _overrides(entry: ToolEntry) -> dict[str, Any]:
    """Hermes's ``dynamic_schema_overrides``: merged onto the schema; a failing one is ignored (logged)."""
    try:
        extra = entry.dynamic_schema_overrides() if entry.dynamic_schema_overrides else None
    except Exception:  # a broken override must not hide the tool; the static schema serves
        log.warning("dynamic_schema_overrides of tool %r failed; using its static schema", entry.name, exc_info=True)
        return {}
    if not isinstance(extra, dict):
        return {}
    return {k: v for k, v in extra.items() if k != "name"}


def _settled(fn: Callable[..., str], *args: Any, **kwargs: Any) -> str:
    """``fn(...)``, with anything it raises but KeyboardInterrupt (GeneratorExit, custom BaseExceptions, a
    raising validator) turned into an error result: the boundary where dispatch never raises."""
    try:
        return fn(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return execution_failed(exc)


async def _settled_async(awaitable: Any) -> str:
    """``_settled`` for a coroutine; cancelling the awaiting task still cancels (asyncio's contract)."""
    import asyncio

    try:
        return await awaitable  # type: ignore[no-any-return]
    except KeyboardInterrupt:
        raise
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return execution_failed(exc)
    except BaseException as exc:
        return execution_failed(exc)


class _HandlerExit(Exception):
    """A handler's ``SystemExit`` or ``KeyboardInterrupt``, carried as an ordinary exception.

    asyncio re-raises both out of a task into the event loop, which would stop the shared
    background loop; inside the coroutine it becomes this, and dispatch reports the original.
    """

    def __init__(self, exc: SystemExit | KeyboardInterrupt) -> None:
        super().__init__(exc)
        self.exc = exc


class _Raised:
    """What a sync handler raised in a worker thread, carried back as a value."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _caught(handler: Callable[..., Any], args: dict[str, Any], kwargs: dict[str, Any]) -> Any:
    """Run a sync handler in a worker thread; whatever it raises comes back as ``_Raised`` (a worker
    thread's KeyboardInterrupt is the handler's own doing, not the person's ■, which reaches the main thread)."""
    try:
        return handler(args, **kwargs)
    except BaseException as exc:
        return _Raised(exc)


async def _call(handler: Callable[..., Any], args: dict[str, Any], kwargs: dict[str, Any]) -> Any:
    """Call an async handler; a handler flagged ``is_async`` that returns a plain value works too."""
    try:
        result = handler(args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
    except (SystemExit, KeyboardInterrupt) as exc:  # asyncio would re-raise these out of the loop itself
        raise _HandlerExit(exc) from None
    return result


async def _await(awaitable: Any) -> Any:
    try:
        return await awaitable
    except (SystemExit, KeyboardInterrupt) as exc:
        raise _HandlerExit(exc) from None


#: The process-wide registry (Hermes's name).
registry = ToolRegistry()


def _report_unenforced(name: str, validator: Any) -> None:
    """Say once, at registration and in ``%tools doctor``, which schema keywords no check enforces."""
    from hermes_nb.tools.load_report import clear_failures, record_failure

    unenforced = getattr(validator, "unenforced", ())
    if not unenforced:
        clear_failures("schema", name)
        return
    words = ", ".join(unenforced)
    log.warning("tool %r: schema keywords not enforced by the validator: %s", name, words)
    record_failure("schema", name, f"schema keywords not enforced (the model is not held to them): {words}")
