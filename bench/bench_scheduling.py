"""Scheduling: a parallel batch against the same calls run one after another, measured in this process."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from typing import Any

from bench.common import fmt, per_call, verdict
from hermes_nb.tools.batch.scheduling import arun_tool_batch, plan_tool_batch, run_tool_batch
from hermes_nb.tools.registry import ToolRegistry

SCHEMA = {"description": "bench", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}


def _calls(name: str, n: int, args: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    raw = json.dumps(args or {})
    return [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": raw}} for i in range(n)]


def _serial(reg: ToolRegistry, calls: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for c in calls:
        reg.dispatch(c["function"]["name"], c["function"]["arguments"])
    return time.perf_counter() - start


def _batch(reg: ToolRegistry, calls: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    run_tool_batch(calls, registry=reg)
    return time.perf_counter() - start


def main() -> None:
    reg = ToolRegistry()
    reg.register("nap", "bench", SCHEMA, lambda a, **k: time.sleep(0.2) or "ok", read_only=True)

    async def anap(args: dict[str, Any], **kw: Any) -> str:
        await asyncio.sleep(0.1)
        return "ok"

    reg.register("anap", "bench", SCHEMA, anap, read_only=True)
    run_tool_batch(_calls("nap", 8), registry=reg)  # warm the shared pool and the background loop

    sync_calls = _calls("nap", 8)
    serial, batch = _serial(reg, sync_calls), _batch(reg, sync_calls)
    print(f"8 read-only sync tools x 200 ms: batch {fmt(batch)}, serial {fmt(serial)}, "
          f"{serial / batch:.1f}x faster (target <= 260 ms): {verdict(batch <= 0.26)}")

    async_calls = _calls("anap", 64)
    serial, batch = _serial(reg, async_calls), _batch(reg, async_calls)
    print(f"64 async tools x 100 ms: batch {fmt(batch)}, serial {fmt(serial)}, "
          f"{serial / batch:.1f}x faster (target <= 200 ms): {verdict(batch <= 0.2)}")

    start = time.perf_counter()
    asyncio.run(arun_tool_batch(async_calls, registry=reg))
    abatch = time.perf_counter() - start
    print(f"64 async tools x 100 ms via arun_tool_batch: {fmt(abatch)}, {serial / abatch:.1f}x faster than serial "
          f"(target <= 200 ms): {verdict(abatch <= 0.2)}")

    # Planning: 100 calls mixing readers and writers of paths, so every pair is compared.
    reg.register("read", "bench", SCHEMA, lambda a, **k: "", read_only=True, path_params=("path",))
    reg.register("write", "bench", SCHEMA, lambda a, **k: "", path_params=("path",))
    with tempfile.TemporaryDirectory() as root:
        os.environ["HERMES_NB_WORKSPACE"] = root
        try:
            calls = [{"id": f"p{i}", "type": "function",
                      "function": {"name": "write" if i % 10 == 9 else "read",
                                   "arguments": json.dumps({"path": f"dir{i % 7}/file{i}.txt"})}}
                     for i in range(100)]
            t = per_call(lambda: plan_tool_batch(calls, registry=reg), min_time=0.5)
        finally:
            del os.environ["HERMES_NB_WORKSPACE"]
    segments = plan_tool_batch(calls, registry=reg)
    print(f"planning 100 calls ({len(segments)} segments): {fmt(t)} per plan, {t / 100 * 1e6:.1f} µs per call "
          f"(target <= 10 ms per plan): {verdict(t <= 0.01)}")


if __name__ == "__main__":
    main()
