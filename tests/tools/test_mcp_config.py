"""Parsing the mcp_servers / mcpServers blocks into MCPServerConfig records."""

from __future__ import annotations

import pytest

from hermes_nb.tools.errors import ConfigError
from hermes_nb.tools.mcp_client.config import (
    MCPServerConfig,
    load_mcp_server_configs,
    parse_mcp_servers,
    parse_server,
)
from hermes_nb.tools.sources.load_report import clear_failures, failures


@pytest.fixture(autouse=True)
def _no_mcp_failures():
    clear_failures("mcp")
    yield
    clear_failures("mcp")


def test_stdio_and_http_servers_parse_with_defaults():
    good, bad = parse_mcp_servers(
        {
            "mcp_servers": {
                "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
                "docs": {
                    "url": "http://127.0.0.1:8931/mcp",
                    "headers": {"Authorization": "Bearer x"},
                    "timeout": 5,
                    "tools": {"include": ["search*"], "exclude": ["search_slow"]},
                    "trusted": True,
                },
            }
        }
    )
    assert bad == {}
    time, docs = good
    assert time == MCPServerConfig(
        name="time", transport="stdio", command="mcp-server-time", args=("--local-timezone", "UTC")
    )
    assert time.timeout == 120 and not time.trusted and time.enabled
    assert docs.transport == "http" and docs.headers == {"Authorization": "Bearer x"}
    assert docs.timeout == 5.0 and docs.include == ("search*",) and docs.exclude == ("search_slow",)
    assert docs.trusted is True


def test_claude_desktop_block_and_disabled_flags():
    good, bad = parse_mcp_servers(
        {
            "mcpServers": {
                "a": {"command": "x", "disabled": True},
                "b": {"command": "y", "enabled": False},
                "c": {"command": "z"},
            }
        }
    )
    assert bad == {}
    assert [(c.name, c.enabled) for c in good] == [("a", False), ("b", False), ("c", True)]


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({}, "command"),  # neither command nor url
        ({"command": "x", "url": "http://h"}, "url"),  # both
        ({"url": "ftp://h"}, "url"),
        ({"command": ""}, "command"),
        ({"command": "x", "args": {"a": 1}}, "args"),
        ({"command": "x", "env": ["A=1"]}, "env"),
        ({"command": "x", "timeout": "soon"}, "timeout"),
        ({"command": "x", "timeout": -1}, "timeout"),
        ({"command": "x", "connect_timeout": 0}, "connect_timeout"),
        ({"command": "x", "trusted": "yes"}, "trusted"),
        ({"command": "x", "tools": ["a"]}, "tools"),
        ({"command": "x", "tools": {"include": [{"x": 1}]}}, "hermes_nb.tools.include"),
    ],
)
def test_a_bad_key_is_one_error_naming_server_and_key(raw, key):
    with pytest.raises(ConfigError) as info:
        parse_server("srv", raw)
    assert "'srv'" in str(info.value) and f"'{key}'" in str(info.value)


def test_one_bad_server_does_not_stop_the_others():
    good, bad = parse_mcp_servers(
        {"mcp_servers": {"ok": {"command": "x"}, "broken": {"timeout": 3}, "also": "nope"}}
    )
    assert [c.name for c in good] == ["ok"]
    assert set(bad) == {"broken", "also"}


def test_config_file_with_variables_and_failures_recorded(hermes_home, monkeypatch):
    monkeypatch.setenv("DOCS_TOKEN", "s3cret")
    monkeypatch.delenv("MCP_PORT", raising=False)
    (hermes_home / "config.yaml").write_text(
        "mcp_servers:\n"
        "  docs:\n"
        "    url: http://127.0.0.1:${MCP_PORT:-8931}/mcp\n"
        "    headers: {Authorization: 'Bearer ${DOCS_TOKEN}'}\n"
        "  broken:\n"
        "    command: x\n"
        "    timeout: never\n",
        encoding="utf-8",
    )
    configs = load_mcp_server_configs()
    assert [c.name for c in configs] == ["docs"]
    assert configs[0].url == "http://127.0.0.1:8931/mcp"
    assert configs[0].headers["Authorization"] == "Bearer s3cret"
    [failure] = [f for f in failures() if f.source == "mcp"]
    assert failure.name == "broken" and "'timeout'" in failure.message


def test_unreadable_config_is_recorded_not_raised(hermes_home):
    (hermes_home / "config.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    assert load_mcp_server_configs() == []
    assert any(f.source == "mcp" and f.name == "config.yaml" for f in failures())


def test_describe_shows_command_or_url():
    assert parse_server("t", {"command": "a", "args": ["b"]}).describe() == "a b"
    assert parse_server("u", {"url": "http://h/mcp"}).describe() == "http://h/mcp"


def test_a_bare_command_is_found_next_to_the_interpreter_when_not_on_path(monkeypatch, tmp_path):
    """`%mcp add time -- mcp-server-time` from a kernel of an un-activated virtualenv."""
    import os
    import sys

    from hermes_nb.tools.mcp_client.session import resolve_command

    monkeypatch.setenv("PATH", str(tmp_path))  # nothing useful on PATH
    resolved = resolve_command("mcp-server-time")
    assert resolved == os.path.join(os.path.dirname(sys.executable), "mcp-server-time")
    assert resolve_command("no-such-program-xyz") == "no-such-program-xyz"  # the start error names it
    assert resolve_command("/bin/echo") == "/bin/echo"
