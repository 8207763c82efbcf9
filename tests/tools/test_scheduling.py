"""Planning and running a batch of tool calls: segments, overlap, order, failures, timeouts, interrupts."""

from __future__ import annotations

import _thread
import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_nb.tools import async_bridge
from hermes_nb.tools.batch.scheduling import (
    BatchEvent,
    BatchInterrupted,
    BatchSegment,
    arun_tool_batch,
    plan_tool_batch,
    run_tool_batch,
    should_parallelize_tool_batch,
)
from hermes_nb.tools.errors import BridgeError
from hermes_nb.tools.registry import ToolRegistry
from tests.support.interrupts import interrupts_land

WAIT = 10.0  # generous deadline for anything that should happen promptly


def _schema(*params: str, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {p: {"type": "string"} for p in params}
    for k, v in (defaults or {}).items():
        props[k]["default"] = v
    return {"description": "test tool", "parameters": {"type": "object", "properties": props}}


def call(name: str, args: Any = None, call_id: str | None = None) -> dict[str, Any]:
    raw = args if isinstance(args, str) else json.dumps(args or {})
    return {"id": call_id or f"id_{name}", "type": "function", "function": {"name": name, "arguments": raw}}


@pytest.fixture
def planning(fresh_registry: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ToolRegistry:
    """A registry with one tool of each kind, and a workspace with a real folder and a symlink to it."""
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    r = fresh_registry
    ok = lambda args, **kw: "ok"  # noqa: E731
    r.register("read", "t", _schema("path"), ok, read_only=True, path_params=("path",))
    r.register("write", "t", _schema("path"), ok, path_params=("path",))
    r.register("look", "t", _schema(), ok, read_only=True)
    r.register("ask", "t", _schema(), ok, read_only=True, interactive=True)
    r.register("shell", "t", _schema(), ok, read_only=True, needs_approval=True)
    r.register("mutate", "t", _schema(), ok)
    r.register("grep", "t", _schema("path", defaults={"path": "."}), ok, read_only=True, path_params=("path",))
    return r


def W(p: str) -> tuple[str, dict[str, str]]:
    return ("write", {"path": p})


def R(p: str) -> tuple[str, dict[str, str]]:
    return ("read", {"path": p})


P, S = True, False
PLAN_ROWS: list[tuple[str, list[tuple[str, Any]], list[tuple[bool, tuple[int, ...]]]]] = [
    ("an empty batch has no segments", [], []),
    ("one call is serial", [R("a")], [(S, (0,))]),
    ("readers may overlap readers", [R("a"), R("a"), ("look", {})], [(P, (0, 1, 2))]),
    ("writer vs reader of the same file", [W("a"), R("a")], [(S, (0,)), (S, (1,))]),
    ("writers of different files share time", [W("a"), W("b")], [(P, (0, 1))]),
    ("a reader of nothing may run beside a writer", [W("a"), ("look", {})], [(P, (0, 1))]),
    ("same file spelled ./sub/../a", [W("a"), W("./sub/../a")], [(S, (0,)), (S, (1,))]),
    ("same file through a symlinked folder", [W("link/f.txt"), R("real/f.txt")], [(S, (0,)), (S, (1,))]),
    ("a folder overlaps a file inside it", [W("real"), R("real/deep/f.txt")], [(S, (0,)), (S, (1,))]),
    ("a file inside overlaps its folder", [R("real/f.txt"), W("real")], [(S, (0,)), (S, (1,))]),
    ("a shared name prefix is not a parent", [W("ab"), W("a")], [(P, (0, 1))]),
    ("an interactive tool makes the batch serial", [R("a"), ("ask", {}), R("b")], [(S, (0,)), (S, (1,)), (S, (2,))]),
    ("arguments that are a JSON array make the batch serial", [R("a"), ("read", "[1]")], [(S, (0,)), (S, (1,))]),
    ("arguments that are not JSON make the batch serial", [R("a"), ("read", "{oops")], [(S, (0,)), (S, (1,))]),
    ("an unknown tool runs alone, between parallel runs", [R("a"), R("b"), ("nosuch", {}), R("c"), R("d")],
     [(P, (0, 1)), (S, (2,)), (P, (3, 4))]),
    ("a needs_approval tool runs alone", [("look", {}), ("shell", {}), ("look", {})], [(S, (0,)), (S, (1,)), (S, (2,))]),
    ("a writer of unknown scope runs alone", [("look", {}), ("look", {}), ("mutate", {}), ("look", {})],
     [(P, (0, 1)), (S, (2,)), (S, (3,))]),
    ("a missing path falls back to the schema default", [W("x.txt"), ("grep", {})], [(S, (0,)), (S, (1,))]),
    ("a missing path without a default runs alone", [R("a"), ("read", {}), R("b")], [(S, (0,)), (S, (1,)), (S, (2,))]),
    ("a conflict starts a new segment; order is kept", [W("a"), W("b"), R("a"), R("c")], [(P, (0, 1)), (P, (2, 3))]),
]


@pytest.mark.parametrize(("reason", "calls", "expected"), PLAN_ROWS, ids=[r[0] for r in PLAN_ROWS])
def test_plan(planning: ToolRegistry, reason: str, calls: list[tuple[str, Any]], expected: list[Any]) -> None:
    batch = [call(name, args, f"c{i}") for i, (name, args) in enumerate(calls)]
    plan = plan_tool_batch(batch, registry=planning)
    assert plan == [BatchSegment(parallel=p, indices=i) for p, i in expected], reason
    assert should_parallelize_tool_batch(batch, registry=planning) is any(p for p, _ in expected), reason


def test_plan_absolute_and_relative_spellings_are_the_same_file(planning: ToolRegistry, tmp_path: Path) -> None:
    batch = [call("write", {"path": str(tmp_path / "a.txt")}), call("read", {"path": "a.txt"})]
    assert [s.parallel for s in plan_tool_batch(batch, registry=planning)] == [False, False]


def test_plan_relative_paths_follow_the_workspace_root(planning: ToolRegistry, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    batch = [call("write", {"path": str(other / "f")}), call("read", {"path": "f"})]
    assert plan_tool_batch(batch, registry=planning)[0].parallel is True
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(other))
    assert plan_tool_batch(batch, registry=planning)[0].parallel is False


def test_plan_uses_the_global_registry_by_default() -> None:
    from hermes_nb.tools.registry import registry

    registry.register("sched_probe", "sched_test", _schema(), lambda a, **k: "ok", read_only=True)
    assert plan_tool_batch([call("sched_probe"), call("sched_probe")]) == [BatchSegment(parallel=True, indices=(0, 1))]


_KINDS = ["read", "write", "look", "mutate", "shell"]
_PATHS = ["a", "./a", "a/b", "b", "sub/../a", "real", "real/x", "link/x", "ab"]


def _oracle_conflict(a: tuple[str, str], b: tuple[str, str], root: Path) -> bool:
    """An independent statement of the rule, with pathlib instead of the planner's helpers."""
    writes = {"write"}
    if a[0] not in writes and b[0] not in writes:
        return False
    if "look" in (a[0], b[0]):
        return False
    pa, pb = (root / a[1]).resolve(), (root / b[1]).resolve()
    return pa == pb or pa.is_relative_to(pb) or pb.is_relative_to(pa)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_KINDS), st.sampled_from(_PATHS)), max_size=8))
def test_plan_properties(planning: ToolRegistry, tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    batch = [call(kind, {"path": path} if kind in ("read", "write") else {}, f"c{i}")
             for i, (kind, path) in enumerate(calls)]
    plan = plan_tool_batch(batch, registry=planning)
    assert [i for seg in plan for i in seg.indices] == list(range(len(calls))), "every call once, in order"
    for seg in plan:
        assert seg.parallel == (len(seg.indices) > 1)
        members = [calls[i] for i in seg.indices]
        if seg.parallel:
            assert not any(kind in ("mutate", "shell") for kind, _ in members), "those run alone"
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    assert not _oracle_conflict(members[x], members[y], tmp_path), (members, plan)
    # Greedy: a segment only ends where the next call could not have joined it.
    for seg, nxt in zip(plan, plan[1:], strict=False):
        first = calls[nxt.indices[0]]
        if first[0] in ("mutate", "shell") or calls[seg.indices[-1]][0] in ("mutate", "shell"):
            continue
        assert any(_oracle_conflict(calls[i], first, tmp_path) for i in seg.indices), (calls, plan)


# -- running ---------------------------------------------------------------------------------------

@pytest.fixture
def reg(fresh_registry: ToolRegistry) -> ToolRegistry:
    return fresh_registry


def _overlap_all(results: list[Any]) -> bool:
    return max(r.started for r in results) < min(r.ended for r in results)


def test_parallel_calls_overlap_and_results_keep_call_order(reg: ToolRegistry) -> None:
    n = 6
    barrier = threading.Barrier(n, timeout=WAIT)  # only passes when all n run at once

    def meet(args: dict[str, Any], **kw: Any) -> str:
        barrier.wait()
        return f"done {args['k']}"

    reg.register("meet", "t", _schema("k"), meet, read_only=True)
    batch = [call("meet", {"k": str(i)}, f"call_{i}") for i in range(n)]
    results = run_tool_batch(batch, registry=reg)
    assert [r.tool_call_id for r in results] == [f"call_{i}" for i in range(n)]
    assert [r.content for r in results] == [f"done {i}" for i in range(n)]
    assert [r.index for r in results] == list(range(n))
    assert all(r.parallel and not r.is_error for r in results)
    assert _overlap_all(results)
    assert all(r.duration == pytest.approx(r.ended - r.started) for r in results)


def test_serial_segments_do_not_overlap(reg: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    reg.register("write", "t", _schema("path"), lambda a, **k: "w", path_params=("path",))
    results = run_tool_batch([call("write", {"path": "a"}, "1"), call("write", {"path": "./a"}, "2")], registry=reg)
    assert results[0].ended <= results[1].started
    assert (results[0].segment, results[1].segment) == (0, 1)


def test_max_workers_limits_sync_concurrency(reg: ToolRegistry) -> None:
    reg.register("nap", "t", _schema(), lambda a, **k: time.sleep(0.02) or "z", read_only=True)
    results = run_tool_batch([call("nap", {}, str(i)) for i in range(4)], registry=reg, max_workers=1)
    spans = sorted((r.started, r.ended) for r in results)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


def test_a_failing_call_does_not_cancel_the_others(reg: ToolRegistry) -> None:
    barrier = threading.Barrier(2, timeout=WAIT)

    def boom(args: dict[str, Any], **kw: Any) -> str:
        raise ValueError("nope")

    reg.register("boom", "t", _schema(), boom, read_only=True)
    reg.register("meet", "t", _schema(), lambda a, **k: barrier.wait() and "met" or "met", read_only=True)
    results = run_tool_batch([call("meet", {}, "a"), call("boom", {}, "b"), call("meet", {}, "c"),
                              call("nosuch", {}, "d")], registry=reg)
    assert [r.content for r in results][0::2] == ["met", "met"]
    assert results[1].is_error and "ValueError: nope" in json.loads(results[1].content)["error"]
    assert results[3].is_error and "Unknown tool" in results[3].content
    assert not results[0].is_error


def test_timeout_is_a_result_and_never_cancels_the_others(reg: ToolRegistry) -> None:
    release = threading.Event()
    reg.register("hang", "t", _schema(), lambda a, **k: release.wait(WAIT) and "late", read_only=True)
    reg.register("quick", "t", _schema(), lambda a, **k: "quick", read_only=True)
    try:
        results = run_tool_batch([call("hang", {}, "h"), call("quick", {}, "q")], registry=reg, timeout=0.1)
    finally:
        release.set()
    assert results[0].timed_out and results[0].is_error
    assert json.loads(results[0].content) == {"error": "Tool hang timed out after 0.1 s"}
    assert results[1].content == "quick" and not results[1].timed_out


def test_per_tool_metadata_timeout(reg: ToolRegistry) -> None:
    async def forever(args: dict[str, Any], **kw: Any) -> str:
        await asyncio.sleep(3600)
        return "never"

    reg.register("forever", "t", _schema(), forever, read_only=True, metadata={"timeout": 0.05})
    (result,) = run_tool_batch([call("forever")], registry=reg)
    assert result.timed_out and "timed out after 0.05 s" in result.content


def test_async_tools_run_concurrently_on_the_background_loop(reg: ToolRegistry) -> None:
    n = 20
    arrived: list[str] = []

    async def gather(args: dict[str, Any], **kw: Any) -> str:
        arrived.append(threading.current_thread().name)
        deadline = time.monotonic() + WAIT
        while len(arrived) < n:  # only finishes when all n are in flight together
            assert time.monotonic() < deadline, "async calls did not run concurrently"
            await asyncio.sleep(0.005)
        return "ok"

    reg.register("gather", "t", _schema(), gather, read_only=True)
    results = run_tool_batch([call("gather", {}, str(i)) for i in range(n)], registry=reg)
    assert [r.content for r in results] == ["ok"] * n
    assert set(arrived) == {"hermes-nb-loop"}
    assert _overlap_all(results)


def test_openai_tool_call_objects_are_accepted(reg: ToolRegistry) -> None:
    from openai.types.chat import ChatCompletionMessageToolCall
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    reg.register("echo", "t", _schema("x"), lambda a, **k: a["x"], read_only=True)
    calls = [ChatCompletionMessageToolCall(id=f"call_{i}", type="function",
                                           function=Function(name="echo", arguments=json.dumps({"x": str(i)})))
             for i in range(3)]
    assert should_parallelize_tool_batch(calls, registry=reg)
    results = run_tool_batch(calls, registry=reg)
    assert [(r.tool_call_id, r.name, r.content) for r in results] == [(f"call_{i}", "echo", str(i)) for i in range(3)]
    assert results[0].to_message() == {"role": "tool", "tool_call_id": "call_0", "name": "echo", "content": "0"}


def test_on_event_reports_a_start_and_an_end_per_call(reg: ToolRegistry) -> None:
    events: list[BatchEvent] = []
    lock = threading.Lock()

    def on_event(event: BatchEvent) -> None:
        with lock:
            events.append(event)

    async def later(args: dict[str, Any], **kw: Any) -> str:
        return "async"

    reg.register("sync", "t", _schema(), lambda a, **k: "sync", read_only=True)
    reg.register("later", "t", _schema(), later, read_only=True)
    reg.register("alone", "t", _schema(), lambda a, **k: "alone")
    batch = [call("sync", {}, "a"), call("later", {}, "b"), call("alone", {}, "c")]
    results = run_tool_batch(batch, registry=reg, on_event=on_event)
    for i, result in enumerate(results):
        mine = [e for e in events if e.index == i]
        assert [e.kind for e in mine] == ["start", "end"]
        assert mine[1].result == result and mine[0].result is None
        assert mine[0].tool_call_id == result.tool_call_id and mine[0].time <= mine[1].time
    assert [(e.segment, e.parallel) for e in events if e.kind == "end" and e.index == 2] == [(1, False)]


def test_a_raising_on_event_does_not_break_the_batch(reg: ToolRegistry, caplog: pytest.LogCaptureFixture) -> None:
    def bad(event: BatchEvent) -> None:
        raise RuntimeError("display broke")

    reg.register("sync", "t", _schema(), lambda a, **k: "fine", read_only=True)
    assert [r.content for r in run_tool_batch([call("sync")], registry=reg, on_event=bad)] == ["fine"]
    assert "on_event callback failed" in caplog.text


def test_sync_run_from_inside_a_running_event_loop(reg: ToolRegistry) -> None:
    async def later(args: dict[str, Any], **kw: Any) -> str:
        await asyncio.sleep(0)
        return "async"

    reg.register("sync", "t", _schema(), lambda a, **k: "sync", read_only=True)
    reg.register("later", "t", _schema(), later, read_only=True)

    async def main() -> list[str]:
        # A running loop on this thread, as in a Jupyter cell.
        return [r.content for r in run_tool_batch([call("sync"), call("later")], registry=reg)]

    assert asyncio.run(main()) == ["sync", "async"]


def test_sync_run_on_the_background_loop_raises(reg: ToolRegistry) -> None:
    async def inner() -> None:
        run_tool_batch([call("x")], registry=reg)

    with pytest.raises(BridgeError, match="arun_tool_batch"):
        async_bridge.run_sync(inner())


def test_keyboard_interrupt_mid_batch_answers_every_call(reg: ToolRegistry) -> None:
    quick_done = threading.Event()
    release = threading.Event()
    ran_after: list[str] = []

    def quick(args: dict[str, Any], **kw: Any) -> str:
        return "quick result"

    def settled(event: BatchEvent) -> None:  # not when quick returns: its result must be settled first
        if event.kind == "end" and event.tool_call_id == "q":
            quick_done.set()

    def interrupter(args: dict[str, Any], **kw: Any) -> str:
        quick_done.wait(WAIT)
        _thread.interrupt_main()  # what a kernel interrupt does to the waiting cell
        release.wait(WAIT)
        return "too late"

    reg.register("quick", "t", _schema(), quick, read_only=True)
    reg.register("interrupter", "t", _schema(), interrupter, read_only=True)
    reg.register("after", "t", _schema(), lambda a, **k: ran_after.append("ran") or "after")
    batch = [call("quick", {}, "q"), call("interrupter", {}, "i"), call("after", {}, "a")]
    try:
        with interrupts_land(), pytest.raises(BatchInterrupted) as info:
            run_tool_batch(batch, registry=reg, on_event=settled)
    finally:
        release.set()
    assert isinstance(info.value, KeyboardInterrupt)
    results = info.value.results
    assert [r.tool_call_id for r in results] == ["q", "i", "a"]
    assert results[0].content == "quick result" and not results[0].interrupted
    for r in results[1:]:
        assert r.interrupted and r.is_error
        assert json.loads(r.content) == {"error": "Interrupted by the user before this call finished"}
    assert results[2].started == results[2].ended
    assert ran_after == []


# -- the async twin -------------------------------------------------------------------------------

def test_arun_awaits_async_handlers_on_the_callers_loop(reg: ToolRegistry) -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    threads: list[str] = []

    async def where(args: dict[str, Any], **kw: Any) -> str:
        loops.append(asyncio.get_running_loop())
        return "async"

    def sync(args: dict[str, Any], **kw: Any) -> str:
        threads.append(threading.current_thread().name)
        return "sync"

    reg.register("where", "t", _schema(), where, read_only=True)
    reg.register("sync", "t", _schema(), sync, read_only=True)

    async def main() -> tuple[list[str], asyncio.AbstractEventLoop]:
        results = await arun_tool_batch([call("where", {}, "w"), call("sync", {}, "s")], registry=reg)
        return [r.content for r in results], asyncio.get_running_loop()

    contents, loop = asyncio.run(main())
    assert contents == ["async", "sync"]
    assert loops == [loop]
    assert threads[0].startswith("hermes-nb-tool")


def test_arun_timeout_and_failures_are_results(reg: ToolRegistry) -> None:
    release = threading.Event()

    async def forever(args: dict[str, Any], **kw: Any) -> str:
        await asyncio.sleep(3600)
        return "never"

    def boom(args: dict[str, Any], **kw: Any) -> str:
        raise OSError("disk")

    reg.register("forever", "t", _schema(), forever, read_only=True)
    reg.register("hang", "t", _schema(), lambda a, **k: release.wait(WAIT) and "late", read_only=True)
    reg.register("boom", "t", _schema(), boom, read_only=True)
    reg.register("fine", "t", _schema(), lambda a, **k: "fine", read_only=True)
    batch = [call("forever", {}, "1"), call("hang", {}, "2"), call("boom", {}, "3"), call("fine", {}, "4")]
    try:
        results = asyncio.run(arun_tool_batch(batch, registry=reg, timeout=0.1))
    finally:
        release.set()
    assert [r.timed_out for r in results] == [True, True, False, False]
    assert "OSError: disk" in results[2].content and results[3].content == "fine"


def test_arun_async_tools_overlap(reg: ToolRegistry) -> None:
    n = 10
    arrived: list[int] = []

    async def gather(args: dict[str, Any], **kw: Any) -> str:
        arrived.append(1)
        deadline = time.monotonic() + WAIT
        while len(arrived) < n:
            assert time.monotonic() < deadline, "async calls did not run concurrently"
            await asyncio.sleep(0.005)
        return "ok"

    reg.register("gather", "t", _schema(), gather, read_only=True)
    results = asyncio.run(arun_tool_batch([call("gather", {}, str(i)) for i in range(n)], registry=reg))
    assert _overlap_all(results)


def test_a_prompt_from_a_worker_runs_on_the_waiting_main_thread(reg: ToolRegistry) -> None:
    from hermes_nb.tools.interaction import run_on_main

    def ask(args: dict[str, Any], **kw: Any) -> str:
        # What an approval prompt does: only the main thread can receive a widget click.
        return run_on_main(lambda: threading.current_thread().name)

    reg.register("ask_main", "t", _schema(), ask, read_only=True)
    results = run_tool_batch([call("ask_main", {}, "1"), call("ask_main", {}, "2")], registry=reg)
    assert results[0].parallel
    assert [r.content for r in results] == [threading.main_thread().name] * 2


# -- in a real kernel: a cell on the kernel's running loop, and a real kernel interrupt -----------

KERNEL_CELL = '''
import json, threading, time
from hermes_nb.tools.registry import registry
from hermes_nb.tools.batch.scheduling import BatchInterrupted, run_tool_batch

S = {"description": "t", "parameters": {"type": "object", "properties": {}}}
def doze(args, **kw):
    for _ in range(600):
        time.sleep(0.05)
    return "woke"
registry.register("quick", "k", S, lambda a, **k: "quick", read_only=True)
registry.register("doze", "k", S, doze, read_only=True)
registry.register("later", "k", S, lambda a, **k: "later")

def on_event(event):
    if event.kind == "end" and event.name == "quick":
        print("go", flush=True)  # tells the test to interrupt now

calls = [{"id": n, "type": "function", "function": {"name": n, "arguments": "{}"}} for n in ("quick", "doze", "later")]
try:
    run_tool_batch(calls, on_event=on_event)
except BatchInterrupted as exc:
    print("INTERRUPTED", json.dumps([[r.tool_call_id, r.interrupted, r.content] for r in exc.results]))
'''


@pytest.mark.kernel
@pytest.mark.timeout(120)
def test_kernel_interrupt_mid_batch_answers_every_call(tmp_path: Path) -> None:
    from tests.support.kernel import KernelSession

    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        assert k.run("import asyncio; print(asyncio.get_running_loop().is_running())").stdout.strip() == "True"
        msg_id = k.kc.execute(KERNEL_CELL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = k.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream" \
                    and "go" in msg["content"]["text"]:
                break
        started = time.monotonic()
        k.interrupt()
        result = k.collect(msg_id, timeout=60, allow_error=True)
        assert time.monotonic() - started < 20
        assert result.error is None, result.error
        line = next(x for x in result.stdout.splitlines() if x.startswith("INTERRUPTED"))
        rows = json.loads(line.split(" ", 1)[1])
        assert [r[0] for r in rows] == ["quick", "doze", "later"]
        assert rows[0][1:] == [False, "quick"]
        assert rows[1][1] is True and rows[2][1] is True
        assert "Interrupted by the user" in rows[2][2]
        assert k.run("print('after')").stdout.strip() == "after"


@pytest.mark.parametrize("bad", ["soon", -1, 0, True, None])
def test_a_malformed_metadata_timeout_means_no_timeout(reg: ToolRegistry, bad: Any) -> None:
    reg.register("fine", "t", _schema(), lambda a, **k: "fine", read_only=True, metadata={"timeout": bad})
    (result,) = run_tool_batch([call("fine")], registry=reg)
    assert result.content == "fine" and not result.timed_out


def test_batch_hooks_run_before_a_batch_not_during(fresh_registry):
    """What a source must bring up to date first (MCP's list_changed) is a hook the registry runs before
    each batch, sync or async; the scheduler never looks the source up, and the undo removes it."""
    from hermes_nb.tools.batch.scheduling import arun_tool_batch as arun

    order: list[str] = []

    async def arefresh() -> None:
        order.append("arefresh")

    undo = fresh_registry.add_batch_hook(lambda: order.append("refresh"), arefresh)
    fresh_registry.register("probe", "t", {"parameters": {"type": "object"}}, lambda a, **k: order.append("call") or "ok",
                            read_only=True)
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "probe", "arguments": "{}"}} for i in range(2)]
    run_tool_batch(calls, registry=fresh_registry)
    assert order == ["refresh", "call", "call"]
    order.clear()
    asyncio.run(arun(calls, registry=fresh_registry))
    assert order == ["arefresh", "call", "call"]
    undo()
    order.clear()
    run_tool_batch(calls, registry=fresh_registry)
    assert order == ["call", "call"]


def test_mcp_installs_its_refresh_as_a_batch_hook_only_while_servers_run(monkeypatch):
    import hermes_nb.tools.mcp_tool as mcp_tool
    from hermes_nb.tools.registry import registry

    mcp_tool.shutdown_mcp_servers()  # servers an earlier test left running would have installed it already
    before = registry._batch_hooks
    assert (mcp_tool.refresh_pending_mcp_servers, mcp_tool.arefresh_pending_mcp_servers) not in before
    mcp_tool._install_batch_hook()
    mcp_tool._install_batch_hook()  # idempotent
    assert registry._batch_hooks == (*before, (mcp_tool.refresh_pending_mcp_servers, mcp_tool.arefresh_pending_mcp_servers))
    mcp_tool.shutdown_mcp_servers()
    assert registry._batch_hooks == before


def test_awaited_on_the_main_thread_worker_prompts_run_on_the_main_thread(fresh_registry):
    """Top-level ``await arun_tool_batch(...)`` in a cell: a worker's question is shown from the main
    thread (the cell's context), as with the sync run_tool_batch."""
    from hermes_nb.tools import interaction
    from hermes_nb.tools.batch.scheduling import arun_tool_batch as arun

    asked_on: list[bool] = []

    def ask() -> str:
        asked_on.append(threading.current_thread() is threading.main_thread())
        return "yes"

    fresh_registry.register("asker", "t", {"parameters": {"type": "object"}},
                            lambda a, **k: interaction.run_on_main(ask))
    calls = [{"id": "c1", "type": "function", "function": {"name": "asker", "arguments": "{}"}}]
    results = asyncio.run(arun(calls, registry=fresh_registry))
    assert [r.content for r in results] == ["yes"] and asked_on == [True]
