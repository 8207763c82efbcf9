"""Errors for the person: tracebacks and printed output of notebook tools, did-you-mean, hints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb.agent.events import BatchDone, ToolCallQueued
from hermes_nb.display import asides
from hermes_nb.display.live import Card, Transcript, transcript_html
from hermes_nb.magics.tools import parse_call_args
from hermes_nb.tools.registry import registry


@pytest.fixture
def ip(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: None)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    yield shell
    shell.run_line_magic("unload_ext", "hermes_nb")


RAISES = '''
def ratio(a: float, b: float) -> float:
    """a / b."""
    scale = 1.0
    return scale * a / b
'''


def test_a_raising_tool_shows_the_person_a_traceback_at_their_line(ip: Any) -> None:
    ip.run_cell_magic("tool", "", RAISES)
    view = ip.run_line_magic("tools", "call ratio a=1 b=0")
    # the model still gets one line
    assert json.loads(view.content) == {"error": "Tool execution failed: ZeroDivisionError: float division by zero"}
    assert view.aside is not None
    trace = view.aside.traceback
    assert "return scale * a / b" in trace and "ZeroDivisionError" in trace
    assert "line 6, in ratio" in trace  # the cell's own line: %%tool is line 1, the blank line 2 (issue 26)
    assert "hermes_nb" not in trace  # no frames of the library
    html = view._repr_mimebundle_()["text/html"]
    assert '<details class="hermes-nb-traceback">' in html  # collapsible
    assert "traceback (for you; the model got the one-line error)" in view._repr_mimebundle_()["text/plain"]


def test_printed_output_is_captured_folded_and_said_to_be_unseen(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell_magic("tool", "", 'def noisy(n: int) -> int:\n    """Prints."""\n'
                                  '    for i in range(n):\n        print("line", i)\n    return n')
    view = ip.run_line_magic("tools", "call noisy n=3000")
    assert view.content == "3000"  # the model gets the return value only
    assert "line 2999" not in capsys.readouterr().out  # the cell is not flooded
    aside = view.aside
    assert aside is not None and aside.printed.startswith("line 0\n")
    assert aside.printed_chars == sum(len(f"line {i}\n") for i in range(3000))
    html = view._repr_mimebundle_()["text/html"]
    assert '<details class="hermes-nb-printed">' in html
    assert "the model does not see printed output" in html
    assert "first 200 shown" in html
    assert ip.user_ns["noisy"](1) == 1  # called directly, the function prints as ever
    assert capsys.readouterr().out == "line 0\n"


def test_parallel_calls_keep_their_own_printed_output(ip: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    ip.run_cell_magic("tool", "", 'def say(word: str) -> str:\n    """Says."""\n    print(word * 3)\n    return word')
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda w: registry.dispatch("say", {"word": w}), "abcd"))
    printed = sorted(a.printed for a in iter(lambda: asides.take("say"), None))
    assert printed == ["aaa\n", "bbb\n", "ccc\n", "ddd\n"]


def test_agent_transcript_card_shows_the_traceback(ip: Any) -> None:
    ip.run_cell_magic("tool", "", RAISES)
    registry.dispatch("ratio", {"a": 1, "b": 0})
    t = Transcript()
    t.handle(ToolCallQueued(index=0, id="c1", name="ratio", arguments='{"a": 1, "b": 0}'))

    class Rec:
        id, name, content, is_error, started, ended = "c1", "ratio", '{"error": "x"}', True, 1.0, 2.0
        changes = ()

    t.handle(BatchDone(records=(Rec(),)))
    card: Card = t.cards["c1"]
    assert card.aside is not None and "ZeroDivisionError" in card.aside.traceback
    assert "hermes-nb-traceback" in transcript_html(t)


def test_did_you_mean_for_tools_and_arguments(ip: Any) -> None:
    ip.run_cell_magic("tool", "", 'def area(width: float, height: float) -> float:\n    """Area."""\n    return width * height')
    with pytest.raises(UsageError, match=r"no tool named 'aera' \(did you mean 'area'\?\)"):
        ip.run_line_magic("tools", "call aera width=1 height=2")
    assert json.loads(registry.dispatch("aera", {}))["error"] == "Unknown tool: aera (did you mean 'area'?)"
    bad = ip.run_line_magic("tools", "call area widht=1 height=2")
    assert "unknown argument 'widht' (did you mean 'width'?)" in bad.content


def test_python_dict_arguments_get_a_json_hint() -> None:
    with pytest.raises(UsageError) as info:
        parse_call_args("{'a': 1, 'ok': True, 'none': None}")
    message = str(info.value)
    assert "\n" not in message
    assert 'Python dict; JSON needs double quotes and true/false/null: {"a": 1, "ok": true, "none": null}' in message
    with pytest.raises(UsageError) as plain:
        parse_call_args("{not json")
    assert "Python dict" not in str(plain.value)


def test_missing_key_is_shown_without_library_frames(ip: Any, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HERMES_NB_MODEL"):
        monkeypatch.delenv(var, raising=False)
    ip.run_cell("from hermes_nb import Agent\nAgent(model='gpt-4o-mini').run('hi')")
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "ModelConfigError: no model configured" in text
    assert "loop.py" not in text and "agent.py" not in text and "Traceback" not in text and "File " not in text


def test_result_view_says_what_the_model_got_for_a_dataframe(ip: Any) -> None:
    ip.run_cell_magic("tool", "", 'import pandas as pd\ndef table(n: int) -> pd.DataFrame:\n    """Rows."""\n'
                                  '    return pd.DataFrame({"n": range(n)})')
    view = ip.run_line_magic("tools", "call table n=120")
    assert json.loads(view.content)["rows"] == 120
    assert view.aside is not None
    assert view.aside.converted == "returned a DataFrame: the model got JSON (records, first 50 of 120 rows)"
    assert "hermes-nb-converted" in view._repr_mimebundle_()["text/html"]


def test_agent_run_shows_the_person_the_traceback_and_the_model_one_line(ip: Any) -> None:
    from hermes_nb.agent.loop import Agent
    from tests.support.fake_openai import FakeOpenAI, Reply, call

    ip.run_cell_magic("tool", "--toolset person_errors", RAISES)
    script = [Reply(tool_calls=(call("ratio", {"a": 1, "b": 0}, id="c1"),)), Reply(content="It failed.")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="fake", base_url=srv.base_url, display=False, enabled_toolsets=["person_errors"])
        result = agent.run("divide 1 by 0")
        sent = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert json.loads(sent[0]["content"]) == {"error": "Tool execution failed: ZeroDivisionError: float division by zero"}
    html = transcript_html(result.transcript)
    assert "hermes-nb-traceback" in html and "return scale * a / b" in html


def test_text_view_prints_the_traceback_for_the_person(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb.agent.loop import Agent
    from tests.support.fake_openai import FakeOpenAI, Reply, call

    ip.run_cell_magic("tool", "--toolset person_errors", RAISES)
    script = [Reply(tool_calls=(call("ratio", {"a": 1, "b": 0}, id="c1"),)), Reply(content="It failed.")]
    with FakeOpenAI(script) as srv:
        Agent(model="fake", base_url=srv.base_url, display="text", enabled_toolsets=["person_errors"]).run("go")
    out = capsys.readouterr().out
    assert "traceback (for you; the model got the one-line error)" in out and "return scale * a / b" in out


def test_a_watched_cell_tool_still_pickles_for_dask_workers(ip: Any) -> None:
    """The capture wrapper must not close over kernel-only state (a ContextVar): evaluate(executor=client)
    cloudpickles notebook tools to the workers."""
    import cloudpickle

    from hermes_nb.tools.registry import registry

    ip.run_cell_magic("tool", "", RAISES)
    handler = cloudpickle.loads(cloudpickle.dumps(registry.get_entry("ratio").handler))
    assert json.loads(json.dumps(handler({"a": 3, "b": 2}))) == 1.5


def test_an_async_cell_tool_on_the_kernel_loop_still_leaves_its_aside(ip: Any) -> None:
    """With ``enable_nest_asyncio`` an async cell tool runs on the kernel loop: that path wraps the watched
    function, so its printed text and traceback still reach the person (it wrapped the bare one, and both
    were lost)."""
    import asyncio
    import threading

    from hermes_nb.magics.tool import CellToolOptions, register_function

    async def loud(n: int) -> int:
        """Prints, then fails."""
        print("about to fail")
        raise ValueError(f"no {n}")

    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    try:
        register_function(loud, CellToolOptions(name="loud", toolset="t_nest"), reg=registry, namespace={},
                          kernel_loop=loop)
        answers: list[Any] = []
        caller = threading.Thread(target=lambda: answers.append(registry.dispatch("loud", {"n": 3})))
        caller.start()
        caller.join(timeout=30)
        assert answers and "no 3" in json.dumps(answers[0])  # the model's one line
        aside = asides.take("loud")
        assert aside is not None and aside.printed == "about to fail\n" and "ValueError: no 3" in aside.traceback
    finally:
        registry.deregister("loud")
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=30)
        loop.close()
