"""Soak: a 1 000-turn scripted agent run with a tool call every turn keeps threads and memory flat."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from tests.support.fake_openai import FakeOpenAI, Reply

TURNS = 1000
SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_thousand_turns_keep_threads_and_memory_flat() -> None:
    from hermes_nb.tools.registry import registry

    samples: list[tuple[int, float]] = []  # (threads, rss MB) at each turn, taken inside the tool

    def tick(args: dict[str, Any], **kw: Any) -> str:
        samples.append((threading.active_count(), _rss_mb()))
        return f"tick {len(samples)}"

    registry.register("tick", "soak", SCHEMA, tick, read_only=True)
    script = [Reply(content=f"turn {i}", tool_calls=({"id": f"c{i}", "name": "tick", "arguments": "{}"},))
              for i in range(TURNS)] + [Reply(content="finished")]
    with FakeOpenAI(script, keep_requests=False) as srv:
        agent = Agent(model="fake-model", base_url=srv.base_url, display=False, enabled_toolsets=["soak"],
                      max_iterations=TURNS + 1)
        result = agent.run("go")
    assert result.stopped_reason == "done" and result.text == "finished", result.error
    assert len(samples) == TURNS and srv.request_count == TURNS + 1
    threads = [t for t, _ in samples]
    rss = [m for _, m in samples]
    growth = rss[-1] - rss[99]
    print(f"\nsoak: {TURNS} turns; threads {threads[99]} at turn 100, max {max(threads[99:])}, {threads[-1]} at the "
          f"end; RSS {rss[99]:.1f} MB at turn 100, {rss[-1]:.1f} MB at turn {TURNS} (+{growth:.1f} MB, "
          f"{growth * 1024 / (TURNS - 100):.1f} KB per turn; the history itself holds {len(result.messages)} messages)")
    assert max(threads[99:]) <= threads[99] + 2, "threads grow with turns"
    # the history and the transcript grow by design (about 1 KB a turn); a per-turn leak of anything
    # larger (a request body, a stream, a thread's stack) passes 16 KB a turn
    assert growth * 1024 / (TURNS - 100) < 16, f"memory grows {growth:.1f} MB over {TURNS - 100} turns"
