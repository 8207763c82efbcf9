"""``%tools export``: what the exporter refuses (one line each), and the round trip — the exported plugin
and tool file loaded by the REAL hermes-agent 0.19.0 (its plugin manager, its registry, its
``handle_function_call``) give the notebook's result, and load back into hermes_nb."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb.tools.registry import registry
from tests.support.hermes_venv import hermes_venv
from tests.support.venvs import run_in

HELPERS = '''
import re
from math import sqrt

def _clean(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
'''

SLUGIFY = '''
def slugify(text: str, max_len: int = 40) -> dict:
    """Make a URL slug.

    Args:
        text: The text.
        max_len: Longest slug.
    """
    s = _clean(text)[:max_len]
    return {"slug": s, "length": len(s), "root": round(sqrt(len(s)), 3)}
'''

SHOUT = '''
async def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: What to say.
    """
    import asyncio
    await asyncio.sleep(0)
    return text.upper() + "!"
'''

CALLS = [("slugify", {"text": "Hello, Hermes World!", "max_len": 12}), ("shout", {"text": "hi"})]


@pytest.fixture
def ip() -> Iterator[Any]:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    shell.run_cell(HELPERS)
    shell.run_cell_magic("tool", "--toolset text --emoji 🔤 --read-only", SLUGIFY)
    shell.run_cell_magic("tool", "--toolset text --emoji 📣", SHOUT)
    yield shell
    shell.run_line_magic("unload_ext", "hermes_nb")


def _notebook_results() -> list[str]:
    return [registry.dispatch(name, args) for name, args in CALLS]


@pytest.mark.parametrize(("setup", "name", "message"), [
    ("LIMIT = 3\ndef uses_var(a: int) -> int:\n    return a + LIMIT", "uses_var",
     "reads the notebook variable 'LIMIT' (int); pass it as a parameter"),
    ("class Box:\n    pass\ndef uses_class(a: int) -> str:\n    return str(Box())", "uses_class",
     "uses the class 'Box' defined in the notebook"),
    ("def sets_global(a: int) -> int:\n    global COUNT\n    COUNT = a\n    return a", "sets_global",
     "assigns the notebook global 'COUNT'"),
    ("import enum\nclass Mode(enum.Enum):\n    A = 'a'\ndef takes_enum(m: Mode) -> str:\n    return m.value",
     "takes_enum", "parameter 'm' is a dataclass, model or Enum that hermes_nb builds from the JSON"),
    ("WIDTH = 4\ndef default_from_notebook(a: int = WIDTH) -> int:\n    return a", "default_from_notebook",
     "reads the notebook variable 'WIDTH'"),
])
def test_notebook_state_is_a_one_line_error(ip: Any, tmp_path: Path, setup: str, name: str, message: str) -> None:
    ip.run_cell_magic("tool", "", setup)
    with pytest.raises(UsageError, match=re.escape(message)) as err:
        ip.run_line_magic("tools", f"export {name} --file {tmp_path / 'x.py'}")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "x.py").exists()


def test_lambdas_closures_checks_and_other_sources_are_refused(ip: Any, tmp_path: Path) -> None:
    from hermes_nb.tools.schema.derive import make_handler

    schema = {"description": "x", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    registry.register("lam", "t", schema, make_handler(lambda a: a), source="notebook")

    def outer() -> Any:
        k = 2

        def inner(a: int) -> int:
            return a * k
        return inner
    registry.register("clo", "t", schema, make_handler(outer()), source="notebook")
    ip.run_cell_magic("tool", "--check 'True'", "def checked(a: int) -> int:\n    return a")
    out = str(tmp_path / "x.py")
    cases = {"lam": "is a lambda; write it as a def", "clo": "closes over k from an enclosing function",
             "checked": "has a --check expression", "read_file": "is a builtin tool; only %%tool cell tools"}
    for name, message in cases.items():
        with pytest.raises(UsageError, match=re.escape(message)):
            ip.run_line_magic("tools", f"export {name} --file {out}")
    with pytest.raises(UsageError, match="say where: --plugin DIR"):
        ip.run_line_magic("tools", "export slugify")
    with pytest.raises(UsageError, match="no tool named 'nope'"):
        ip.run_line_magic("tools", f"export nope --file {out}")
    ip.run_line_magic("tools", f"export slugify --file {out}")
    with pytest.raises(UsageError, match="exists; pass --force"):
        ip.run_line_magic("tools", f"export slugify --file {out}")
    ip.run_line_magic("tools", f"export slugify --file {out} --force")


_HERMES_PLUGIN = '''
import json, sys
import model_tools  # Hermes's discovery: built-in tools, then plugins enabled in $HERMES_HOME/config.yaml
from hermes_cli.plugins import get_plugin_manager
from tools.registry import registry
loaded = {p.manifest.name: p for p in get_plugin_manager()._plugins.values()}
plugin = loaded["slugs"]
assert plugin.error is None, plugin.error
calls = json.loads(sys.argv[1])
print(json.dumps({
    "tools": sorted(plugin.tools_registered),
    "meta": {n: [registry.get_entry(n).toolset, registry.get_entry(n).emoji] for n, _ in calls},
    "results": [model_tools.handle_function_call(n, a) for n, a in calls],
}))
'''

_HERMES_FILE = '''
import importlib.util, json, sys
import model_tools
from tools.registry import registry
spec = importlib.util.spec_from_file_location("slug_tools", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)  # `from tools.registry import registry` is Hermes's own here
calls = json.loads(sys.argv[1])
print(json.dumps({
    "tools": [],
    "meta": {n: [registry.get_entry(n).toolset, registry.get_entry(n).emoji] for n, _ in calls},
    "results": [model_tools.handle_function_call(n, a) for n, a in calls],
}))
'''

_BACK_IN_HERMES_NB = '''
import json, sys
from hermes_nb.tools.model_tools import ensure_discovered
from hermes_nb.tools.sources.plugins import discover_plugins
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.load_report import failures
ensure_discovered()
discover_plugins()
calls = json.loads(sys.argv[1])
entries = {n: registry.get_entry(n) for n, _ in calls}
print(json.dumps({
    "failures": [f.message for f in failures()],
    "meta": {n: [e.toolset, e.emoji, e.source, e.read_only] for n, e in entries.items()},
    "results": [registry.dispatch(n, a) for n, a in calls],
}))
'''


def _run(args: list[str], **kw: Any) -> dict[str, Any]:
    proc = run_in(hermes_venv(), args, **kw) if args[0] == "python" else subprocess.run(
        args, capture_output=True, text=True, timeout=300, **kw)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.hermes
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_plugin_round_trip_through_real_hermes_and_back(ip: Any, tmp_path: Path) -> None:
    expected = _notebook_results()
    assert json.loads(expected[0])["slug"] == "hello-hermes" and expected[1] == "HI!"
    hermes_home = tmp_path / "hermes-home"
    shown = ip.run_line_magic("tools", f"export slugify shout --plugin {hermes_home / 'plugins' / 'slugs'}")
    assert "plugins.enabled" in shown.text()
    (hermes_home / "config.yaml").write_text("plugins:\n  enabled: [slugs]\n")
    calls = json.dumps(CALLS)
    hermes = _run(["python", "-c", _HERMES_PLUGIN, calls], env={"HERMES_HOME": str(hermes_home)},
                  cwd=tmp_path)
    assert hermes["tools"] == ["shout", "slugify"]
    assert hermes["meta"] == {"slugify": ["text", "🔤"], "shout": ["text", "📣"]}
    assert hermes["results"] == expected

    nb_home = tmp_path / "nb-home"
    (nb_home / "plugins").mkdir(parents=True)
    (hermes_home / "plugins" / "slugs").rename(nb_home / "plugins" / "slugs")
    back = _run([sys.executable, "-c", _BACK_IN_HERMES_NB, calls],
                env={**_env(), "HERMES_NB_HOME": str(nb_home)}, cwd=tmp_path)
    assert back["failures"] == []
    assert back["meta"] == {"slugify": ["text", "🔤", "plugin", True], "shout": ["text", "📣", "plugin", False]}
    assert back["results"] == expected


@pytest.mark.hermes
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tool_file_round_trip_through_real_hermes_and_back(ip: Any, tmp_path: Path) -> None:
    expected = _notebook_results()
    nb_home = tmp_path / "nb-home"
    path = nb_home / "tools" / "slug_tools.py"
    ip.run_line_magic("tools", f"export slugify shout --file {path}")
    calls = json.dumps(CALLS)
    hermes = _run(["python", "-c", _HERMES_FILE, calls, str(path)],
                  env={"HERMES_HOME": str(tmp_path / "hermes-home")}, cwd=tmp_path)
    assert hermes["meta"] == {"slugify": ["text", "🔤"], "shout": ["text", "📣"]}
    assert hermes["results"] == expected
    back = _run([sys.executable, "-c", _BACK_IN_HERMES_NB, calls],
                env={**_env(), "HERMES_NB_HOME": str(nb_home)}, cwd=tmp_path)
    assert back["failures"] == []
    assert back["meta"] == {"slugify": ["text", "🔤", "plugin", True], "shout": ["text", "📣", "plugin", False]}
    assert back["results"] == expected


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
