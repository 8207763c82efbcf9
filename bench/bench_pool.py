"""The worker pool under hung calls: a normal call after 8 and 64 calls that never return, against a
normal call on a fresh pool, measured in this process.

Target: a normal call after hung ones costs at most 2x a normal call on a fresh pool (before issue 11
it never ran at all: eight hung calls held all eight workers). Exits non-zero when a target is missed.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from bench.common import fmt, per_call, verdict
from hermes_nb.tools.batch import state
from hermes_nb.tools.batch.pool import ToolPool
from hermes_nb.tools.batch.scheduling import run_tool_batch
from hermes_nb.tools.registry import ToolRegistry

SCHEMA: dict[str, Any] = {"description": "bench", "parameters": {"type": "object", "properties": {}}}
TARGET = 2.0  # normal call after hung ones / normal call on a fresh pool


def _calls(name: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{name}{i}", "type": "function", "function": {"name": name, "arguments": "{}"}} for i in range(n)]


def _hang(reg: ToolRegistry, n: int) -> None:
    """``n`` more calls that time out while running and stay blocked, eight per batch (a batch's window)."""
    want = len(state.stuck_calls()) + n
    while len(state.stuck_calls()) < want:  # a call the busy machine never started is not stuck: go again
        batch = min(8, want - len(state.stuck_calls()))
        run_tool_batch(_calls("hang", batch), registry=reg, timeout=0.5)


def _best(fn: Any, pool: Any, rounds: int = 3) -> float:
    """Per-call time of ``fn`` with ``pool`` as the shared pool (best of a few rounds)."""
    saved = state._pool
    state._pool = pool
    try:
        return min(per_call(fn) for _ in range(rounds))
    finally:
        state._pool = saved


def main() -> None:
    release = threading.Event()
    reg = ToolRegistry()
    reg.register("hang", "bench", SCHEMA, lambda a, **k: release.wait() and "late", read_only=True)
    reg.register("quick", "bench", SCHEMA, lambda a, **k: "quick", read_only=True)
    quick = _calls("quick", 1)

    def normal() -> None:
        (result,) = run_tool_batch(quick, registry=reg, timeout=5.0)
        assert result.content == "quick", json.loads(result.content)

    missed = []
    hung_pool = state.shared_pool(8)
    try:
        hung = 0
        for n in (8, 64):
            _hang(reg, n - hung)
            hung = n
            start = time.perf_counter()
            normal()
            first = time.perf_counter() - start
            # fresh and hung pools measured alternately, so the machine's load drifts into both alike
            base = after = float("inf")
            for _ in range(5):
                fresh = ToolPool(8)
                base = min(base, _best(normal, fresh, rounds=1))
                fresh.shutdown()
                after = min(after, _best(normal, hung_pool, rounds=1))
            ok = after / base <= TARGET
            missed += [] if ok else [n]
            print(f"after {n} hung calls ({len(state.stuck_calls())} stuck): first call {fmt(first)}, then "
                  f"{fmt(after)} per call; a fresh pool {fmt(base)}: {after / base:.2f}x "
                  f"(target <= {TARGET:g}x): {verdict(ok)}")
    finally:
        release.set()
    if missed:
        raise RuntimeError(f"bench_pool: target missed after {missed} hung calls")


if __name__ == "__main__":
    main()
