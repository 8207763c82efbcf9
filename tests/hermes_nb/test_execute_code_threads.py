"""Threads an ``execute_code`` script starts (issue 31, item 6): named in its card when it ends, stopped when the run
ends, or named as still running when they cannot be stopped; and the measured "always" case through a whole run.

Measured before: a thread started by an approved script kept running Python in the kernel after the run ended,
with no card. Table by how a script starts a thread; each thread runs Python until it is stopped (a short sleep in
a loop), so nothing but the stop ends it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.display.live import transcript_text
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

SPIN = "import threading, time\ndef spin():\n    while True:\n        time.sleep(0.005)\n"

STARTS = [
    (SPIN + "threading.Thread(target=spin, name='spinner', daemon=True).start()", ["spinner"], "Thread(target=...)"),
    (SPIN + "class Spinner(threading.Thread):\n    def run(self):\n        spin()\n"
     "Spinner(name='subclassed', daemon=True).start()", ["subclassed"], "a Thread subclass"),
    (SPIN + "threading.Thread(target=spin, name='nondaemon').start()", ["nondaemon"], "a non-daemon thread"),
    (SPIN + "t = threading.Timer(0.0, spin)\nt.name = 'timer'\nt.daemon = True\nt.start()", ["timer"], "a Timer"),
    (SPIN + "def parent():\n    threading.Thread(target=spin, name='grandchild', daemon=True).start()\n    spin()\n"
     "threading.Thread(target=parent, name='parent', daemon=True).start()\n"
     "while not any(t.name == 'grandchild' for t in threading.enumerate()):\n    time.sleep(0.005)",
     ["parent", "grandchild"], "a thread started by a thread the script started"),
    (SPIN + "for i in range(3):\n    threading.Thread(target=spin, name=f'many-{i}', daemon=True).start()",
     ["many-0", "many-1", "many-2"], "several threads"),
    (SPIN + "import functools\nthreading.Thread(target=functools.partial(spin), name='partial', daemon=True).start()",
     ["partial"], "a partial as target"),
    ("import threading, time, itertools\n"
     "threading.Thread(target=lambda: [time.sleep(0.005) for _ in itertools.count()], name='lambda', "
     "daemon=True).start()", ["lambda"], "a lambda as target"),
]


def _run(code: str, toolsets: tuple[str, ...] = ("code_execution",), **kw: Any) -> tuple[Any, dict[str, Any]]:
    import hermes_nb.tools.execute_code_tool  # noqa: F401  (registers the tool)

    script = [Reply(tool_calls=(call("execute_code", {"code": code}, "x0"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = Agent(model="m", base_url=srv.base_url, stream=False, display=False,
                       enabled_toolsets=list(toolsets), approval_callback=lambda *a: "once", **kw).run("go")
        answer = json.loads(next(m["content"] for m in srv.requests[1]["messages"] if m.get("tool_call_id") == "x0"))
    return result, answer


def _alive(names: list[str]) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in names and t.is_alive()]


@pytest.mark.parametrize(("code", "names", "why"), STARTS, ids=[w for _, _, w in STARTS])
def test_threads_a_script_started_are_named_in_its_card_and_stopped_when_the_run_ends(code: str, names: list[str],
                                                                                    why: str) -> None:
    result, answer = _run(code)
    assert answer["status"] == "success", answer
    assert sorted(answer["threads_running"]) == sorted(names), why  # named in the script's result, its card
    assert "stopped when this run ends" in answer["threads_note"]
    assert all(n in result.transcript.cards["x0"].content for n in names)
    assert _alive(names) == [], f"{why}: still running Python after the run ended"
    lines = [item[1] for item in result.transcript.items if item[0] == "notice" and "execute_code started" in item[1]]
    assert len(lines) == 1 and all(n in lines[0] for n in names) and lines[0].startswith("the run ended: stopped")


@pytest.mark.parametrize(("code", "names", "why"), STARTS, ids=[w for _, _, w in STARTS])
def test_without_the_watch_a_scripts_threads_outlive_the_run_unnamed(monkeypatch: pytest.MonkeyPatch, code: str,
                                                                     names: list[str], why: str) -> None:
    """The control for the row above: with ``Thread.start`` never watched (the defence removed) the same threads
    run Python after the run ended and no card or line names them. Stopped here, by the module's own ``stop``."""
    from hermes_nb.tools.code_execution import threads

    monkeypatch.setattr(threads, "watch", lambda: (lambda: None))
    hook = threading.excepthook  # unwatched, a thread has no guard that ends it quietly when stopped

    monkeypatch.setattr(threading, "excepthook", lambda a: None if a.exc_type is threads.ThreadStopped else hook(a))
    result, answer = _run(code)
    try:
        assert answer["status"] == "success", answer
        assert not answer.get("threads_running"), why
        assert sorted(_alive(names)) == sorted(names), f"{why}: the attack had no effect"
        assert not any("execute_code started" in item[1] for item in result.transcript.items if item[0] == "notice")
    finally:
        left = threads.stop([t for t in threading.enumerate() if t.name in names], wait=5.0)
    assert left == [], f"{why}: the control's own threads could not be stopped"


def _held(monkeypatch: pytest.MonkeyPatch, name: str) -> tuple[threading.Event, threading.Event]:
    """Hold the thread named ``name`` between ``start()`` and its first line (in ``threading.enumerate()``, not yet
    alive, no id) until ``go`` is set: the gap a thread a script's thread starts may be in at its end. ``handed`` is
    set once it is in the gap."""
    go, handed = threading.Event(), threading.Event()
    real = threading._start_new_thread  # type: ignore[attr-defined]

    def start_new_thread(function: Any, args: tuple[Any, ...]) -> Any:
        if getattr(getattr(function, "__self__", None), "name", None) != name:
            return real(function, args)
        # ``handed`` from the new OS thread: once it is set, the thread was handed to the OS and will arrive. Set
        # before ``real`` (as it was), a ThreadStopped raised into the starter could land before the hand-over on a
        # busy machine, and the thread then never started (CI, stop 38).
        return real(lambda: (handed.set(), go.wait(30), function()), args)

    monkeypatch.setattr(threading, "_start_new_thread", start_new_thread)
    return go, handed


def test_a_thread_still_starting_when_the_script_ends_is_named_and_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured: 1 run in 2 the grandchild was in the gap as the script ended: missing from ``threads_running``,
    and left running Python after the run when it was still there at the run's end."""
    import hermes_nb.tools.execute_code_tool as tool

    go, _ = _held(monkeypatch, "grandchild")
    real_result = tool._result

    def result_then_go(*args: Any) -> dict[str, Any]:  # the card is made while the grandchild is in the gap
        try:
            return real_result(*args)
        finally:
            go.set()

    monkeypatch.setattr(tool, "_result", result_then_go)
    code, names, _ = next(row for row in STARTS if "grandchild" in row[1])
    result, answer = _run(code)
    assert sorted(answer["threads_running"]) == sorted(names) and "threads_ended" not in answer
    assert _alive(names) == [], "still running Python after the run ended"
    assert "stopped 2 thread(s) execute_code started" in transcript_text(result.transcript)


def test_the_runs_end_refuses_later_threads_and_waits_for_those_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.code_execution.threads import Threads, ThreadStopped, stop, watch

    spin = threading.Event()
    run = Threads()
    script = Threads(parent=run)
    go, handed = _held(monkeypatch, "starting")
    unwatch = watch()
    unadopt = script.adopt_current()  # this thread plays the script's
    try:
        starting = threading.Thread(target=lambda: [None for _ in iter(lambda: spin.wait(0.005), True)],
                                    name="starting", daemon=True)  # runs Python until stopped
        starter = threading.Thread(target=starting.start, name="starter", daemon=True)
        starter.start()  # a thread of the script's, starting one more
        assert handed.wait(10)
        assert not starting.is_alive() and starting in run.running() and starting in script.running()  # the gap
        run.close(wait=0.0)  # its end began; the held one cannot arrive
        late = threading.Thread(target=spin.wait, name="late", daemon=True)
        with pytest.raises(ThreadStopped):
            late.start()
        assert late not in run.started and not late.is_alive()
        assert starting in stop(run.running(), wait=0.0)  # no id to raise into: named as left, not as stopped
        go.set()
        run.close(wait=10.0)  # it arrives (its starter, stopped while it waited for it, lets it)
        assert starting.is_alive() and stop(run.running(), wait=10.0) == []
        assert not starting.is_alive() and not starter.is_alive()
    finally:
        unadopt()
        unwatch()
        spin.set()


def test_a_thread_that_cannot_be_stopped_is_named_as_still_running() -> None:
    hold = threading.Event()
    code = ("import threading\n"
            "def stubborn():\n"
            "    while True:\n"
            "        try:\n"
            "            gate.wait(0.01)\n"
            "            if gate.is_set():\n"
            "                return\n"
            "        except BaseException:\n"  # swallows the stop: the documented limit
            "            pass\n"
            "threading.Thread(target=stubborn, name='stubborn', daemon=True).start()")
    try:
        result, answer = _run(code, code_vars={"gate": hold})
        assert answer["threads_running"] == ["stubborn"]
        text = transcript_text(result.transcript)
        assert "still running after the run ended: thread(s) stubborn, started by execute_code" in text
    finally:
        hold.set()
    for thread in [t for t in threading.enumerate() if t.name == "stubborn"]:
        thread.join(5)


def test_a_thread_that_ended_with_the_script_is_named_as_ended_and_nothing_is_stopped() -> None:
    code = "import threading\nt = threading.Thread(target=lambda: None, name='quick')\nt.start()\nt.join()"
    result, answer = _run(code)
    assert answer["threads_ended"] == ["quick"] and "threads_running" not in answer
    assert not [item for item in result.transcript.items if item[0] == "notice" and "execute_code started" in item[1]]


def test_hermes_nbs_own_workers_for_the_scripts_tool_calls_are_not_the_scripts() -> None:
    registry.register(name="ping", toolset="sums", handler=lambda args: "pong",
                      schema={"description": "Ping.", "parameters": {"type": "object", "properties": {}}})
    before = {t.ident for t in threading.enumerate()}
    code = "from hermes_tools import ping\nprint([ping() for _ in range(3)])"
    result, answer = _run(code, ("code_execution", "sums"))
    assert answer["output"] == "['pong', 'pong', 'pong']\n"
    assert "threads_running" not in answer and "threads_ended" not in answer
    workers = [t for t in threading.enumerate() if t.ident not in before]
    assert all(t.is_alive() for t in workers)  # the pool's workers were not stopped at the run's end
    again, answer = _run(code, ("code_execution", "sums"))  # and the pool still serves
    assert answer["output"] == "['pong', 'pong', 'pong']\n"


def test_start_is_wrapped_only_while_a_run_serves_execute_code() -> None:
    original = threading.Thread.start
    _run("print(1)")
    assert threading.Thread.start is original


def test_always_for_a_script_running_a_workspace_file_asks_again_after_the_model_rewrites_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    """The measured case, through whole runs: "always", then ``clean.py`` rewritten, then the same script."""
    import hermes_nb.tools.execute_code_tool  # noqa: F401

    (tmp_path / "clean.py").write_text("print('cleaning')\n")
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code = 'import runpy\nrunpy.run_path("clean.py")'
    asked: list[str] = []

    def always(subject: str, key: str, description: str) -> str:
        asked.append(subject)
        return "always"

    def run() -> None:
        script = [Reply(tool_calls=(call("execute_code", {"code": code}, "x0"),)), Reply(content="ok")]
        with FakeOpenAI(script) as srv:
            Agent(model="m", base_url=srv.base_url, stream=False, display=False, enabled_toolsets=["code_execution"],
                  approval_callback=always).run("clean")

    run()
    run()
    assert len(asked) == 1  # "always" held for the same script and the same clean.py
    (tmp_path / "clean.py").write_text("import os\nprint(os.environ)\n")  # the model rewrites it
    run()
    assert len(asked) == 2
