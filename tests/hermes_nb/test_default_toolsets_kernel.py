"""The default selection in a real kernel, as a notebook has it: after ``%load_ext hermes_nb`` and one ``%%tool``,
the model is offered that tool only (it was offered 15, ``terminal``, ``python`` and ``write_file`` among them),
and ``%toolsets`` says what the default is and how to change it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(180)]

C2F = '''%%tool
def c2f(celsius: float) -> float:
    """Celsius to Fahrenheit.

    Args:
        celsius: Degrees Celsius.
    """
    return celsius * 9 / 5 + 32
'''


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        k.run("%load_ext hermes_nb")
        k.run(C2F)
        yield k


def test_a_notebook_offers_its_own_tool_only_until_a_built_in_is_ticked(kernel: KernelSession) -> None:
    with FakeOpenAI([Reply(content="212"), Reply(content="ok")]) as srv:
        kernel.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r})")
        kernel.run("agent.run('What is 100 C in F?')")
        shown = kernel.run("%toolsets")
        kernel.run("%toolsets notebook file")
        kernel.run("agent.run('and now?')")
    first, second = ({t["function"]["name"] for t in r.get("tools", ())} for r in srv.requests)
    assert first == {"c2f"}, first
    assert {"c2f", "write_file", "read_file"} <= second and "terminal" not in second, second
    text = shown.text
    assert "toolsets: notebook (the default: your own toolsets) — the model sees 1 tool" in text, text
    html = shown.html  # the static record a saved notebook keeps: the default's line over the table
    assert "default: your own toolsets (notebook)" in html and "toolsets: {default: [file, terminal]}" in html
    live = kernel.run("from hermes_nb import _state\nprint(_state.live[-1].default_label.value)").stdout
    assert "default: your own toolsets (notebook)" in live, live  # the widget's own line
