"""Running cases on this machine: one case as a fresh conversation (``run_case``), and many concurrently on
the background loop (``run_local``); ``driver.evaluate`` chooses this or Dask (``remote``).

Every case is a fresh conversation (a new ``Agent`` from the template). The cases run as tasks on the
one background loop, at most ``concurrency`` at a time, sharing one model client; the calling thread
drains finished cases — writing ``out_dir`` and updating the progress bar — so output only comes from
the thread that called (ARCHITECTURE rule 6). An interrupt cancels the cases in flight and returns the
finished ones (``summary["interrupted"]``); calling again with the same ``out_dir`` runs only the rest.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import queue
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_nb.evaluation.cases import CallMade, Case, Outcome

__all__ = ["agent_template", "run_case", "run_local"]

#: Template keys that belong to evaluate, not to the template (each case gets its own).
_NOT_TEMPLATE = frozenset({"display", "record"})


def agent_template(agent: Any) -> dict[str, Any]:
    """The template as a dict of ``Agent`` keyword arguments; TypeError naming an unknown key."""
    from hermes_nb.agent.loop import Agent

    if agent is None:
        return {"stream": False}
    if isinstance(agent, Agent):  # the natural template: its configuration, a fresh conversation per case
        from hermes_nb.evaluation.template import from_agent

        return from_agent(agent)
    if not isinstance(agent, Mapping):
        raise TypeError("evaluate: agent= is an Agent(...) or a dict of Agent's arguments "
                        "(model, base_url, api_key, enabled_toolsets, system_prompt, ...)")
    allowed = set(inspect.signature(Agent.__init__).parameters) - {"self"} - _NOT_TEMPLATE
    unknown = sorted(set(agent) - allowed)
    if unknown:
        raise TypeError(f"evaluate: unknown agent template key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    # nobody watches a case's text arrive, so whole answers by default: less work per turn than a stream
    return {"stream": False, **agent}


def check_model(template: Mapping[str, Any]) -> None:
    """A configuration mistake (no key) is one error now, not one per case."""
    from hermes_nb.models.model_choice import resolve_model

    model = resolve_model(template.get("model"), template.get("base_url"), template.get("api_key"))
    if getattr(model, "replays_recording", False):
        model = model.fresh()  # as each case gets it: from the first turn, wherever the template's one stands
    check = getattr(model, "check_config", None)
    if check is not None:
        check()


def cassette_paths(record: Any, replay: Any) -> tuple[str, Path] | None:
    if record is not None:
        return "record", Path(record)
    if replay is not None:
        return "replay", Path(replay)
    return None


def cassette_path(folder: Path, case: Case) -> Path:
    return folder / f"case-{case.index:05d}.json"


async def run_case(case: Case, template: Mapping[str, Any], *, model: Any = None,
                   cassettes: tuple[str, Path] | None = None, run_name: str = "") -> Outcome:
    """Run one case in a fresh conversation on the running loop; never raises for the case's failures. Its
    run's spans carry the case's id and the evaluation's name (read in a trace server by case)."""
    from hermes_nb.traces import tagged

    tags = {"hermes_nb.eval.case_id": case.name or str(case.index), "hermes_nb.eval.case_index": case.index}
    with tagged(**tags, **({"hermes_nb.eval.name": run_name} if run_name else {})):
        return await _run_case(case, template, model=model, cassettes=cassettes)


async def _run_case(case: Case, template: Mapping[str, Any], *, model: Any,
                    cassettes: tuple[str, Path] | None) -> Outcome:
    from hermes_nb.agent.loop import Agent

    started = time.monotonic()
    kwargs = dict(template)
    if cassettes is not None and cassettes[0] == "replay":
        kwargs["model"] = f"replay:{cassette_path(cassettes[1], case)}"
    if model is not None and not (cassettes and cassettes[0] == "replay"):
        kwargs["model"] = model  # one client for every case (its connection pool is shared), none built per case
    if getattr(kwargs.get("model"), "replays_recording", False):
        kwargs["model"] = kwargs["model"].fresh()  # its place in the cassette is this case's, not shared
    try:
        agent = Agent(**kwargs, display=False)
        if cassettes is not None and cassettes[0] == "record":
            from hermes_nb.models.replay import RecordingModel

            agent.model = RecordingModel(agent.model, cassette_path(cassettes[1], case))
        offered = offered_tools(template)
        result = await agent.run_on_loop(case.prompt)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # boundary: one case's failure (replay drift, a bad toolset) is its row's error
        return Outcome(index=case.index, fingerprint=case.fingerprint, text="", calls=(), tokens=0,
                       seconds=time.monotonic() - started, api_calls=0, stopped_reason="error",
                       error=f"{type(exc).__name__}: {exc}")
    calls = tuple(CallMade(name=r.name, arguments=_decode(r.arguments), is_error=r.is_error) for r in result.tool_calls)
    error = result.error if result.stopped_reason == "error" else None
    from hermes_nb.agent.cost import run_cost

    # the price table loads on first use (about a second): in a thread, so the other cases keep running
    price = (await asyncio.to_thread(run_cost, result.turns, agent.model)).total
    return Outcome(index=case.index, fingerprint=case.fingerprint, text=result.text, calls=calls,
                   tokens=int(result.usage.get("total_tokens", 0)), seconds=time.monotonic() - started,
                   api_calls=result.iterations, stopped_reason=result.stopped_reason, error=error,
                   messages=tuple(result.messages), tools_offered=offered,
                   cost_usd=None if price.usd is None else float(price.usd), cost_note=price.unknown)


def offered_tools(template: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The tool definitions a case's conversation is offered, as its agent builds them (the picker's
    selection when the template names no toolsets); its trajectory lists them."""
    from hermes_nb.selection import offered_by
    from hermes_nb.tools.model_tools import get_tool_definitions

    return tuple(get_tool_definitions(offered_by(template.get("enabled_toolsets")), template.get("disabled_toolsets"),
                                      quiet_mode=True))


def _decode(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments


def shared_model(template: Mapping[str, Any], *, aiohttp: bool = False) -> Any:
    """The model of the template, built once and shared by every case (one client, one connection pool);
    ``aiohttp``: through openai's aiohttp transport when installed (the caller then closes it: ``aclose``)."""
    from hermes_nb.models.model_choice import MODEL_OPTIONS as options
    from hermes_nb.models.model_choice import resolve_model

    extra = {"aiohttp": True} if aiohttp else {}
    return resolve_model(template.get("model"), template.get("base_url"), template.get("api_key"),
                         **{k: template[k] for k in options if k in template}, **extra)


def run_local(todo: list[Case], template: Mapping[str, Any], concurrency: int,
               finished: Callable[[Case, Outcome], None], cassettes: tuple[str, Path] | None,
               run_name: str = "") -> bool:
    """Run ``todo`` on the background loop; returns True when interrupted."""
    from hermes_nb.tools import async_bridge, interaction

    if not todo:
        return False
    done: queue.Queue[tuple[Case, Outcome]] = queue.Queue()
    holder: list[asyncio.Task[Any]] = []
    # many conversations at once on one loop: CPU per request is what limits them, so the leaner transport
    shared = shared_model(template, aiohttp=True)

    async def run_all() -> None:
        holder.append(asyncio.current_task())  # type: ignore[arg-type]
        gate = asyncio.Semaphore(concurrency)

        async def one(case: Case) -> None:
            async with gate:
                done.put((case, await run_case(case, template, model=shared, cassettes=cassettes,
                                               run_name=run_name)))

        try:
            await asyncio.gather(*(one(c) for c in todo))
        finally:  # its connections end with the run (an aiohttp session left open warns when collected)
            close = getattr(shared, "aclose", None)
            if close is not None:
                await close()

    def drain() -> None:
        while True:
            try:
                case, outcome = done.get_nowait()
            except queue.Empty:
                return
            finished(case, outcome)

    future = async_bridge.submit(run_all())
    interrupted = False
    with interaction.main_thread_waiting():  # approval prompts from tools are shown from here
        while True:
            try:  # an interrupt may land anywhere in this loop, drain included
                try:
                    future.result(timeout=async_bridge.WAIT_SLICE)
                    break
                except TimeoutError:
                    pass
                drain()
                interaction.service()
            except KeyboardInterrupt:
                interrupted = True
                if holder:
                    async_bridge.get_loop().call_soon_threadsafe(holder[0].cancel)
                _wait_cancelled(future, drain)
                break
    drain()
    return interrupted


def _wait_cancelled(future: Any, drain: Callable[[], None]) -> None:
    """After cancelling: let every case in flight answer its open tool calls; interrupts are ignored."""
    import concurrent.futures

    while True:
        try:
            try:
                future.result(timeout=0.05)
                return
            except (concurrent.futures.CancelledError, asyncio.CancelledError):
                return
            except TimeoutError:
                pass
            drain()
        except KeyboardInterrupt:
            continue
