"""The agent loop's own overhead per tool round trip (beyond model and tool time), and a long run's memory.

An in-process model (no HTTP) answers every turn with one call of a trivial tool; time spent inside
the model call and inside the tool is measured and subtracted, so what remains is the loop: tool
definitions, scheduling, the result budget, history and events. Baseline: one bare ``registry.dispatch``.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

from bench.common import fmt, per_call, verdict
from hermes_nb.agent.loop import Agent
from hermes_nb.models import ModelTurn, ToolCallSpec, Usage
from hermes_nb.tools.registry import registry

TARGET = 5e-3  # seconds of loop overhead per tool round trip


class _Model:
    """Answers ``turns - 1`` times with a tool call, then with a final text; times itself."""

    name = "bench"

    def __init__(self, turns: int) -> None:
        self.turns, self.calls, self.spent = turns, 0, 0.0

    def check_config(self) -> None:
        pass

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kw: Any) -> ModelTurn:
        start = time.perf_counter()
        self.calls += 1
        usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        if self.calls >= self.turns:
            turn = ModelTurn(content="done", usage=usage)
        else:
            spec = ToolCallSpec(id=f"c{self.calls}", name="bench_echo", arguments='{"n": 1}')
            turn = ModelTurn(content="", tool_calls=(spec,), usage=usage)
        self.spent += time.perf_counter() - start
        return turn


def _run(turns: int) -> tuple[float, float, float, Agent]:
    spent_in_tool = [0.0]

    def echo(args: dict[str, Any], **kw: Any) -> str:
        start = time.perf_counter()
        out = str(args["n"])
        spent_in_tool[0] += time.perf_counter() - start
        return out

    registry.register("bench_echo", "bench", {"description": "echo", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}, echo, read_only=True)
    agent = Agent(model="replay-free", api_key="x", enabled_toolsets=["bench"], display=False,
                  max_iterations=turns + 1)
    model = _Model(turns)
    agent.model = model
    start = time.perf_counter()
    result = agent.run("go")
    total = time.perf_counter() - start
    assert result.stopped_reason == "done", result.text
    return total, model.spent, spent_in_tool[0], agent


def main() -> None:
    from hermes_nb.tools.model_tools import ensure_discovered

    ensure_discovered()
    _run(5)  # warm up: imports, thread pool, background loop
    n = 200
    total, in_model, in_tool, _ = _run(n)
    round_trips = n - 1
    overhead = (total - in_model - in_tool) / round_trips
    registry.register("bench_bare", "bench", {"description": "bare", "parameters": {"type": "object"}},
                      lambda a, **kw: "1")
    bare = per_call(lambda: registry.dispatch("bench_bare", '{"n": 1}'))
    print(f"agent loop: {round_trips} tool round trips in {fmt(total)} (model {fmt(in_model)}, tool {fmt(in_tool)})")
    print(f"agent loop overhead per round trip: {overhead * 1e3:.3f} ms (target < {TARGET * 1e3:.0f} ms: "
          f"{verdict(overhead < TARGET)}); {overhead / bare:.0f}x a bare registry.dispatch ({fmt(bare)})")
    tracemalloc.start()
    _run(200)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"agent loop memory: 200-turn conversation, tracemalloc peak {peak / 2**20:.2f} MB")
    registry.deregister("bench_echo")
    registry.deregister("bench_bare")


if __name__ == "__main__":
    main()
