"""``hermes_nb.evaluate`` at scale: concurrency against one-at-a-time, the Dask path's cost, memory.

The scripted model server (tests/support/routed_openai.py, the real openai client over HTTP) runs in
its own process, so its threads do not share this process's GIL, and answers every model turn after
50 ms. Each case takes two turns (a tool call, then the answer).

- Concurrency: 500 cases at concurrency 32 against one at a time. The serial baseline is measured on a
  subset (SERIAL cases) and extrapolated to 500 per case, as said in the output. Target: >= 20x.
  The concurrent run is CPU-bound on the one background loop (the baseline waits on latency), so the ratio
  falls when other processes leave it less than a core: the output gives CPU per case and the load.
  Listen-queue overflows (machine-wide, from /proc/net/netstat) are counted: each costs a connection a 1 s
  SYN retry, which is how the scripted server's old backlog of 5 cost this run up to a second.
- Dask: the same cases on a LocalCluster (2 process workers x 16 threads) against the local run at
  concurrency 32 with a model that answers at once; reported as overhead per case (no target).
- Memory: RSS sampled through the 500-case run; target: the last quarter's peak is within 32 MB of
  the first quarter's peak (no growth with the number of cases).
A missed target raises (``python -m bench`` then exits non-zero).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import verdict

CASES = 500
SERIAL = 40
LATENCY = 0.05
CONCURRENCY = 32
TARGET_SPEEDUP = 20.0
TARGET_GROWTH_MB = 32.0
DASK_CASES = 200

SERVER = r'''
import sys, threading
from tests.support.fake_openai import Reply, call
from tests.support.routed_openai import RoutedOpenAI
delay = float(sys.argv[1])
def route(prompt, turn, body):
    if turn == 0:
        return Reply(tool_calls=(call("bench_add", {"a": int(prompt.split()[1]), "b": 1}, "c0"),), delay=delay)
    return Reply(content="ok", delay=delay)
srv = RoutedOpenAI(route, keep_requests=False)
srv.__enter__()
print(srv.base_url, flush=True)
sys.stdin.read()
'''


class _Server:
    """The scripted server in a child process; ``base_url`` once it listens."""

    def __init__(self, delay: float) -> None:
        root = Path(__file__).resolve().parent.parent
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(delay)], cwd=root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _listen_overflows() -> int | None:
    """The kernel's count of connections dropped because a listen queue was full (this whole machine)."""
    try:
        with open("/proc/net/netstat") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        row = dict(zip(names.split(), values.split(), strict=False))
        if "ListenOverflows" in row:
            return int(row["ListenOverflows"])
    return None


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cases(n: int) -> list[dict[str, Any]]:
    return [{"prompt": f"add {i} and 1", "expected_tools": ["bench_add"], "expected_args": {"bench_add": {"a": i}}}
            for i in range(n)]


def _register() -> None:
    from hermes_nb.tools.schema.derive import tool

    def bench_add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    tool(bench_add, toolset="bench_eval", read_only=True)


def _evaluate(base_url: str, n: int, concurrency: int, **kw: Any) -> tuple[float, Any]:
    import hermes_nb

    start = time.perf_counter()
    result = hermes_nb.evaluate(_cases(n), agent={"model": "bench", "base_url": base_url, "stream": False,
                                                  "enabled_toolsets": ["bench_eval"]},
                                concurrency=concurrency, display=False, **kw)
    seconds = time.perf_counter() - start
    assert result.summary["errors"] == 0 and result.summary["selection_accuracy"] == 1.0, str(result)[:2000]
    return seconds, result


def _concurrency_and_memory() -> list[str]:
    missed = []
    server = _Server(LATENCY)
    try:
        _evaluate(server.base_url, 8, 8)  # warm up: imports, the background loop, connections
        serial, _ = _evaluate(server.base_url, SERIAL, 1)
        per_case = serial / SERIAL
        samples: list[tuple[float, float]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                samples.append((time.perf_counter(), _rss_mb()))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        cpu = time.process_time()
        overflows = _listen_overflows()
        wide, _ = _evaluate(server.base_url, CASES, CONCURRENCY)
        cpu = (time.process_time() - cpu) / CASES
        after = _listen_overflows()
        stop.set()
        sampler.join()
    finally:
        server.close()
    speedup = per_case * CASES / wide
    print(f"evaluate: one at a time {per_case * 1e3:.1f} ms per case (measured on {SERIAL} cases, extrapolated to "
          f"{CASES}: {per_case * CASES:.1f} s); {CASES} cases at concurrency {CONCURRENCY}: {wide:.2f} s")
    ok = speedup >= TARGET_SPEEDUP
    print(f"evaluate speed-up at concurrency {CONCURRENCY}: {speedup:.1f}x (target >= {TARGET_SPEEDUP:.0f}x: "
          f"{verdict(ok)}; ideal with {LATENCY * 1e3:.0f} ms per turn would be {CONCURRENCY}x)")
    print(f"evaluate CPU per case at concurrency {CONCURRENCY}: {cpu * 1e3:.1f} ms (all threads of this process; "
          f"mostly the openai client). One process cannot go faster than {per_case / cpu:.0f}x on this machine now; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if overflows is not None and after is not None:
        print(f"evaluate: listen-queue overflows during the run: {after - overflows} (machine-wide; each one "
              f"delays a connection by a 1 s SYN retry)")
    if not ok:
        missed.append("speed-up")
    if len(samples) >= 8:
        quarter = len(samples) // 4
        first = max(m for _, m in samples[:quarter])
        last = max(m for _, m in samples[-quarter:])
        growth = last - first
        ok = growth <= TARGET_GROWTH_MB
        print(f"evaluate memory over {CASES} cases: RSS peak first quarter {first:.0f} MB, last quarter {last:.0f} MB "
              f"(growth {growth:+.1f} MB, target <= {TARGET_GROWTH_MB:.0f} MB: {verdict(ok)})")
        if not ok:
            missed.append("memory")
    return missed


class _InProcessModel:
    """Answers like the scripted server, without HTTP: what is left is hermes_nb's own work per case."""

    name = "in-process"

    def check_config(self) -> None:
        pass

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kw: Any) -> Any:
        from hermes_nb.models import ModelTurn, ToolCallSpec, Usage

        usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
        if not any(m.get("role") == "assistant" for m in messages):
            a = int(messages[-1]["content"].split()[1])
            return ModelTurn(content="", usage=usage, tool_calls=(
                ToolCallSpec(id="c0", name="bench_add", arguments=f'{{"a": {a}, "b": 1}}'),))
        return ModelTurn(content="ok", usage=usage)


def _own_overhead() -> None:
    from hermes_nb.evaluation import runner

    original = runner.shared_model
    runner.shared_model = lambda template, **kw: _InProcessModel()  # type: ignore[assignment]
    try:
        _evaluate("http://127.0.0.1:9/v1", 50, CONCURRENCY)
        cpu = time.process_time()
        wall, _ = _evaluate("http://127.0.0.1:9/v1", CASES, CONCURRENCY)
        cpu = time.process_time() - cpu
    finally:
        runner.shared_model = original  # type: ignore[assignment]
    print(f"evaluate without HTTP (an in-process model): {CASES} cases in {wall:.2f} s, CPU {cpu / CASES * 1e3:.2f} ms "
          f"per case — hermes_nb's own share (fresh Agent, tool batch, budget, scoring, checkpoint-free)")


def _dask_overhead() -> None:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("evaluate on Dask: skipped (pip install 'hermes-nb[scale]')")
        return
    server = _Server(0.0)
    cluster = LocalCluster(n_workers=2, threads_per_worker=16, processes=True, dashboard_address=None,
                           silence_logs=50)
    try:
        with Client(cluster) as client:
            _evaluate(server.base_url, 16, CONCURRENCY, executor=client)  # warm up the workers
            remote, _ = _evaluate(server.base_url, DASK_CASES, CONCURRENCY, executor=client)
        local, _ = _evaluate(server.base_url, DASK_CASES, CONCURRENCY)
    finally:
        cluster.close()
        server.close()
    print(f"evaluate on Dask (LocalCluster, 2 workers x 16 threads), {DASK_CASES} cases with an instant model: "
          f"{remote:.2f} s against {local:.2f} s locally at concurrency {CONCURRENCY}: "
          f"{(remote - local) / DASK_CASES * 1e3:+.1f} ms per case ({remote / local:.2f}x)")


def main() -> None:
    _register()
    missed = _concurrency_and_memory()
    _own_overhead()
    _dask_overhead()
    from hermes_nb.tools.registry import registry

    registry.deregister("bench_add")
    if missed:
        raise RuntimeError(f"bench_evaluate: target missed: {', '.join(missed)}")


if __name__ == "__main__":
    main()
