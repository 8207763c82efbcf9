"""``%memory`` and ``%sessions``: help with an example, what they show, and one-line errors."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.agent.loop import Agent
from tests.support.fake_openai import FakeOpenAI, Reply


@pytest.mark.parametrize("name", ["memory", "sessions"])
def test_help_has_the_usage_line_and_an_example(ip: Any, name: str) -> None:
    doc = ip.find_magic(name, "line").__doc__
    usage = next(line.strip() for line in doc.splitlines() if line.strip().startswith("%"))
    assert re.match(rf"%{name}(\s|$)", usage), usage
    example = doc[doc.index("Example"):]
    assert f"%{name}" in example


def test_memory_shows_adds_replaces_and_removes(ip: Any) -> None:
    view = ip.run_line_magic("memory", "add The data lives in ./raw")
    assert view.entries["memory"] == ["The data lives in ./raw"] and "Entry added" in view.message
    ip.run_line_magic("memory", "add --user Prefers French")
    ip.run_line_magic("memory", "replace ./raw --new The data lives in ./clean")
    shown = ip.run_line_magic("memory", "")
    assert shown.entries == {"memory": ["The data lives in ./clean"], "user": ["Prefers French"]}
    assert "USER.md (14/1,375 chars)" in repr(shown) and "Prefers French" in shown._repr_html_()
    ip.run_line_magic("memory", "remove clean")
    assert ip.run_line_magic("memory", "").entries["memory"] == []


@pytest.mark.parametrize(("line", "needle"), [
    ("add", "say which text"),
    ("replace old", "--new gives the replacement"),
    ("remove nothing-like-it", "No entry matched"),
    ("frobnicate", "%memory: argument action: invalid choice"),
])
def test_memory_mistakes_are_one_line(ip: Any, line: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        ip.run_line_magic("memory", line)


def test_sessions_lists_searches_and_shows_a_run(ip: Any) -> None:
    with FakeOpenAI([Reply(content="The otters ate 3 fish."), Reply(content="Nothing about fish.")]) as srv:
        agent = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["todo"], display=False, stream=False)
        agent.run("what did the otters eat?")
        agent.run("and the seals?")
    latest = ip.run_line_magic("sessions", "")
    assert [r["prompt"] for r in latest.rows] == ["and the seals?", "what did the otters eat?"]
    found = ip.run_line_magic("sessions", "otters")
    assert len(found.rows) == 1 and "»otters«" in found.rows[0]["snippet"]
    run_id = found.rows[0]["run"]
    shown = ip.run_line_magic("sessions", f"show {run_id}")
    assert [r["role"] for r in shown.rows] == ["user", "assistant"] and "3 fish" in repr(shown)
    assert "<table" in found._repr_html_()
    with pytest.raises(UsageError, match="give one run id"):
        ip.run_line_magic("sessions", "show")
    assert len(ip.run_line_magic("sessions", "--limit 1").rows) == 1
    for limit in ("0", "50"):  # 50 was cut to 10 without a word
        with pytest.raises(UsageError, match=f"--limit is 1 to 10, not {limit}"):
            ip.run_line_magic("sessions", f"--limit {limit}")
