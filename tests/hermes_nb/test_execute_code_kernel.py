"""execute_code in a real kernel: a script calls two notebook tools in a loop and prints a summary; ■ stops one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]

TOOLS = ['''%%tool --toolset shop --read-only
def price(item: str) -> dict:
    """Price of an item in cents.

    Args:
        item: The item's name.
    """
    return {"item": item, "cents": {"apple": 30, "pear": 45}.get(item, 0)}
''', '''%%tool --toolset shop
def stock(item: str) -> int:
    """How many are in stock.

    Args:
        item: The item's name.
    """
    return {"apple": 3, "pear": 0}.get(item, 0)
''']

SUMMARY = """
from hermes_tools import price, stock
total = 0
for item in ["apple", "pear"]:
    cents = price(item)["cents"]
    count = stock(item=item)
    total += cents * count
    print(f"{item}: {count} x {cents}")
print("value", total)
"""

AGENT = ("from hermes_nb import Agent\nasked = []\n"
         "def approve(subject, key, description):\n    asked.append(key)\n    return 'once'\n"
         "agent = Agent(model='m', base_url={url!r}, enabled_toolsets=['shop', 'code_execution'], "
         "approval_callback=approve)")


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        k.run("%load_ext hermes_nb")
        for cell in TOOLS:
            k.run(cell)
        yield k


def test_a_script_calls_two_notebook_tools_in_a_loop(kernel):
    script = [Reply(tool_calls=(call("execute_code", {"code": SUMMARY}, "s1"),)), Reply(content="Worth 90 cents.")]
    with FakeOpenAI(script) as srv:
        kernel.run(AGENT.format(url=srv.base_url))
        r = kernel.run("result = agent.run('what is the stock worth?')\nprint(result.text, asked)")
    assert "Worth 90 cents. ['execute-code']" in r.stdout
    got = json.loads([m for m in srv.requests[1]["messages"] if m["role"] == "tool"][0]["content"])
    assert got["status"] == "success" and got["tool_calls_made"] == 4
    assert got["output"] == "apple: 3 x 30\npear: 0 x 45\nvalue 90\n"
    final = [o for o in r.outputs if o["type"] == "update_display_data"][-1]["data"]["text/html"]
    nested = final.split('class="hermes-nb-nested"', 1)[1]
    assert nested.count("<b>price</b>") == 2 and nested.count("<b>stock</b>") == 2
    # the script's variables stayed out of the notebook
    assert kernel.run("print('total' in dir(), 'cents' in dir())").stdout.strip() == "False False"


def test_interrupt_stops_a_running_script(kernel, tmp_path):
    marker = tmp_path / "script-started"
    busy = f"open({str(marker)!r}, 'w').close()\nwhile True:\n    pass\n"
    script = [Reply(tool_calls=(call("execute_code", {"code": busy}, "s1"),)), Reply(content="Back.")]
    with FakeOpenAI(script) as srv:
        kernel.run(AGENT.format(url=srv.base_url))
        msg_id = kernel.kc.execute("result = agent.run('spin')\nprint('STOPPED', result.stopped_reason)")
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:  # the script is spinning now
            time.sleep(0.02)
        assert marker.exists(), "the script never started"
        kernel.interrupt()
        assert "STOPPED interrupted" in kernel.collect(msg_id, timeout=60).stdout
        check = ("import threading\nspinning = [t for t in threading.enumerate() if t.name == 'hermes-nb-execute-code']\n"
                 "for t in spinning:\n    t.join(10)\nprint('alive', [t.is_alive() for t in spinning])")
        assert kernel.run(check).stdout.strip() in ("alive []", "alive [False]")
        assert "Back." in kernel.run("print(agent.run('again').text)").stdout


def test_a_thread_the_script_started_stops_when_the_run_ends_in_a_real_kernel(kernel: KernelSession) -> None:
    """Measured before: the thread kept running Python in the kernel after the run ended, with no card."""
    spin = ("import threading, time\ncount = [0]\n"
            "def spin():\n    while True:\n        count[0] += 1\n        time.sleep(0.005)\n"
            "threading.Thread(target=spin, name='left-behind', daemon=True).start()\nprint('started')")
    script = [Reply(tool_calls=(call("execute_code", {"code": spin}, "s1"),)), Reply(content="Done.")]
    with FakeOpenAI(script) as srv:
        kernel.run(AGENT.format(url=srv.base_url))
        out = kernel.run("result = agent.run('spin a thread')\n"
                         "print(result.transcript.cards['s1'].content)\n"
                         "import threading\n"
                         "print('alive', [t.name for t in threading.enumerate() if t.name == 'left-behind'])").stdout
    assert '"threads_running": ["left-behind"]' in out  # named in the script's card
    assert "alive []" in out  # stopped when the run ended
