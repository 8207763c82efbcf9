"""``{var}`` / ``{In[3]}`` in ``%%agent`` prompts, ``--no-format``, and Tab after ``hermes_nb.`` (issue 26, item 9)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_nb.magics.prompt_fill import fill
from tests.support.fake_openai import FakeOpenAI, Reply

NS = {"city": "Paris", "In": ["", "x = 41", "print(x)"], "n": 3.14159, "d": {"k": "v"}}


@pytest.mark.parametrize(("prompt", "expected", "left", "why"), [
    ("Weather in {city}?", "Weather in Paris?", (), "a variable"),
    ("Explain: {In[1]}", "Explain: x = 41", (), "a cell's input, as jupyter-ai's %%ai"),
    ("{n:.2f} and {city!r}", "3.14 and 'Paris'", (), "format spec and conversion"),
    ("{d[k]}", "v", (), "an index"),
    ("Hi {nobody} in {city}", "Hi {nobody} in Paris", ("nobody",), "an undefined name is sent as written"),
    ('Send {"a": 1}', 'Send {"a": 1}', (), "JSON is not a field"),
    ('nested {"a": {"b": 1}}', 'nested {"a": {"b": 1}}', (), "unparsable braces: the prompt as written"),
    ("{{literal}} {city}", "{literal} Paris", (), "doubled braces are one brace, as in str.format"),
    ("no fields {{here}}", "no fields {{here}}", (), "no field: kept exactly"),
    ("{In[99]}", "{In[99]}", ("In[99]",), "a bad index is left, not raised"),
])
def test_fill(prompt: str, expected: str, left: tuple[str, ...], why: str) -> None:
    assert fill(prompt, NS) == (expected, left), why


def _sent(srv: FakeOpenAI) -> str:
    return next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "user")


def test_agent_cell_fills_variables_and_no_format_keeps_braces(ip: Any, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["city"] = "Paris"
    with FakeOpenAI([Reply(content="Sunny."), Reply(content="Ok."), Reply(content="Ok.")]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        ip.run_cell_magic("agent", "--model gpt-x --new --toolsets readonly", "What is the weather in {city}?")
        assert _sent(srv) == "What is the weather in Paris?"
        ip.run_cell_magic("agent", "--new --no-format", "Reply with {city} as written")
        assert _sent(srv) == "Reply with {city} as written"
        capsys.readouterr()
        ip.run_cell_magic("agent", "--new  # a comment on the line", "Hello {nobody}")
        assert _sent(srv) == "Hello {nobody}"
        assert "{nobody} not defined in the notebook, sent as written" in capsys.readouterr().out


def test_tab_after_hermes_nb_shows_the_public_api(ip: Any) -> None:
    from IPython.core.completer import provisionalcompleter

    ip.run_cell("import hermes_nb")
    with provisionalcompleter():
        shown = {c.text for c in ip.Completer.completions("hermes_nb.", len("hermes_nb."))}
    assert {"Agent", "evaluate", "tool", "timeline", "registry"} <= shown
    assert not shown & {"annotations", "Any", "importlib", "logging", "log"}
    import hermes_nb

    assert set(dir(hermes_nb)) == set(hermes_nb.__all__)
