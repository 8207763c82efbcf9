"""``evaluate(..., executor=client)``: the cases run on Dask workers, one task per case.

- Tools travel: the notebook's own tools (``%%tool`` cells, ``@tool``) are cloudpickled once, scattered
  to every worker and registered there; built-in tools, tool files and plugins are loaded on the
  worker by the same discovery the kernel uses.
- MCP tools are refused for remote runs, with a message naming them: their sessions belong to this
  kernel, and starting a session per worker would run the server's command on every machine of the
  cluster, which nobody configured them for. Disable their toolsets in the template or run locally.
- Nothing on a worker can ask a person. Approval rules (allow/deny) apply as configured; a call that
  would ask finds no one to approve it and is denied, and its result says so — never a waiting worker.
  (Use process workers: thread workers share the kernel's approval prompt.)
- A worker that dies loses only its cases in flight: the scheduler runs them again elsewhere. Results
  come back to this process, which writes ``out_dir`` and the progress bar as they arrive.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_nb.evaluation.cases import Case, Outcome
from hermes_nb.tools.errors import HermesNbError

__all__ = ["RemoteToolError", "run_remote"]

#: Fields of a ToolEntry that travel (with the handler); the rest are derived on registration.
_FIELDS = ("toolset", "schema", "handler", "check_fn", "requires_env", "is_async", "description", "emoji",
           "max_result_size_chars", "read_only", "interactive", "path_params", "needs_approval", "metadata")


class RemoteToolError(HermesNbError, ValueError):
    """A tool that cannot run on a Dask worker (an MCP tool, or one that does not pickle)."""


def run_remote(todo: list[Case], template: Mapping[str, Any], client: Any,
               finished: Callable[[Case, Outcome], None], cassettes: tuple[str, Path] | None,
               run_name: str = "") -> bool:
    """Submit one task per case and hand results to ``finished`` as they come; True when interrupted.
    ``run_name``: the evaluation's name on each case's spans, as a local run tags them."""
    try:
        from distributed import as_completed
    except ImportError:
        raise ImportError("evaluate(executor=...) needs dask.distributed: pip install 'hermes-nb[scale]'") from None
    template = _pinned(template)
    blob = _notebook_tools(template)
    if not todo:
        return False
    # The tools travel inside each task, not scattered once: scattered data is a dependency no worker can
    # compute again, so a worker dying with the only copy (the other may not have joined when it was
    # scattered) cancelled every case still waiting ("FutureCancelledError ... already forgotten").
    # The blob is a few KB of pickled functions, so a task per case carries it cheaply.
    shipped = blob
    run_id = hashlib.sha256(blob).hexdigest()[:8] + "-" + str(id(todo))
    by_key: dict[str, Case] = {}
    futures = []
    for case in todo:
        payload = Case(index=case.index, prompt=case.prompt, expected_tools=case.expected_tools,
                       name=case.name)  # no check (it need not pickle); the name is the case's id on its spans
        future = client.submit(_remote_case, payload, dict(template), shipped, cassettes, run_name,
                               key=f"hermes-nb-case-{run_id}-{case.index}", pure=False)
        by_key[future.key] = case
        futures.append(future)
    # Results live in the workers' memory until gathered; a future still held when its worker dies is
    # computed again. So results are gathered as they finish and each future is let go at once: a dying
    # worker then costs only the cases it was running.
    pending = as_completed(futures, with_results=True, raise_errors=False)
    del futures
    try:
        for future, value in pending:
            case = by_key[future.key]
            # the value was gathered with the future; its status may have moved on since (a worker that
            # held the result died), so the value alone says whether the case finished
            if isinstance(value, Outcome):
                outcome = value
            else:  # boundary: a case that failed on the cluster (KilledWorker...) is its row's error
                outcome = Outcome(index=case.index, fingerprint=case.fingerprint, text="", calls=(), tokens=0,
                                  seconds=0.0, api_calls=0, stopped_reason="error",
                                  error=f"{type(value).__name__}: {value}")
            future.release()
            del future, value
            finished(case, outcome)
    except KeyboardInterrupt:
        client.cancel(list(pending.futures))  # the ones not yet handed out
        return True
    return False


def _pinned(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template with the toolsets this kernel offers now, as a list (the worker has no picker, and is no
    notebook: None would be read there as "the person's own toolsets only")."""
    out = dict(template)
    if out.get("enabled_toolsets") is None:
        from hermes_nb.selection import offered_toolsets

        offered = offered_toolsets()
        out["enabled_toolsets"] = ["all"] if offered is None else offered
    return out


def _notebook_tools(template: Mapping[str, Any]) -> bytes:
    """The offered notebook tools, cloudpickled; RemoteToolError for MCP tools or ones that do not pickle."""
    import cloudpickle

    from hermes_nb.tools.model_tools import get_tool_definitions
    from hermes_nb.tools.registry import registry

    names = [d["function"]["name"] for d in get_tool_definitions(
        template.get("enabled_toolsets"), template.get("disabled_toolsets"), quiet_mode=True)]
    entries = [e for e in (registry.get_entry(n) for n in names) if e is not None]
    mcp = sorted(e.name for e in entries if e.source == "mcp")
    if mcp:
        sets = sorted({e.toolset for e in entries if e.source == "mcp"})
        raise RemoteToolError(
            f"evaluate(executor=...): MCP tools cannot run on Dask workers ({', '.join(mcp)}): their sessions "
            f"live in this kernel. Leave them out with agent={{..., 'disabled_toolsets': {sets!r}}}, or run "
            f"without executor=")
    specs = []
    for entry in entries:
        if entry.source != "notebook":
            continue  # built-in, file and plugin tools are loaded on the worker itself
        spec = {"name": entry.name, **{f: getattr(entry, f) for f in _FIELDS}}
        try:
            specs.append(cloudpickle.dumps(spec))
        except Exception as exc:  # boundary: say which tool and why, before anything is submitted
            raise RemoteToolError(f"evaluate(executor=...): tool {entry.name!r} cannot travel to Dask workers "
                                  f"({type(exc).__name__}: {exc}); define it without references to "
                                  f"kernel-only objects (open files, event loops, widgets)") from None
    return cloudpickle.dumps(specs)


_installed: set[str] = set()


def _install(blob: bytes) -> None:
    """On the worker: discovery and plugins once, then the notebook's tools (once per blob)."""
    import pickle

    from hermes_nb.tools.model_tools import ensure_discovered
    from hermes_nb.tools.registry import registry

    digest = hashlib.sha256(blob).hexdigest()
    if digest in _installed:
        return
    ensure_discovered()
    if not _installed:
        from hermes_nb.tools.sources.plugins import discover_plugins

        discover_plugins()
    for raw in pickle.loads(blob):
        spec = pickle.loads(raw)
        name = spec.pop("name")
        registry.register(name, spec.pop("toolset"), spec.pop("schema"), spec.pop("handler"), source="notebook",
                          origin="dask", override=True, **spec)
    _installed.add(digest)


def _remote_case(case: Case, template: dict[str, Any], blob: bytes,
                 cassettes: tuple[str, Path] | None, run_name: str = "") -> Outcome:
    """One case on a worker thread: the worker's own background loop runs the conversation."""
    from hermes_nb.evaluation.runner import run_case
    from hermes_nb.tools import async_bridge

    _install(blob)
    model = None if cassettes and cassettes[0] == "replay" else _shared_model(template)
    return async_bridge.run_sync(run_case(case, template, model=model, cassettes=cassettes, run_name=run_name))


_models: dict[str, Any] = {}


def _shared_model(template: Mapping[str, Any]) -> Any:
    """One model client per worker process and template, as the local path shares one per run."""
    from hermes_nb.evaluation.runner import shared_model

    key = repr(sorted((k, repr(v)) for k, v in template.items()))
    if key not in _models:
        _models[key] = shared_model(template)
    return _models[key]
