"""The agent loop's own overhead per tool round trip beside its peers (issue 34): hermes_nb's ``Agent``,
pydantic-ai's ``Agent`` (a ``FunctionModel``) and the OpenAI Agents SDK's ``Runner`` (a fake ``Model``), the
same tool, the same process, rounds alternating. Target: no slower than the faster peer.

One run is a tool round trip: the model asks for ``add(a=2, b=3)``, the loop runs it and sends the result
back, the model answers "5". No network and no real model on any side: the time is the loop's own (its
events, history, validation, dispatch, display off). Each side runs through its synchronous entry point, the
one a notebook calls (``Agent.run``, ``Agent.run_sync``, ``Runner.run_sync``). Median of alternating rounds.

The peers are not hermes_nb's dependencies: the bench builds ``.venv-peers`` (openai-agents and pydantic-ai
beside an editable hermes-nb, seconds with uv) and runs itself there.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import QUICK, fmt, limit, require, verdict

PEERS = ("openai-agents==0.24.0", "pydantic-ai-slim==2.62.0")
TARGET = 1.0  # hermes_nb's time per round trip over the faster peer's, at most


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _hermes() -> Callable[[], str]:
    from hermes_nb.agent.loop import Agent
    from hermes_nb.models import ModelTurn, ToolCallSpec, Usage
    from hermes_nb.tools.registry import registry

    registry.register("add", "peers", {"description": "Add two integers.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]}}, lambda args, **kw: str(add(args["a"], args["b"])), read_only=True, source="notebook")
    usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)

    class Scripted:
        name = "scripted"

        async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                           on_text: Any = None, on_retry: Any = None) -> ModelTurn:
            if messages[-1]["role"] == "user":
                return ModelTurn(tool_calls=(ToolCallSpec(id="c1", name="add", arguments='{"a": 2, "b": 3}'),),
                                 usage=usage, finish_reason="tool_calls")
            return ModelTurn(content=str(messages[-1]["content"]), usage=usage, finish_reason="stop")

    def run() -> str:
        agent = Agent(model="scripted", base_url="http://127.0.0.1:9/v1", display=False, enabled_toolsets=["peers"])
        agent.model = Scripted()  # type: ignore[assignment]
        return agent.run("What is 2 + 3?").text

    return run


def _pydantic_ai() -> Callable[[], str]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def scripted(messages: list[Any], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(str(returned[0].content))])
        return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c1")])

    agent = Agent(FunctionModel(scripted), tools=[add])
    return lambda: str(agent.run_sync("What is 2 + 3?").output)


def _openai_agents() -> Callable[[], str]:
    from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
            items = input if isinstance(input, list) else []
            outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if outputs:
                text = ResponseOutputText(type="output_text", text=str(outputs[-1]["output"]), annotations=[])
                out: Any = ResponseOutputMessage(id="m1", type="message", role="assistant", status="completed",
                                                 content=[text])
            else:
                out = ResponseFunctionToolCall(type="function_call", call_id="c1", name="add",
                                               arguments='{"a": 2, "b": 3}', id="fc1", status="completed")
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = Agent(name="peers", model=Scripted(), tools=[function_tool(add)])
    return lambda: str(Runner.run_sync(agent, "What is 2 + 3?").final_output)


def _in_peers_venv() -> int:
    from tests.support.venvs import REPO, cached_venv, run_in

    venv = cached_venv("peers", [list(PEERS), ["-e", str(REPO)]])
    proc = run_in(venv, ["python", "-m", "bench", *(["--quick"] if QUICK else []), "loop_peers"], cwd=REPO,
                  timeout=900)
    print(proc.stdout, end="")
    print(proc.stderr[-3000:], end="", file=sys.stderr)
    return proc.returncode


def main() -> None:
    if importlib.util.find_spec("agents") is None or importlib.util.find_spec("pydantic_ai") is None:
        if os.environ.get("HERMES_NB_PEERS_VENV"):
            raise SystemExit("the peers venv lacks openai-agents or pydantic-ai")
        os.environ["HERMES_NB_PEERS_VENV"] = "1"
        code = _in_peers_venv()
        if code:
            raise SystemExit(code)
        return
    sides = {"hermes_nb Agent.run": _hermes(), "pydantic-ai Agent.run_sync": _pydantic_ai(),
             "Agents SDK Runner.run_sync": _openai_agents()}
    for name, run in sides.items():  # each answers "5" through its tool, and is warm
        for _ in range(20):
            answer = run()
        require(answer.strip() == "5", f"{name} answered {answer!r}, not the tool's result")
    rounds, per_round = (5, 20) if QUICK else (15, 40)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, run in sides.items():  # alternating: machine load hits every side alike
            start = time.perf_counter()
            for _ in range(per_round):
                run()
            times[name].append((time.perf_counter() - start) / per_round)
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, t in median.items():
        print(f"  {name:30} {fmt(t)} per tool round trip (median of {rounds} rounds of {per_round})")
    ours = median["hermes_nb Agent.run"]
    fastest_peer = min(t for name, t in median.items() if not name.startswith("hermes_nb"))
    ratio = ours / fastest_peer
    ok = ratio <= limit(TARGET)
    print(f"hermes_nb / the faster peer: {ratio:.2f}x (target ≤ {limit(TARGET):g}x): {verdict(ok)}")
    require(ok, f"hermes_nb's loop takes {ratio:.2f}x the faster peer's time per tool round trip")


if __name__ == "__main__":
    main()
    sys.exit(0)
