"""``Agent(model="local")`` with the real runtime and weights: SmolLM2-135M through xllamacpp (llama.cpp's
prebuilt runtime), in the process that runs the agent (``.venv-llama``'s Python, where the runtime is installed; each test is one
script there). What is asserted is what a 135M model cannot make flaky: a required call always parses, names
an offered tool and has arguments its tool accepts; the result reaches the next turn; usage is counted;
■ stops generation and leaves a history the next run continues; ``evaluate`` scores it offline.
"""

from __future__ import annotations

import pytest

from tests.support.llama_venv import run_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

TOOLS = '''
import json
from typing import Literal
from hermes_nb import Agent, tool

@tool
def area(width: float, height: float) -> float:
    """Area of a rectangle."""
    return width * height

@tool
def greet(name: str, formal: bool = False) -> str:
    """Greet someone by name."""
    return ("Good day, " if formal else "Hi, ") + name

@tool
def convert(value: float, unit: Literal["cm", "m", "km"], digits: int = 2) -> str:
    """Convert a length in metres to another unit."""
    return f"{value * {'cm': 100, 'm': 1, 'km': 0.001}[unit]:.{digits}f} {unit}"
'''


def test_a_required_call_always_parses_names_an_offered_tool_and_its_tool_accepts_it(tmp_path):
    code = TOOLS + '''
prompts = ["What is the area of a 3 by 2 rectangle?", "Say hello to Ada, formally.", "Convert 1500 metres to km."]
runs = []
for i, prompt in enumerate(prompts):
    r = Agent(model="local", tool_choice="required", temperature=0.8, seed=i, max_tokens=160,
              max_iterations=2, display=False).run(prompt)
    runs.append({"reason": r.stopped_reason, "error": r.error, "usage": r.usage, "model": r.model,
                 "calls": [{"name": c.name, "args": json.loads(c.arguments), "is_error": c.is_error,
                            "content": c.content} for c in r.tool_calls],
                 "roles": [m["role"] for m in r.messages], "text": r.text,
                 "sent": [t.response.sent for t in r.turns]})
print(json.dumps(runs))
'''
    runs = run_json(code, cwd=tmp_path)
    assert len(runs) == 3
    for run in runs:
        assert run["reason"] in ("done", "length"), run
        assert len(run["calls"]) == 1, run  # forced: one call, well formed (the grammar)
        call = run["calls"][0]
        assert call["name"] in ("area", "greet", "convert")
        assert not call["is_error"], call  # the tool's own validation took the arguments
        assert run["roles"][:4] == ["user", "assistant", "tool", "assistant"]  # the result reached turn 2
        assert run["usage"]["prompt_tokens"] > 0 and run["usage"]["completion_tokens"] > 0
        assert "unreported" not in run["usage"]
        assert run["model"] == "SmolLM2-135M-Instruct.Q4_1 (local)"
        first, second = run["sent"][:2]
        assert first["tool_choice"] == "call forced" and "<tools>" in first["prompt"]  # what the model saw
        assert second["tool_choice"] == "call or answer"  # after the call the model chooses (issue 34)
        assert set(second["tools"]) == {"area", "greet", "convert"}


def test_a_length_stop_counts_the_runtimes_tokens_and_names_max_tokens(tmp_path):
    code = TOOLS + '''
from hermes_nb.display.live.render import transcript_text
r = Agent(model="local", max_tokens=20, enabled_toolsets=[], display="text").run("Tell me a long story.")
print(json.dumps({"reason": r.stopped_reason, "usage": r.usage, "text": transcript_text(r.transcript)}))
'''
    out = run_json(code, cwd=tmp_path)
    assert out["reason"] == "length"
    assert out["usage"]["completion_tokens"] == 20  # the runtime's count (it read max_tokens + 1 before)
    assert "token limit (max_tokens=20)" in out["text"]


def test_a_named_tool_is_the_one_called_and_auto_may_answer_in_prose(tmp_path):
    code = TOOLS + '''
named = Agent(model="local", tool_choice="greet", max_iterations=1, display=False).run("What is 2 plus 2?")
auto = Agent(model="local", max_tokens=24, display=False).run("Say hello.")
print(json.dumps({"named": [c.name for c in named.tool_calls], "auto": auto.stopped_reason, "text": auto.text}))
'''
    out = run_json(code, cwd=tmp_path)
    assert out["named"] == ["greet"]
    assert out["auto"] in ("done", "length") and out["text"]


def test_an_interrupt_stops_generation_and_the_next_run_continues(tmp_path):
    code = TOOLS + '''
import _thread, signal, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
agent = Agent(model="local", max_tokens=2000, display=False, enabled_toolsets=[])
talking = threading.Event()
real = agent.model.complete
async def complete(messages, tools, *, on_text=None, on_retry=None):
    def heard(delta):
        talking.set()
        on_text(delta)
    return await real(messages, tools, on_text=heard, on_retry=on_retry)
agent.model.complete = complete
threading.Thread(target=lambda: (talking.wait(300), _thread.interrupt_main()), daemon=True).start()
stopped = agent.run("Write a very long story about a dragon who bakes bread, in many chapters.")
kept = [m["role"] for m in agent.messages]
agent.model.complete = real
agent.model.max_tokens = 16
again = agent.run("Now say hi.")
print(json.dumps({"stopped": stopped.stopped_reason, "kept": kept, "again": again.stopped_reason,
                  "again_text": again.text, "roles": [m["role"] for m in agent.messages]}))
'''
    out = run_json(code, cwd=tmp_path)
    assert out["stopped"] == "interrupted"
    assert out["kept"] == ["user", "assistant"]  # the partial answer, kept and marked as cut
    assert out["again"] in ("done", "length") and out["again_text"]  # the runtime was free again
    assert out["roles"] == ["user", "assistant", "user", "assistant"]  # no prompt sent twice in a row


def test_evaluate_scores_the_local_model_offline(tmp_path):
    code = TOOLS + '''
import hermes_nb
result = hermes_nb.evaluate(
    [{"prompt": "What is the area of a 3 by 2 rectangle?", "expected_tools": ["area"]},
     {"prompt": "Convert 3 metres to cm.", "expected_tools": ["convert"]}],
    agent={"model": "local", "tool_choice": "required", "max_iterations": 2, "enabled_toolsets": ["notebook"]},
    concurrency=2, display=False)
print(json.dumps([{"called": r.tools_called, "error": r.error, "reason": r.stopped_reason, "tokens": r.tokens}
                  for r in result.rows]))
'''
    rows = run_json(code, cwd=tmp_path)
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None and row["reason"] in ("done", "length"), row
        assert len(row["called"]) == 1 and row["called"][0] in ("area", "greet", "convert")
        assert row["tokens"] > 0


@pytest.mark.kernel
def test_agent_magic_runs_the_local_model_in_a_kernel_and_stop_stops_it(tmp_path):
    """Where people meet it: ``%%agent --model local`` in a real kernel (``.venv-llama``'s), then ■."""
    import queue

    from tests.support.llama_venv import llama_venv
    from tests.support.venvs import venv_kernel

    with venv_kernel(llama_venv(), tmp_path, {"HERMES_NB_HOME": str(tmp_path / "home")}) as kernel:
        kernel.run("%load_ext hermes_nb")
        kernel.run('%%tool --toolset geometry\ndef area(width: float, height: float) -> float:\n'
                   '    """Area of a rectangle."""\n    return width * height')
        shown = kernel.run("%%agent --model local --tool-choice required --toolsets geometry --max-tokens 160 "
                           "--seed 1 --out r\nWhat is the area of a 3 by 2 rectangle?", timeout=600)
        assert "SmolLM2-135M-Instruct.Q4_1 (local)" in shown.html and "area" in shown.html
        facts = kernel.run("print(r.stopped_reason, [c.name for c in r.tool_calls], r.usage['completion_tokens'] > 0)")
        assert facts.stdout.split(" ", 1)[0] in ("done", "length") and "['area'] True" in facts.stdout
        # ■ while it writes: the live transcript's first update with text is the moment
        msg_id = kernel.kc.execute("%%agent --new --tool-choice none --max-tokens 2000 --out s\n"
                                   "Write a very long story about a dragon who bakes bread.")
        while True:
            try:
                msg = kernel.kc.get_iopub_msg(timeout=300)
            except queue.Empty as exc:
                raise AssertionError("the local model never started writing") from exc
            text = msg["content"].get("data", {}).get("text/plain", "") if msg["msg_type"] == "update_display_data" else ""
            if msg["parent_header"].get("msg_id") == msg_id and len(text.strip().splitlines()) > 2:
                break  # the header, the prompt, and the model's first words
        kernel.interrupt()
        kernel.collect(msg_id, timeout=300)
        after = kernel.run("print(s.stopped_reason, [m['role'] for m in s.messages])")
        assert after.stdout.strip() == "interrupted ['user', 'assistant']"  # the partial answer, marked as cut
