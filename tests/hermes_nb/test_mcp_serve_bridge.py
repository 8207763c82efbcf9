"""``%mcp serve --bridge`` with the MCP SDK client that lists the tools once and never again: it still finds
and calls a tool defined after it connected, and the bridge obeys the served selection and approval exactly
as a direct call does."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from hermes_nb.serve import server as mcp_serve
from hermes_nb.tools.registry import registry
from tests.support.mcp_clients import connect

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


class Recorder:
    """The panel's events and the approver, recorded."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[tuple[str, str]] = []  # (client, tool)
        self.asked: list[tuple[str, str]] = []  # (what was asked, client)

    def call_started(self, call_id: str, client: str, name: str, arguments: str) -> None:
        with self.lock:
            self.started.append((client.split(" ")[0], name))

    def call_running(self, call_id: str) -> None:
        pass

    def call_ended(self, call_id: str, content: str, is_error: bool, note: str = "") -> None:
        pass

    def changed(self) -> None:
        pass

    def approve(self, command: str, key: str, description: str, client: str) -> str:
        self.asked.append((command, client))
        return "deny"


@pytest.fixture
def bridged(hermes_home: Any) -> Any:
    registry.register("srv_add", "served_demo", {"description": "Add two numbers", "parameters": SCHEMA},
                      lambda a: a["a"] + a["b"], source="notebook", read_only=True)
    registry.register("srv_ask", "served_demo", {"description": "Ask first", "parameters": EMPTY},
                      lambda a: "did it", source="notebook", needs_approval=True)
    registry.register("srv_secret", "unserved_demo", {"description": "Not served", "parameters": EMPTY},
                      lambda a: "secret", source="notebook")
    recorder = Recorder()
    server = mcp_serve.start_serving(mcp_serve.ServeOptions(toolsets=("served_demo",), bridge=True), events=recorder,
                                     approver=recorder.approve)
    try:
        yield server, recorder
    finally:
        mcp_serve.stop_serving()


def _text(result: Any) -> str:
    return str(result.content[0].text)


def test_a_client_that_lists_once_finds_and_calls_a_tool_defined_after_it_connected(bridged: Any) -> None:
    server, recorder = bridged

    async def go() -> None:
        async with connect(server.url, server.token, name="once") as c:
            listed = await c.session.list_tools()  # the only tools/list this client ever sends
            assert sorted(t.name for t in listed.tools) == ["notebook_call", "notebook_tools", "srv_add", "srv_ask"]
            registry.register("srv_late", "served_demo", {"description": "Multiply", "parameters": SCHEMA},
                              lambda a: a["a"] * a["b"], source="notebook")
            await c.next_change()  # list_changed was sent; this client never acts on it

            tools = json.loads(_text(await c.session.call_tool("notebook_tools", {})))["tools"]
            late = next(t for t in tools if t["name"] == "srv_late")
            assert late == {"name": "srv_late", "description": "Multiply", "input_schema": SCHEMA}
            assert sorted(t["name"] for t in tools) == ["srv_add", "srv_ask", "srv_late"]

            result = await c.session.call_tool("notebook_call", {"name": "srv_late", "arguments": {"a": 6, "b": 7}})
            assert (_text(result), result.is_error) == ("42", False)
            bad = await c.session.call_tool("notebook_call", {"name": "srv_late", "arguments": {"a": "x"}})
            assert bad.is_error and "Invalid arguments for srv_late" in _text(bad)

    asyncio.run(go())
    assert ("once", "srv_late") in recorder.started  # the panel names the tool, not the bridge


def test_the_bridge_reaches_only_the_selection_and_asks_as_a_direct_call_does(bridged: Any) -> None:
    server, recorder = bridged

    async def go() -> None:
        async with connect(server.url, server.token, name="once") as c:
            await c.session.list_tools()
            for how in ("direct", "bridge"):
                if how == "direct":
                    secret = await c.session.call_tool("srv_secret", {})
                    ask = await c.session.call_tool("srv_ask", {})
                else:
                    secret = await c.session.call_tool("notebook_call", {"name": "srv_secret", "arguments": {}})
                    ask = await c.session.call_tool("notebook_call", {"name": "srv_ask"})
                assert secret.is_error and "Unknown tool: srv_secret" in _text(secret), how
                assert ask.is_error and "did it" not in _text(ask), how  # the approver said no
            for broken in ({}, {"name": "notebook_call"}, {"name": "srv_add", "arguments": "{not json"}):
                refused = await c.session.call_tool("notebook_call", broken)
                assert refused.is_error and "notebook_call" in _text(refused)

    asyncio.run(go())
    assert [(what.split(" ")[0], client.split(" ")[0]) for what, client in recorder.asked] == [
        ("srv_ask", "once"), ("srv_ask", "once")]  # the same prompt, naming the tool and the client
    assert ("once", "srv_secret") in recorder.started and ("once", "notebook_call") not in recorder.started


def test_without_bridge_the_list_has_no_bridge_tools(hermes_home: Any) -> None:
    registry.register("srv_add", "served_demo", {"description": "Add", "parameters": SCHEMA},
                      lambda a: a["a"] + a["b"], source="notebook")
    server = mcp_serve.start_serving(mcp_serve.ServeOptions(toolsets=("served_demo",)))
    try:
        async def go() -> None:
            async with connect(server.url, server.token) as c:
                assert [t.name for t in (await c.session.list_tools()).tools] == ["srv_add"]
                missing = await c.session.call_tool("notebook_tools", {})
                assert missing.is_error and "Unknown tool: notebook_tools" in _text(missing)

        asyncio.run(go())
    finally:
        mcp_serve.stop_serving()


def test_the_magic_serves_the_bridge_and_says_so(hermes_home: Any) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    import hermes_nb

    registry.register("srv_add", "served_demo", {"description": "Add", "parameters": SCHEMA},
                      lambda a: a["a"] + a["b"], source="notebook")
    ip = InteractiveShell.instance()
    hermes_nb.load_ipython_extension(ip)
    try:
        started = ip.run_line_magic("mcp", "serve --toolsets served_demo --bridge").text()
        server = mcp_serve.current()
        assert server is not None and server.options.bridge and server.app.bridge
        assert "notebook_tools, notebook_call" in started
        assert "notebook_tools, notebook_call" in ip.run_line_magic("mcp", "serve").text()
    finally:
        hermes_nb.unload_ipython_extension(ip)
        mcp_serve.stop_serving()
