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
