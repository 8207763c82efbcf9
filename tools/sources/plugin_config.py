"""The ``plugins:`` section of ``config.yaml``: which plugins load, which may replace tools, and its editor.

Read (Hermes's keys, the same meaning)::

    plugins:
      enabled: [guard, slugs]      # an allowlist: when present, only these load (every source)
      disabled: [noisy]            # never load, even when enabled
      allow_tool_override: [cdp]   # these may replace a tool they do not own
      entries:
        cdp: {allow_tool_override: true}   # Hermes's per-plugin spelling of the same

Without ``enabled`` every plugin found loads (hermes_nb's default; Hermes's is opt-in). Edits
(``%plugins enable`` / ``disable``) change only the lines of the list they touch, so the person's
comments and layout stay; the result is parsed back and compared before it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools.config import config_path, load_config, write_config_text
from hermes_nb.tools.errors import ConfigError

__all__ = ["PluginPolicy", "edit_plugin_list", "plugin_policy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginPolicy:
    """What config.yaml says about plugins (``enabled`` is ``None`` when the key is absent)."""

    enabled: frozenset[str] | None = None
    disabled: frozenset[str] = frozenset()
    allow_tool_override: frozenset[str] = frozenset()

    def allows(self, *names: str) -> bool:
        """Whether a plugin known by any of ``names`` (its manifest name, its folder) may load."""
        if any(n in self.disabled for n in names):
            return False
        return self.enabled is None or any(n in self.enabled for n in names)

    def why_not(self, *names: str) -> str:
        if any(n in self.disabled for n in names):
            return "disabled in config.yaml (plugins.disabled)"
        return "not in plugins.enabled in config.yaml"

    def may_override(self, name: str) -> bool:
        return name in self.allow_tool_override


def _names(value: object) -> frozenset[str]:
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


def plugin_policy() -> PluginPolicy:
    """The policy now. A config that cannot be read enables nothing and lets nothing override (fail closed)."""
    section = load_config().get("plugins") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{config_path()}: plugins must be a mapping (enabled, disabled, allow_tool_override)")
    enabled = section.get("enabled")
    if "enabled" in section and not isinstance(enabled, list):
        raise ConfigError(f"{config_path()}: plugins.enabled must be a list of plugin names")
    disabled = section.get("disabled")
    if disabled is not None and not isinstance(disabled, list):  # ``disabled: noisy`` must not disable nothing
        raise ConfigError(f"{config_path()}: plugins.disabled must be a list of plugin names")
    raw_entries = section.get("entries")
    entries: dict[Any, Any] = raw_entries if isinstance(raw_entries, dict) else {}
    by_entry = {str(k) for k, v in entries.items() if isinstance(v, dict) and v.get("allow_tool_override") is True}
    return PluginPolicy(
        enabled=_names(enabled) if "enabled" in section else None,
        disabled=_names(disabled),
        allow_tool_override=_names(section.get("allow_tool_override")) | by_entry,
    )


# -- the editor ----------------------------------------------------------------------------------

_TOP = re.compile(r"^plugins\s*:\s*(#.*)?$")
_KEY = re.compile(r"^(?P<indent>\s+)(?P<key>[A-Za-z_]+)\s*:(?P<rest>.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _meaningful(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """The index after the last line of the block that starts below ``start`` (deeper than ``indent``)."""
    end = start + 1
    for i in range(start + 1, len(lines)):
        if _meaningful(lines[i]) and _indent(lines[i]) <= indent:
            break
        end = i + 1 if _meaningful(lines[i]) else end
    return end


def _edit_text(text: str, key: str, name: str, add: bool) -> str:
    """``text`` with ``name`` added to (or removed from) ``plugins.<key>``, touching only those lines."""
    lines = text.splitlines()
    top = next((i for i, line in enumerate(lines) if _TOP.match(line)), None)
    if top is None:
        if not add:
            return text
        tail = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{tail}plugins:\n  {key}:\n    - {name}\n"
    end = _block_end(lines, top, 0)
    children = [i for i in range(top + 1, end) if _meaningful(lines[i]) and _KEY.match(lines[i])]
    child_indent = min((_indent(lines[i]) for i in children), default=2)
    own = next((i for i in children if _indent(lines[i]) == child_indent
                and _KEY.match(lines[i]).group("key") == key), None)  # type: ignore[union-attr]
    if own is None:
        if add:
            pad = " " * child_indent
            lines[top + 1:top + 1] = [f"{pad}{key}:", f"{pad}  - {name}"]
        return "\n".join(lines) + "\n"
    match = _KEY.match(lines[own])
    assert match is not None
    rest = match.group("rest")
    value, sep, comment = rest.partition("#")
    comment = f"  #{comment}" if sep else ""
    if value.strip():  # a flow list on the key's line: rewrite that one line
        items = [v.strip().strip("'\"") for v in value.strip().strip("[]").split(",") if v.strip()]
        items = [i for i in items if i != name] + ([name] if add else [])
        lines[own] = f"{match.group('indent')}{key}: [{', '.join(items)}]{comment}"
        return "\n".join(lines) + "\n"
    item_end = _block_end(lines, own, child_indent)
    item_lines = [i for i in range(own + 1, item_end) if _meaningful(lines[i])]
    wanted = re.compile(rf"^\s*-\s*['\"]?{re.escape(name)}['\"]?\s*(#.*)?$")
    kept = [i for i in item_lines if not wanted.match(lines[i])]
    for i in reversed(item_lines):
        if i not in kept:
            del lines[i]
    if not add and not kept:  # the last one left: an empty list, not a null (enabled: [] loads nothing)
        lines[own] = f"{match.group('indent')}{key}: []{comment}"
    if add:
        pad = " " * (_indent(lines[item_lines[0]]) if item_lines else child_indent + 2)
        insert_at = (item_lines[-1] + 1) if item_lines else own + 1
        lines.insert(min(insert_at, len(lines)), f"{pad}- {name}")
    return "\n".join(lines) + "\n"


def edit_plugin_list(key: str, name: str, *, add: bool) -> bool:
    """Add ``name`` to (or remove it from) ``plugins.<key>`` in config.yaml, keeping every other line.

    Returns whether the file changed. The edited text is parsed and must equal the intended change;
    otherwise nothing is written and a ``ConfigError`` says what to add by hand.
    """
    import yaml

    if key not in ("enabled", "disabled"):
        raise ValueError(f"key must be enabled or disabled, not {key!r}")
    path = config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    before = load_config(expand=False)
    raw_section = before.get("plugins")
    section: dict[str, Any] = raw_section if isinstance(raw_section, dict) else {}
    raw_current = section.get(key)
    current: list[Any] = raw_current if isinstance(raw_current, list) else []
    if (name in [str(v) for v in current]) == add:
        return False
    expected = {**before, "plugins": {**section, key: [v for v in current if str(v) != name] + ([name] if add else [])}}
    new_text = _edit_text(text, key, name, add)
    try:
        parsed = yaml.safe_load(new_text) or {}
    except yaml.YAMLError:
        parsed = None
    if parsed != expected:
        raise ConfigError(f"{path}: cannot edit plugins.{key} without rewriting the file; "
                          f"{'add' if add else 'remove'} {name!r} {'to' if add else 'from'} plugins.{key} by hand")
    write_config_text(new_text)
    return True
