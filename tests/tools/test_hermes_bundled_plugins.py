"""Hermes's own bundled plugins, taken from the hermes-agent 0.19.0 wheel, load and work in hermes_nb.

``security-guidance`` registers ``pre_tool_call`` and ``transform_tool_result``: in its default (warn)
mode a ``write_file`` of dangerous code gets a warning appended to the result the model sees; in
block mode the write is refused and nothing is written. ``disk-cleanup`` registers
``post_tool_call`` and ``on_session_end``: it loads, and doctor lists the session hook as not run.
The plugin folders are copied at test time from the installed wheel (files only, no dependencies).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources import plugins
from hermes_nb.tools.sources.load_report import clear_failures, failures
from tests.support.venvs import cached_venv

pytestmark = [pytest.mark.hermes, pytest.mark.slow]


@pytest.fixture(scope="module")
def bundled() -> Path:
    """The ``plugins/`` folder of hermes-agent 0.19.0 (installed without dependencies into a cached venv)."""
    venv = cached_venv("hermes-files", [["--no-deps", "hermes-agent==0.19.0"]])
    [folder] = venv.glob("lib/python*/site-packages/plugins")
    return folder


@pytest.fixture
def loaded(bundled: Path, hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("security-guidance", "disk-cleanup"):
        shutil.copytree(bundled / name, hermes_home / "plugins" / name)
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    monkeypatch.delenv("SECURITY_GUIDANCE_BLOCK", raising=False)
    monkeypatch.delenv("SECURITY_GUIDANCE_DISABLE", raising=False)
    found = plugins.discover_plugins()
    yield found
    plugins.unload_plugins()
    clear_failures("plugin")
    for name in [m for m in sys.modules if m.startswith(f"{plugins.MODULE_PREFIX}.user_")]:
        del sys.modules[name]


DANGEROUS = "import pickle\n\ndata = pickle.load(open('x.bin', 'rb'))\n"


def test_bundled_plugins_load_with_their_hooks(loaded):
    assert {"security-guidance", "disk-cleanup"} <= set(loaded)
    infos = {p.name: p for p in plugins.loaded_plugins()}
    assert set(infos["security-guidance"].hooks) == {"pre_tool_call", "transform_tool_result"}
    assert set(infos["disk-cleanup"].hooks) == {"post_tool_call", "on_session_end"}
    notes = {f.name: f.message for f in failures() if f.source == "plugin"}
    assert "security-guidance" not in notes and "disk-cleanup" not in notes
    assert "on_session_end" in notes["disk-cleanup/unsupported"]


def test_security_guidance_warns_on_a_dangerous_write(loaded, tmp_path: Path):
    result = registry.dispatch("write_file", {"path": "loader.py", "content": DANGEROUS})
    head, _, warning = result.partition("\n\n")
    assert json.loads(head)["bytes_written"] == len(DANGEROUS)
    assert "Security guidance" in warning and "pickle" in warning
    assert (tmp_path / "loader.py").read_text() == DANGEROUS
    assert "Security guidance" not in registry.dispatch("write_file", {"path": "ok.py", "content": "x = 1\n"})


def test_security_guidance_block_mode_refuses_the_write(loaded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SECURITY_GUIDANCE_BLOCK", "1")
    error = json.loads(registry.dispatch("write_file", {"path": "blocked.py", "content": DANGEROUS}))["error"]
    assert "security-guidance refused this write" in error
    assert not (tmp_path / "blocked.py").exists()
