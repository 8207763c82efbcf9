"""Cases from the formats people already have, as ``evaluate``'s case dicts.

- a file or glob (``"tasks/*.yaml"``, a ``Path``): YAML or JSON holding a **Hermes eval task**
  (``schema_version: 1``, ``instruction``, ``environment.allowed_tools``, ``success.deterministic``), a
  **pydantic_evals dataset** (``cases:`` with ``inputs``, ``expected_output``, ``evaluators``) or a list
  of our own case dicts;
- a pydantic_evals ``Dataset`` object (read by its fields: pydantic_evals need not be imported here).

What each maps to, and what is left out, is in the README ("Cases from other formats"); what is left
out is also returned by ``ignored()`` after a load so ``evaluate`` can say it in one line.
"""

from __future__ import annotations

import dataclasses
import glob
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hermes_nb.evaluation.expect import Expect
from hermes_nb.tools.errors import OneLineError

__all__ = ["CaseError", "case_dicts", "ignored"]


class CaseError(OneLineError, ValueError):
    """Cases that cannot be read (a file, a glob, a case without a prompt): one line naming the case or file,
    not a traceback of the YAML parser (issue 35)."""

#: What the last load could not map (an evaluator we do not score, a judged criterion), for one line.
_ignored: list[str] = []


def ignored() -> tuple[str, ...]:
    """What the last ``case_dicts`` call left out, e.g. ``("LLMJudge (2 cases)", ...)``."""
    return tuple(_ignored)


def case_dicts(cases: Any) -> Iterable[Any]:
    """Case dicts from ``cases``; anything not a file, glob or dataset is returned as it is."""
    _ignored.clear()
    if isinstance(cases, (str, Path)):
        return _from_paths(cases)
    if hasattr(cases, "cases") and not isinstance(cases, Mapping):  # a pydantic_evals Dataset
        return _from_dataset(_dataset_dict(cases), where=type(cases).__name__)
    return cases


def _from_paths(pattern: str | Path) -> list[dict[str, Any]]:
    text = str(pattern)
    paths = sorted(glob.glob(text)) if any(ch in text for ch in "*?[") else [text]
    if not paths:
        raise CaseError(f"evaluate: no case file matches {text!r}; check the folder and the pattern (relative to {Path.cwd()})")
    out: list[dict[str, Any]] = []
    for path in map(Path, paths):
        out += _from_data(_load(path), where=str(path))
    return out


def _load(path: Path) -> Any:
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseError(f"evaluate: cannot read {path}: {exc.strerror or exc}") from None
    parse: Callable[[str], Any]
    errors: tuple[type[Exception], ...]
    if path.suffix == ".json":
        parse, errors = json.loads, (ValueError,)
    else:
        import yaml

        parse, errors = yaml.safe_load, (ValueError, yaml.YAMLError)
    try:
        return parse(raw)
    except errors as exc:
        mark = getattr(exc, "problem_mark", None)  # yaml's: where, and what, in one line
        why = (f"line {mark.line + 1}, column {mark.column + 1}: {getattr(exc, 'problem', exc)}" if mark is not None
               else exc)
        raise CaseError(f"evaluate: {path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'} ({why}); "
                        f"fix the file") from None


def _from_data(data: Any, *, where: str) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return data  # our own case dicts
    if isinstance(data, Mapping) and "instruction" in data and "schema_version" in data:
        return [_hermes_task(data, where)]
    if isinstance(data, Mapping) and isinstance(data.get("cases"), list):
        return _from_dataset(data, where=where)
    raise CaseError(f"evaluate: {where} is neither a Hermes eval task (schema_version, instruction), a "
                     "pydantic_evals dataset (cases: ...) nor a list of cases")


# -- Hermes eval tasks ----------------------------------------------------------------------------------

_HERMES_CHECKS = {"tool_called": "name", "tool_succeeded": "name", "final_response_contains": "value",
                  "final_response_excludes": "value"}


def _hermes_task(task: Mapping[str, Any], where: str) -> dict[str, Any]:
    if task.get("schema_version") != 1:
        raise CaseError(f"evaluate: {where}: Hermes eval task schema_version {task.get('schema_version')!r} "
                         "is not 1")
    expects: list[Expect] = []
    allowed = (task.get("environment") or {}).get("allowed_tools")
    if isinstance(allowed, list):
        expects.append(Expect(kind="only_tools", value=tuple(map(str, allowed))))
    success = task.get("success") or {}
    for check in success.get("deterministic") or ():
        kind = check.get("type") if isinstance(check, Mapping) else None
        if kind not in _HERMES_CHECKS:
            _ignored.append(f"{where}: check {kind!r}")
            continue
        expects.append(Expect(kind=kind, value=str(check.get(_HERMES_CHECKS[kind], ""))))  # type: ignore[arg-type]
    if success.get("judged"):
        _ignored.append(f"{where}: {len(success['judged'])} judged criteria")
    if task.get("forbidden"):
        _ignored.append(f"{where}: {len(task['forbidden'])} forbidden rule(s) (need a judge)")
    return {"prompt": str(task.get("instruction") or ""), "name": str(task.get("id") or Path(where).stem),
            "score_selection": False, "expects": expects}


# -- pydantic_evals datasets ----------------------------------------------------------------------------

def _dataset_dict(dataset: Any) -> dict[str, Any]:
    """A Dataset object in the shape of its file: evaluators as ``{ClassName: {field: value}}``."""
    def spec(evaluator: Any) -> dict[str, Any]:
        fields = {f.name: getattr(evaluator, f.name) for f in dataclasses.fields(evaluator)} \
            if dataclasses.is_dataclass(evaluator) else dict(vars(evaluator))
        return {type(evaluator).__name__: fields}

    return {"cases": [{"name": c.name, "inputs": c.inputs, "expected_output": c.expected_output,
                       "evaluators": [spec(e) for e in c.evaluators]} for c in dataset.cases],
            "evaluators": [spec(e) for e in getattr(dataset, "evaluators", ())]}


def _from_dataset(data: Mapping[str, Any], *, where: str) -> list[dict[str, Any]]:
    shared = list(data.get("evaluators") or ())
    out = []
    for i, case in enumerate(data["cases"]):
        name = str(case.get("name") or f"case {i}")
        row: dict[str, Any] = {"prompt": _prompt(case.get("inputs"), f"{where}, {name}"), "name": name,
                               "score_selection": False, "expects": []}
        for evaluator in [*shared, *(case.get("evaluators") or ())]:
            _apply(row, evaluator, case.get("expected_output"))
        out.append(row)
    return out


def _prompt(inputs: Any, where: str) -> str:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        for key in ("prompt", "question", "query", "input", "instruction"):
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
        texts = [v for v in inputs.values() if isinstance(v, str)]
        if len(texts) == 1:
            return texts[0]
    raise CaseError(f"evaluate: {where}: inputs must be the prompt text or a mapping with 'prompt'")


def _split(evaluator: Any) -> tuple[str, Any]:
    if isinstance(evaluator, str):
        return evaluator, None
    if isinstance(evaluator, Mapping) and len(evaluator) == 1:
        return next(iter(evaluator.items()))
    return repr(evaluator), None


def _apply(row: dict[str, Any], evaluator: Any, expected_output: Any) -> None:
    """One evaluator onto the case dict (ours), or noted as ignored."""
    name, arg = _split(evaluator)
    kwargs = arg if isinstance(arg, Mapping) else {}
    if name == "ToolCorrectness":
        tools = kwargs.get("expected_tools", arg if isinstance(arg, list) else [])
        if kwargs.get("allow_extra"):
            row["expects"] += [Expect(kind="tool_called", value=str(t)) for t in tools]
        else:
            row["expected_tools"], row["score_selection"] = list(tools), True
    elif name == "ArgumentCorrectness":
        tool = str(kwargs.get("tool_name", ""))
        row.setdefault("expected_args", {}).setdefault(tool, {}).update(kwargs.get("expected_arguments") or {})
        if kwargs.get("match_mode") == "exact":
            _ignored.append("ArgumentCorrectness match_mode='exact' (scored as subset)")
    elif name == "Contains":
        value = kwargs.get("value", arg)
        row["expects"].append(Expect(kind="final_response_contains", value=str(value),
                                     case_sensitive=bool(kwargs.get("case_sensitive", True))))
    elif name in ("EqualsExpected", "Equals"):
        value = expected_output if name == "EqualsExpected" else kwargs.get("value", arg)
        if value is not None:
            row["expects"].append(Expect(kind="final_response_equals", value=str(value)))
    else:
        _ignored.append(name)
