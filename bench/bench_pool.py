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
from hermes_nb.tools.batch.scheduling import run_tool_batch
from hermes_nb.tools.registry import ToolRegistry

SCHEMA: dict[str, Any] = {"description": "bench", "parameters": {"type": "object", "properties": {}}}
TARGET = 2.0  # normal call after hung ones / normal call on a fresh pool


def _calls(name: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{name}{i}", "type": "function", "function": {"name": name, "arguments": "{}"}} for i in range(n)]


def _hang(reg: ToolRegistry, n: int) -> None:
    """``n`` calls that time out and stay blocked, eight per batch (a batch's window on the pool)."""
    for _ in range(n // 8):
        results = run_tool_batch(_calls("hang", 8), registry=reg, timeout=0.02)
        assert all(r.timed_out for r in results)


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
    try:
        base = per_call(normal)
        print(f"normal call on a fresh pool: {fmt(base)}")
        hung = 0
        for n in (8, 64):
            _hang(reg, n - hung)
            hung = n
            start = time.perf_counter()
            normal()
            first = time.perf_counter() - start
            after = per_call(normal)
            ok = after / base <= TARGET
            missed += [] if ok else [n]
            print(f"after {n} hung calls ({len(state.stuck_calls())} stuck): first call {fmt(first)}, "
                  f"then {fmt(after)} per call, {after / base:.2f}x a fresh pool "
                  f"(target <= {TARGET:g}x): {verdict(ok)}")
    finally:
        release.set()
    if missed:
        raise RuntimeError(f"bench_pool: target missed after {missed} hung calls")


if __name__ == "__main__":
    main()
