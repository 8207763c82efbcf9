"""Hermes's import paths reach hermes_nb only for the code hermes_nb loads; a person's own `tools` stays theirs.

Each case runs in a fresh interpreter whose working folder is a temporary "notebook folder", because the
test process itself has the repository root (with its raw `tools/` folder) on sys.path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERMES_STYLE_TOOL = textwrap.dedent(
    """
    import json
    from tools.registry import registry, tool_error
    import tools.registry as reg_module
    from model_tools import get_tool_definitions

    registry.register(
        name="{name}", toolset="hermes-style",
        schema={{"name": "{name}", "description": "d", "parameters": {{"type": "object", "properties": {{}}}}}},
        handler=lambda args, **kw: json.dumps({{"via": reg_module.__name__}}),
    )
    """
)


def _person_folder(tmp_path: Path) -> Path:
    """A notebook folder with its own `tools` package, `model_tools.py` and `toolsets.py`."""
    folder = tmp_path / "notebook_folder"
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "__init__.py").write_text("OWNER = 'person'\n")
    (folder / "tools" / "helpers.py").write_text("def shout(s):\n    return s.upper()\n")
    (folder / "model_tools.py").write_text("OWNER = 'person'\n")
    (folder / "toolsets.py").write_text("OWNER = 'person'\n")
    return folder


def _run(code: str, cwd: Path, home: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={"HERMES_NB_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_person_tools_package_and_hermes_style_files_live_side_by_side(tmp_path: Path) -> None:
    folder = _person_folder(tmp_path)
    home = tmp_path / "home"
    (home / "tools").mkdir(parents=True)
    (home / "tools" / "hermes_file.py").write_text(HERMES_STYLE_TOOL.format(name="from_home_file"))
    plugin = home / "plugins" / "hp"
    plugin.mkdir(parents=True)
    (plugin / "helpers.py").write_text("from tools.registry import tool_error\nERR = tool_error('x')\n")
    (plugin / "__init__.py").write_text(
        "from . import helpers\n"
        "from tools.registry import registry\n"
        "def register(ctx):\n"
        "    ctx.register_tool('from_plugin', 'hermes-style', {'name': 'from_plugin', 'description': 'd',"
        " 'parameters': {'type': 'object', 'properties': {}}}, lambda args, **kw: helpers.ERR)\n"
    )
    result = _run(
        """
        import json, sys
        import tools, model_tools, toolsets
        from tools import helpers
        from hermes_nb.tools.sources.plugins import discover_plugins
        from hermes_nb.tools.registry import registry
        from hermes_nb.tools.sources.load_report import failures
        loaded = discover_plugins()
        print(json.dumps({
            "owners": [tools.OWNER, model_tools.OWNER, toolsets.OWNER, helpers.shout("ok")],
            "loaded": sorted(loaded),
            "file_tool": json.loads(registry.dispatch("from_home_file", {})),
            "plugin_tool": json.loads(registry.dispatch("from_plugin", {})),
            "failures": [str(f) for f in failures()],
        }))
        """,
        folder, home,
    )
    assert result["owners"] == ["person", "person", "person", "OK"]
    assert {"hermes_file", "hp"} <= set(result["loaded"]), result["failures"]
    assert result["file_tool"] == {"via": "hermes_nb.tools.registry"}
    assert result["plugin_tool"] == {"error": "x"}


def test_discovered_tool_folder_gets_the_alias_while_the_person_keeps_tools(tmp_path: Path) -> None:
    folder = _person_folder(tmp_path)
    extra = tmp_path / "my_tools_dir"
    extra.mkdir()
    (extra / "alpha.py").write_text(HERMES_STYLE_TOOL.format(name="discovered_alpha"))
    result = _run(
        f"""
        import json, tools
        from hermes_nb.tools.sources.discovery import discover_builtin_tools
        from hermes_nb.tools.registry import registry
        loaded = discover_builtin_tools({str(extra)!r})
        print(json.dumps({{"loaded": loaded, "owner": tools.OWNER,
                          "call": json.loads(registry.dispatch("discovered_alpha", {{}}))}}))
        """,
        folder, tmp_path / "home",
    )
    assert result == {"loaded": ["hermes_nb_user_tools.alpha"], "owner": "person",
                      "call": {"via": "hermes_nb.tools.registry"}}


def test_a_hermes_module_we_do_not_provide_is_a_clear_import_error(tmp_path: Path) -> None:
    extra = tmp_path / "dir"
    extra.mkdir()
    (extra / "needs_more.py").write_text(
        "from tools.registry import registry\nfrom tools.ansi_strip import strip\n"
        "registry.register(name='nm', toolset='t', schema={'name': 'nm', 'parameters': {}}, handler=print)\n"
    )
    result = _run(
        f"""
        import json
        from hermes_nb.tools.sources.discovery import discover_builtin_tools
        from hermes_nb.tools.sources.load_report import failures
        discover_builtin_tools({str(extra)!r})
        print(json.dumps([f.message for f in failures()]))
        """,
        tmp_path, tmp_path / "home",
    )
    assert len(result) == 1
    assert "No module named 'tools.ansi_strip'" in result[0]
    assert "not the rest of hermes-agent" in result[0]


@pytest.mark.parametrize("person_has_tools", [False, True])
def test_fallback_for_cells_only_when_no_tools_package_exists(tmp_path: Path, person_has_tools: bool) -> None:
    cwd = _person_folder(tmp_path) if person_has_tools else tmp_path
    result = _run(
        """
        import json, sys
        import hermes_nb.tools.registry as ours
        from hermes_nb.tools.sources.hermes_imports import install_fallback
        undo = install_fallback()
        import tools.registry
        from model_tools import get_tool_definitions
        same = tools.registry is ours if hasattr(tools, "registry") else False
        undo()
        print(json.dumps({"same": same, "owner": getattr(tools, "OWNER", "ours"),
                          "left": sorted(n for n in sys.modules if n == "tools" or n.startswith("tools."))}))
        """ if not person_has_tools else """
        import json, sys
        from hermes_nb.tools.sources.hermes_imports import install_fallback
        undo = install_fallback()
        import tools, tools.helpers
        undo()
        print(json.dumps({"same": False, "owner": tools.OWNER, "left": []}))
        """,
        cwd, tmp_path / "home",
    )
    if person_has_tools:
        assert result["owner"] == "person"
    else:
        assert result == {"same": True, "owner": "ours", "left": []}


def test_fallback_never_loads_a_second_copy_of_a_core_module(tmp_path: Path) -> None:
    result = _run(
        """
        import json, sys
        import hermes_nb.tools
        from hermes_nb.tools.sources.hermes_imports import install_fallback
        undo = install_fallback()
        import tools.budget, tools.batch.plan
        import hermes_nb.tools.budget, hermes_nb.tools.batch.plan
        out = {"budget": tools.budget is hermes_nb.tools.budget,
               "plan": tools.batch.plan is hermes_nb.tools.batch.plan}
        undo()
        print(json.dumps(out))
        """,
        tmp_path, tmp_path / "home",
    )
    assert result == {"budget": True, "plan": True}
