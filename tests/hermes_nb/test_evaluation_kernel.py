"""``evaluate`` in a real kernel: a progress bar updated in place, and a kernel interrupt then resume."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import Reply, call
from tests.support.kernel import KernelSession
from tests.support.routed_openai import RoutedOpenAI, turn_of

pytestmark = pytest.mark.kernel

SETUP = '''
import hermes_nb
%load_ext hermes_nb
from hermes_nb import tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b
tool(add, toolset="t13k")
cases = [{{"prompt": f"add {{i}} and 1", "expected_tools": ["add"]}} for i in range(8)]
agent = {{"model": "fake", "base_url": "{base_url}", "enabled_toolsets": ["t13k"], "stream": False}}
'''


def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    if turn == 0:
        return Reply(tool_calls=(call("add", {"a": int(prompt.split()[1]), "b": 1}, "c0"),), delay=0.1)
    return Reply(content="ok", delay=0.1)


def test_progress_updates_in_place_then_interrupt_and_resume(tmp_path: Path, hermes_home: Path) -> None:
    interrupt_at: list[int] = []  # the request count after which the kernel is interrupted
    fired = threading.Event()

    def maybe_interrupt(body: dict[str, Any]) -> None:
        if interrupt_at and not fired.is_set() and turn_of(body) == 0 and srv.count >= interrupt_at[0]:
            fired.set()
            session.interrupt()

    with RoutedOpenAI(route, on_request=maybe_interrupt) as srv, \
            KernelSession(env={"HERMES_NB_HOME": str(hermes_home)}) as session:
        session.run(SETUP.format(base_url=srv.base_url))
        shown = session.run("r = hermes_nb.evaluate(cases, agent=agent, concurrency=2)\nr.summary['cases']",
                            timeout=120)
        progress = [o for o in shown.outputs if "hermes-nb-progress" in o.get("data", {}).get("text/html", "")]
        assert progress[0]["type"] == "display_data"
        assert any(o["type"] == "update_display_data" for o in progress)
        assert "(8 of 8 run, " in progress[-1]["data"]["text/html"]  # the measures lead the line (issue 34)
        assert shown.mime("text/plain")[-1] == "8"

        interrupt_at.append(srv.count + 8)  # about four cases into the next run
        out = tmp_path / "run"
        first = session.run(f"r1 = hermes_nb.evaluate(cases, agent=agent, concurrency=2, out_dir={str(out)!r})\n"
                            "r1.summary['interrupted'], r1.summary['cases']", timeout=120)
        assert fired.is_set()
        interrupted, finished = eval(first.mime("text/plain")[-1])
        assert interrupted and 0 < finished < 8
        on_disk = set(json.loads((out / "checkpoint.json").read_text())["completed"])
        before = srv.count
        second = session.run(f"r2 = hermes_nb.evaluate(cases, agent=agent, concurrency=2, out_dir={str(out)!r})\n"
                             "r2.summary['resumed'], r2.summary['cases'], r2.summary['selection_accuracy']",
                             timeout=120)
        assert eval(second.mime("text/plain")[-1]) == (len(on_disk), 8, 1.0)
        assert srv.count - before == 2 * (8 - len(on_disk))  # two model turns per case not yet finished
