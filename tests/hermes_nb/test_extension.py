"""Load, unload and reload of the extension in a plain InteractiveShell (no kernel, no running loop)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

import hermes_nb
from hermes_nb import _state


@pytest.fixture
def ip() -> Iterator[Any]:
    shell: Any = InteractiveShell.instance()
    yield shell
    if "hermes_nb" in shell.extension_manager.loaded:
        shell.run_line_magic("unload_ext", "hermes_nb")


def _counts(ip: Any) -> tuple[int, int, int, int]:
    magics = sum(len(table) for table in ip.magics_manager.magics.values())
    callbacks = sum(len(cbs) for cbs in ip.events.callbacks.values())
    ours = sum(1 for c in ip.configurables if type(c).__module__.startswith("hermes_nb"))
    return magics, callbacks, ours, len(_state.undos)


def test_load_unload_load_leaves_one_set(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    before = _counts(ip)
    ip.run_line_magic("load_ext", "hermes_nb")
    loaded = _counts(ip)
    assert {"tool"} <= set(ip.magics_manager.magics["cell"])
    assert {"tools", "toolsets"} <= set(ip.magics_manager.magics["line"])
    assert loaded[0] >= before[0] + 3

    ip.run_line_magic("unload_ext", "hermes_nb")
    assert _counts(ip) == before
    assert "tools" not in ip.magics_manager.magics["line"]
    assert "tool" not in ip.magics_manager.magics["cell"]

    ip.run_line_magic("load_ext", "hermes_nb")
    assert _counts(ip) == loaded
    for _ in range(3):
        ip.run_line_magic("reload_ext", "hermes_nb")
    assert _counts(ip) == loaded


def test_load_prints_one_summary_line(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("load_ext", "hermes_nb")
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert out[0] == hermes_nb._SUMMARY  # known without reading a tool: discovery waits for first use


def test_load_pushes_nothing_into_the_namespace(ip: Any) -> None:
    before = set(ip.user_ns)
    ip.run_line_magic("load_ext", "hermes_nb")
    assert set(ip.user_ns) == before


def test_public_api_is_lazy_and_complete() -> None:
    from hermes_nb.tools.registry import registry
    from hermes_nb.tools.schema.derive import tool

    assert set(hermes_nb.__all__) >= {"load_ipython_extension", "unload_ipython_extension", "tool",
                                      "registry", "toolsets", "Agent"}
    assert hermes_nb.registry is registry
    assert hermes_nb.tool is tool
    assert hermes_nb.toolsets is sys.modules["hermes_nb.selection"]
    assert callable(hermes_nb.toolsets.select)
    with pytest.raises(AttributeError):
        hermes_nb.no_such_name  # noqa: B018


def test_load_imports_no_trace_module_or_opentelemetry_even_with_tracing_configured(tmp_path: Any) -> None:
    """Traces cost the load nothing: with all three ways on configured (config.yaml, the standard variables,
    content capture), ``%load_ext`` imports no ``hermes_nb.traces`` module and no OpenTelemetry."""
    import json
    import os
    import subprocess

    (tmp_path / "config.yaml").write_text("tracing:\n  otlp_endpoint: http://127.0.0.1:9\n  capture_content: true\n")
    code = ("import json, sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "InteractiveShell.instance().run_line_magic('load_ext', 'hermes_nb')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('hermes_nb.traces', 'opentelemetry')))))")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}, "HERMES_NB_HOME": str(tmp_path),
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",  # read by a run, never contacted by the load
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_an_import_error_inside_a_feature_module_is_not_swallowed(
    ip: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # a feature module that exists but fails to import must surface, not be skipped
    monkeypatch.setattr(hermes_nb, "_FEATURES", (*hermes_nb._FEATURES, ("hermes_nb_broken_feature", "load")))
    (tmp_path / "hermes_nb_broken_feature.py").write_text("import no_such_module_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = _counts(ip)
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        hermes_nb.load_ipython_extension(ip)
    assert _counts(ip) == before  # what loaded before the failure was undone


def test_missing_feature_module_is_an_error_and_loads_nothing(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hermes_nb, "_FEATURES", (("hermes_nb.startup", "tool_magics"), ("hermes_nb.not_written_yet", "load")))
    with pytest.raises(ModuleNotFoundError, match="not_written_yet"):
        hermes_nb.load_ipython_extension(ip)
    assert "tools" not in ip.magics_manager.magics["line"]  # the magics loaded before it were undone
    monkeypatch.undo()
    hermes_nb.load_ipython_extension(ip)
    assert "tools" in ip.magics_manager.magics["line"]
    hermes_nb.unload_ipython_extension(ip)
    assert "tools" not in ip.magics_manager.magics["line"]


def test_configured_mcp_servers_start_when_the_loading_cell_ends_or_a_waiter_asks_never_after_the_undo(
        ip: Any, hermes_home: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb import startup
    from hermes_nb.tools.mcp_client import start

    (hermes_home / "config.yaml").write_text("mcp_servers: {}\n")
    begun: list[int] = []
    monkeypatch.setattr(start, "_submit_configured_servers", lambda: begun.append(1))  # the seam to the loop
    monkeypatch.setattr(start, "_mcp_start", None)
    undo = startup.mcp(ip)
    assert start._mcp_start is None and begun == []  # nothing during the load
    ip.run_cell("1")  # the loading cell's end begins it, on a thread
    start.wait_for_mcp_start()
    assert begun == [1]
    ip.run_cell("2")  # once only
    undo()
    assert begun == [1]

    undo = start.start_configured_servers(deferred=True)
    start.wait_for_mcp_start()  # a waiter (the registry's first use, %mcp) begins it at once
    assert begun == [1, 1]
    undo()
    undo = start.start_configured_servers(deferred=True)
    undo()  # undone before it began: it never does
    start.begin_deferred_start()
    start.wait_for_mcp_start()
    assert begun == [1, 1]


@pytest.mark.kernel
def test_the_load_imports_only_its_stand_ins(tmp_path: Any) -> None:
    """In a kernel, the load's own cost is its imports: what only a later step needs (the config module, the
    workspace, the display and the cell helpers, the Hermes bridge) is imported by that step."""
    import json

    from tests.support.kernel import KernelSession

    (tmp_path / "config.yaml").write_text("mcp_servers: {}\n")  # a configured home: its look waits too
    code = ("import json, sys\nbefore = set(sys.modules)\nget_ipython().run_line_magic('load_ext', 'hermes_nb')\n"
            "print('NEW', json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith('hermes_nb'))))")
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as kernel:
        out = kernel.run(code).stdout
    loaded = set(json.loads(next(line for line in out.splitlines() if line.startswith("NEW "))[4:]))
    later = {"hermes_nb.tools.config", "hermes_nb.tools.errors", "hermes_nb.tools.workspace", "hermes_nb.display",
             "hermes_nb.display.interrupts", "hermes_nb.magics.cells", "hermes_nb.interop.hermes_tools"}
    assert loaded & later == set()
    assert {"hermes_nb.startup", "hermes_nb.magics.registry", "hermes_nb.tools.safety.writes.imports"} <= loaded
