"""``%mcp`` in a plain InteractiveShell, and MCP across cells in a real kernel."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.load_report import clear_failures
from tests.tools.test_mcp_tool import TIME_SERVER, descendants, wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shell():
    from hermes_nb.tools.mcp_tool import shutdown_mcp_servers
    from hermes_nb.tools.sources import plugins

    before = descendants(os.getpid())
    ip = InteractiveShell.instance()
    yield ip
    shutdown_mcp_servers()
    plugins.unload_plugins()
    clear_failures()
    wait_until(lambda: not (descendants(os.getpid()) - before), what="MCP servers to end")


def test_load_unload_load_mirrors(shell, hermes_home):
    from hermes_nb import startup
    plugin = hermes_home / "plugins" / "hi"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(
        textwrap.dedent(
            """
            def register(ctx):
                ctx.register_tool("hi_tool", "hi", {"name": "hi_tool", "description": "d",
                                  "parameters": {"type": "object", "properties": {}}}, lambda a, **k: "hi")
            """
        )
    )
    for _ in range(2):
        undo = startup.mcp(shell)
        assert "mcp" in shell.magics_manager.magics["line"]
        assert "hi_tool" in registry  # plugins load synchronously
        undo()
        undo()  # idempotent
        assert "mcp" not in shell.magics_manager.magics["line"]
        assert "hi_tool" not in registry
        assert not any(type(c).__name__ == "MCPMagics" for c in shell.configurables)


def test_usage_errors_are_one_line(shell):
    from hermes_nb import startup
    from hermes_nb.magics import mcp as mcp_magics
    undo = startup.mcp(shell)
    try:
        for line, fragment in [
            ("frobnicate", "unknown action"),
            ("add", "a NAME is needed"),
            ("add t", "either -- COMMAND"),
            ("add t --url http://x -- cmd", "either -- COMMAND"),
            ("add t --url ftp://x", "'url'"),
            ("add t --env NOPE -- cmd", "KEY=VALUE"),
            ("remove nothing-here", "no MCP server"),
            ("approve nothing-here", "no MCP tool"),
            ("reload nothing-here", "no MCP server"),
        ]:
            with pytest.raises(UsageError, match=fragment):
                shell.run_line_magic("mcp", line)
        assert "%mcp add NAME -- COMMAND" in (mcp_magics.MCPMagics.mcp.__doc__ or "")
    finally:
        undo()


def test_importing_the_extension_modules_does_not_import_mcp():
    import subprocess

    code = "import sys, hermes_nb.magics.mcp, hermes_nb.tools.mcp_tool, hermes_nb.tools.sources.plugins; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_attachment_magic_shows_an_image(shell):
    import base64

    from IPython.display import Image
    from mcp import types as t

    from hermes_nb import startup
    from hermes_nb.tools.mcp_client.results import convert_result

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    text = convert_result(
        t.CallToolResult(
            content=[t.ImageContent(type="image", data=base64.b64encode(png).decode(), mimeType="image/png")]
        ),
        server="s",
        tool="x",
    )
    undo = startup.mcp(shell)
    try:
        shown = shell.run_line_magic("mcp", f"attachment {text.rsplit('id=', 1)[1][:-1]}")
        assert isinstance(shown, Image) and shown.data == png
        with pytest.raises(UsageError, match="no attachment"):
            shell.run_line_magic("mcp", "attachment nope")
    finally:
        undo()


@pytest.mark.mcp
def test_add_show_approve_remove_and_save(shell, hermes_home):
    from hermes_nb import startup
    from hermes_nb.tools.config import load_config

    undo = startup.mcp(shell)
    try:
        table = shell.run_line_magic(
            "mcp", f"add time --save --timeout 30 -- {TIME_SERVER} --local-timezone UTC"
        )
        assert "mcp__time__get_current_time" in table.text()
        saved = load_config()["mcp_servers"]["time"]
        assert saved == {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"], "timeout": 30.0}
        status = shell.run_line_magic("mcp", "")
        bundle = status._repr_mimebundle_()
        assert "<table" in bundle["text/html"] and "ready" in bundle["text/plain"]
        assert registry.dispatch("mcp__time__get_current_time", {"timezone": "UTC"}).startswith("{")
        assert shell.run_line_magic("mcp", "approve time").startswith("approved: mcp__time__")
        assert "mcp__time__convert_time" in shell.run_line_magic("mcp", "reload time").text()
        shell.run_line_magic("mcp", "remove time --save")
        assert "time" not in load_config().get("mcp_servers", {})
        assert "mcp__time__get_current_time" not in registry
    finally:
        undo()


@pytest.mark.mcp
def test_descriptions_shown_with_hidden_characters_visible(shell):
    from hermes_nb.magics.mcp import tools_table
    from hermes_nb.tools import mcp_tool

    mcp_tool._registered["fake"] = {"mcp__fake__t": "t"}
    try:
        registry.register(
            "mcp__fake__t", "mcp-fake",
            {"name": "mcp__fake__t", "description": "safe\u202eevil\x1b[2J\u200b", "parameters": {"type": "object", "properties": {}}},
            lambda a, **k: "", source="mcp", origin="fake",
        )  # fmt: skip
        text = tools_table("fake").text()
        assert "<U+202E>" in text and "\\x1b" in text and "<U+200B>" in text and "\u202e" not in text
    finally:
        mcp_tool._registered.pop("fake", None)


@pytest.mark.mcp
def test_failed_add_shows_the_error_and_stderr(shell):
    from hermes_nb import startup
    undo = startup.mcp(shell)
    try:
        report = shell.run_line_magic(
            "mcp", f"add broken -- {sys.executable} -c 'import sys; sys.exit(\"no luck\")'"
        )
        assert "MCP server failed" in report.text() and "no luck" in report.text()
        assert "failed" in shell.run_line_magic("mcp", "").text()
    finally:
        undo()


@pytest.mark.kernel
@pytest.mark.mcp
@pytest.mark.slow
def test_session_survives_across_cells_and_unload_leaves_no_child(tmp_path):
    from tests.support.kernel import KernelSession

    with KernelSession(cwd=ROOT, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        k.run("%load_ext hermes_nb")
        added = k.run(f"%mcp add time -- {TIME_SERVER}")
        assert "mcp__time__get_current_time" in added.text
        pids = descendants(k.pid)
        assert pids, "the server runs as a child of the kernel"
        first = k.run(
            "from hermes_nb.tools.registry import registry\nregistry.dispatch('mcp__time__get_current_time', {'timezone': 'UTC'})"
        )
        assert '"timezone": "UTC"' in first.text
        # a later cell, a different task: the session opened in the first cell still serves
        later = k.run("await registry.dispatch_async('mcp__time__convert_time', "
                      "{'source_timezone': 'UTC', 'time': '12:00', 'target_timezone': 'Asia/Tokyo'})")  # fmt: skip
        assert "Asia/Tokyo" in later.text
        assert "ready" in k.run("%mcp").text
        assert descendants(k.pid) == pids  # no reconnect happened
        k.run("%unload_ext hermes_nb")
        wait_until(lambda: not descendants(k.pid), timeout=20, what="the server to end with the extension")
        assert "mcp__time__get_current_time" not in k.run("sorted(registry.get_all_tool_names())").text


@pytest.mark.kernel
@pytest.mark.mcp
@pytest.mark.slow
def test_configured_servers_start_in_the_background_on_load(tmp_path):
    from tests.support.kernel import KernelSession

    (tmp_path / "config.yaml").write_text(f"mcp_servers:\n  time:\n    command: {TIME_SERVER}\n")
    with KernelSession(cwd=ROOT, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        k.run("import time\n%load_ext hermes_nb")
        k.run(
            "from hermes_nb.tools.mcp_tool import mcp_status\n"
            "deadline = time.monotonic() + 30\n"
            "while not [s for s in mcp_status() if s.status == 'ready'] and time.monotonic() < deadline:\n"
            "    time.sleep(0.05)\n"
        )
        assert "ready" in k.run("%mcp").text
        k.run("%unload_ext hermes_nb")
        wait_until(lambda: not descendants(k.pid), timeout=20, what="the server to end with the extension")


def test_mcp_reload_reruns_edited_tool_files_and_drops_deleted_ones(shell, hermes_home):
    from hermes_nb import startup
    folder = hermes_home / "tools"
    folder.mkdir()
    tool_file = textwrap.dedent(
        """
        from tools.registry import registry

        registry.register(
            name="{name}", toolset="home-tools",
            schema={{"name": "{name}", "description": "d", "parameters": {{"type": "object", "properties": {{}}}}}},
            handler=lambda args, **kw: "{answer}",
        )
        """
    )
    (folder / "edited.py").write_text(tool_file.format(name="home_edit", answer="before"))
    (folder / "deleted.py").write_text(tool_file.format(name="home_gone", answer="x"))
    undo = startup.mcp(shell)
    try:
        assert registry.dispatch("home_edit", {}) == "before" and "home_gone" in registry
        (folder / "edited.py").write_text(tool_file.format(name="home_edit", answer="after!"))
        (folder / "deleted.py").unlink()
        shell.run_line_magic("mcp", "reload")
        assert registry.dispatch("home_edit", {}) == "after!"
        assert "home_gone" not in registry
    finally:
        undo()
    assert "home_edit" not in registry  # %unload_ext removes tool-file tools too


@pytest.mark.mcp
def test_a_bad_server_in_config_is_one_error_and_spares_the_others_and_the_extension(shell, hermes_home, monkeypatch):
    from hermes_nb import startup
    from hermes_nb.magics.tools import _doctor
    from hermes_nb.tools.mcp_tool import mcp_status

    monkeypatch.delenv("HERMES_TEST_TZ", raising=False)
    (hermes_home / "config.yaml").write_text(
        "mcp_servers:\n"
        "  broken: {command: [1, 2]}\n"
        f"  time: {{command: {TIME_SERVER}, args: [--local-timezone, '${{HERMES_TEST_TZ:-UTC}}']}}\n"
        "mcpServers:\n"
        f"  paused: {{command: {TIME_SERVER}, disabled: true}}\n"
    )
    undo = startup.mcp(shell)
    try:
        wait_until(lambda: "mcp__time__get_current_time" in registry, timeout=30, what="time server")
        status = {s.name: s.status for s in mcp_status()}
        assert status == {"time": "ready", "paused": "disabled"}
        doctor = _doctor().text()
        assert "broken" in doctor and "'command'" in doctor
        assert "mcp" in shell.magics_manager.magics["line"]
    finally:
        undo()
