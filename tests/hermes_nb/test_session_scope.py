"""What ``session_search`` reads (issue 31, item 5): this notebook's runs unless asked for all, and a sub-agent
only runs that ended (measured before: any notebook's model searched every notebook's runs, and a child's search
returned its parent's unfinished run). The attack rows run twice: ``defended`` as shipped, and with the reach removed
(every call reads every run, as before), where the leak must show."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.routed_openai import RoutedOpenAI


def _in(monkeypatch: pytest.MonkeyPatch, notebook: str) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", notebook)


def _answer(request: dict[str, Any], call_id: str) -> dict[str, Any]:
    return json.loads(next(m["content"] for m in request["messages"] if m.get("tool_call_id") == call_id))


def _search(args: dict[str, Any]) -> dict[str, Any]:
    script = [Reply(tool_calls=(call("session_search", args, "s1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["session_search"], display=False,
              stream=False).run("look back")
        return _answer(srv.requests[1], "s1")


@pytest.fixture(params=[True, False], ids=["defended", "reach-removed"])
def defence(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """``False``: ``session_search`` is given every run whatever its scope or depth (the defence removed)."""
    if not request.param:
        from hermes_nb.agent.session_views import EVERY_RUN

        monkeypatch.setattr("hermes_nb.agent.session_views.Reach", lambda **kw: EVERY_RUN)
    return bool(request.param)


@pytest.fixture
def two_notebooks(monkeypatch: pytest.MonkeyPatch) -> None:
    for notebook, said in (("secret-project.ipynb", "The walrus budget is 9 million."),
                           ("class.ipynb", "The penguin colony counts 412 birds.")):
        _in(monkeypatch, notebook)
        with FakeOpenAI([Reply(content=said)]) as srv:
            Agent(model="m", base_url=srv.base_url, enabled_toolsets=["file"], display=False,
                  stream=False).run(f"note for {notebook}")
    _in(monkeypatch, "class.ipynb")


@pytest.mark.parametrize(("args", "why"), [
    ({"query": "walrus"}, "a word only the other notebook's run holds"),
    ({"query": "walrus OR penguin"}, "an OR that reaches both"),
    ({"query": "walrus*"}, "a prefix"),
    ({"query": '"walrus budget"'}, "a phrase"),
    ({"query": "walrus", "scope": "current"}, "the default, said"),
    ({"query": ""}, "browsing the latest runs"),
    ({"query": "", "limit": 10}, "browsing with the largest limit"),
])
def test_by_default_a_search_reads_this_notebooks_runs_only(two_notebooks: None, defence: bool, args: dict[str, Any],
                                                            why: str) -> None:
    found = _search(args)
    assert found["success"] is True, why
    assert ({r["notebook"] for r in found["results"]} <= {"class.ipynb"}) is defence, why
    assert ("secret-project" not in json.dumps(found)) is defence, why
    assert "9 million" not in json.dumps(found) or not defence, why


@pytest.mark.parametrize("args", [{"query": "walrus", "scope": "all"}, {"query": "", "scope": "all", "limit": 10}])
def test_scope_all_reads_every_notebooks_runs(two_notebooks: None, args: dict[str, Any]) -> None:
    found = _search(args)
    assert found["success"] is True and "secret-project.ipynb" in {r["notebook"] for r in found["results"]}


@pytest.mark.parametrize("scope", ["everything", "ALL ", "notebook", 1, ["all"]])
def test_an_unknown_scope_is_an_error_not_a_wider_search(two_notebooks: None, scope: Any) -> None:
    found = _search({"query": "walrus", "scope": scope})  # a wrong type is refused by the schema already
    assert found.get("success") is not True and "scope" in found["error"] and "9 million" not in json.dumps(found)


@pytest.mark.parametrize(("child_args", "why"), [
    ({"query": "narwhal"}, "the parent's own prompt word"),
    ({"query": "narwhal", "scope": "all"}, "every notebook"),
    ({"query": ""}, "browsing the latest runs"),
    ({"query": "", "scope": "all", "limit": 10}, "browsing every notebook"),
])
def test_a_child_never_reads_its_parents_unfinished_run(monkeypatch: pytest.MonkeyPatch, defence: bool,
                                                       child_args: dict[str, Any], why: str) -> None:
    _in(monkeypatch, "class.ipynb")
    with FakeOpenAI([Reply(content="An earlier narwhal count: 3.")]) as srv:  # a run that ended
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["file"], display=False, stream=False).run("narwhal?")

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "count the narwhal pod, privately":
            return Reply(tool_calls=(call("delegate_task", {"goal": "look back", "toolsets": ["session_search"]},
                                          "d1"),)) if turn == 0 else Reply(content="done")
        return Reply(tool_calls=(call("session_search", child_args, "s1"),)) if turn == 0 else Reply(content="ok")

    with RoutedOpenAI(route) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "session_search"], display=False,
              stream=False).run("count the narwhal pod, privately")
        child = next(b for b in srv.requests if any(m.get("tool_call_id") == "s1" for m in b["messages"]))
        found = _answer(child, "s1")
    assert found["success"] is True, why
    titles = [r["title"] for r in found["results"]]
    assert ("count the narwhal pod, privately" not in titles) is defence, why  # the parent's run, still being written
    assert "narwhal?" in titles, why  # a run that ended is still found
