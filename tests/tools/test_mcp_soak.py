"""Soak: an MCP server killed and restarted 50 times leaves no processes, threads or file descriptors."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from hermes_nb.tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers
from hermes_nb.tools.registry import registry
from tests.tools.test_mcp_tool import descendants, dynamic_config, wait_until

pytestmark = [pytest.mark.mcp, pytest.mark.slow]

CYCLES = 50


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _pid() -> int:
    return int(registry.dispatch("mcp__dyn__pid", {}))


@pytest.mark.timeout(1200)
def test_fifty_kills_and_restarts_leave_nothing_behind() -> None:
    before = descendants(os.getpid())
    cfg = dynamic_config()
    try:
        discover_mcp_tools([cfg])
        _pid()  # warm: the background loop, the pool and mcp's imports exist from here on
        threads, fds = threading.active_count(), _fds()
        pids = set()
        for _ in range(CYCLES):
            pid = _pid()
            pids.add(pid)
            os.kill(pid, signal.SIGKILL)
            error = json.loads(registry.dispatch("mcp__dyn__echo", {"text": "x"}))
            assert error["server"] == "dyn", error  # the call found it dead: an error result
            discover_mcp_tools([cfg])  # restart now (force), not after the reconnect backoff
            assert registry.dispatch("mcp__dyn__echo", {"text": "back"}) == "back"
        assert len(pids) == CYCLES
        wait_until(lambda: len(descendants(os.getpid()) - before) <= 1, timeout=30, what="killed servers to go")
        after_threads, after_fds = threading.active_count(), _fds()
    finally:
        shutdown_mcp_servers()
    wait_until(lambda: not (descendants(os.getpid()) - before), timeout=30, what="the last server to end")
    print(f"\nmcp soak: {CYCLES} kill/restart cycles; threads {threads} -> {after_threads}, fds {fds} -> {after_fds}, "
          f"{len(descendants(os.getpid()) - before)} processes left after shutdown")
    assert after_threads <= threads + 1
    assert after_fds <= fds + 3  # the one live server's pipes, give or take
