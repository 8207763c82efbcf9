"""The registry against the seed sketch of Hermes's registry, measured in the same process.

The baseline is what Hermes's design starts from: a dict lookup, a lazy check_fn, try/except to JSON,
and no argument validation. hermes_nb adds validation, coercion and richer errors; the targets say how
much that may cost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from bench import common
from bench.common import fmt, limit, per_call, require, verdict
from hermes_nb.tools.registry import ToolRegistry


class BaselineRegistry:
    """The seed sketch: no validation, no locks, no availability reasons."""

    def __init__(self) -> None:
        self.tools: dict[str, dict] = {}

    def register(self, name, toolset, schema, handler, check_fn=None, **_):
        self.tools[name] = {"toolset": toolset, "schema": schema, "handler": handler, "check_fn": check_fn}

    def get_definitions(self, names):
        out = []
        for name in sorted(names):
            t = self.tools.get(name)
            if t is None:
                continue
            if t["check_fn"] is not None:
                try:
                    if not t["check_fn"]():
                        continue
                except Exception:
                    continue
            out.append({"type": "function", "function": {**t["schema"], "name": name}})
        return out

    def dispatch(self, name, args, **kw):
        t = self.tools.get(name)
        if t is None:
            return json.dumps({"error": f"Unknown tool: {name}"})
        try:
            result = t["handler"](args, **kw)
            return result if isinstance(result, str) else json.dumps(result)
        except Exception as exc:
            return json.dumps({"error": f"Tool execution failed: {type(exc).__name__}: {exc}"})


SCHEMA = {
    "name": "inc",
    "description": "Add one.",
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
}


def inc(args, **kw):
    return str(args["n"] + 1)


def boom(args, **kw):
    raise ValueError("nope")


def _fill(reg, n: int) -> list[str]:
    names = []
    for i in range(n):
        flag = i % 3 != 0
        reg.register(f"tool_{i}", f"ts{i % 10}", {**SCHEMA, "name": f"tool_{i}"}, inc, check_fn=lambda f=flag: f)
        names.append(f"tool_{i}")
    return names


def _ratio_line(label: str, ours: float, base: float, target: float) -> None:
    ratio, target = ours / base, limit(target)  # limit: 2x the target under `python -m bench --quick`
    print(f"{label:<38} ours {fmt(ours):>10}  baseline {fmt(base):>10}  ratio {ratio:5.2f}x "
          f"(target ≤ {target:g}x: {verdict(ratio <= target)})")
    if common.QUICK:
        require(ratio <= target, f"{label}: {ratio:.2f}x > {target:g}x")


def main(quick: bool = False) -> None:
    """All figures; ``quick`` (``make bench-quick``): the dispatch and 100-tool listing ratios only."""
    ours, base = ToolRegistry(), BaselineRegistry()
    for r in (ours, base):
        r.register("inc", "bench", SCHEMA, inc)
        r.register("boom", "bench", SCHEMA, boom)
    args = {"n": 41}
    assert ours.dispatch("inc", args) == base.dispatch("inc", args) == "42"

    _ratio_line("dispatch, one integer, validated",
                per_call(lambda: ours.dispatch("inc", args)), per_call(lambda: base.dispatch("inc", args)), 8)
    _ratio_line("dispatch, unknown tool",
                per_call(lambda: ours.dispatch("nope", args)), per_call(lambda: base.dispatch("nope", args)), 3)
    o, b = per_call(lambda: ours.dispatch("boom", args)), per_call(lambda: base.dispatch("boom", args))
    print(f"{'dispatch, raising handler':<38} ours {fmt(o):>10}  baseline {fmt(b):>10}  ratio {o / b:5.2f}x (no target)")

    timings = {}
    for n in (100,) if quick else (100, 1000):
        o_reg, b_reg = ToolRegistry(), BaselineRegistry()
        o_names, b_names = _fill(o_reg, n), _fill(b_reg, n)
        assert len(o_reg.get_definitions(o_names)) == len(b_reg.get_definitions(b_names))
        timings[n] = (
            per_call(lambda r=o_reg, ns=o_names: r.get_definitions(ns)),
            per_call(lambda r=b_reg, ns=b_names: r.get_definitions(ns)),
        )
        _ratio_line(f"get_definitions, {n} tools", *timings[n], 2)
    if quick:
        return
    growth = timings[1000][0] / timings[100][0]
    base_growth = timings[1000][1] / timings[100][1]
    # Both grow a little faster than 10x once 1000 tools outgrow the CPU caches; linear means growing
    # like the baseline's plain loop does, not worse.
    print(f"{'get_definitions 1000 vs 100 tools':<38} ours {growth:.1f}x, baseline {base_growth:.1f}x the time "
          f"for 10x the tools (linear, within 1.3x of the baseline's growth: {verdict(growth <= 1.3 * base_growth)})")

    def reg_1000(cls):
        def run():
            _fill(cls(), 1000)
        return run

    o, b = per_call(reg_1000(ToolRegistry), min_time=1, repeat=3), per_call(reg_1000(BaselineRegistry), min_time=1, repeat=3)
    print(f"{'register 1000 tools':<38} ours {fmt(o):>10}  baseline {fmt(b):>10}  ratio {o / b:5.2f}x "
          f"(no target; ours compiles a validator per tool)")

    for module in ("tools", "hermes_nb.tools.registry", "hermes_nb.tools.model_tools"):
        best = min(_import_time(module) for _ in range(5))
        target = " (target < 50 ms: " + verdict(best < 0.05) + ")" if module == "tools" else ""
        print(f"{'import ' + module:<38} {fmt(best):>10}{target}")


def _import_time(module: str) -> float:
    """Seconds to import ``module`` in a fresh interpreter, with bytecode caches as on a person's machine."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    start = time.perf_counter()
    main()
