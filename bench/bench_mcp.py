"""MCP benchmarks: concurrent start-up of three stdio servers, and the cost of a call through the registry.

Run: ``python -m bench`` (all benches) or ``python -m bench.bench_mcp``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes_nb.tools.config import using_home

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
CALLS = 200


def _server(delay: float = 0.0) -> dict:
    if not delay:
        return {"command": TIME_SERVER}
    # a start-up that waits (like a package download or a remote handshake) rather than computes
    return {"command": "sh", "args": ["-c", f'sleep {delay} && exec "$0"', TIME_SERVER]}


def _servers(n: int, delay: float = 0.0) -> dict:
    return {"mcp_servers": {f"time{i}": _server(delay) for i in range(n)}}


def _startup(delay: float, label: str) -> None:
    from hermes_nb.tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers

    t0 = time.perf_counter()
    found = discover_mcp_tools(_servers(3, delay))
    concurrent = time.perf_counter() - t0
    assert all(found.values()), found
    shutdown_mcp_servers()
    t0 = time.perf_counter()
    for i in range(3):
        discover_mcp_tools({"mcp_servers": {f"time{i}": _server(delay)}})
    serial = time.perf_counter() - t0
    shutdown_mcp_servers()
    print(f"mcp start-up, 3 x mcp-server-time{label}: concurrent {concurrent:.2f} s, one after another "
          f"{serial:.2f} s (concurrent/serial = {concurrent / serial:.2f}x; {os.cpu_count()} CPUs)")  # fmt: skip


def _per_call(fn, n: int = CALLS) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _call_overhead() -> None:
    from hermes_nb.tools import async_bridge, mcp_tool
    from hermes_nb.tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers
    from hermes_nb.tools.registry import registry

    discover_mcp_tools(_servers(1))
    session = mcp_tool._connections["time0"].session
    args = {"timezone": "UTC"}

    async def direct_batch(n: int) -> float:
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            await session.call_tool("get_current_time", args)
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples)

    for _ in range(20):  # warm up both paths
        registry.dispatch("mcp__time0__get_current_time", args)
    direct = async_bridge.run_sync(direct_batch(CALLS))
    bridged = _per_call(lambda: async_bridge.run_sync(session.call_tool("get_current_time", args)))
    dispatch = _per_call(lambda: registry.dispatch("mcp__time0__get_current_time", args))
    shutdown_mcp_servers()
    print(f"mcp call (median of {CALLS}): ClientSession.call_tool on the loop {direct * 1e3:.2f} ms, "
          f"the same from sync code via the bridge {bridged * 1e3:.2f} ms, registry.dispatch {dispatch * 1e3:.2f} ms")  # fmt: skip
    print(f"mcp call: registry.dispatch / direct call_tool = {dispatch / direct:.2f}x "
          f"(+{(dispatch - direct) * 1e3:.2f} ms; goal: at most 1.3x or under 1 ms more); "
          f"dispatch / bridged direct = {dispatch / bridged:.2f}x")  # fmt: skip


def main() -> None:
    """Print the start-up and call-overhead figures."""
    if not os.path.exists(TIME_SERVER):
        print(f"mcp bench skipped: {TIME_SERVER} not found (pip install mcp-server-time)")
        return
    with tempfile.TemporaryDirectory() as home, using_home(home):  # approvals file goes here, not into the person's home
        from hermes_nb.tools.mcp_client.session import _import_modules

        _import_modules()  # the one-time SDK import would otherwise count against the first run only
        _startup(0.0, "")  # CPU-bound: Python imports, so bounded by the number of CPUs
        _startup(1.0, " behind a 1 s wait")
        _call_overhead()


if __name__ == "__main__":
    main()
