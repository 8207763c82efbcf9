"""Hermes's public plugin API, both ways, against the real hermes-agent 0.19.0 from PyPI.

1. Plugin folders taken from the hermes-agent 0.19.0 wheel (its bundled plugins) load unchanged in
   hermes_nb: those that use only the plugin API load and their tool-call hooks run around a call; those
   that import Hermes's internals fail with that module's name, and nothing else.
2. A plugin written for hermes_nb (tools, ``register_hook`` callbacks, ``ctx.profile_name``, a helper
   imported as ``hermes_plugins.<name>.helpers``, the same ``config.yaml``) loads in hermes-agent 0.19.0
   and answers the same calls with the same results as in hermes_nb: plain, blocked by its
   ``pre_tool_call`` hook, and rewritten by its ``transform_tool_result`` hook.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from hermes_nb.tools.model_tools import handle_function_call
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources import plugins
from hermes_nb.tools.sources.load_report import clear_failures, failures
from tests.support.hermes_venv import HERMES_VERSION, hermes_venv
from tests.support.venvs import cached_venv, run_in

pytestmark = [pytest.mark.hermes, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _clean():
    yield
    plugins.unload_plugins()
    clear_failures("plugin")


@pytest.fixture(scope="module")
def bundled() -> Path:
    """The ``plugins/`` folder of the hermes-agent 0.19.0 wheel (installed without dependencies, cached)."""
    venv = cached_venv("hermes-files", [["--no-deps", f"hermes-agent=={HERMES_VERSION}"]])
    [folder] = venv.glob("lib/python*/site-packages/plugins")
    return folder


#: The folders copied from the wheel (a category folder whole, as Hermes lays it out), and the plugins in them.
COPIED = ("disk-cleanup", "security-guidance", "observability", "google_meet")
API_ONLY = ("disk-cleanup", "security-guidance", "observability/langfuse", "observability/nemo_relay")


def test_bundled_plugins_load_unchanged_and_their_hooks_run(bundled: Path, hermes_home: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch):
    for folder in COPIED:
        shutil.copytree(bundled / folder, hermes_home / "plugins" / folder)
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    clear_failures("plugin")  # what earlier tests' plugins left in the load report is theirs
    loaded = plugins.discover_plugins()
    assert sorted(loaded) == sorted(API_ONLY)
    hooks = {p.name: set(p.hooks) for p in plugins.loaded_plugins()}
    assert {"pre_tool_call", "post_tool_call"} <= hooks["observability/langfuse"]
    assert "pre_tool_call" in hooks["observability/nemo_relay"]
    said = {f.name: f.message for f in failures() if f.source == "plugin"}
    assert said["google_meet"] == "ModuleNotFoundError: No module named 'hermes_constants'"
    assert not {n for n in said if "/" not in n} - {"google_meet"}  # nothing else failed
    result = json.loads(handle_function_call("write_file", {"path": "notes.txt", "content": "hello\n"}))
    assert result["bytes_written"] == 6 and (tmp_path / "notes.txt").read_text() == "hello\n"


HELPERS = '''
def shout(text):
    return text.upper() + "!"
'''

PLUGIN = '''
import json

from hermes_plugins.nbguard.helpers import shout


def _shout(args, **kw):
    return json.dumps({"shout": shout(args.get("text", "")), "profile": PROFILE[0]})


def _pre(tool_name="", args=None, **kw):
    if tool_name == "nb_shout" and (args or {}).get("text") == "secret":
        return {"action": "block", "message": "nbguard: not that word"}
    return None


def _transform(tool_name="", result=None, **kw):
    if tool_name == "nb_shout" and isinstance(result, str) and "TAG" in result:
        return result + " [tagged]"
    return None


PROFILE = []


def register(ctx):
    PROFILE.append(ctx.profile_name)
    ctx.register_tool(
        name="nb_shout", toolset="nbguard",
        schema={"name": "nb_shout", "description": "Shout text.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        handler=_shout, emoji="📣",
    )
    ctx.register_hook("pre_tool_call", _pre)
    ctx.register_hook("transform_tool_result", _transform)
'''

CALLS = [["nb_shout", {"text": "hi"}], ["nb_shout", {"text": "secret"}], ["nb_shout", {"text": "TAG me"}]]

IN_HERMES = '''
import json, sys
from hermes_cli.plugins import discover_plugins, get_plugin_manager
import model_tools
discover_plugins()
[info] = [p for p in get_plugin_manager().list_plugins() if p["name"] == "nbguard"]
print(json.dumps({"enabled": info["enabled"], "tools": info["tools"], "hooks": info["hooks"],
                  "results": [model_tools.handle_function_call(n, a) for n, a in json.loads(sys.argv[1])]}))
'''


def _write_plugin(home: Path) -> None:
    folder = home / "plugins" / "nbguard"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: nbguard\nversion: '0.1'\ndescription: shouts, guarded\n")
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (folder / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (home / "config.yaml").write_text("# the same file works in both\nplugins:\n  enabled:\n    - nbguard\n")


@pytest.mark.timeout(600)
def test_a_hermes_nb_plugin_with_hooks_answers_the_same_in_hermes(hermes_home: Path, tmp_path: Path):
    _write_plugin(hermes_home)
    assert plugins.discover_plugins() == ["nbguard"]
    ours = [handle_function_call(name, args) for name, args in CALLS]
    assert json.loads(ours[0]) == {"shout": "HI!", "profile": "default"}
    assert json.loads(ours[1]) == {"error": "nbguard: not that word"}
    assert ours[2].endswith(" [tagged]")
    assert registry.get_entry("nb_shout").emoji == "📣"

    hermes_home_dir = tmp_path / "hermes-home"
    shutil.copytree(hermes_home / "plugins", hermes_home_dir / "plugins")
    shutil.copy(hermes_home / "config.yaml", hermes_home_dir / "config.yaml")
    proc = run_in(hermes_venv(), ["python", "-c", IN_HERMES, json.dumps(CALLS)], cwd=tmp_path,
                  env={"HERMES_HOME": str(hermes_home_dir)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (theirs["enabled"], theirs["tools"], theirs["hooks"]) == (True, 1, 2)
    assert theirs["results"] == ours  # the same answers, the profile name included
