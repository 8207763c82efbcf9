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
