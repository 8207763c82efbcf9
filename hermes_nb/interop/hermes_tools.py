"""Hermes's own tools in the notebook: an installed hermes-agent's registry as toolsets ``hermes-<toolset>``.

Hermes's discovery (importing its ``model_tools``: every built-in tool module and its plugins, about 3 s)
runs in a **background thread** started by ``%load_ext``, so the load stays fast. When it finishes, each
Hermes tool becomes a ``ToolEntry`` in hermes_nb's registry (source ``"hermes"``); the registry's events
update any open picker. A tool keeps Hermes's availability (its ``check_fn``, TTL-cached as Hermes caches
it, and ``requires_env``), and a call goes through Hermes's own ``model_tools.handle_function_call``, so
Hermes's plugin hooks, middleware and command guards apply.

Where Hermes would prompt in its CLI, the notebook asks instead: for the duration of a call, Hermes's
per-thread approval callback is hermes_nb's approval prompt (``request_approval``), its sudo-password
callback answers with no password, and Hermes sees an interactive session (otherwise its gate would
auto-approve: fail-open). ``clarify`` gets the notebook's clarify prompt and ``todo`` a ``TodoStore`` (both
are what Hermes's agent loop hands them); Hermes's agent-loop lists of parallel-safe and path-scoped tools
become ``read_only`` and ``path_params`` for the scheduler. Tools that need the rest of Hermes's agent loop (``memory``,
``session_search``, ``delegate_task``) are listed unavailable with that reason.

A Hermes tool whose name a hermes_nb tool already has (``read_file``, ``terminal``...) is registered as
``hermes_<name>``; Hermes still receives its own name.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from hermes_nb.interop.start import wait_started
from hermes_nb.tools.registry import ToolRegistry
from hermes_nb.tools.registry import registry as global_registry

__all__ = ["AGENT_LOOP_ONLY", "BridgeStatus", "HermesBridge", "bridge", "hermes_installed"]

log = logging.getLogger(__name__)

TOOLSET_PREFIX = "hermes-"
#: Hermes tools its agent loop answers itself, with state a notebook does not have (reason shown).
AGENT_LOOP_ONLY = {
    "memory": "needs Hermes's agent loop (its MemoryStore and memory providers)",
    "session_search": "needs Hermes's agent loop (its session database)",
    "delegate_task": "needs Hermes's agent loop (it spawns Hermes subagents)",
}
#: Tools that may stop to ask the person (a batch holding one runs serially).
_MAY_ASK = {"clarify", "terminal", "execute_code", "process"}
#: Hermes's top-level logger names: their warnings would land in whichever cell runs (no handler in a kernel).
_HERMES_LOGGERS = ("tools", "agent", "model_tools", "toolsets", "hermes_cli", "run_agent", "gateway", "cron")

State = Literal["absent", "off", "loading", "ready", "failed"]


def hermes_installed() -> bool:
    """Is hermes-agent importable? (``hermes_cli`` and ``model_tools`` are both its own top-level names.)"""
    try:
        return (importlib.util.find_spec("hermes_cli") is not None
                and importlib.util.find_spec("model_tools") is not None)
    except (ImportError, ValueError):
        return False


def _shadowed() -> str | None:
    """Which of Hermes's generic top-level names another folder provides first (the notebook's own
    ``tools/``, say), or None. Importing Hermes then would run that folder's code, and fail."""
    from pathlib import Path

    def person_finds(name: str) -> Any:
        # what the person's `import name` would load: sys.path as it is, not hermes_nb's trusted view
        # (tools.safety.writes.imports hides the workspace from imports made by our own code, this one included)
        module = sys.modules.get(name)
        if module is not None:
            return getattr(module, "__spec__", None)
        return importlib.machinery.PathFinder.find_spec(name, sys.path)

    try:
        home_spec = person_finds("hermes_cli")
        home = Path(home_spec.origin or "").parent.parent if home_spec else None
        for name in ("tools", "model_tools", "toolsets"):
            spec = person_finds(name)
            where = Path(spec.origin or next(iter(spec.submodule_search_locations or ()), "")) if spec else None
            if home is None or where is None or home not in where.parents:
                return f"{name!r} is {where or 'missing'}, not hermes-agent's"
    except (ImportError, ValueError, StopIteration) as exc:
        return f"cannot locate hermes-agent's modules ({exc})"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class BridgeStatus:
    """Where Hermes's tools stand: ``state``, how many are registered, and a line for the person."""

    state: State
    tools: int = 0
    toolsets: int = 0
    message: str = ""

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.message)


class _Check:
    """Hermes's ``check_fn`` through Hermes's own TTL cache, named as Hermes names it (for the reasons)."""

    __slots__ = ("__qualname__", "_cached", "_fn")

    def __init__(self, fn: Callable[[], Any], cached: Callable[[Callable[[], Any]], bool]) -> None:
        self._fn, self._cached = fn, cached
        self.__qualname__ = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "check")

    def __call__(self) -> bool:
        outer = getattr(_checking, "on", False)
        _checking.on = True
        try:
            return self._cached(self._fn)
        finally:
            _checking.on = outer


#: Set (per thread) while a Hermes check runs: Hermes's lazy installs then only look (``_checks_never_install``).
_checking = threading.local()


def _checks_never_install(lazy_deps: Any) -> Callable[[], None]:
    """Wrap Hermes's ``lazy_deps.ensure`` so a check never installs; returns the undo.

    Some of Hermes's checks (TTS's, say) pip-install a missing package, up to 300 s per installer, so
    asking whether a tool is available (a picker refresh, a turn's definitions) would block on a download
    nobody approved. Inside a check a missing package is the answer "unavailable"; a call still installs.
    """
    ensure = getattr(lazy_deps, "ensure", None)
    missing_of = getattr(lazy_deps, "feature_missing", None)
    unavailable = getattr(lazy_deps, "FeatureUnavailable", None)
    if ensure is None or missing_of is None or unavailable is None:
        return lambda: None

    def ensure_unless_checking(feature: str, *args: Any, **kwargs: Any) -> Any:
        if getattr(_checking, "on", False) and (missing := missing_of(feature)):
            raise unavailable(feature, missing, "hermes_nb: an availability check does not install packages")
        return ensure(feature, *args, **kwargs)

    lazy_deps.ensure = ensure_unless_checking

    def undo() -> None:
        if lazy_deps.ensure is ensure_unless_checking:
            lazy_deps.ensure = ensure

    return undo


class _HermesCall:
    """The handler of one Hermes tool: Hermes's own dispatch, with the notebook's prompts installed."""

    __slots__ = ("bridge", "name")

    def __init__(self, bridge: HermesBridge, name: str) -> None:
        self.bridge, self.name = bridge, name

    def __call__(self, args: dict[str, Any], **kw: Any) -> Any:
        hermes = self.bridge.modules()
        with _notebook_prompts(hermes):
            if self.name == "todo":  # Hermes's agent loop hands todo its session's store
                return hermes.registry.dispatch("todo", args, store=self.bridge.todo_store())
            if self.name == "clarify":  # ... and clarify the front end's question callback
                return hermes.registry.dispatch("clarify", args, callback=_ask_person)
            return hermes.model_tools.handle_function_call(
                self.name, args, task_id=kw.get("task_id") or "notebook",
                session_id=kw.get("session_id"), tool_call_id=kw.get("tool_call_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hermes:
    """Hermes's modules, once its discovery ran."""

    model_tools: Any
    registry: Any
    registry_module: Any
    approval: Any
    terminal_tool: Any
    parallel_safe: frozenset[str] = frozenset()  # Hermes's own read-only list (its agent loop's)
    path_scoped: frozenset[str] = frozenset()  # ... and the tools whose "path" argument scopes them
    lazy_deps: Any = None  # Hermes's installer of missing packages (tools.lazy_deps), when it has one


def _ask_person(question: str, choices: list[str] | None) -> str:
    from hermes_nb.tools.clarify_tool import clarify

    answer = clarify(question, choices)
    if "error" in answer:  # Hermes turns a raising callback into its own error result
        raise RuntimeError(answer["error"])
    return str(answer["user_response"])


def _approve(command: str, description: str, **_options: Any) -> str:
    """Hermes's approval callback ``(command, description, *, allow_permanent, smart_denied) -> choice``.

    The notebook's prompt decides, with its own once / session / always memory; Hermes is told "once"
    so the decision is remembered in one place only.
    """
    from hermes_nb.tools.approval import request_approval

    decision = request_approval(command, f"hermes:{description}", f"Hermes: {description}")
    return "once" if decision["approved"] else "deny"


def _no_sudo_password() -> str:
    return ""  # never read a password from a terminal the notebook does not have


@contextmanager
def _notebook_prompts(hermes: _Hermes) -> Iterator[None]:
    """Install hermes_nb's prompts as Hermes's per-thread callbacks for one call, then restore them."""
    tt, approval = hermes.terminal_tool, hermes.approval
    before = (tt._get_approval_callback(), tt._get_sudo_password_callback())
    tt.set_approval_callback(_approve)
    tt.set_sudo_password_callback(_no_sudo_password)
    token = approval.set_hermes_interactive_context(True)  # else Hermes's gate auto-approves (no human)
    try:
        yield
    finally:
        approval.reset_hermes_interactive_context(token)
        tt.set_approval_callback(before[0])
        tt.set_sudo_password_callback(before[1])


def _import_hermes() -> _Hermes:
    model_tools = importlib.import_module("model_tools")  # runs Hermes's discovery (tools and plugins)
    registry_module = importlib.import_module("tools.registry")
    approval = importlib.import_module("tools.approval")
    terminal_tool = importlib.import_module("tools.terminal_tool")
    for needed in ("set_approval_callback", "set_sudo_password_callback", "_get_approval_callback"):
        if not hasattr(terminal_tool, needed):
            raise ImportError(f"this hermes-agent has no tools.terminal_tool.{needed} (hermes_nb needs 0.19)")
    if not hasattr(approval, "set_hermes_interactive_context"):
        raise ImportError("this hermes-agent has no tools.approval.set_hermes_interactive_context (needs 0.19)")
    try:  # how Hermes's own agent loop schedules its tools; without it every Hermes call runs alone
        helpers = importlib.import_module("agent.tool_dispatch_helpers")
        safe = frozenset(getattr(helpers, "_PARALLEL_SAFE_TOOLS", ()))
        scoped = frozenset(getattr(helpers, "_PATH_SCOPED_TOOLS", ()))
    except ImportError:
        safe = scoped = frozenset()
    try:
        lazy_deps = importlib.import_module("tools.lazy_deps")
    except ImportError:
        lazy_deps = None
    return _Hermes(model_tools=model_tools, registry=registry_module.registry, registry_module=registry_module,
                   approval=approval, terminal_tool=terminal_tool, parallel_safe=safe, path_scoped=scoped,
                   lazy_deps=lazy_deps)


class HermesBridge:
    """Reads Hermes's registry (in the background) and mirrors it into hermes_nb's registry."""

    def __init__(self, reg: ToolRegistry | None = None) -> None:
        self.registry = reg or global_registry
        self._lock = threading.RLock()
        self._state: State = "off"
        self._message = ""
        self._names: list[str] = []  # our names of the tools registered from Hermes
        self._generation = 0  # bumped by stop(): a discovery still running then is discarded
        self._done = threading.Event()
        self._done.set()
        self._hermes: _Hermes | None = None
        self._todo: Any = None
        self._log_undo: Callable[[], None] | None = None
        self._install_undo: Callable[[], None] | None = None

    # -- control ----------------------------------------------------------------------------------

    def start(self, *, reload: bool = False) -> BridgeStatus:
        """Begin reading Hermes's tools in a background thread (no-op while loading or ready)."""
        with self._lock:
            if not hermes_installed():
                self._state, self._message = "absent", "hermes-agent is not installed in this environment"
                return self.status()
            if self._state in ("loading", "ready") and not reload:
                return self.status()
            shadow = _shadowed() if self._hermes is None else None
            if shadow is not None:
                self._state = "failed"
                self._message = f"Hermes's tools are not loaded: {shadow} (a folder of that name comes first)"
                return self.status()
            self._generation += 1
            generation = self._generation
            self._state, self._message = "loading", ""
            self._done.clear()
            if self._log_undo is None:
                self._log_undo = _quiet_hermes_loggers()
        threading.Thread(target=self._discover, args=(generation, reload), name="hermes-discovery",
                         daemon=True).start()
        return self.status()

    def stop(self) -> BridgeStatus:
        """Remove Hermes's tools from the registry; a discovery still running is discarded."""
        with self._lock:
            self._generation += 1
            names, self._names = self._names, []
            for name in names:
                self.registry.deregister(name)
            self._state, self._message = "off", f"Hermes's tools are off ({len(names)} removed)"
            self._done.set()
            if self._log_undo is not None:
                self._log_undo()
                self._log_undo = None
            if self._install_undo is not None:
                self._install_undo()
                self._install_undo = None
        return self.status()

    def reload(self) -> BridgeStatus:
        """Run Hermes's discovery again (plugins rescanned, availability re-checked) and re-read it."""
        self.stop()
        return self.start(reload=True)

    def wait(self, timeout: float | None = None) -> BridgeStatus:
        """Block until the background discovery finished (or ``timeout``); returns the status."""
        wait_started()
        self._done.wait(timeout)
        return self.status()

    # -- queries ----------------------------------------------------------------------------------

    def status(self) -> BridgeStatus:
        wait_started()  # a load's start still importing: its state, not "off"
        with self._lock:
            if self._state == "off" and not self._names and not hermes_installed():
                # never started because there is nothing to start: say so (the load skips the bridge then)
                self._state, self._message = "absent", "hermes-agent is not installed in this environment"
            toolsets = {e.toolset for n in self._names if (e := self.registry.get_entry(n)) is not None}
            message = self._message or {
                "loading": "reading Hermes's tools in the background…",
                "ready": f"Hermes's tools: {len(self._names)} in {len(toolsets)} toolsets named "
                         f"{TOOLSET_PREFIX}<toolset> (%tools doctor says why some are unavailable)",
                "off": "Hermes's tools are off",
            }.get(self._state, "")
            return BridgeStatus(state=self._state, tools=len(self._names), toolsets=len(toolsets),
                                message=message)

    def names(self) -> list[str]:
        with self._lock:
            return list(self._names)

    def modules(self) -> _Hermes:
        if self._hermes is None:
            raise RuntimeError("Hermes's tools are not loaded (see %hermes)")
        return self._hermes

    def todo_store(self) -> Any:
        """The notebook session's ``TodoStore`` (Hermes keeps one per agent session)."""
        with self._lock:
            if self._todo is None:
                self._todo = importlib.import_module("tools.todo_tool").TodoStore()
            return self._todo

    # -- the background work ----------------------------------------------------------------------

    def _discover(self, generation: int, reload: bool) -> None:
        try:
            hermes = self._hermes or _import_hermes()
            if reload:
                hermes.registry_module.invalidate_check_fn_cache()
                importlib.import_module("hermes_cli.plugins").discover_plugins(force=True)
            with self._lock:
                if generation != self._generation:
                    return
                self._hermes = hermes
                if self._install_undo is None and hermes.lazy_deps is not None:
                    self._install_undo = _checks_never_install(hermes.lazy_deps)
                self._names = []
                for name in hermes.registry.get_all_tool_names():
                    mirrored = self._mirror_or_record(hermes, name)
                    if mirrored is not None:
                        self._names.append(mirrored)
                self._state, self._message = "ready", ""
        except Exception as exc:  # boundary: Hermes's discovery failing must not break the notebook
            log.warning("hermes_nb: reading Hermes's tools failed", exc_info=True)
            from hermes_nb.tools.sources.load_report import record_failure

            record_failure("hermes", "hermes-agent", f"reading Hermes's tools failed: {type(exc).__name__}: {exc}")
            with self._lock:
                if generation == self._generation:
                    self._state, self._message = "failed", f"reading Hermes's tools failed: {exc}"
        finally:
            with self._lock:
                if generation == self._generation:
                    self._done.set()

    def _mirror_or_record(self, hermes: _Hermes, hermes_name: str) -> str | None:
        """One tool that cannot be mirrored (a schema we refuse, a name taken) is a doctor line, not a stop."""
        from hermes_nb.tools.sources.load_report import record_failure

        try:
            return self._mirror(hermes, hermes_name)
        except (ValueError, TypeError, AttributeError) as exc:  # ToolSchemaError is a ValueError
            record_failure("hermes", hermes_name, f"Hermes's tool {hermes_name!r} not offered: {exc}")
            return None

    def _mirror(self, hermes: _Hermes, hermes_name: str) -> str:
        """Register one Hermes tool in our registry; returns the name it got here."""
        he = hermes.registry.get_entry(hermes_name)
        ours = self.registry.get_entry(hermes_name)
        name = hermes_name if ours is None or ours.source == "hermes" else f"hermes_{hermes_name}"
        schema = dict(he.schema)
        schema.setdefault("parameters", {"type": "object", "properties": {}})  # Hermes accepts it missing
        check = _Check(he.check_fn, hermes.registry_module._check_fn_cached) if he.check_fn else None
        self.registry.register(
            name, f"{TOOLSET_PREFIX}{he.toolset}", schema, _HermesCall(self, hermes_name),
            check_fn=check, requires_env=tuple(he.requires_env or ()), description=he.description or "",
            emoji=he.emoji or "", max_result_size_chars=he.max_result_size_chars,
            dynamic_schema_overrides=he.dynamic_schema_overrides, interactive=hermes_name in _MAY_ASK,
            read_only=hermes_name in hermes.parallel_safe,
            path_params=("path",) if hermes_name in hermes.path_scoped and "path" in _properties(schema) else (),
            source="hermes", origin=getattr(he.handler, "__module__", None) or "hermes-agent",
            disabled_reason=AGENT_LOOP_ONLY.get(hermes_name), override=name == hermes_name and ours is not None,
            metadata={"hermes_name": hermes_name, "hermes_toolset": he.toolset},
        )
        return name


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("parameters", {}).get("properties")
    return props if isinstance(props, dict) else {}


def _quiet_hermes_loggers() -> Callable[[], None]:
    """A NullHandler on Hermes's loggers, so its warnings do not print into whichever cell runs next."""
    handler = logging.NullHandler()
    loggers = [logging.getLogger(n) for n in _HERMES_LOGGERS]
    for lg in loggers:
        lg.addHandler(handler)

    def undo() -> None:
        for lg in loggers:
            lg.removeHandler(handler)

    return undo


#: The process's bridge (module state survives ``%reload_ext``).
bridge = HermesBridge()
