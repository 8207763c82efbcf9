"""The registry against the seed sketch of Hermes's registry, measured in the same process, and against
hermes-agent 0.19's own registry, measured in the same run.

The baseline is what Hermes's design starts from: a dict lookup, a lazy check_fn, try/except to JSON,
and no argument validation. hermes_nb adds validation, coercion, the approval gate, scope (inside a run, only
the tools the run offered: ``tools.batch.scope``) and richer errors; the targets say how much that may cost.
Issue 31's targets for one call of a trivial tool through the one dispatch path with all three (scope as a
run's batch checks it, then ``dispatch``: lookup, validation, the gate, the call): at most ``DISPATCH_TARGET``
(5x) the seed sketch, and at most ``HERMES_TARGET`` (2x) Hermes 0.19's own (unvalidated) ``registry.dispatch``
of the same tool (that side runs in another process, of the ``.venv-hermes-client`` venv: hermes-agent from
PyPI; rounds of both sides alternate so the machine's load hits both alike); the scope check alone at most
``SCOPE_TARGET`` (100 ns). Issue 20's 1.5x and 4x are retired: a gate with rules costs ~300 ns, which nobody
sees next to a sandbox or a model turn. Each side is taken over the seed sketch timed in its own process in the same round, and the
two ratios compared: a burst that hits one process's rounds and not the other's cancels out (a quick pass
inside `make test` once read 3.4x from a burst that doubled our side's sketch too).
A missed target raises ``TargetMissed`` after every figure is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

from bench.common import fmt, limit, per_call, require, verdict
from hermes_nb.tools.batch.scope import Offer, offer_of
from hermes_nb.tools.registry import ToolRegistry

HERMES_VERSION = "0.19.0"
#: Issue 31: a call through the one path (scope → lookup → validate → decide → call → settle, each step written
#: once) may cost at most 2x hermes-agent 0.19's own unvalidated dispatch (rounds of both sides alternate so the
#: machine's load hits both alike; the best round of each is compared). Issue 20's 1.5x is retired.
HERMES_TARGET = 2.0
DISPATCH_TARGET = 5.0  # x the seed sketch (issue 31; issue 20's 4, issue 15's 8 before it)
SCOPE_TARGET = 100e-9  # seconds: the scope check of one call, as a run's batch makes it
#: The tool names a run offers in the bench: a turn's worth, the called one among them.
OFFERED = ("inc", *(f"tool_{i}" for i in range(29)))


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


def _ratio_line(label: str, ours: float, base: float, target: float) -> bool:  # True when met
    ratio, target = ours / base, limit(target)  # limit: 2x the target under `python -m bench --quick`
    print(f"{label:<38} ours {fmt(ours):>10}  baseline {fmt(base):>10}  ratio {ratio:5.2f}x "
          f"(target ≤ {target:g}x: {verdict(ratio <= target)})")
    return ratio <= target


def _alternating(ours: Callable[[], object], base: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Best seconds per call of each, over rounds that alternate: a burst of load on this shared machine
    then hits both sides alike instead of one."""
    o = b = float("inf")
    for _ in range(rounds):
        o = min(o, per_call(ours, min_time=0.1, repeat=3))
        b = min(b, per_call(base, min_time=0.1, repeat=3))
    return o, b


# -- hermes-agent's own registry, in its venv ------------------------------------------------------

_hermes_problem = ""

# Runs in the hermes venv: its `tools.registry` (hermes-agent's), the same trivial tool, timed with the same
# per_call as ours (its source is sent along: the repository's own `tools/` folder must not be on that path).
_HERMES_SIDE = """from __future__ import annotations
import json, sys, time
from tools.registry import ToolRegistry
QUICK = False  # the timer below reads bench.common's flag; here the rounds are set by min_time
{per_call}
{sketch}
schema = json.loads(sys.argv[1])
def inc(args, **kw):
    return str(args["n"] + 1)
reg, sketch = ToolRegistry(), BaselineRegistry()
reg.register("inc", "bench", schema, inc)
sketch.register("inc", "bench", schema, inc)
args = {{"n": 41}}
assert reg.dispatch("inc", args) == sketch.dispatch("inc", args) == "42", reg.dispatch("inc", args)
print("ready", flush=True)
for line in sys.stdin:  # Hermes's dispatch, then the sketch in this same process: the round's yardstick
    print(per_call(lambda: reg.dispatch("inc", args), min_time=float(line), repeat=3),
          per_call(lambda: sketch.dispatch("inc", args), min_time=float(line), repeat=3), flush=True)
"""


def _hermes_process() -> subprocess.Popen[str] | None:
    """hermes-agent's registry in a subprocess of ``.venv-hermes-client`` (built on first use), or None."""
    global _hermes_problem
    import inspect

    from bench.common import per_call as timer

    try:
        from tests.support.venvs import cached_venv, python_of

        # the same venv as the MCP-serving test's Hermes client: built once, shared
        venv = cached_venv("hermes-client", [[f"hermes-agent[mcp]=={HERMES_VERSION}"]])
    except Exception as exc:  # boundary: no network, no uv; reported as a missed target
        _hermes_problem = f"cannot build the hermes-agent venv ({type(exc).__name__}: {exc})"
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = _HERMES_SIDE.format(per_call=inspect.getsource(timer), sketch=inspect.getsource(BaselineRegistry))
    proc = subprocess.Popen([str(python_of(venv)), "-c", code, json.dumps(SCHEMA)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(venv))
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        _hermes_problem = f"hermes side failed: {proc.communicate()[1][-500:]}"
        return None
    return proc


def _scoped(ours: ToolRegistry, offer: Offer, args: dict) -> Callable[[], object]:
    """One call as a run makes it: the batch's scope check (``Batch.decide``'s first step), then the registry's
    path (lookup, validation, the gate, the handler)."""
    refusal, dispatch = offer.refusal, ours.dispatch

    def call() -> object:
        return refusal("inc", ours) or dispatch("inc", args)

    return call


def _dispatch_side_by_side(ours: ToolRegistry, base: BaselineRegistry, args: dict, *, rounds: int
                           ) -> tuple[float, float, tuple[float, float] | None]:
    """Best seconds per call of ours (scope, validation, gate) and the seed sketch here, and of Hermes's and the
    sketch in Hermes's process, over alternating rounds."""
    proc = _hermes_process()
    best = [float("inf")] * 4
    scoped = _scoped(ours, offer_of({"function": {"name": n}} for n in OFFERED), args)
    try:
        for _ in range(rounds):
            best[0] = min(best[0], per_call(scoped, min_time=0.1, repeat=3))
            best[1] = min(best[1], per_call(lambda: base.dispatch("inc", args), min_time=0.1, repeat=3))
            if proc is not None:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write("0.1\n")
                proc.stdin.flush()
                hermes, sketch = map(float, proc.stdout.readline().split())
                best[2], best[3] = min(best[2], hermes), min(best[3], sketch)
    finally:
        if proc is not None:
            proc.communicate(timeout=60)
    return best[0], best[1], ((best[2], best[3]) if proc is not None else None)


def main(quick: bool = False) -> None:
    """Print every figure, then raise ``TargetMissed`` naming the missed targets. ``quick``: fewer rounds,
    no registration or import timings (for a quick pass inside the test run)."""
    misses: list[str] = []
    ours, base = ToolRegistry(), BaselineRegistry()
    for r in (ours, base):
        r.register("inc", "bench", SCHEMA, inc)
        r.register("boom", "bench", SCHEMA, boom)
    args = {"n": 41}
    assert ours.dispatch("inc", args) == base.dispatch("inc", args) == "42"

    offer = offer_of({"function": {"name": n}} for n in OFFERED)
    assert offer.refusal("inc", ours) is None and offer.refusal("boom", ours) is not None
    o, b, hermes_side = _dispatch_side_by_side(ours, base, args, rounds=3 if quick else 9)
    ratio = o / b
    # under --quick: 2x each target (``limit``): a quick pass catches a 2x regression
    dispatch_target = limit(DISPATCH_TARGET)
    hermes_target = limit(HERMES_TARGET)
    print(f"{'dispatch, scoped, validated, gated':<38} ours {fmt(o):>10}  baseline {fmt(b):>10}  ratio {ratio:5.2f}x "
          f"(target ≤ {dispatch_target:g}x: {verdict(ratio <= dispatch_target)})")
    if ratio > dispatch_target:
        misses.append(f"scoped validated dispatch {ratio:.2f}x the seed sketch (target ≤ {dispatch_target:g}x)")
    scope_cost = _scope_check(ours, offer, rounds=3 if quick else 7)
    scope_target = limit(SCOPE_TARGET)
    print(f"{'scope check, offered name':<38} ours {fmt(scope_cost):>10}  (the timing loop's own call subtracted; "
          f"target ≤ {scope_target * 1e9:g} ns: {verdict(scope_cost <= scope_target)})")
    if scope_cost > scope_target:
        misses.append(f"scope check {scope_cost * 1e9:.0f} ns (target ≤ {scope_target * 1e9:g} ns)")
    if hermes_side is None:
        print(f"{'dispatch vs hermes-agent ' + HERMES_VERSION:<38} not measured: {_hermes_problem}")
        misses.append(f"hermes-agent {HERMES_VERSION} side not measured ({_hermes_problem})")
    else:
        # each side over the seed sketch timed in its own process, then the two compared: a burst of load
        # that hits one process's rounds and not the other's cancels (the raw ratio is printed beside it)
        h, hs = hermes_side
        vs = (o / b) / (h / hs)
        print(f"{'dispatch vs hermes-agent ' + HERMES_VERSION:<38} ours {fmt(o):>10}  hermes   {fmt(h):>10}  "
              f"ratio {vs:5.2f}x (each over the sketch in its own process, {ratio:.2f}x vs {h / hs:.2f}x; raw "
              f"{o / h:.2f}x; hermes unvalidated; target ≤ {hermes_target:g}x: {verdict(vs <= hermes_target)})")
        if vs > hermes_target:
            misses.append(f"validated dispatch {vs:.2f}x hermes-agent {HERMES_VERSION}'s (target ≤ {hermes_target:g}x)")
    rounds = 3 if quick else 7
    # The lines below print their verdicts as before; only the dispatch targets and the import
    # time fail the run (these ratios swing ±30% with this shared machine's load).
    _ratio_line("dispatch, unknown tool", *_alternating(
        lambda: ours.dispatch("nope", args), lambda: base.dispatch("nope", args), rounds), 3)
    o, b = per_call(lambda: ours.dispatch("boom", args)), per_call(lambda: base.dispatch("boom", args))
    print(f"{'dispatch, raising handler':<38} ours {fmt(o):>10}  baseline {fmt(b):>10}  ratio {o / b:5.2f}x (no target)")

    timings = {}
    for n in (100, 1000):
        o_reg, b_reg = ToolRegistry(), BaselineRegistry()
        o_names, b_names = _fill(o_reg, n), _fill(b_reg, n)
        assert len(o_reg.get_definitions(o_names)) == len(b_reg.get_definitions(b_names))
        timings[n] = _alternating(lambda r=o_reg, ns=o_names: r.get_definitions(ns),
                                  lambda r=b_reg, ns=b_names: r.get_definitions(ns), rounds)
        _ratio_line(f"get_definitions, {n} tools", *timings[n], 2)
    growth = timings[1000][0] / timings[100][0]
    base_growth = timings[1000][1] / timings[100][1]
    # Both grow a little faster than 10x once 1000 tools outgrow the CPU caches; linear means growing
    # like the baseline's plain loop does, not worse.
    print(f"{'get_definitions 1000 vs 100 tools':<38} ours {growth:.1f}x, baseline {base_growth:.1f}x the time "
          f"for 10x the tools (linear, within 1.3x of the baseline's growth: {verdict(growth <= 1.3 * base_growth)})")
    if quick:
        require(not misses, "; ".join(misses))
        return

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
        if module == "tools" and best >= 0.05:
            misses.append("import tools (target < 50 ms)")
    require(not misses, "; ".join(misses))


def _scope_check(ours: ToolRegistry, offer: Offer, *, rounds: int) -> float:
    """Best seconds of the scope check of one offered call, as ``Batch.decide`` makes it (the offer read when the
    batch was made), less the cost of calling an empty function the same way (the timing loop's own)."""
    refusal = offer.refusal

    def checked() -> object:
        return offer is not None and refusal("inc", ours)

    def empty() -> object:
        return offer is not None and None

    spent, idle = _alternating(checked, empty, rounds)
    return max(spent - idle, 0.0)


def _import_time(module: str) -> float:
    """Seconds to import ``module`` in a fresh interpreter, with bytecode caches as on a person's machine."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
