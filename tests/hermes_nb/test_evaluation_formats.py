"""``evaluate`` takes an ``Agent`` as its template, and the case formats people already have: pydantic_evals
datasets (file and object), Hermes eval-task files, BFCL possible answers; it totals cost (issue 26, items
11, 13, 14). Against the scripted model server, through the real openai client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import hermes_nb
from hermes_nb.agent.loop import Agent
from hermes_nb.evaluation.cases import as_cases
from hermes_nb.evaluation.result import _cost_summary
from hermes_nb.tools.schema.derive import tool
from tests.hermes_nb.test_evaluation import add, route, shout
from tests.support.routed_openai import RoutedOpenAI, prompt_of


@pytest.fixture
def t13e() -> None:
    """test_evaluation's tools and scripted model (route: what the model does for each prompt)."""
    tool(add, toolset="t13e")
    tool(shout, toolset="t13e")


def _by_name(result: Any) -> dict[str, Any]:
    return {r.name or r.prompt: r for r in result.rows}


def test_an_agent_is_the_template(t13e: None, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = [{"prompt": "add 2 and 3", "expected_tools": ["add"]}, {"prompt": "say hello", "expected_tools": []}]
    with RoutedOpenAI(route) as srv:
        template = Agent(model="fake-model", base_url=srv.base_url, enabled_toolsets=["t13e"],
                         system_prompt="Be brief.", display=False)
        template.messages.append({"role": "user", "content": "an earlier question"})  # not the cases' business
        result = hermes_nb.evaluate(cases, agent=template, display=False, out_dir=tmp_path)
        sent = list(srv.requests)
    assert [r.selection_ok for r in result.rows] == [True, True]
    entries = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert [e["metadata"]["model"] for e in entries] == ["fake-model"] * 2  # the model's name, not its repr
    assert template.messages[-1]["content"] == "an earlier question"  # the template's own conversation is left alone
    firsts = [b for b in sent if prompt_of(b) == "add 2 and 3"]
    assert firsts and all(b["messages"][0] == {"role": "system", "content": "Be brief."} for b in firsts)
    assert all("an earlier question" not in json.dumps(b) for b in sent)  # a fresh conversation per case
    with pytest.raises(TypeError, match=r"an Agent\(...\) or a dict"):
        hermes_nb.evaluate(cases, agent=42, display=False)


DATASET = {
    "name": "units",
    "cases": [
        {"name": "adds", "inputs": "add 2 and 3", "expected_output": "done: add 2 and 3",
         "evaluators": [{"ToolCorrectness": ["add"]},
                        {"ArgumentCorrectness": {"tool_name": "add", "expected_arguments": {"a": 2}}},
                        "EqualsExpected"]},
        {"name": "hello", "inputs": {"prompt": "say hello"}, "evaluators": [{"ToolCorrectness": []},
                                                                           {"LLMJudge": "is polite"}]},
        {"name": "wrong", "inputs": "add 4 and 5",
         "evaluators": [{"ArgumentCorrectness": {"tool_name": "add", "expected_arguments": {"b": 5}}}]},
    ],
    "evaluators": [{"Contains": {"value": "DONE", "case_sensitive": False}}],
}


def _check_dataset(result: Any) -> None:
    rows = _by_name(result)
    assert rows["adds"].selection_ok and rows["adds"].args_ok and rows["adds"].check_ok
    assert rows["hello"].selection_ok and rows["hello"].check_ok  # Contains from the dataset's own evaluators
    assert rows["wrong"].args_ok is False and rows["wrong"].selection_ok is None  # no ToolCorrectness: not scored


def test_a_pydantic_evals_dataset_file(t13e: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "units.yaml").write_text(yaml.safe_dump(DATASET))
    (tmp_path / "units.json").write_text(json.dumps(DATASET))
    with RoutedOpenAI(route) as srv:
        template = {"model": "fake-model", "base_url": srv.base_url, "enabled_toolsets": ["t13e"]}
        _check_dataset(hermes_nb.evaluate(tmp_path / "units.yaml", agent=template, display=False))
        assert "not scored (hermes_nb has no judge for these): LLMJudge" in capsys.readouterr().out
        _check_dataset(hermes_nb.evaluate(str(tmp_path / "units.json"), agent=template, display=False))


def test_a_pydantic_evals_dataset_object(t13e: None) -> None:
    from pydantic_evals import Case, Dataset
    from pydantic_evals.evaluators import ArgumentCorrectness, Contains, EqualsExpected, ToolCorrectness

    dataset = Dataset(name="units", cases=[
        Case(name="adds", inputs="add 2 and 3", expected_output="done: add 2 and 3",
             evaluators=[ToolCorrectness(expected_tools=["add"]),
                         ArgumentCorrectness(tool_name="add", expected_arguments={"a": 2}), EqualsExpected()]),
        Case(name="hello", inputs={"prompt": "say hello"}, evaluators=[ToolCorrectness(expected_tools=[])]),
        Case(name="wrong", inputs="add 4 and 5",
             evaluators=[ArgumentCorrectness(tool_name="add", expected_arguments={"b": 5})]),
    ], evaluators=[Contains(value="DONE", case_sensitive=False)])
    with RoutedOpenAI(route) as srv:
        _check_dataset(hermes_nb.evaluate(dataset, agent={"model": "fake-model", "base_url": srv.base_url,
                                                          "enabled_toolsets": ["t13e"]}, display=False))


def _task(task_id: str, instruction: str, checks: list[dict[str, str]], allowed: list[str]) -> dict[str, Any]:
    return {"schema_version": 1, "id": task_id, "status": "approved", "instruction": instruction,
            "source": {"kind": "manual", "sanitized": True}, "environment": {"allowed_tools": allowed},
            "success": {"deterministic": checks, "judged": []}, "forbidden": [], "skills": []}


def test_hermes_eval_task_files(t13e: None, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "a.yaml").write_text(yaml.safe_dump(_task("adds-001", "add 2 and 3", [
        {"type": "tool_called", "name": "add"}, {"type": "tool_succeeded", "name": "add"},
        {"type": "final_response_contains", "value": "done"}, {"type": "final_response_excludes", "value": "sorry"}],
        ["add"])))
    (tasks / "b.yaml").write_text(yaml.safe_dump(_task("shout-001", "shout and add", [
        {"type": "tool_called", "name": "shout"}], ["shout"])))  # it calls add too: not allowed
    (tasks / "c.yaml").write_text(yaml.safe_dump(_task("hello-001", "say hello", [
        {"type": "final_response_excludes", "value": "hello"}], [])))
    with RoutedOpenAI(route) as srv:
        result = hermes_nb.evaluate(str(tasks / "*.yaml"), agent={"model": "fake-model", "base_url": srv.base_url,
                                                                  "enabled_toolsets": ["t13e"]}, display=False)
    rows = _by_name(result)
    assert rows["adds-001"].check_ok is True and rows["adds-001"].selection_ok is None
    assert rows["shout-001"].check_ok is False and "called tools not allowed: add" in rows["shout-001"].error
    assert rows["hello-001"].check_ok is False and "the answer contains 'hello'" in rows["hello-001"].error
    assert result.summary["selection_accuracy"] is None  # no task names an exact tool set


def test_bad_case_files_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no case file matches"):
        as_cases(str(tmp_path / "none" / "*.yaml"))
    (tmp_path / "odd.yaml").write_text("just: a mapping\n")
    with pytest.raises(ValueError, match="neither a Hermes eval task"):
        as_cases(tmp_path / "odd.yaml")
    (tmp_path / "v2.yaml").write_text(yaml.safe_dump({**_task("x", "y", [], []), "schema_version": 2}))
    with pytest.raises(ValueError, match="schema_version 2 is not 1"):
        as_cases(tmp_path / "v2.yaml")


def test_bfcl_possible_answers(t13e: None) -> None:
    cases = [
        # BFCL's ground truth: acceptable values per argument; "" means the argument may be left out
        {"prompt": "add 2 and 3", "possible_answers": [{"add": {"a": [2, 2.0], "b": [3], "c": ["", 0]}}]},
        {"prompt": "add 4 and 5", "possible_answers": {"add": {"a": [4], "b": [5, 6]}}},  # it sends b=50
    ]
    with RoutedOpenAI(route) as srv:
        result = hermes_nb.evaluate(cases, agent={"model": "fake-model", "base_url": srv.base_url,
                                                  "enabled_toolsets": ["t13e"]}, display=False)
    first, second = result.rows
    assert first.args_ok is True and first.selection_ok is True and first.expected_tools == ("add",)
    assert second.args_ok is False


def test_cost_per_case_and_for_the_set() -> None:
    from hermes_nb.evaluation.result import EvalRow

    def row(i: int, usd: float | None, cost: str) -> EvalRow:
        return EvalRow(index=i, prompt="p", expected_tools=(), tools_called=(), selection_ok=True, args_ok=None,
                       check_ok=None, tokens=10, seconds=0.1, error=None, cost_usd=usd, cost=cost)

    priced = _cost_summary([row(0, 0.002, "$0.002"), row(1, 0.001, "$0.001")], [])
    assert priced["cost_usd"] == pytest.approx(0.003) and priced["cost"] == "$0.003"
    mixed = _cost_summary([row(0, 0.02, "$0.02"), row(1, None, "unknown price (local model)")], ["local model"])
    assert mixed["cost"] == "$0.02 (+ 1 of 2 cases unknown: local model)" and mixed["cost_unknown_cases"] == 1
    # a case's price reads as the run's own (agent.cost.Price), the same dollars and the same unknown
    from hermes_nb.evaluation.result import _cost_text

    assert [_cost_text(u, n) for u, n in ((0.0, ""), (0.02, ""), (0.000123, ""), (None, ""), (None, "local model"))] \
        == ["$0", "$0.02", "$0.000123", "unknown price", "unknown price (local model)"]


def test_the_chart_reads_in_both_themes() -> None:
    from hermes_nb.evaluation.result import EvalResult

    result = EvalResult(rows=(), summary={}, per_tool={"add": {"accuracy": 0.5, "cases": 2.0}})
    svg = result.svg()
    # every text takes the theme's text colour (was the SVG default, black, on JupyterLab's dark #111)
    assert svg.count("<text") == svg.count("fill:var(--jp-content-font-color")
    # the cell shows HTML bars (SVG does not survive an untrusted notebook; test_browser_untrusted measures it)
    chart = result.chart_html()
    assert "<svg" not in chart and "width:50.0%" in chart and "background:#3f51b5;background:var(" in chart
