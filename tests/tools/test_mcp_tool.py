"""MCP servers as registry tools, against real servers: mcp-server-time, server-everything, our own."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_nb.tools import mcp_tool
from hermes_nb.tools.mcp_client.config import parse_server
from hermes_nb.tools.mcp_tool import (
    add_mcp_server,
    approve_mcp_tool,
    discover_mcp_tools,
    get_mcp_attachment,
    mcp_status,
    mcp_tool_name,
    refresh_pending_mcp_servers,
    remove_mcp_server,
    shutdown_mcp_servers,
)
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.load_report import clear_failures, failures

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "mcp_servers"
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


def descendants(pid: int) -> set[int]:
    """Live (non-zombie) descendant process ids of ``pid``, read from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    out: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - out
        out |= frontier
    return out


#: A wait's bound only detects a hang; it never paces a test. On a loaded 2-core machine (CI, the CPU hog,
#: mcp 1.x whose server starts cost ~2 s of CPU, reconnect backoff doubling 1→16 s) the nominal bounds were
#: measured too tight, so every bound is stretched; a passing wait still returns as soon as it holds.
WAIT_STRETCH = 6


def wait_until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout * WAIT_STRETCH
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def dynamic_config(name: str = "dyn", **extra):
    return parse_server(
        name, {"command": sys.executable, "args": [str(FIXTURES / "dynamic_server.py")], **extra}
    )


def node_or_fail() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("node/npm missing in CI")
        pytest.skip("node/npm not installed")


@pytest.fixture(autouse=True)
def _clean_mcp() -> Iterator[None]:
    before = descendants(os.getpid())
    clear_failures("mcp")
    yield
    shutdown_mcp_servers()
    clear_failures("mcp")
    wait_until(lambda: not (descendants(os.getpid()) - before), what="MCP server processes to end")


# -- naming ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("time", "get_current_time", "mcp__time__get_current_time"),
        ("my.server", "do it!", "mcp__my_server__do_it_"),
        ("ev", "get-tiny-image", "mcp__ev__get-tiny-image"),
    ],
)
def test_tool_names_are_prefixed_and_cleaned(server, tool, expected):
    assert mcp_tool_name(server, tool) == expected


def test_long_names_are_clamped_with_a_hash_and_stay_distinct():
    a = mcp_tool_name("server", "x" * 80 + "a")
    b = mcp_tool_name("server", "x" * 80 + "b")
    assert len(a) == len(b) == 64 and a != b
    assert a.startswith("mcp__server__xxx")


# -- results --------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20


def _result(*content, structured=None, is_error=False):
    from mcp import types

    # camelCase keywords: the field names of mcp 1.x and the aliases of mcp 2.x
    return types.CallToolResult(content=list(content), structuredContent=structured, isError=is_error)


def test_results_text_structured_images_resources_and_errors():
    import base64

    from mcp import types as t

    from hermes_nb.tools.mcp_client.results import convert_result

    text = t.TextContent(type="text", text="hello")
    assert (
        convert_result(_result(text, t.TextContent(type="text", text="world")), server="s", tool="x")
        == "hello\nworld"
    )
    # the SDK's {"result": ...} wrapper around a plain value, repeated as text: said once
    assert convert_result(_result(text, structured={"result": "hello"}), server="s", tool="x") == "hello"
    as_json = t.TextContent(type="text", text='{"a": 1}')
    assert convert_result(_result(as_json, structured={"a": 1}), server="s", tool="x") == '{"a": 1}'
    assert convert_result(_result(structured={"a": [1, 2]}), server="s", tool="x") == '{"a": [1, 2]}'
    image = t.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png")
    out = convert_result(_result(text, image), server="s", tool="x")
    line = out.splitlines()[1]
    assert line.startswith(f"[image: image/png, {len(PNG)} bytes, id=")
    kept = get_mcp_attachment(line.rsplit("id=", 1)[1][:-1])
    assert kept is not None and kept.data == PNG and (kept.server, kept.tool) == ("s", "x")
    res = t.EmbeddedResource(
        type="resource",
        resource=t.TextResourceContents(uri="file:///a.txt", mimeType="text/plain", text="inside"),
    )
    out = convert_result(_result(res), server="s", tool="x")
    assert re.fullmatch(r"\[resource: text/plain, file:///a.txt, 6 bytes, id=[0-9a-f]{8}\]\ninside", out)
    error = json.loads(
        convert_result(
            _result(t.TextContent(type="text", text="bad input"), is_error=True), server="s", tool="x"
        )
    )
    assert error["error"] == "MCP tool 'x' on server 's' reported an error: bad input"


def test_attachments_are_bounded():
    import base64

    from mcp import types as t

    from hermes_nb.tools.mcp_client import results as mcp_results

    image = t.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png")
    first = mcp_results.convert_result(_result(image), server="s", tool="x").rsplit("id=", 1)[1][:-1]
    for _ in range(mcp_results.MAX_ATTACHMENTS):
        mcp_results.convert_result(_result(image), server="s", tool="x")
    assert get_mcp_attachment(first) is None


# -- mcp-server-time ------------------------------------------------------------------------------


@pytest.mark.mcp
def test_time_server_discover_and_call_through_dispatch():
    found = discover_mcp_tools(
        {"mcp_servers": {"time": {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}}}
    )
    assert found == {"time": ["mcp__time__convert_time", "mcp__time__get_current_time"]}
    entry = registry.get_entry("mcp__time__get_current_time")
    assert entry is not None
    assert (entry.toolset, entry.source, entry.origin, entry.is_async) == ("mcp-time", "mcp", "time", True)
    assert "timezone" in entry.schema["parameters"]["properties"]
    # the server says read-only, but it is not trusted: annotations may not relax scheduling
    assert entry.metadata["annotations"]["read_only_hint"] is True and entry.read_only is False
    assert entry.metadata["timeout"] == 120
    result = json.loads(registry.dispatch("mcp__time__get_current_time", {"timezone": "UTC"}))
    assert result["timezone"] == "UTC" and "datetime" in result
    # registry validates against the server's schema before anything is sent
    assert "Invalid arguments" in registry.dispatch("mcp__time__get_current_time", {})
    [status] = mcp_status()
    assert (status.name, status.transport, status.status, status.tool_count) == ("time", "stdio", "ready", 2)


@pytest.mark.mcp
def test_trusted_server_annotations_may_relax_and_include_filters():
    found = discover_mcp_tools(
        {"mcp_servers": {"time": {"command": TIME_SERVER, "trusted": True, "tools": {"include": ["get_*"]}}}}
    )
    assert found == {"time": ["mcp__time__get_current_time"]}
    assert registry.get_entry("mcp__time__get_current_time").read_only is True


@pytest.mark.mcp
def test_servers_start_concurrently_and_async_discovery_works():
    import asyncio

    cfg = {"mcp_servers": {f"t{i}": {"command": TIME_SERVER} for i in range(3)}}
    found = asyncio.run(mcp_tool.adiscover_mcp_tools(cfg))
    assert sorted(found) == ["t0", "t1", "t2"] and all(len(v) == 2 for v in found.values())
    assert registry.dispatch("mcp__t2__get_current_time", {"timezone": "UTC"}).startswith("{")


# -- our dynamic server ---------------------------------------------------------------------------


@pytest.mark.mcp
def test_list_changed_refresh_changed_definition_guard_and_approve(hermes_home):
    names = add_mcp_server(dynamic_config())
    assert "mcp__dyn__echo" in names
    approvals = json.loads((hermes_home / "mcp_approved.json").read_text())
    assert "mcp__dyn__echo" in approvals  # first sight counts as approval
    assert refresh_pending_mcp_servers() == {}  # cheap and empty when nothing changed

    assert registry.dispatch("mcp__dyn__mutate", {"what": "add"}) == "done: add"
    wait_until(lambda: mcp_tool._connections["dyn"].dirty, what="list_changed")
    assert "mcp__dyn__extra" not in registry  # never during a batch
    refreshed = refresh_pending_mcp_servers()
    assert "mcp__dyn__extra" in refreshed["dyn"] and registry.dispatch("mcp__dyn__extra", {}) == "extra!"

    registry.dispatch("mcp__dyn__mutate", {"what": "describe"})
    wait_until(lambda: mcp_tool._connections["dyn"].dirty, what="list_changed")
    refresh_pending_mcp_servers()
    entry = registry.get_entry("mcp__dyn__echo")
    assert entry.description == "Echo the text back (version 1)."
    assert entry.disabled_reason == "definition changed since approved; run %mcp approve mcp__dyn__echo"
    assert "disabled" in registry.dispatch("mcp__dyn__echo", {"text": "hi"})
    assert approve_mcp_tool("mcp__dyn__echo") == ["mcp__dyn__echo"]
    assert registry.dispatch("mcp__dyn__echo", {"text": "hi"}) == "hi"

    registry.dispatch("mcp__dyn__mutate", {"what": "remove"})
    wait_until(lambda: mcp_tool._connections["dyn"].dirty, what="list_changed")
    refresh_pending_mcp_servers()
    assert "mcp__dyn__extra" not in registry


@pytest.mark.mcp
def test_concurrent_calls_from_other_tasks_share_one_session():
    import asyncio

    add_mcp_server(dynamic_config())
    pid = registry.dispatch("mcp__dyn__pid", {})

    async def many() -> list[str]:
        calls = [registry.dispatch_async("mcp__dyn__echo", {"text": f"call {i}"}) for i in range(8)]
        return await asyncio.gather(*calls, registry.dispatch_async("mcp__dyn__slow", {"seconds": 0.2}))

    results = asyncio.run(many())  # another loop, other tasks: each crosses to the owner's loop
    assert results == [f"call {i}" for i in range(8)] + ["slept 0.2"]
    assert registry.dispatch("mcp__dyn__pid", {}) == pid  # the same server process throughout


@pytest.mark.mcp
def test_changed_definition_stays_disabled_across_restarts(hermes_home):
    (hermes_home / "mcp_approved.json").write_text(json.dumps({"mcp__dyn__echo": "an-older-definition"}))
    add_mcp_server(dynamic_config())
    assert registry.get_entry("mcp__dyn__echo").disabled_reason.startswith("definition changed")
    assert registry.get_entry("mcp__dyn__pid").disabled_reason is None
    assert approve_mcp_tool("dyn")  # a server name approves all of its tools
    assert registry.get_entry("mcp__dyn__echo").disabled_reason is None


@pytest.mark.mcp
def test_an_mcp_tool_never_replaces_a_builtin():
    registry.register(
        "mcp__dyn__clash", "file", {"name": "mcp__dyn__clash", "description": "built-in", "parameters": {"type": "object", "properties": {}}},
        lambda args, **kw: "builtin",
    )  # fmt: skip
    names = add_mcp_server(dynamic_config())
    assert "mcp__dyn__clash" not in names and "mcp__dyn__echo" in names
    assert registry.dispatch("mcp__dyn__clash", {}) == "builtin"
    assert any(f.name == "dyn/clash" and "already belongs" in f.message for f in failures())
    remove_mcp_server("dyn")
    assert registry.get_entry("mcp__dyn__clash").source == "builtin"


@pytest.mark.mcp
def test_destructive_hint_always_applies_and_read_only_hint_does_not_override_it():
    add_mcp_server(dynamic_config(trusted=True))
    wipe = registry.get_entry("mcp__dyn__wipe")
    assert wipe.needs_approval is True and wipe.read_only is False
    assert registry.get_entry("mcp__dyn__echo").read_only is True  # trusted


@pytest.mark.mcp
def test_remove_and_live_add_without_restart():
    add_mcp_server(dynamic_config())
    assert remove_mcp_server("dyn") is True
    assert not [e for e in registry.entries() if e.source == "mcp"]
    assert remove_mcp_server("dyn") is False
    assert registry.dispatch("mcp__dyn__pid", {}).startswith('{"error"')


# -- server-everything ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def everything() -> Path:
    node_or_fail()
    from tests.support.npm_everything import everything_entry

    return everything_entry()


@pytest.mark.mcp
@pytest.mark.slow
def test_everything_over_stdio(everything):
    found = discover_mcp_tools(
        {"mcp_servers": {"ev": {"command": "node", "args": [str(everything), "stdio"]}}}
    )
    names = set(found["ev"])
    assert {"mcp__ev__echo", "mcp__ev__get-structured-content", "mcp__ev__get-tiny-image"} <= names
    assert mcp_tool._connections["ev"].list_changed_count >= 1  # sent right after initialize
    assert registry.dispatch("mcp__ev__echo", {"message": "hello"}) == "Echo: hello"
    structured = json.loads(registry.dispatch("mcp__ev__get-structured-content", {"location": "Chicago"}))
    assert set(structured) >= {"temperature", "conditions", "humidity"}
    image = registry.dispatch("mcp__ev__get-tiny-image", {})
    [placeholder] = [line for line in image.splitlines() if line.startswith("[image:")]
    attachment = get_mcp_attachment(placeholder.rsplit("id=", 1)[1].rstrip("]"))
    assert attachment is not None and attachment.mime_type == "image/png"
    assert attachment.data.startswith(b"\x89PNG") and f"{len(attachment.data)} bytes" in placeholder
    progress: list[tuple] = []
    done = registry.dispatch(
        "mcp__ev__trigger-long-running-operation",
        {"duration": 0.6, "steps": 3},
        progress=lambda *a: progress.append(a),
    )
    assert "completed" in done
    assert [p[0] for p in progress] == [1, 2, 3] and progress[-1][1] == 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.mcp
@pytest.mark.slow
def test_everything_over_streamable_http(everything):
    port = _free_port()
    proc = subprocess.Popen(
        ["node", str(everything), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:

        def listening() -> bool:
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, timeout=30, what="server-everything to listen")
        found = discover_mcp_tools({"mcp_servers": {"evh": {"url": f"http://127.0.0.1:{port}/mcp"}}})
        assert "mcp__evh__echo" in found["evh"]
        assert registry.dispatch("mcp__evh__echo", {"message": "over http"}) == "Echo: over http"
        assert mcp_status()[0].transport == "http"
        shutdown_mcp_servers()
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


# -- audit of issue 5: names, approval, batches, in-flight removal --------------------------------


def _changed(server: str = "dyn") -> None:
    wait_until(lambda: mcp_tool._connections[server].dirty, what="tools/list_changed")


@pytest.mark.mcp
def test_odd_and_long_tool_names_stay_distinct_valid_and_routed():
    add_mcp_server(dynamic_config())
    registry.dispatch("mcp__dyn__mutate", {"what": "odd"})
    _changed()
    names = refresh_pending_mcp_servers()["dyn"]
    odd = {
        registry.get_entry(n).metadata["mcp_tool"]: n
        for n in names
        if registry.get_entry(n).metadata["mcp_tool"] in ("do.it", "do_it", "l" * 70 + "\u00e9")
    }
    assert len(set(odd.values())) == 3  # "do.it" and "do_it" both clean to do_it: one gets a hash
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in odd.values())
    assert registry.dispatch(odd["do.it"], {}) == "dotted"
    assert registry.dispatch(odd["do_it"], {}) == "underscored"
    assert registry.dispatch(odd["l" * 70 + "\u00e9"], {}) == "long"


@pytest.mark.mcp
def test_servers_whose_names_clean_alike_never_replace_each_others_tools():
    discover_mcp_tools([dynamic_config("my.srv"), dynamic_config("my_srv")])
    by_server = {
        e.metadata["server"]: e.name for e in registry.entries() if e.metadata.get("mcp_tool") == "pid"
    }
    assert set(by_server) == {"my.srv", "my_srv"} and len(set(by_server.values())) == 2
    pids = {registry.dispatch(name, {}) for name in by_server.values()}
    assert len(pids) == 2  # each name reaches its own server process


@pytest.mark.mcp
def test_destructive_tool_asks_and_a_deny_blocks_it():
    from hermes_nb.tools.approval import set_default_approval_callback

    add_mcp_server(dynamic_config(trusted=True))  # even a trusted server's destructive tool asks
    asked: list[tuple[str, str, str]] = []
    answers = ["deny", "once"]

    def person(subject: str, key: str, description: str) -> str:
        asked.append((subject, key, description))
        return answers.pop(0)

    undo = set_default_approval_callback(person)
    try:
        denied = json.loads(registry.dispatch("mcp__dyn__wipe", {}))
        assert denied["blocked"] is True and "denied" in denied["error"]
        assert registry.dispatch("mcp__dyn__wipe", {}) == "wiped"
    finally:
        undo()
    assert [a[1] for a in asked] == ["tool:mcp__dyn__wipe"] * 2
    assert asked[0][0].startswith("mcp__dyn__wipe")
    assert "approval" in registry.dispatch("mcp__dyn__wipe", {})  # no one to ask: blocked, not run


@pytest.mark.mcp
def test_a_change_arriving_during_a_batch_applies_only_after_it():
    from hermes_nb.tools.batch.scheduling import run_tool_batch

    add_mcp_server(dynamic_config())

    def call(i: int, name: str, args: dict) -> dict:
        return {"id": f"c{i}", "function": {"name": name, "arguments": json.dumps(args)}}

    first = run_tool_batch(
        [call(0, "mcp__dyn__mutate", {"what": "add"}), call(1, "mcp__dyn__slow", {"seconds": 0.3}),
         call(2, "mcp__dyn__extra", {})]
    )  # fmt: skip
    assert first[0].content == "done: add"
    assert mcp_tool._connections["dyn"].dirty  # the notification came in while the batch ran...
    assert "Unknown tool" in first[2].content and "mcp__dyn__extra" not in registry  # ...not applied
    [second] = run_tool_batch([call(3, "mcp__dyn__extra", {})])
    assert second.content == "extra!"  # applied before the next batch


@pytest.mark.mcp
def test_a_tool_removed_by_list_changed_finishes_its_call_in_flight(tmp_path):
    import threading

    add_mcp_server(dynamic_config())
    results: list[str] = []
    release = tmp_path / "release"  # the call runs until the test says so (it slept 1 s: run alone, a fresh
    # process's first refresh could take longer, the call ended first, and the removal was rightly not deferred)
    worker = threading.Thread(
        target=lambda: results.append(
            registry.dispatch("mcp__dyn__slow", {"seconds": 120, "until": str(release)})
        )
    )
    worker.start()
    wait_until(lambda: mcp_tool._in_flight.get("mcp__dyn__slow"), what="call in flight")
    assert registry.dispatch("mcp__dyn__mutate", {"what": "drop:slow"}) == "done: drop:slow"
    _changed()
    refresh_pending_mcp_servers()  # another thread's batch boundary while 'slow' still runs
    assert "mcp__dyn__slow" in registry
    release.touch()
    worker.join(30)
    assert results == ["released"]
    assert mcp_tool._needs_refresh()  # the deferred removal is still pending, so the next boundary applies it
    refresh_pending_mcp_servers()
    assert "mcp__dyn__slow" not in registry


@pytest.mark.mcp
def test_servers_started_without_shutdown_end_at_interpreter_exit(tmp_path):
    """Even one that ignores its closed stdin (DYN_LINGER): the atexit hook stops every server."""
    script = tmp_path / "leave.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from hermes_nb.tools.mcp_tool import discover_mcp_tools\n"
        "found = discover_mcp_tools({'mcp_servers': {"
        f"'a': {{'command': {TIME_SERVER!r}}}, "
        f"'b': {{'command': {sys.executable!r}, 'args': [{str(FIXTURES / 'dynamic_server.py')!r}], "
        "'env': {'DYN_LINGER': '1'}}}})\n"
        "assert all(found.values()), found\n"
        "print('started', flush=True)\n"
        # no shutdown_mcp_servers(): the interpreter simply ends
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        env={**os.environ, "HERMES_NB_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children: set[int] = set()

    def started() -> bool:
        children.update(descendants(proc.pid))
        return len(children) >= 2 or proc.poll() is not None

    wait_until(started, timeout=30, what="the servers to start")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "started" in out, err
    children |= {int(p) for p in _time_server_pids()}
    try:
        wait_until(lambda: not [p for p in children if _alive(p)], timeout=15, what="orphans to end")
    finally:
        for pid in [p for p in children if _alive(p)]:  # a failed run must not leave them behind
            os.kill(pid, 9)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _time_server_pids() -> list[str]:
    """mcp-server-time processes whose parent is init (orphans), from /proc."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                ppid = fh.read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        if b"mcp-server-time" in cmd and ppid == "1":
            out.append(entry)
    return out
