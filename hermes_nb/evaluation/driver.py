"""``evaluate``: score a model's tool choices over cases, on this machine or on Dask, with a checkpoint.

The cases run locally (``runner.run_local``: concurrently on the background loop, sharing one model client)
or on Dask workers (``remote.run_remote``); the calling thread drains finished cases — writing ``out_dir``
and updating the progress bar — so output only comes from the thread that called (ARCHITECTURE rule 6).
An interrupt cancels the cases in flight and returns the finished ones (``summary["interrupted"]``);
calling again with the same ``out_dir`` runs only the rest.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from hermes_nb.evaluation.cases import Case, Outcome, as_cases
from hermes_nb.evaluation.result import EvalResult, build_result
from hermes_nb.evaluation.runner import agent_template, cassette_paths, check_model, run_local
from hermes_nb.evaluation.trajectory import OutDir, trajectory_entry

__all__ = ["evaluate"]


def _say_ignored() -> None:
    """What the case files held that is not scored (an LLM judge, judged criteria), in one line."""
    from collections import Counter

    from hermes_nb.evaluation.formats import ignored

    left = Counter(ignored())
    if left:
        parts = [f"{name} ({n} cases)" if n > 1 else name for name, n in left.items()]
        print(f"evaluate: not scored (hermes_nb has no judge for these): {'; '.join(parts)}")


def evaluate(cases: Any, agent: Any = None, concurrency: int = 8,
             out_dir: str | Path | None = None, executor: Any = None, *, record: str | Path | None = None,
             replay: str | Path | None = None, display: bool | None = None) -> EvalResult:
    """Run every case as a fresh conversation and score the tools the model chose.

    ``cases``: dicts or a DataFrame (``prompt``, ``expected_tools``, optional ``expected_args``,
    ``possible_answers`` and ``check``), a file or glob of Hermes eval tasks or pydantic_evals datasets
    (``"tasks/*.yaml"``), or a pydantic_evals ``Dataset``. ``agent``: an ``Agent(...)`` (its configuration
    copied, a fresh conversation per case) or its constructor arguments as a dict (model, base_url,
    api_key, enabled_toolsets, system_prompt, max_iterations, ...). ``out_dir``: Hermes-format
    ``trajectories.jsonl`` and a checkpoint; a second call resumes. ``executor``: a
    ``distributed.Client`` to run the cases on Dask workers. ``record=DIR`` writes one cassette per
    case; ``replay=DIR`` replays them offline (no model, no network).
    """
    from hermes_nb.display.progress import Progress

    if concurrency < 1:
        raise ValueError("evaluate: concurrency must be at least 1")
    if record is not None and replay is not None:
        raise ValueError("evaluate: pass record= or replay=, not both")
    case_list = as_cases(cases)
    _say_ignored()
    template = agent_template(agent)
    if replay is None:
        check_model(template)
    out = OutDir(out_dir) if out_dir is not None else None
    outcomes: dict[int, Outcome] = {}
    if out is not None:
        by_index = {c.index: c for c in case_list}
        outcomes = {i: o for i, o in out.finished().items() if i in by_index and by_index[i].fingerprint == o.fingerprint}
    resumed = set(outcomes)
    completed = {i: o.fingerprint for i, o in outcomes.items()}
    todo = [c for c in case_list if c.index not in outcomes]
    progress = Progress("evaluate", len(case_list), display=display)
    progress.update(len(outcomes), f"{len(resumed)} resumed" if resumed else "", force=True)
    toolsets = list(template.get("enabled_toolsets") or [])
    model = template.get("model")
    model_name = str(getattr(model, "name", model) or "")  # a Model object (an Agent's template) by its name
    errors = 0

    def finished(case: Case, outcome: Outcome) -> None:
        nonlocal errors
        if outcome.stopped_reason == "interrupted":
            return  # cancelled in flight: not finished, runs again on resume
        if out is not None and outcome.error is None:  # failed cases are retried on resume, as in Hermes
            out.record(outcome, trajectory_entry(outcome, case.prompt, model=model_name, toolsets=toolsets),
                       completed)
        errors += outcome.error is not None
        outcomes[case.index] = replace(outcome, messages=(), tools_offered=())  # memory stays flat
        progress.update(len(outcomes), f"{errors} error(s)" if errors else "")

    started = time.monotonic()
    paths = cassette_paths(record, replay)
    # its name on every case's spans: the out_dir's folder (resumed runs share it), else when it began
    run_name = Path(out_dir).name if out_dir is not None else time.strftime("evaluate-%Y%m%dT%H%M%S")
    if executor is not None:
        from hermes_nb.evaluation.remote import run_remote  # dask loads only for a remote run

        interrupted = run_remote(todo, template, executor, finished, paths, run_name)
    else:
        interrupted = run_local(todo, template, concurrency, finished, paths, run_name)
    model = template.get("model") if isinstance(template, Mapping) else None
    replayed = str(paths[1]) if paths is not None and paths[0] == "replay" else (
        model.removeprefix("replay:") if isinstance(model, str) and model.startswith("replay:") else None)
    result = build_result(case_list, outcomes, seconds=time.monotonic() - started, resumed=resumed,
                          interrupted=interrupted, replayed=replayed)
    progress.close(summary=result._summary_text())
    return result
