"""``make bench-quick``: the fast benchmarks, each cut down, every target at 2x (``common.QUICK_MARGIN``).

Under a minute on a busy machine. It exists to catch a 2x regression inside ``make test``, not noise:
the full runs (``python -m bench``) keep the real targets. Each check reuses the full benchmark's own
pieces (registries, schemas, handlers) and compares against the same baseline in the same process.
A miss raises ``TargetMissed`` after the figures are printed.
"""

from __future__ import annotations

import json
import tempfile
import time
import timeit
from collections.abc import Callable

from bench import common
from bench.common import fmt, limit, per_call, require, verdict

#: The benchmarks ``python -m bench --quick`` runs: cheap, in-process or one kernel at a time, no
#: extra venvs, npm or model servers.
QUICK_BENCHES = ("registry", "validation", "budget", "scheduling", "load", "tool_search", "sessions", "traces")


def _check(misses: list[str], label: str, value: float, target: float, unit: Callable[[float], str]) -> None:
    ok = value <= limit(target)
    print(f"  {label}: {unit(value)} (quick target <= {unit(limit(target))}, full {unit(target)}): {verdict(ok)}")
    if not ok:
        misses.append(f"{label} {unit(value)} > {unit(limit(target))}")


def _ratio(x: float) -> str:
    return f"{x:.2f}x"


def registry() -> None:
    """Dispatch and listing against the seed-sketch registry, with bench_registry's own targets."""
    from bench.bench_registry import main

    main(quick=True)


def traces() -> None:
    """A tool call's recording without a provider, the look-up for one, an exported span (bench_traces's targets)."""
    from bench.bench_traces import main

    main()


def validation() -> None:
    """Our validator on the flat schema against fastjsonschema's generated code (bench_validation's target)."""
    import fastjsonschema

    from bench.bench_validation import SCHEMA
    from hermes_nb.tools.schema.validation import compile_validator

    ours, generated, args = compile_validator(SCHEMA), fastjsonschema.compile(SCHEMA), {"n": 3}
    t_ours = min(timeit.repeat(lambda: ours(args), number=20_000, repeat=3)) / 20_000
    t_fast = min(timeit.repeat(lambda: generated(args), number=20_000, repeat=3)) / 20_000
    misses: list[str] = []
    _check(misses, f"validate one integer ({fmt(t_ours)}) vs fastjsonschema ({fmt(t_fast)})", t_ours / t_fast, 1.2, _ratio)
    require(not misses, "; ".join(misses))


def budget() -> None:
    """The cheap path under the threshold, a spill's peak memory, a turn budget (bench_budget's targets)."""
    import tracemalloc

    from hermes_nb.tools.budget import enforce_turn_budget, maybe_persist_tool_result, parse_spill_block
    from hermes_nb.tools.config import save_config, using_home

    misses: list[str] = []
    with tempfile.TemporaryDirectory() as home, using_home(home):
        small = "y" * 50_000
        t = per_call(lambda: maybe_persist_tool_result(small, "t", "s", threshold=100_000), min_time=0.05, repeat=3)
        _check(misses, "result under the threshold", t, 50e-6, fmt)
        save_config({"budget": {"result_size_chars": 100_000}})
        t = per_call(lambda: maybe_persist_tool_result(small, "unregistered", "s"), min_time=0.05, repeat=3)
        _check(misses, "result under a threshold read from config.yaml", t, 1e-3, fmt)
        line = "x" * 99 + "\n"
        content = line * (10 * 1024 * 1024 // len(line))  # 10 MB (the full run spills 50 MB)
        tracemalloc.start()
        block = maybe_persist_tool_result(content, "t", "big", threshold=100_000)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        info = parse_spill_block(block)
        assert info is not None and info["size"] == len(content)
        _check(misses, "spill of 10 MB, peak extra memory / result size", peak / len(content), 3, _ratio)
        enforce_turn_budget([])  # warm: the first config read imports yaml
        messages = [{"role": "tool", "tool_call_id": f"m{i}", "content": line * (400 * (i + 1))} for i in range(8)]
        start = time.perf_counter()
        enforce_turn_budget(messages)
        _check(misses, "turn budget over 8 messages", time.perf_counter() - start, 0.05, fmt)
    require(not misses, "; ".join(misses))


def scheduling() -> None:
    """A parallel batch of read-only tools against the time of one call (bench_scheduling's targets)."""
    from bench.bench_scheduling import SCHEMA, _calls
    from hermes_nb.tools.batch.scheduling import plan_tool_batch, run_tool_batch
    from hermes_nb.tools.registry import ToolRegistry

    nap = 0.1
    reg = ToolRegistry()
    reg.register("nap", "bench", SCHEMA, lambda a, **k: time.sleep(nap) or "ok", read_only=True)
    run_tool_batch(_calls("nap", 8), registry=reg)  # warm the shared pool
    start = time.perf_counter()
    run_tool_batch(_calls("nap", 8), registry=reg)
    batch = time.perf_counter() - start
    misses: list[str] = []
    # full target: 8 x 200 ms in <= 260 ms, i.e. 1.3x one call; here 8 x 100 ms against 1.3 x 100 ms
    _check(misses, f"8 read-only tools x {nap * 1000:.0f} ms as one batch", batch, 1.3 * nap, fmt)
    calls = [{"id": f"p{i}", "type": "function",
              "function": {"name": "nap", "arguments": json.dumps({"path": f"dir{i % 7}/file{i}.txt"})}}
             for i in range(100)]
    t = per_call(lambda: plan_tool_batch(calls, registry=reg), min_time=0.1, repeat=3)
    _check(misses, "planning 100 calls", t, 0.01, fmt)
    require(not misses, "; ".join(misses))


def load() -> None:
    from bench import bench_load

    bench_load.main()


def tool_search() -> None:
    """5 000 generated tools deferred: search p50, a turn's definitions against 50 direct tools', ranking."""
    from bench.bench_tool_search import main

    main(quick=True)


def sessions() -> None:
    """session_search's store: a query over 10 000 messages and storing one (bench_sessions' targets)."""
    from bench.bench_sessions import main

    main(quick=True)


def run(names: list[str]) -> list[str]:
    """Run the quick benchmarks (all, or those named); returns the names that missed or crashed."""
    import traceback

    common.QUICK = True
    failed = []
    for name in [n for n in QUICK_BENCHES if not names or n in names]:
        print(f"\n=== quick {name} ===", flush=True)
        start = time.perf_counter()
        try:
            globals()[name]()
        except common.TargetMissed as exc:
            print(f"TARGET MISSED: {exc}")
            failed.append(name)
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"(quick {name}: {time.perf_counter() - start:.1f} s)", flush=True)
    return failed
