"""Traces in a real trace server (issue 36): an agent in a real kernel — a parallel batch, an approval, a
sub-agent and an MCP call — exports over OTLP/HTTP (config.yaml's ``tracing.otlp_endpoint``) to Arize Phoenix,
and the span tree is read back through Phoenix's own REST API: names, parent links, attributes."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import Reply, call
from tests.support.kernel import KernelSession
from tests.support.routed_openai import RoutedOpenAI

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.packaging, pytest.mark.mcp, pytest.mark.timeout(600)]

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")

SETUP = '''
import threading
from hermes_nb.tools.registry import registry
from hermes_nb.tools.mcp_tool import discover_mcp_tools
both = threading.Barrier(2, timeout=30)
def meet(args, **kw):
    both.wait()  # the two calls must be in flight together
    return f"met {args['n']}"
OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
registry.register("meet", "traced", {"description": "Meet the other call.", "parameters": OBJ}, meet, read_only=True)
registry.register("guarded", "traced", {"description": "Needs a yes.", "parameters": OBJ},
                  lambda a, **kw: "guarded ran", needs_approval=True)
print(discover_mcp_tools({"mcp_servers": {"time": {"command": %r}}}))
'''


def _route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    if prompt == "go":
        return [Reply(tool_calls=(call("meet", {"n": 1}, "m1"), call("meet", {"n": 2}, "m2"))),
                Reply(tool_calls=(call("guarded", {"n": 3}, "g1"),)),
                Reply(tool_calls=(call("delegate_task", {"tasks": [{"goal": "count"}]}, "d1"),)),
                Reply(tool_calls=(call("mcp__time__get_current_time", {"timezone": "UTC"}, "t1"),)),
                Reply(content="all done")][turn]
    return Reply(content=f"{prompt}: 12")  # the sub-agent


@pytest.fixture(scope="module")
def phoenix() -> Iterator[str]:
    from tests.support.phoenix import phoenix_server

    with phoenix_server() as base:
        yield base


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    """Phoenix's attributes, flattened to dotted keys (it may nest ``gen_ai.tool.name`` as gen_ai→tool→name)."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            out[prefix] = value

    raw = span.get("attributes") or {}
    if isinstance(raw, list):  # [{"key": ..., "value": {...}}] (OTLP JSON shape)
        raw = {a["key"]: next(iter(a["value"].values())) for a in raw}
    walk("", raw)
    return out


def test_a_kernel_run_reaches_phoenix_as_the_standard_span_tree(phoenix: str, tmp_path: Path) -> None:
    from tests.support.phoenix import spans

    if not os.path.exists(TIME_SERVER):
        pytest.fail(f"{TIME_SERVER} is missing (the dev extra installs mcp-server-time)")
    (tmp_path / "config.yaml").write_text(f"tracing:\n  otlp_endpoint: {phoenix}\n")
    env = {"HERMES_NB_HOME": str(tmp_path), "OTEL_SERVICE_NAME": "hermes_nb-test"}
    with RoutedOpenAI(_route) as srv, KernelSession(cwd=tmp_path, env=env) as kernel:
        kernel.run("%load_ext hermes_nb")
        kernel.run(SETUP % TIME_SERVER)
        r = kernel.run(f"from hermes_nb import Agent\nres = Agent(model='m', base_url={srv.base_url!r}, "
                       "enabled_toolsets=['traced', 'delegation', 'mcp-time'], stream=False, display=False, "
                       "approval_callback=lambda *a: 'once').run('go')\nprint(res.stopped_reason, len(res.trace))\n"
                       "from hermes_nb.traces.otel import flush\nflush()", timeout=120)
        assert "done" in r.stdout, r.stdout
        kernel.run("from hermes_nb.tools.mcp_tool import shutdown_mcp_servers\nshutdown_mcp_servers()")
    expected = {"invoke_agent hermes_nb", "chat m", "execute_tool meet", "execute_tool guarded",
                "execute_tool delegate_task", "invoke_agent sub-agent 1: count",
                "execute_tool mcp__time__get_current_time", "tools/call get_current_time"}
    deadline = time.monotonic() + 60  # Phoenix ingests asynchronously: only a bound on a hang
    while True:
        got = spans(phoenix)
        if expected <= {s["name"] for s in got} or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    names = {s["name"] for s in got}
    assert expected <= names, sorted(names)
    by_id = {s["context"]["span_id"]: s for s in got}

    def parent(span: dict[str, Any]) -> dict[str, Any] | None:
        return by_id.get(span.get("parent_id") or "")

    def one(name: str) -> dict[str, Any]:
        (found,) = [s for s in got if s["name"] == name]
        return found

    root = one("invoke_agent hermes_nb")
    assert parent(root) is None
    assert _attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    assert _attrs(root)["gen_ai.agent.name"] == "hermes_nb"
    assert len({s["context"]["trace_id"] for s in got}) == 1
    chats = [s for s in got if s["name"] == "chat m" and parent(s) is root]
    assert len(chats) == 5
    assert all(_attrs(c)["gen_ai.request.model"] == "m" and int(_attrs(c)["gen_ai.usage.input_tokens"]) == 10
               for c in chats)
    meets = [s for s in got if s["name"] == "execute_tool meet"]
    assert len(meets) == 2 and all(parent(m) is root for m in meets)
    assert {_attrs(m)["gen_ai.tool.call.id"] for m in meets} == {"m1", "m2"}
    a, b = meets
    assert a["start_time"] < b["end_time"] and b["start_time"] < a["end_time"]  # ISO times: they overlap
    guarded = one("execute_tool guarded")
    assert [e["name"] for e in guarded.get("events", [])] == ["approval.asked", "approval.answered"]
    child = one("invoke_agent sub-agent 1: count")
    assert parent(child) is one("execute_tool delegate_task")
    assert any(s["name"] == "chat m" and parent(s) is child for s in got)
    request = one("tools/call get_current_time")
    assert parent(request) is one("execute_tool mcp__time__get_current_time")
    assert _attrs(request)["mcp.method.name"] == "tools/call"
    assert all("gen_ai.tool.call.arguments" not in _attrs(s) for s in got)  # no content without the opt-in
