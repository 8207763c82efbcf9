"""The approval gate: one decision before the handler, on every path; the clock starts after it; the
approver belongs to the run."""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
from collections.abc import Iterator

import pytest

from hermes_nb.tools.approval import reset_session_approvals
from hermes_nb.tools.batch.records import BatchInterrupted
from hermes_nb.tools.batch.scheduling import arun_tool_batch, run_tool_batch
from hermes_nb.tools.model_tools import handle_function_call
from hermes_nb.tools.registry import ToolRegistry, registry
from hermes_nb.tools.safety.approvals.gate import use_approver
from tests.support.interrupts import interrupts_land

OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
WAIT = 60.0  # generous: the machine is shared


@pytest.fixture(autouse=True)
def _clean_session() -> Iterator[None]:
    reset_session_approvals()
    yield
    reset_session_approvals()


class Guarded:
    """A tool marked needs_approval that counts its runs."""

    def __init__(self, reg: ToolRegistry, name: str = "guarded", *, is_async: bool = False) -> None:
        self.runs: list[int] = []
        self.ran = threading.Event()
        if is_async:
            async def handler(args, **kw):
                self.runs.append(args["n"])
                self.ran.set()
                return f"ran {args['n']}"
        else:
            def handler(args, **kw):  # type: ignore[misc]
                self.runs.append(args["n"])
                self.ran.set()
                return f"ran {args['n']}"
        reg.register(name, "test", {"description": "Needs a yes.", "parameters": OBJ}, handler,
                     needs_approval=True, metadata={"timeout": 0.3})


def _calls(*ns: int, name: str = "guarded") -> list[dict]:
    return [{"id": f"c{n}", "function": {"name": name, "arguments": json.dumps({"n": n})}} for n in ns]


def _slow_answer(answer: str, seconds: float):
    """An approver that takes longer than the batch timeout (0.3 s) to answer."""
    def approver(subject: str, key: str, description: str) -> str:
        threading.Event().wait(seconds)  # the person thinking: longer than the call's timeout
        return answer
    return approver


@pytest.mark.parametrize("is_async", [False, True])
def test_a_slow_yes_still_gets_the_full_timeout(is_async: bool) -> None:
    reg = ToolRegistry()
    Guarded(reg, is_async=is_async)
    with use_approver(_slow_answer("once", 1.0)):
        [result] = run_tool_batch(_calls(1), registry=reg)
    assert result.content == "ran 1" and not result.timed_out
    assert result.duration < 1.0, "the clock started after the decision"


@pytest.mark.parametrize("is_async", [False, True])
def test_a_slow_no_never_runs_even_later(is_async: bool) -> None:
    reg = ToolRegistry()
    tool = Guarded(reg, is_async=is_async)
    with use_approver(_slow_answer("deny", 1.0)):
        [result] = run_tool_batch(_calls(1), registry=reg)
    assert json.loads(result.content)["blocked"] is True and not result.timed_out
    assert not tool.ran.wait(0.5) and tool.runs == []


def test_a_prompt_that_times_out_is_a_denial() -> None:
    reg = ToolRegistry()
    tool = Guarded(reg)

    def undecided(subject: str, key: str, description: str) -> str:
        raise TimeoutError("nobody clicked")

    with use_approver(undecided):
        [result] = run_tool_batch(_calls(1), registry=reg)
    assert "nobody answered" in json.loads(result.content)["error"]
    assert tool.runs == []


def test_interrupted_while_the_prompt_waits_then_approved_never_runs() -> None:
    reg = ToolRegistry()
    tool = Guarded(reg)
    go, answered = threading.Event(), threading.Event()

    def approver(subject: str, key: str, description: str) -> str:
        _thread.interrupt_main()  # ■ pressed while the prompt waits
        go.wait(WAIT)
        answered.set()
        return "once"  # the late yes must not start the cancelled call

    with interrupts_land(), use_approver(approver), pytest.raises(BatchInterrupted) as info:
        run_tool_batch(_calls(1), registry=reg)
    assert info.value.results[0].interrupted
    go.set()
    assert answered.wait(WAIT)
    assert not tool.ran.wait(0.5) and tool.runs == []


def test_async_batch_decides_before_the_clock() -> None:
    reg = ToolRegistry()
    Guarded(reg, is_async=True)

    async def main():
        with use_approver(_slow_answer("once", 1.0)):
            return await arun_tool_batch(_calls(1), registry=reg)

    [result] = asyncio.run(main())
    assert result.content == "ran 1" and not result.timed_out


def test_dispatch_and_handle_function_call_pass_the_gate() -> None:
    tool = Guarded(registry)
    blocked = json.loads(registry.dispatch("guarded", {"n": 1}))
    assert blocked["blocked"] is True and "no one is available" in blocked["error"]
    assert json.loads(handle_function_call("guarded", {"n": 2}))["blocked"] is True
    assert registry.dispatch("guarded", {"n": 3}, approval_callback=lambda *a: "once") == "ran 3"
    assert handle_function_call("guarded", {"n": 4}, approval_callback=lambda *a: "once") == "ran 4"
    assert tool.runs == [3, 4]


def test_dispatch_async_passes_the_gate() -> None:
    tool = Guarded(registry, is_async=True)

    async def main():
        with use_approver(lambda *a: "deny"):
            denied = await registry.dispatch_async("guarded", {"n": 1})
        with use_approver(lambda *a: "once"):
            allowed = await registry.dispatch_async("guarded", {"n": 2})
        return denied, allowed

    denied, allowed = asyncio.run(main())
    assert json.loads(denied)["blocked"] is True and allowed == "ran 2"
    assert tool.runs == [2]


def test_the_registry_core_holds_no_policy() -> None:
    tool = Guarded(registry)
    entry, args = registry.prepare("guarded", {"n": 5})  # type: ignore[misc]
    assert registry.call(entry, args) == "ran 5"  # the core calls; deciding is the gate's job
    assert tool.runs == [5]


def test_terminal_is_judged_by_the_classifier_in_a_batch(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    asked: list[str] = []

    def person(subject: str, key: str, description: str) -> str:
        asked.append(subject)
        return "deny"

    calls = [{"id": "a", "function": {"name": "terminal", "arguments": json.dumps({"command": "echo hi"})}},
             {"id": "b", "function": {"name": "terminal", "arguments": json.dumps({"command": "touch made"})}}]
    with use_approver(person):
        safe, denied = run_tool_batch(calls)
    assert json.loads(safe.content)["stdout"] == "hi\n"
    assert json.loads(denied.content)["blocked"] is True
    assert asked == ["touch made"] and not (tmp_path / "made").exists()


def test_two_concurrent_runs_get_their_own_answers() -> None:
    reg = ToolRegistry()
    tool = Guarded(reg, is_async=True)
    both_asking = threading.Barrier(2, timeout=WAIT)

    def person(answer: str):
        def approver(subject: str, key: str, description: str) -> str:
            both_asking.wait()  # both prompts are open at the same time
            return answer
        return approver

    async def run(answer: str, n: int):
        with use_approver(person(answer)):
            return await arun_tool_batch(_calls(n), registry=reg)

    async def main():
        return await asyncio.gather(run("once", 1), run("deny", 2))

    [yes], [no] = asyncio.run(main())
    assert yes.content == "ran 1"
    assert json.loads(no.content)["blocked"] is True
    assert tool.runs == [1]


def test_two_concurrent_agent_runs_get_their_own_answers(tmp_path, monkeypatch) -> None:
    from hermes_nb.agent.loop import Agent
    from tests.support.fake_openai import FakeOpenAI, Reply, call

    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    both_asking = threading.Barrier(2, timeout=WAIT)
    asked: dict[str, list[str]] = {"a": [], "b": []}

    def person(who: str, answer: str):
        def approver(subject: str, key: str, description: str) -> str:
            asked[who].append(subject)
            both_asking.wait()
            return answer
        return approver

    def script(name: str):  # an absolute path: whatever the workspace, never a file in the folder pytest runs in
        return [Reply(tool_calls=(call("terminal", {"command": f"touch {tmp_path / name}"}, "t"),)),
                Reply(content="ok")]

    async def main(srv_a, srv_b):
        a = Agent(model="fake", base_url=srv_a.base_url, display=False, enabled_toolsets=["terminal"],
                  approval_callback=person("a", "once"))
        b = Agent(model="fake", base_url=srv_b.base_url, display=False, enabled_toolsets=["terminal"],
                  approval_callback=person("b", "deny"))
        return await asyncio.gather(a.arun("make a"), b.arun("make b"))

    with FakeOpenAI(script("made_a")) as srv_a, FakeOpenAI(script("made_b")) as srv_b:
        ra, rb = asyncio.run(main(srv_a, srv_b))
    assert asked == {"a": [f"touch {tmp_path / 'made_a'}"], "b": [f"touch {tmp_path / 'made_b'}"]}
    assert json.loads(ra.tool_calls[0].content)["exit_code"] == 0
    assert json.loads(rb.tool_calls[0].content)["blocked"] is True
    assert (tmp_path / "made_a").exists() and not (tmp_path / "made_b").exists()


def test_a_prompt_that_gives_up_says_no_answer() -> None:
    reg = ToolRegistry()
    tool = Guarded(reg)
    with use_approver(lambda *a: "no-answer"):
        [result] = run_tool_batch(_calls(1), registry=reg)
    assert "nobody answered" in json.loads(result.content)["error"] and tool.runs == []
