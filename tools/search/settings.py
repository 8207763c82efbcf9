"""Tool search's settings in config.yaml (``tools.tool_search``), the per-server ``defer:`` flags, and known
context windows.

```yaml
tools:
  tool_search: {enabled: auto, threshold_pct: 5, listing_max_tokens: 1000, defer: [notebook], pin: [mcp-github]}
mcp_servers:
  everything: {command: node, args: [...], defer: false}   # pinned: its tools stay in the definitions
```

``enabled``: ``off`` never defers, ``on`` defers every deferrable tool, ``auto`` (the default) defers them
when their schemas together pass ``threshold_pct`` of the model's context window. MCP and plugin tools are
deferrable unless pinned (``pin``, or their server's ``defer: false``); ``defer`` adds tools of any source.
The block's old place, a top-level ``tool_search:``, is read too; when both are given ``tools.tool_search``
wins whole and the log says so in one line. The file is re-read only when it changes (one ``stat`` per
turn); a value that does not fit is said once in the log and the default applies, so a typo never stops
a run.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DEFAULT_CONTEXT_WINDOW", "SearchSettings", "context_window", "known_context_window", "load_settings",
           "parse_settings"]

log = logging.getLogger(__name__)

#: Tokens assumed for a model the table does not know.
DEFAULT_CONTEXT_WINDOW = 128_000
#: Context windows of models people run, by name prefix (the longest prefix that matches wins);
#: names are compared lower-case, after any ``provider/`` part.
CONTEXT_WINDOWS: Mapping[str, int] = {
    "gpt-3.5-turbo": 16_385, "gpt-4": 8_192, "gpt-4-32k": 32_768, "gpt-4-turbo": 128_000, "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576, "gpt-4.5": 128_000, "gpt-5": 400_000, "o1": 200_000, "o3": 200_000, "o4-mini": 200_000,
    "claude": 200_000, "gemini-1.5": 1_048_576, "gemini-2": 1_048_576, "llama3": 8_192, "llama-3": 8_192,
    "llama3.1": 131_072, "llama-3.1": 131_072, "llama3.2": 131_072, "llama-3.2": 131_072, "llama3.3": 131_072,
    "qwen2.5": 32_768, "qwen3": 40_960, "mistral": 32_768, "mixtral": 32_768, "phi-3": 4_096, "phi-4": 16_384,
    "deepseek": 65_536, "smollm2": 8_192, "hermes-3": 131_072, "hermes-4": 131_072, "replay": DEFAULT_CONTEXT_WINDOW,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    """Tool search as configured (defaults when config.yaml says nothing)."""

    enabled: Literal["auto", "on", "off"] = "auto"
    threshold_pct: float = 5.0
    listing_max_tokens: int = 1000
    search_default_limit: int = 5
    max_search_limit: int = 25
    #: tool and toolset names marked deferrable in ``tool_search.defer``
    defer: frozenset[str] = frozenset()
    #: tool and toolset names kept in the definitions (``tool_search.pin``): never deferred, whatever marks them
    pin: frozenset[str] = frozenset()
    #: MCP servers whose config says ``defer: false`` (their tools are pinned; ``defer: true`` is the default now)
    pinned_servers: frozenset[str] = frozenset()


@functools.lru_cache(maxsize=64)
def context_window(model: str | None) -> int:
    """The model's context window in tokens, from ``CONTEXT_WINDOWS``; 128 000 when unknown."""
    known = known_context_window(model)
    return DEFAULT_CONTEXT_WINDOW if known is None else known


@functools.lru_cache(maxsize=64)
def known_context_window(model: str | None) -> int | None:
    """The model's context window in tokens when ``CONTEXT_WINDOWS`` knows its name, else None."""
    name = (model or "").strip().lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in CONTEXT_WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return CONTEXT_WINDOWS[best] if best else None


def _number(raw: Mapping[str, Any], where: str, key: str, default: float, low: float, high: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        log.warning("config.yaml %s.%s must be a number from %g to %g, got %r; using %g",
                    where, key, low, high, value, default)
        return default
    return value


_SPELLINGS = {"true": "on", "yes": "on", "1": "on", "false": "off", "no": "off", "0": "off"}


def _block(config: Mapping[str, Any]) -> tuple[str, Any]:
    """Where the settings are and their raw value: ``tools.tool_search`` (Hermes's place), else the top-level
    ``tool_search`` (the old one)."""
    tools = config.get("tools")
    nested = tools.get("tool_search") if isinstance(tools, Mapping) else None
    legacy = config.get("tool_search")
    if nested is not None and legacy is not None:
        log.warning("config.yaml gives both tools.tool_search and tool_search (its old place): using "
                    "tools.tool_search, ignoring tool_search")
    return ("tools.tool_search", nested) if nested is not None else ("tool_search", legacy)


def _names(raw: Mapping[str, Any], where: str, key: str) -> frozenset[str]:
    value = raw.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        log.warning("config.yaml %s.%s must be a list of tool or toolset names, got %r", where, key, value)
        value = []
    return frozenset(str(v) for v in value)


def parse_settings(config: Mapping[str, Any]) -> SearchSettings:
    """``SearchSettings`` from a whole parsed config; each value that does not fit is logged and defaulted."""
    where, raw = _block(config)
    if raw is None:
        raw = {}
    elif isinstance(raw, bool):  # `tool_search: false` / `true`
        raw = {"enabled": "on" if raw else "off"}
    elif not isinstance(raw, Mapping):
        log.warning("config.yaml %s must be a mapping, got %s; using the defaults", where, type(raw).__name__)
        raw = {}
    enabled = raw.get("enabled", "auto")
    enabled = {True: "on", False: "off"}.get(enabled, enabled) if isinstance(enabled, bool) else enabled
    if isinstance(enabled, str):  # Hermes's spellings too: "true"/"yes"/"1" are on, "false"/"no"/"0" off
        enabled = _SPELLINGS.get(enabled.strip().lower(), enabled.strip().lower())
    if enabled not in ("auto", "on", "off"):
        log.warning("config.yaml %s.enabled must be auto, on or off, got %r; using auto", where, enabled)
        enabled = "auto"
    max_limit = int(_number(raw, where, "max_search_limit", 25, 1, 100))
    return SearchSettings(
        enabled=enabled, threshold_pct=float(_number(raw, where, "threshold_pct", 5.0, 0, 100)),
        listing_max_tokens=int(_number(raw, where, "listing_max_tokens", 1000, 0, 100_000)),
        search_default_limit=int(_number(raw, where, "search_default_limit", 5, 1, max_limit)),
        max_search_limit=max_limit, defer=_names(raw, where, "defer"),
        pin=_names(raw, where, "pin"), pinned_servers=_pinned_servers(config))


def _pinned_servers(config: Mapping[str, Any]) -> frozenset[str]:
    """The MCP servers whose config says ``defer: false``."""
    pinned: set[str] = set()
    for block in ("mcp_servers", "mcpServers"):
        servers = config.get(block)
        if not isinstance(servers, Mapping):
            continue
        for name, server in servers.items():
            flag = server.get("defer") if isinstance(server, Mapping) else None
            if flag is False:
                pinned.add(str(name))
            elif flag is not None and flag is not True:
                log.warning("config.yaml MCP server %r: defer must be true or false, got %r", name, flag)
    return frozenset(pinned)


#: How long a look at config.yaml is trusted (hermes_nb's own writes apply at once: ``config.generation``).
TRUST = 0.25
_DEFAULT = SearchSettings()
# (path, generation, trusted until, (mtime_ns, size) or None when there is no file, settings)
_cache: tuple[str, int, float, tuple[int, int] | None, SearchSettings] | None = None


def load_settings() -> SearchSettings:
    """The settings from config.yaml, re-read only when the file changes; a look is trusted for a quarter
    of a second (every turn asks, and a stat costs more than the rest of a turn's definitions)."""
    global _cache
    from hermes_nb.tools import config

    path, now, cached = config.config_file(), time.monotonic(), _cache
    if cached is not None and cached[0] == path and cached[1] == config.generation and now < cached[2]:
        return cached[4]
    try:
        st = os.stat(path)
        stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    if cached is not None and cached[0] == path and cached[1] == config.generation and cached[3] == stamp:
        settings = cached[4]
    elif stamp is None:
        settings = _DEFAULT
    else:
        settings = _read(config)
    _cache = (path, config.generation, now + TRUST, stamp, settings)
    return settings


def _read(config: Any) -> SearchSettings:
    from hermes_nb.tools.errors import ConfigError

    try:
        return parse_settings(config.load_config())
    except ConfigError as exc:
        log.warning("tool search: ignoring the config: %s", exc)
        return _DEFAULT
