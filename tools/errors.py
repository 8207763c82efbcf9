"""The exceptions of the tool core: raised inside, turned into values at the boundaries."""

from __future__ import annotations

__all__ = [
    "BridgeError",
    "HermesNbError",
    "OneLineError",
    "PluginToolOverrideError",
    "ToolArgumentError",
    "ToolSchemaError",
    "UnknownToolsetError",
    "ConfigError",
]


class HermesNbError(Exception):
    """Base of every error hermes_nb raises on purpose."""


class OneLineError(HermesNbError):
    """An error whose message says what to do: IPython shows its one line instead of a traceback of
    library frames (``_render_traceback_``)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class ToolSchemaError(HermesNbError, ValueError):
    """A schema is malformed, or a Python annotation cannot be expressed as JSON schema."""


class ToolArgumentError(HermesNbError, ValueError):
    """Arguments do not satisfy a tool's schema; the message tells the model what to fix."""


class UnknownToolsetError(OneLineError, ValueError):
    """A toolset name that no table entry or registered tool knows."""


class BridgeError(HermesNbError, RuntimeError):
    """Misuse of the async bridge (e.g. blocking on it from its own loop thread)."""


class ConfigError(HermesNbError, ValueError):
    """A configuration value is wrong; the message names the key."""


class PluginToolOverrideError(HermesNbError, PermissionError):
    """A plugin tried to replace or remove a tool it does not own, and config.yaml does not allow it
    (Hermes's name; a ``PermissionError``, as Hermes raises)."""
