"""Built-in discovery and deferred set-up on the registry's first use (``tools.sources.first_use``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str, home: Path) -> dict[str, object]:
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "HERMES_NB_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", "import json, sys\n" + textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_model_tools_discovers_nothing_until_the_registry_is_used(tmp_path: Path) -> None:
    out = _fresh("""
        import hermes_nb.tools.model_tools as mt
        before = "hermes_nb.tools.sources.discovery" in sys.modules
        count = len(mt.registry)
        print(json.dumps({"before": before, "count": count, "after": "hermes_nb.tools.sources.discovery" in sys.modules}))
    """, tmp_path)
    assert out == {"before": False, "count": out["count"], "after": True} and out["count"] >= 5


def test_deferred_set_up_runs_once_on_first_use_even_when_the_registry_is_imported_later(tmp_path: Path) -> None:
    out = _fresh("""
        from hermes_nb.tools.sources.first_use import defer_until_used
        ran = []
        defer_until_used(lambda: ran.append(len(sys.modules["hermes_nb.tools.registry"].registry)))
        cancelled = []
        undo = defer_until_used(lambda: cancelled.append(1))
        undo()
        imported = "hermes_nb.tools.registry" in sys.modules
        from hermes_nb.tools.registry import registry
        waiting = list(ran)
        names = registry.get_all_tool_names()
        registry.get_all_tool_names()
        print(json.dumps({"imported": imported, "waiting": waiting, "ran": ran, "cancelled": cancelled,
                          "terminal": "terminal" in names, "kind": type(registry).__name__}))
    """, tmp_path)
    assert out["imported"] is False and out["waiting"] == []
    assert len(out["ran"]) == 1 and out["ran"][0] >= 5  # after the built-ins were discovered, once
    assert out["cancelled"] == [] and out["terminal"] and out["kind"] == "ToolRegistry"


def test_a_plain_registry_import_is_not_armed(tmp_path: Path) -> None:
    out = _fresh("""
        from hermes_nb.tools.registry import registry
        print(json.dumps({"count": len(registry), "discovery": "hermes_nb.tools.sources.discovery" in sys.modules}))
    """, tmp_path)
    assert out == {"count": 0, "discovery": False}  # as before: only model_tools (or the extension) arms it
