"""MCP server configuration: the ``mcp_servers`` (Hermes) or ``mcpServers`` (Claude Desktop) block.

```yaml
mcp_servers:
  time: {command: mcp-server-time, args: ["--local-timezone", "UTC"]}
  docs: {url: "http://127.0.0.1:8931/mcp", headers: {Authorization: "Bearer ${DOCS_TOKEN}"}, timeout: 120}
```

A bad entry is one ``ConfigError`` naming the server and the key; it never stops the other servers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_nb.tools.errors import ConfigError

__all__ = ["MCPServerConfig", "load_mcp_server_configs", "parse_mcp_servers", "parse_server"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 60.0

_KNOWN_KEYS = frozenset(
    {
        "command", "args", "env", "cwd", "url", "headers", "timeout", "connect_timeout", "tools",
        "trusted", "enabled", "disabled", "type", "transport", "description",
        "defer",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPServerConfig:
    """One MCP server as configured (stdio: command/args/env/cwd; streamable HTTP: url/headers)."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    trusted: bool = False
    enabled: bool = True
    #: tool search may defer this server's tools (``hermes_nb.tools.search``)
    defer: bool = False

    def describe(self) -> str:
        """A short line for status tables: the command line or the URL."""
        if self.transport == "http":
            return self.url or ""
        return " ".join([self.command or "", *self.args]).strip()


def _fail(server: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"MCP server {server!r}: key {key!r} {problem}")


def _str_list(server: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise _fail(server, key, f"must be a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def _str_map(server: str, key: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(server, key, f"must be a mapping of strings, got {type(value).__name__}")
    out = {}
    for k, v in value.items():
        if not isinstance(v, (str, int, float, bool)):
            raise _fail(server, f"{key}.{k}", f"must be a string, got {type(v).__name__}")
        out[str(k)] = str(v)
    return out


def _seconds(server: str, key: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise _fail(server, key, f"must be a positive number of seconds, got {value!r}")
    return float(value)


def _flag(server: str, key: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _fail(server, key, f"must be true or false, got {value!r}")
    return value


def parse_server(name: str, raw: Any) -> MCPServerConfig:
    """One server's mapping as an ``MCPServerConfig``; ``ConfigError`` names the server and the key."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"MCP server name must be a non-empty string, got {name!r}")
    if not isinstance(raw, Mapping):
        raise ConfigError(f"MCP server {name!r}: must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - _KNOWN_KEYS)
    if unknown:
        log.info("MCP server %r: ignoring unknown keys %s", name, ", ".join(unknown))
    command, url = raw.get("command"), raw.get("url")
    if command is not None and url is not None:
        raise _fail(name, "url", "cannot be given together with 'command' (choose stdio or HTTP)")
    if command is None and url is None:
        raise _fail(name, "command", "is missing (give 'command' for stdio or 'url' for streamable HTTP)")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise _fail(name, "command", f"must be a non-empty string, got {command!r}")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise _fail(name, "url", f"must be an http:// or https:// URL, got {url!r}")
    tools = raw.get("tools") or {}
    if not isinstance(tools, Mapping):
        raise _fail(
            name, "tools", f"must be a mapping with include/exclude lists, got {type(tools).__name__}"
        )
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _fail(name, "cwd", f"must be a string, got {cwd!r}")
    enabled = _flag(name, "enabled", raw.get("enabled"), True)
    if _flag(name, "disabled", raw.get("disabled"), False):  # Claude Desktop spelling
        enabled = False
    return MCPServerConfig(
        name=name,
        transport="http" if url is not None else "stdio",
        command=command,
        args=_str_list(name, "args", raw.get("args")),
        env=_str_map(name, "env", raw.get("env")),
        cwd=cwd,
        url=url,
        headers=_str_map(name, "headers", raw.get("headers")),
        timeout=_seconds(name, "timeout", raw.get("timeout"), DEFAULT_TIMEOUT),
        connect_timeout=_seconds(
            name, "connect_timeout", raw.get("connect_timeout"), DEFAULT_CONNECT_TIMEOUT
        ),
        include=_str_list(name, "hermes_nb.tools.include", tools.get("include")),
        exclude=_str_list(name, "hermes_nb.tools.exclude", tools.get("exclude")),
        trusted=_flag(name, "trusted", raw.get("trusted"), False),
        defer=_flag(name, "defer", raw.get("defer"), False),
        enabled=enabled,
    )


def parse_mcp_servers(config: Mapping[str, Any]) -> tuple[list[MCPServerConfig], dict[str, ConfigError]]:
    """Every server in a whole config (``mcp_servers`` and ``mcpServers``): the good ones and the errors.

    Disabled servers are included (``enabled=False``) so status tables can list them.
    """
    good: list[MCPServerConfig] = []
    bad: dict[str, ConfigError] = {}
    seen: set[str] = set()
    for block_key in ("mcp_servers", "mcpServers"):
        block = config.get(block_key)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            bad[block_key] = ConfigError(f"{block_key!r} must be a mapping of server name to settings")
            continue
        for name, raw in block.items():
            name = str(name)
            if name in seen:
                bad[name] = ConfigError(f"MCP server {name!r}: defined in both mcp_servers and mcpServers")
                continue
            seen.add(name)
            try:
                good.append(parse_server(name, raw))
            except ConfigError as exc:
                bad[name] = exc
    return good, bad


def load_mcp_server_configs(
    config: Mapping[str, Any] | Iterable[MCPServerConfig] | None = None,
) -> list[MCPServerConfig]:
    """The servers to run: from ``config.yaml`` (None), a whole config mapping, or ready records.

    Each bad entry is recorded with ``record_failure("mcp", server, ...)`` and left out.
    """
    from hermes_nb.tools.sources.load_report import record_failure

    if config is None:
        from hermes_nb.tools.config import load_config

        try:
            config = load_config()
        except ConfigError as exc:
            record_failure("mcp", "config.yaml", str(exc))
            return []
    if not isinstance(config, Mapping):
        return list(config)
    good, bad = parse_mcp_servers(config)
    for name, error in bad.items():
        record_failure("mcp", name, str(error))
    return good
