"""The shared worker pool under handlers that never return: later calls still run, batches still return."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hermes_nb.tools.batch import state
from hermes_nb.tools.batch.pool import ToolPool
from hermes_nb.tools.batch.scheduling import arun_tool_batch, run_tool_batch
from hermes_nb.tools.registry import ToolRegistry

WAIT = 30.0  # generous: a busy machine must not fail these; a stalled pool still fails them
HANG = 2.0  # a hung call's timeout: long enough for its thread to start (and be abandoned) on a busy machine
SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}


def call(name: str, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


@pytest.fixture
def hung(fresh_registry: ToolRegistry) -> Iterator[ToolRegistry]:
    """A registry with ``hang`` (blocks on an event released at teardown) and ``quick``; the hung threads
    are released and awaited afterwards so no test inherits them."""
    release = threading.Event()
    fresh_registry.register("hang", "t", SCHEMA, lambda a, **k: release.wait() and "late", read_only=True)
    fresh_registry.register("quick", "t", SCHEMA, lambda a, **k: "quick", read_only=True)
    yield fresh_registry
    release.set()
    _wait_for(lambda: not state.stuck_calls())


def _wait_for(predicate: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if predicate():
            return
        done.wait(0.01)
    raise AssertionError("condition not reached in time")


def _in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a helper thread; a call that never returns fails the test instead of hanging it."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive(), "the batch never returned"
    return out[0]


def test_a_normal_call_runs_after_eight_hung_ones(hung: ToolRegistry) -> None:
    hangs = [call("hang", f"h{i}") for i in range(8)]
    results = _in_thread(lambda: run_tool_batch(hangs, registry=hung, timeout=HANG))
    assert all(r.timed_out for r in results)
    assert {json.loads(r.content)["error"] for r in results} == {f"Tool hang timed out after {HANG:g} s"}
    assert len(state.stuck_calls()) == 8
    # the eight threads are still blocked; the next call must not wait for them
    (result,) = _in_thread(lambda: run_tool_batch([call("quick", "q")], registry=hung, timeout=WAIT))
    assert result.content == "quick" and not result.timed_out
    (aresult,) = _in_thread(lambda: asyncio.run(arun_tool_batch([call("quick", "a")], registry=hung, timeout=WAIT)))
    assert aresult.content == "quick"


def test_doctor_lists_the_stuck_calls(hung: ToolRegistry) -> None:
    from hermes_nb.magics.tools import _doctor

    _in_thread(lambda: run_tool_batch([call("hang", "stuck_1"), call("hang", "stuck_2")], registry=hung, timeout=HANG))
    assert {s.tool_call_id for s in state.stuck_calls()} >= {"stuck_1", "stuck_2"}
    rows = [r for r in _doctor().rows if r[1] == "stuck call"]
    assert any("stuck_1" in r[3] and r[0] == "hang" for r in rows), rows
    assert any("stuck_2" in r[3] for r in rows), rows


@pytest.fixture
def no_replacements(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolPool]:
    """A private shared pool that replaces no abandoned worker: the ceiling is reached at once."""
    pool = ToolPool(8, max_stuck=0)
    monkeypatch.setattr(state, "_pool", pool)
    yield pool
    pool.shutdown()  # its idle workers end; abandoned ones end when their handler returns


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_a_call_that_never_starts_still_times_out(hung: ToolRegistry, no_replacements: ToolPool,
                                                   runner: str) -> None:
    def run(calls: list[dict[str, Any]], timeout: float) -> Any:
        if runner == "sync":
            return run_tool_batch(calls, registry=hung, timeout=timeout)
        return asyncio.run(arun_tool_batch(calls, registry=hung, timeout=timeout))

    release = threading.Event()
    stuck = [no_replacements.submit_call(("hang", f"h{i}"), release.wait) for i in range(8)]
    try:
        _wait_for(lambda: all(f.running() for f in stuck))
        assert all(no_replacements.abandon(f) for f in stuck)  # what a batch does when their time runs out
        # every worker is stuck and none may be replaced: the call waits for a worker, and its timeout holds
        (result,) = _in_thread(lambda: run([call("quick", "q")], 0.2))
    finally:
        release.set()
    body = json.loads(result.content)
    assert result.timed_out and body["not_started"] is True
    assert body["error"].startswith("Tool quick never started: its 0.2 s ran out while it waited")
    assert result.duration == 0.0


def test_a_stuck_thread_that_returns_ends_and_frees_its_place() -> None:
    pool = ToolPool(1, max_stuck=0)
    release = threading.Event()
    first = pool.submit_call(("hang", "h"), release.wait)
    _wait_for(first.running)
    assert pool.abandon(first)
    assert [s.tool_call_id for s in pool.stuck_calls()] == ["h"]
    second = pool.submit_call(("quick", "q"), lambda: "quick")  # no replacement allowed: it waits
    assert not second.done()
    release.set()
    assert second.result(WAIT) == "quick"  # the abandoned thread's end made room for a new worker
    assert pool.stuck_calls() == []
    pool.shutdown()


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_a_batch_timeout_bounds_every_segment(hung: ToolRegistry, runner: str) -> None:
    release = threading.Event()
    hung.register("hang_alone", "t", SCHEMA, lambda a, **k: release.wait() and "late")  # not read-only: serial
    calls = [call("hang_alone", "first"), call("hang_alone", "second")]
    try:
        if runner == "sync":
            results = _in_thread(lambda: run_tool_batch(calls, registry=hung, timeout=0.3))
        else:
            results = _in_thread(lambda: asyncio.run(arun_tool_batch(calls, registry=hung, timeout=0.3)))
    finally:
        release.set()
    assert [r.segment for r in results] == [0, 1]
    first, second = (json.loads(r.content) for r in results)
    assert results[0].timed_out and first["error"].startswith("Tool hang_alone")
    # the batch's time ran out in the first segment: the second call never ran, and says so
    assert second["not_started"] is True and "never started" in second["error"]
    assert results[1].timed_out and results[1].duration == 0.0
