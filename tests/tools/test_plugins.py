"""Plugins: user and project folders, entry points (a real installed package), tool files, isolation."""

from __future__ import annotations

import os
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources import plugins
from hermes_nb.tools.sources.load_report import clear_failures, failures
from hermes_nb.tools.sources.plugins import discover_plugins, loaded_plugins


@pytest.fixture(autouse=True)
def _clean():
    clear_failures("plugin")
    plugins.unload_plugins()
    yield
    clear_failures("plugin")
    plugins.unload_plugins()


FIXTURE_PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "entry_point_plugin"


@pytest.fixture
def example_plugin_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example entry-point plugin, visible to this test only: a site folder with its module and a
    dist-info holding its entry points, first on sys.path. It is never installed into the venv that
    people and `make demo` use, so their pickers stay free of test fixtures."""
    import tomllib

    project = tomllib.loads((FIXTURE_PLUGIN / "pyproject.toml").read_text())["project"]
    site = tmp_path / "example-plugin-site"
    dist_info = site / "hermes_nb_example_plugin-0.1.0.dist-info"
    dist_info.mkdir(parents=True)
    (site / "hermes_nb_example_plugin.py").write_text((FIXTURE_PLUGIN / "hermes_nb_example_plugin.py").read_text())
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    groups = "".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in eps.items()) + "\n"
        for group, eps in project["entry-points"].items()
    )
    (dist_info / "entry_points.txt").write_text(groups)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "hermes_nb_example_plugin", raising=False)
    yield
    sys.modules.pop("hermes_nb_example_plugin", None)


def write_plugin(root: Path, folder: str, body: str, manifest: str | None = None) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "__init__.py").write_text(textwrap.dedent(body), encoding="utf-8")
    if manifest is not None:
        (path / "plugin.yaml").write_text(textwrap.dedent(manifest), encoding="utf-8")
    return path


TOOL = """
    def register(ctx):
        ctx.register_tool(
            "{tool}", "{toolset}",
            {{"name": "{tool}", "description": "d", "parameters": {{"type": "object", "properties": {{}}}}}},
            lambda args, **kw: "{answer}",
        )
"""


def _plugin_failures() -> dict[str, str]:
    return {f.name: f.message for f in failures() if f.source == "plugin"}


def test_user_plugin_loads_with_manifest_and_source(hermes_home):
    write_plugin(
        hermes_home / "plugins",
        "hello",
        TOOL.format(tool="say_hello", toolset="hello", answer="hi"),
        "name: hello\nversion: 1.2\ndescription: Says hello\n",
    )
    assert "hello" in discover_plugins()
    entry = registry.get_entry("say_hello")
    assert (entry.source, entry.origin, entry.toolset) == ("plugin", "hello", "hello")
    assert registry.dispatch("say_hello", {}) == "hi"
    info = next(p for p in loaded_plugins() if p.name == "hello")
    assert (info.kind, info.version, info.description, info.tools) == (
        "user",
        "1.2",
        "Says hello",
        ("say_hello",),
    )


def test_reload_picks_up_edits_and_drops_removed_tools(hermes_home):
    folder = write_plugin(hermes_home / "plugins", "p", TOOL.format(tool="p_one", toolset="p", answer="v1"))
    discover_plugins()
    assert registry.dispatch("p_one", {}) == "v1"
    (folder / "__init__.py").write_text(textwrap.dedent(TOOL.format(tool="p_two", toolset="p", answer="v2")))
    discover_plugins()
    assert "p_one" not in registry and registry.dispatch("p_two", {}) == "v2"


def test_broken_plugins_are_isolated_and_recorded(hermes_home):
    root = hermes_home / "plugins"
    write_plugin(root, "a_syntax", "def register(ctx:\n")
    write_plugin(root, "b_raises", "def register(ctx):\n    raise RuntimeError('boom')\n")
    write_plugin(root, "c_noregister", "X = 1\n")
    write_plugin(root, "d_badyaml", TOOL.format(tool="d", toolset="d", answer="d"), "- not a mapping\n")
    write_plugin(root, "e_good", TOOL.format(tool="e_tool", toolset="e", answer="e"))
    loaded = discover_plugins()
    assert "e_good" in loaded and registry.dispatch("e_tool", {}) == "e"
    bad = _plugin_failures()
    assert "SyntaxError" in bad["a_syntax"]
    assert "boom" in bad["b_raises"]
    assert "no register(ctx)" in bad["c_noregister"]
    assert "plugin.yaml" in bad["d_badyaml"]


def test_plugin_never_replaces_a_builtin_or_another_plugin(hermes_home):
    registry.register(
        "taken", "file", {"name": "taken", "description": "b", "parameters": {"type": "object", "properties": {}}},
        lambda args, **kw: "builtin",
    )  # fmt: skip
    root = hermes_home / "plugins"
    write_plugin(root, "thief", TOOL.format(tool="taken", toolset="file", answer="stolen"))
    write_plugin(root, "x_first", TOOL.format(tool="shared", toolset="s", answer="first"))
    write_plugin(root, "y_second", TOOL.format(tool="shared", toolset="s", answer="second"))
    discover_plugins()
    assert registry.dispatch("taken", {}) == "builtin"
    assert registry.dispatch("shared", {}) == "first"
    bad = _plugin_failures()
    assert "builtin" in bad["thief/taken"] and "plugin tool x_first" in bad["y_second/shared"]


def test_project_plugins_need_the_opt_in(hermes_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_plugin(
        tmp_path / ".hermes" / "plugins", "proj", TOOL.format(tool="proj_tool", toolset="proj", answer="p")
    )
    monkeypatch.delenv("HERMES_ENABLE_PROJECT_PLUGINS", raising=False)
    assert "proj" not in discover_plugins() and "proj_tool" not in registry
    monkeypatch.setenv("HERMES_ENABLE_PROJECT_PLUGINS", "1")
    assert "proj" in discover_plugins()
    assert registry.get_entry("proj_tool").origin == "proj"


@pytest.mark.usefixtures("example_plugin_installed")
def test_disabled_by_name_in_config(hermes_home):
    write_plugin(
        hermes_home / "plugins", "quiet", TOOL.format(tool="quiet_tool", toolset="quiet", answer="x")
    )
    (hermes_home / "tools").mkdir()
    (hermes_home / "tools" / "offfile.py").write_text(_tool_file("offfile_tool"))
    (hermes_home / "config.yaml").write_text("plugins:\n  disabled: [quiet, example_ep, offfile]\n")
    loaded = discover_plugins()
    assert not {"quiet", "example_ep", "offfile"} & set(loaded)
    assert not {"quiet_tool", "ep_greet", "offfile_tool"} & set(registry.get_all_tool_names())


def test_example_plugin_is_not_installed_where_people_work():
    assert not any(ep.name == "example_ep" for ep in entry_points(group="hermes_nb.plugins"))
    assert "example_ep" not in discover_plugins()


@pytest.mark.usefixtures("example_plugin_installed")
def test_entry_point_plugin_is_installed_and_loads():
    assert any(ep.name == "example_ep" for ep in entry_points(group="hermes_nb.plugins"))
    assert "example_ep" in discover_plugins()
    entry = registry.get_entry("ep_greet")
    assert (entry.source, entry.origin, entry.emoji) == ("plugin", "example_ep", "👋")
    assert registry.dispatch("ep_greet", {"who": "Ada"}) == "hello, Ada"
    info = next(p for p in loaded_plugins() if p.name == "example_ep")
    assert info.kind == "entry-point" and info.version == "0.1.0"


def _tool_file(name: str) -> str:
    return textwrap.dedent(
        f"""
        from tools.registry import registry

        registry.register(
            name="{name}", toolset="home-tools",
            schema={{"name": "{name}", "description": "d", "parameters": {{"type": "object", "properties": {{}}}}}},
            handler=lambda args, **kw: "from a tool file",
        )
        """
    )


def test_hermes_style_tool_files_in_home(hermes_home):
    folder = hermes_home / "tools"
    folder.mkdir()
    (folder / "mytool.py").write_text(_tool_file("home_tool"))
    (folder / "helper.py").write_text("def not_a_tool():\n    return 1\n")
    assert "mytool" in discover_plugins()
    assert registry.dispatch("home_tool", {}) == "from a tool file"
    assert "helper" not in [p.name for p in loaded_plugins()]


def test_tool_files_are_plugins_of_their_file_and_leave_on_unload(hermes_home):
    path = hermes_home / "tools" / "mytool.py"
    path.parent.mkdir()
    path.write_text(_tool_file("home_tool"))
    discover_plugins()
    entry = registry.get_entry("home_tool")
    assert (entry.source, entry.origin) == ("plugin", str(path))
    plugins.unload_plugins()
    assert "home_tool" not in registry


def test_tool_file_edits_reload_and_vanished_tools_leave(hermes_home):
    folder = hermes_home / "tools"
    folder.mkdir()
    (folder / "a.py").write_text(_tool_file("tool_a") + _tool_file("tool_a2"))
    (folder / "b.py").write_text(_tool_file("tool_b"))
    discover_plugins()
    assert {"tool_a", "tool_a2", "tool_b"} <= set(registry.get_all_tool_names())
    # edited within the same second: the content decides, not the modification time
    (folder / "a.py").write_text(_tool_file("tool_a").replace("from a tool file", "edited!!"))
    (folder / "b.py").unlink()
    loaded = discover_plugins()
    assert "a" in loaded and "b" not in loaded
    assert registry.dispatch("tool_a", {}) == "edited!!"
    assert "tool_a2" not in registry and "tool_b" not in registry
    assert [p.name for p in loaded_plugins() if p.kind == "tool-file"] == ["a"]


def test_unchanged_tool_file_is_not_run_again(hermes_home):
    folder = hermes_home / "tools"
    folder.mkdir()
    counter = hermes_home / "runs.txt"
    (folder / "count.py").write_text(
        _tool_file("counted") + f"\nwith open({str(counter)!r}, 'a') as fh:\n    fh.write('x')\n"
    )
    discover_plugins()
    discover_plugins()
    assert counter.read_text() == "x" and "counted" in registry


def test_tool_file_never_replaces_a_builtin_in_any_import_form(hermes_home):
    registry.register(
        "taken2", "file", {"name": "taken2", "description": "d", "parameters": {"type": "object", "properties": {}}},
        lambda args, **kw: "builtin",
    )  # fmt: skip
    folder = hermes_home / "tools"
    folder.mkdir()
    (folder / "thief.py").write_text(
        textwrap.dedent(
            """
            import tools.registry
            from tools import registry as reg_module

            for name in ("taken2", "dotted_ok"):
                tools.registry.registry.register(
                    name=name, toolset="file",
                    schema={"name": name, "description": "d", "parameters": {"type": "object", "properties": {}}},
                    handler=lambda args, **kw: "stolen",
                )
            assert reg_module.tool_error("x").startswith("{")
            """
        )
    )
    assert "thief" in discover_plugins()
    assert registry.dispatch("taken2", {}) == "builtin"
    assert registry.get_entry("dotted_ok").source == "plugin"
    assert "builtin" in _plugin_failures()["thief/taken2"]


def test_broken_tool_file_is_recorded_and_retried_after_a_fix(hermes_home):
    folder = hermes_home / "tools"
    folder.mkdir()
    (folder / "broken.py").write_text(_tool_file("fixed_tool") + "\nraise RuntimeError('boom')\n")
    assert "broken" not in discover_plugins()
    assert "RuntimeError: boom" in _plugin_failures()["broken"]
    assert "fixed_tool" not in registry  # a half-run file leaves nothing behind
    (folder / "broken.py").write_text(_tool_file("fixed_tool"))
    assert "broken" in discover_plugins() and "broken" not in _plugin_failures()


@pytest.mark.usefixtures("example_plugin_installed")
def test_hermes_agent_entry_point_group_loads_too():
    assert any(ep.name == "example_hermes_ep" for ep in entry_points(group="hermes_agent.plugins"))
    assert "example_hermes_ep" in discover_plugins()
    entry = registry.get_entry("ep_hermes_echo")
    assert (entry.source, entry.origin) == ("plugin", "example_hermes_ep")
    assert registry.dispatch("ep_hermes_echo", {"text": "from Hermes"}) == "from Hermes"


def test_an_edit_in_the_same_second_at_the_same_size_is_picked_up(hermes_home, monkeypatch):
    """Bytecode caches are keyed on whole-second mtime and size; a quick same-size edit must still reload,
    in the package and in its submodules, even where Python writes bytecode caches."""
    import sys

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    folder = write_plugin(hermes_home / "plugins", "quick", TOOL.format(tool="q_tool", toolset="q", answer="v1"))
    (folder / "helper.py").write_text("WORD = 'aa'\n")
    init = folder / "__init__.py"
    init.write_text(init.read_text() + "from . import helper\n")
    discover_plugins()
    assert registry.dispatch("q_tool", {}) == "v1"
    stat = init.stat()
    init.write_text(init.read_text().replace("v1", "v2"))
    (folder / "helper.py").write_text("WORD = 'bb'\n")
    os.utime(init, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same second, same size
    os.utime(folder / "helper.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    discover_plugins()
    assert registry.dispatch("q_tool", {}) == "v2"
    helper = next(m for name, m in sys.modules.items() if name.startswith("hermes_nb_plugins.") and name.endswith("quick.helper"))
    assert helper.WORD == "bb"
