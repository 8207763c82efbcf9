"""``evaluate(..., executor=client)`` on a real Dask ``LocalCluster`` with 2 process workers."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes_nb
from hermes_nb.evaluation.remote import RemoteToolError
from hermes_nb.tools.registry import registry
from hermes_nb.tools.schema.derive import tool
from tests.support.fake_openai import Reply, call
from tests.support.routed_openai import RoutedOpenAI, prompt_of, turn_of

pytestmark = pytest.mark.slow

#: Tools as a notebook defines them: their module cannot be imported on a worker, so they travel by value.
CELL = '''
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b

def wipe(path: str) -> str:
    """Deletes a folder (asks first)."""
    return "wiped " + path
'''


#: A Hermes-style tool file in the workers' home: loaded there by discovery, not shipped.
TOOL_FILE = '''
from tools.registry import registry

def _shout(args, **kw):
    return args["text"].upper() + "!"

registry.register(name="file_shout", toolset="t13file", schema={"name": "file_shout", "description": "Shouts.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    handler=_shout)
'''


@pytest.fixture(scope="module")
def cluster_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("dask_home")
    (home / "tools").mkdir()
    (home / "tools" / "shout_tool.py").write_text(TOOL_FILE)
    return home


@pytest.fixture(scope="module")
def client(cluster_home: Path) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                           silence_logs=50, env={"HERMES_NB_HOME": str(cluster_home)})
    with Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture
def notebook_tools() -> None:
    namespace: dict[str, Any] = {"__name__": "notebook_cell_13"}
    exec(compile(CELL, "<cell>", "exec"), namespace)
    tool(namespace["add"], toolset="t13d")
    registry.register("wipe", "t13d", {"name": "wipe", "description": "Deletes a folder.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        _handler(namespace["wipe"]), needs_approval=True, source="notebook")


def _handler(fn: Any) -> Any:
    from hermes_nb.tools.schema.derive import make_handler

    return make_handler(fn)


def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    if turn == 0:
        if prompt.startswith("wipe"):
            return Reply(tool_calls=(call("wipe", {"path": "/tmp/x"}, "w0"),), delay=0.05)
        a = int(prompt.split()[1])
        return Reply(tool_calls=(call("add", {"a": a, "b": 1}, "c0"),), delay=0.3)
    return Reply(content="ok", delay=0.05)


def _template(srv: RoutedOpenAI) -> dict[str, Any]:
    return {"model": "fake-model", "base_url": srv.base_url, "enabled_toolsets": ["t13d"], "stream": False}


def test_cases_run_on_workers_and_a_killed_worker_loses_only_its_cases_in_flight(
        client: Any, notebook_tools: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [{"prompt": f"add {i} and 1", "expected_tools": ["add"], "expected_args": {"add": {"a": i}}}
             for i in range(12)]
    pids = client.run(os.getpid)  # worker address -> process id
    killed = threading.Event()
    done_at_kill: set[int] = set()

    def kill_one(body: dict[str, Any]) -> None:
        # Kill the worker running the case whose first request this is: that case is in flight for sure
        # (its reply waits for this hook), so it must be retried.
        if srv.count >= 6 and turn_of(body) == 0 and not killed.is_set():
            index = prompt_of(body).split()[1]
            busy = [addr for addr, keys in client.processing().items()
                    if addr in pids and any(str(k).endswith(f"-{index}") for k in keys)]
            if busy:
                checkpoint = tmp_path / "checkpoint.json"
                if checkpoint.exists():  # the cases this process had already received
                    done_at_kill.update(int(i) for i in json.loads(checkpoint.read_text())["completed"])
                killed.set()
                os.kill(pids[busy[0]], signal.SIGKILL)

    with RoutedOpenAI(route, on_request=kill_one) as srv:
        result = hermes_nb.evaluate(cases, agent=_template(srv), executor=client, out_dir=tmp_path, display=False)
        first_turns = Counter(prompt_of(b) for b in srv.requests if turn_of(b) == 0)
    assert killed.is_set()
    assert result.summary["cases"] == 12 and result.summary["errors"] == 0, [r.error for r in result.rows]
    assert result.summary["selection_accuracy"] == 1.0 and result.summary["args_accuracy"] == 1.0
    retried = {int(p.split()[1]) for p, n in first_turns.items() if n > 1}
    # The killed worker's cases not yet received here ran again elsewhere (at least the one it was
    # running); no case whose result had arrived was sent to the model again.
    assert retried and not retried & done_at_kill, (first_turns, done_at_kill)
    assert sorted(json.loads(x)["prompt_index"] for x in (tmp_path / "trajectories.jsonl").read_text().splitlines()) \
        == list(range(12))
    assert "(12 of 12 run, " in capsys.readouterr().err  # progress came back from the cluster


def test_a_call_that_would_ask_is_denied_on_the_worker_with_the_reason(
        client: Any, notebook_tools: None, tmp_path: Path) -> None:
    with RoutedOpenAI(route) as srv:
        result = hermes_nb.evaluate([{"prompt": "wipe it", "expected_tools": ["wipe"]}], agent=_template(srv),
                                    executor=client, out_dir=tmp_path, display=False)
    assert result.rows[0].selection_ok and result.rows[0].error is None
    entry = json.loads((tmp_path / "trajectories.jsonl").read_text())
    tool_turn = next(t["value"] for t in entry["conversations"] if t["from"] == "tool")
    assert "BLOCKED" in tool_turn and "no one is available to approve it" in tool_turn
    assert "wiped" not in tool_turn
    assert entry["tool_stats"]["wipe"] == {"count": 1, "success": 0, "failure": 1}


def test_tool_files_are_loaded_on_the_workers(client: Any, cluster_home: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.sources.plugins import discover_plugins, unload_plugins

    monkeypatch.setenv("HERMES_NB_HOME", str(cluster_home))
    discover_plugins()  # this kernel offers the tool too, so the model sees it in the definitions
    assert registry.get_entry("file_shout").source == "plugin"

    def shout(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        return Reply(tool_calls=(call("file_shout", {"text": "hi"}, "s0"),)) if turn == 0 else Reply(content="ok")

    try:
        with RoutedOpenAI(shout) as srv:
            result = hermes_nb.evaluate([{"prompt": "shout hi", "expected_tools": ["file_shout"]}],
                                        agent={**_template(srv), "enabled_toolsets": ["t13file"]},
                                        executor=client, out_dir=tmp_path, display=False)
    finally:
        unload_plugins()
    assert result.rows[0].selection_ok and result.rows[0].error is None
    entry = json.loads((tmp_path / "trajectories.jsonl").read_text())
    assert "HI!" in next(t["value"] for t in entry["conversations"] if t["from"] == "tool")


def test_mcp_tools_are_refused_for_remote_runs_with_a_clear_message(client: Any) -> None:
    registry.register("mcp__srv__now", "mcp-srv", {"name": "mcp__srv__now", "description": "d", "parameters": {
        "type": "object", "properties": {}}}, lambda args, **kw: "now", source="mcp")
    with pytest.raises(RemoteToolError, match=r"MCP tools cannot run on Dask workers \(mcp__srv__now\).*"
                                              r"disabled_toolsets.*mcp-srv"):
        hermes_nb.evaluate([{"prompt": "x"}], agent={"base_url": "http://127.0.0.1:9/v1",
                                                     "enabled_toolsets": ["mcp-srv"]}, executor=client)


def test_a_tool_that_does_not_pickle_is_named_before_anything_runs(client: Any) -> None:
    lock = threading.Lock()

    def locked(x: int) -> int:
        """Uses a lock from the kernel."""
        with lock:
            return x

    tool(locked, toolset="t13p")
    with pytest.raises(RemoteToolError, match="tool 'locked' cannot travel to Dask workers"):
        hermes_nb.evaluate([{"prompt": "x"}], agent={"base_url": "http://127.0.0.1:9/v1",
                                                     "enabled_toolsets": ["t13p"]}, executor=client)


def test_workers_offer_what_this_kernel_offers_when_the_template_names_no_toolsets(
        client: Any, notebook_tools: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a notebook with every toolset selected, a template without toolsets offers them all on the worker
    too: the pinned "everything" (None) was read again there, outside a notebook, as the person's own
    toolsets only, so a worker's model never saw the built-ins a local run offers."""
    import hermes_nb._state as state
    import hermes_nb.selection as sel

    monkeypatch.setattr(state, "shell", object())  # a notebook's kernel: the picker's selection is what is offered
    monkeypatch.setattr(sel.selection, "mode", "all")

    def answer(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        return Reply(content="ok")

    with RoutedOpenAI(answer) as srv:
        template = {k: v for k, v in _template(srv).items() if k != "enabled_toolsets"}
        result = hermes_nb.evaluate([{"prompt": "hello", "expected_tools": []}], agent=template, executor=client,
                                    display=False)
        sent = {t["function"]["name"] for t in srv.requests[0]["tools"]}
    assert result.rows[0].error is None
    assert {"add", "read_file", "terminal"} <= sent  # the notebook's tool and the built-ins, as locally
