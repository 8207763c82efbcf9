"""The magics as stand-ins: imported on first use, the real help, and unload removing only what is ours."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb.magics.registry import LazyMagic, add_magics

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str, home: Path) -> dict[str, Any]:
    """Run ``code`` in a new interpreter with a plain InteractiveShell ``ip``; it prints one JSON line."""
    prelude = "import json, sys\nfrom IPython.core.interactiveshell import InteractiveShell\nip = InteractiveShell.instance()\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, env={**_env(), "HERMES_NB_HOME": str(home)}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_load_imports_no_magics_module_registry_or_yaml_and_first_use_finds_the_built_ins(tmp_path: Path) -> None:
    out = _fresh("""
        ip.run_line_magic("load_ext", "hermes_nb")
        heavy = ["hermes_nb.magics.tools", "hermes_nb.magics.mcp", "hermes_nb.magics.agent", "hermes_nb.magics.hermes",
                 "hermes_nb.display.prompts", "hermes_nb.tools.registry", "hermes_nb.tools.sources.discovery", "yaml", "argparse",
                 # the model seam, MCP, widgets, prices and the agent load on first use, never at %load_ext
                 "openai", "httpx", "mcp", "ipywidgets", "genai_prices", "hermes_nb.agent.loop", "hermes_nb.display.live"]
        after_load = [m for m in heavy if m in sys.modules and m != "argparse"]
        table = ip.run_line_magic("tools", "")
        names = [row[1] for row in table.rows]
        from hermes_nb.tools.model_tools import get_tool_definitions
        defined = [d["function"]["name"] for d in get_tool_definitions(["terminal"])]
        print(json.dumps({"after_load": after_load, "names": names, "defined": defined,
                          "prompts": "hermes_nb.display.prompts" in sys.modules}))
    """, tmp_path)
    assert out["after_load"] == []
    assert {"terminal", "read_file", "clarify"} <= set(out["names"])  # %tools sees the built-ins
    assert sorted(out["defined"]) == ["process", "terminal"]  # and so does what %%agent sends the model
    assert out["prompts"]  # the inline prompts are installed before any tool can be called


def test_a_direct_registry_import_after_load_still_discovers(tmp_path: Path) -> None:
    out = _fresh("""
        ip.run_line_magic("load_ext", "hermes_nb")
        from hermes_nb.tools.registry import registry  # not through model_tools: armed as it is imported
        print(json.dumps({"terminal": "terminal" in registry, "kind": type(registry).__name__,
                          "call": registry.dispatch("read_file", {"path": "nope.txt"})[:40]}))
    """, tmp_path)
    assert out["terminal"] and out["kind"] == "ToolRegistry"  # plain again after the first use
    assert "error" in out["call"].lower()


def test_tools_call_of_a_built_in_right_after_load(tmp_path: Path) -> None:
    work = tmp_path / "work"  # the workspace apart from the home: the file tools never read the home
    work.mkdir()
    (work / "hello.txt").write_text("hi there\n")
    out = _fresh(f"""
        import os
        os.chdir({str(work)!r})
        ip.run_line_magic("load_ext", "hermes_nb")
        shown = ip.run_line_magic("tools", "call read_file path=hello.txt")
        print(json.dumps({{"text": str(shown._repr_mimebundle_()["text/plain"])}}))
    """, tmp_path / "home")
    assert "hi there" in out["text"]


@pytest.mark.parametrize(("kind", "name", "needle"), [
    ("line", "tools", "%tools show NAME"),
    ("cell", "tool", "--requires-env"),
    ("line", "mcp", "%mcp add NAME -- COMMAND"),
    ("cell", "agent", "%%agent [--model MODEL]"),
])
def test_help_shows_the_real_docstring_and_usage(ip: Any, capsys: pytest.CaptureFixture[str], kind: str, name: str,
                                                  needle: str) -> None:
    stub = ip.magics_manager.magics[kind][name]
    assert isinstance(stub, LazyMagic)
    assert needle in (stub.__doc__ or "")
    ip.run_line_magic("pinfo", ("%%" if kind == "cell" else "%") + name)
    shown = capsys.readouterr().out
    assert needle in shown and ".py" in shown  # the real docstring, and the file it lives in


def test_another_extension_owning_agent_keeps_it_after_unload() -> None:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hermes_nb")

    def theirs(line: str) -> str:
        return "their agent"

    ip.register_magic_function(theirs, "line", "agent")  # another extension, loaded after us
    try:
        ip.run_line_magic("unload_ext", "hermes_nb")
        assert ip.run_line_magic("agent", "") == "their agent"
        assert "agent" not in ip.magics_manager.magics["cell"]  # our %%agent went
        ip.run_line_magic("load_ext", "hermes_nb")  # load / unload / load
        assert isinstance(ip.magics_manager.magics["line"]["agent"], LazyMagic)
        ip.run_line_magic("unload_ext", "hermes_nb")
        assert "agent" not in ip.magics_manager.magics["line"]  # ours replaced theirs; ours is removed
    finally:
        ip.magics_manager.magics["line"].pop("agent", None)


def test_a_name_taken_after_the_real_magics_were_made_is_left_alone() -> None:
    ip = InteractiveShell.instance()
    handle = add_magics(ip, "hermes_nb.magics.agent:AgentMagics", line=("agent",), cell=("agent",))
    handle.resolve()
    ip.register_magic_function(lambda line, cell: "theirs", "cell", "agent")
    try:
        handle.remove()
        handle.remove()  # idempotent
        assert ip.magics_manager.magics["cell"]["agent"]("", "") == "theirs"
        assert "agent" not in ip.magics_manager.magics["line"]
        assert not any(type(c).__name__ == "AgentMagics" for c in ip.configurables)
        assert "AgentMagics" not in ip.magics_manager.registry
    finally:
        ip.magics_manager.magics["cell"].pop("agent", None)


def test_config_before_first_use_reaches_the_deferred_configurables(ip: Any) -> None:
    ip.run_line_magic("config", "Prompts.timeout = 61.0")
    from hermes_nb.display import prompts
    assert prompts.settings.timeout == 61.0
    assert "ToolMagics" in {type(c).__name__ for c in ip.configurables}  # %config made the real magics


def test_hermes_bridge_starts_after_the_loading_cell_only_when_hermes_agent_is_findable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb import startup
    from hermes_nb.interop.hermes_tools import bridge

    calls: list[str] = []
    monkeypatch.setattr(bridge, "start", lambda **kw: calls.append("start"))
    monkeypatch.setattr(bridge, "stop", lambda: calls.append("stop"))
    ip = InteractiveShell.instance()
    monkeypatch.setattr(startup, "_hermes_findable", lambda: False)
    startup.hermes(ip)()
    assert calls == []  # absent: not even HermesMagics is made
    undo = startup.hermes(ip)
    ip.run_cell("1")  # the cell's end runs the start, which finds no hermes-agent
    bridge.wait(0)
    undo()
    assert calls == []  # neither started nor stopped
    monkeypatch.setattr(startup, "_hermes_findable", lambda: True)
    undo = startup.hermes(ip)
    assert calls == []  # nothing during the load: the import waits for the cell to end
    ip.run_cell("1")  # the loading cell's end (post_run_cell) starts it, on a thread
    bridge.wait(0)  # (a reader waits for the hand-over)
    assert calls == ["start"]
    undo()
    assert calls == ["start", "stop"]
    assert "hermes" not in ip.magics_manager.magics["line"]
    undo = startup.hermes(ip)  # a reader before the cell's end starts it at once
    bridge.status()
    assert calls == ["start", "stop", "start"]
    undo()
    ip.run_cell("1")  # and the cell's end does not start it twice
    assert calls == ["start", "stop", "start", "stop"]
