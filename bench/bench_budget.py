"""The result budget: spilling a 50 MB result (time and peak memory), and the cheap path under the threshold."""

from __future__ import annotations

import os
import tempfile
import time
import tracemalloc

from bench.common import fmt, per_call, verdict
from hermes_nb.tools.budget import enforce_turn_budget, maybe_persist_tool_result, parse_spill_block
from hermes_nb.tools.config import using_home

SIZE = 50 * 1024 * 1024


def main() -> None:
    with tempfile.TemporaryDirectory() as home, using_home(home):
        line = "x" * 99 + "\n"
        content = line * (SIZE // len(line))
        small = "y" * 50_000
        t_small = per_call(lambda: maybe_persist_tool_result(small, "t", "s", threshold=100_000), min_time=0.3)
        print(f"result under the threshold: {fmt(t_small)} per call (target <= 50 µs): {verdict(t_small <= 50e-6)}")
        from hermes_nb.tools.config import save_config

        save_config({"budget": {"result_size_chars": 100_000, "tools": {"other": 5}}})
        t_cfg = per_call(lambda: maybe_persist_tool_result(small, "unregistered", "s"), min_time=0.3)
        print(f"result under a threshold read from config.yaml: {fmt(t_cfg)} per call "
              f"({t_cfg / t_small:.0f}x the explicit threshold; target <= 1 ms): {verdict(t_cfg <= 1e-3)}")

        tracemalloc.start()
        start = time.perf_counter()
        block = maybe_persist_tool_result(content, "t", "big", threshold=100_000)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        info = parse_spill_block(block)
        assert info is not None and info["size"] == len(content)
        # Baseline: writing the same string straight to a file, no budget logic.
        start = time.perf_counter()
        with open(os.path.join(home, "baseline.txt"), "w", encoding="utf-8") as f:
            f.write(content)
        baseline = time.perf_counter() - start
        print(f"spilling a 50 MB result: {fmt(elapsed)} ({elapsed / baseline:.1f}x a bare file write of "
              f"{fmt(baseline)}); peak extra memory {peak / len(content):.2f}x the result "
              f"(target <= 3x): {verdict(peak <= 3 * len(content))}")

        enforce_turn_budget([])  # warm: the first config read imports yaml
        enforce_turn_budget([{"role": "tool", "tool_call_id": "w", "content": "w"}], budget=None)
        messages = [{"role": "tool", "tool_call_id": f"m{i}", "content": line * (400 * (i + 1))} for i in range(8)]
        start = time.perf_counter()
        out = enforce_turn_budget(messages)
        t_turn = time.perf_counter() - start
        spilled = sum(parse_spill_block(m["content"]) is not None for m in out)
        size = sum(len(m["content"]) for m in messages)
        print(f"turn budget over {size:,} chars in 8 messages: {fmt(t_turn)}, {spilled} spilled "
              f"(target <= 50 ms): {verdict(t_turn <= 0.05)}")


if __name__ == "__main__":
    main()
