"""Old import paths of modules that moved (issue 20's regrouping) keep working: ``hermes_nb.replay`` is
``hermes_nb.models.replay``, ``hermes_nb.tools.plugins`` is ``hermes_nb.tools.sources.plugins``, and so on.

One finder on ``sys.meta_path`` answers only these names, with the moved module itself (the same object, so
state and ``monkeypatch`` are shared). The three old modules that became packages (``agent``, ``display``,
``magics``) forward their old names through the package's ``__getattr__`` instead. ``hermes_nb.timeline`` is the
function (``from hermes_nb import timeline``); its module is ``hermes_nb.display.timeline``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "forward", "install"]

#: old dotted name → where the module lives now
MOVED: dict[str, str] = {
    # issue 34: the model seam left the agent for its own package (hermes_nb.models is the seam itself)
    "hermes_nb.agent.models": "hermes_nb.models",
    "hermes_nb.agent.conversation_drift": "hermes_nb.models.conversation_drift",
    "hermes_nb.agent.grammar": "hermes_nb.models.grammar",
    "hermes_nb.agent.local": "hermes_nb.models.local",
    "hermes_nb.agent.local_prompt": "hermes_nb.models.local_prompt",
    "hermes_nb.agent.model_choice": "hermes_nb.models.model_choice",
    "hermes_nb.agent.replay": "hermes_nb.models.replay",
    "hermes_nb.agent.requests": "hermes_nb.models.requests",
    "hermes_nb.agent.server_errors": "hermes_nb.models.server_errors",
    "hermes_nb.agent_events": "hermes_nb.agent.events",
    "hermes_nb.agent_magics": "hermes_nb.magics.agent",
    "hermes_nb.asides": "hermes_nb.display.asides",
    "hermes_nb.cell_pump": "hermes_nb.display.cell_pump",
    "hermes_nb.cell_tool": "hermes_nb.magics.tool",
    "hermes_nb.colours": "hermes_nb.display.colours",
    "hermes_nb.escaping": "hermes_nb.display.escaping",
    "hermes_nb.export": "hermes_nb.interop.export",
    "hermes_nb.fuzz": "hermes_nb.evaluation.fuzz",
    "hermes_nb.hermes_magics": "hermes_nb.magics.hermes",
    "hermes_nb.hermes_tools": "hermes_nb.interop.hermes_tools",
    "hermes_nb.live": "hermes_nb.display.live",
    "hermes_nb.magic_registry": "hermes_nb.magics.registry",
    "hermes_nb.markdown": "hermes_nb.display.markdown",
    "hermes_nb.mcp_magics": "hermes_nb.magics.mcp",
    "hermes_nb.mcp_proxy": "hermes_nb.serve.proxy",
    "hermes_nb.mcp_serve": "hermes_nb.serve.server",
    "hermes_nb.mcp_serve_app": "hermes_nb.serve.app",
    "hermes_nb.mcp_serve_magic": "hermes_nb.magics.serve",
    "hermes_nb.mcp_serve_panel": "hermes_nb.serve.panel",
    "hermes_nb.model_choice": "hermes_nb.models.model_choice",
    "hermes_nb.picker": "hermes_nb.display.picker",
    "hermes_nb.progress": "hermes_nb.display.progress",
    "hermes_nb.prompts": "hermes_nb.display.prompts",
    "hermes_nb.replay": "hermes_nb.models.replay",
    "hermes_nb.tool_examples": "hermes_nb.evaluation.examples",
    "hermes_nb.tools.call_hooks": "hermes_nb.tools.calls.call_hooks",
    "hermes_nb.tools.calling": "hermes_nb.tools.calls.calling",
    "hermes_nb.tools.discovery": "hermes_nb.tools.sources.discovery",
    "hermes_nb.tools.entry": "hermes_nb.tools.calls.entry",
    "hermes_nb.tools.examples": "hermes_nb.tools.calls.examples",
    "hermes_nb.tools.first_use": "hermes_nb.tools.sources.first_use",
    "hermes_nb.tools.hermes_compat": "hermes_nb.tools.sources.hermes_compat",
    "hermes_nb.tools.hermes_imports": "hermes_nb.tools.sources.hermes_imports",
    "hermes_nb.tools.load_report": "hermes_nb.tools.sources.load_report",
    "hermes_nb.tools.outcome": "hermes_nb.tools.calls.outcome",
    "hermes_nb.tools.plugin_files": "hermes_nb.tools.sources.plugin_files",
    "hermes_nb.tools.plugin_hooks": "hermes_nb.tools.sources.plugin_hooks",
    "hermes_nb.tools.plugins": "hermes_nb.tools.sources.plugins",
    "hermes_nb.tools.result_values": "hermes_nb.tools.calls.result_values",
    "hermes_nb.tools.results": "hermes_nb.tools.calls.results",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the moved module has run already."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


_FINDER = _MovedFinder()


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (a reload of ``hermes_nb`` finds it there)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)


def forward(package: str, target: str) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that hands out ``target``'s names: a module that became a package keeps
    its old names importable from it (``from hermes_nb.display import Table``), loaded on first use."""

    def __getattr__(name: str) -> Any:
        if name.startswith("_") or importlib.util.find_spec(f"{package}.{name}") is not None:
            raise AttributeError(name)  # a submodule (or a dunder): the import system's business, not ours
        try:
            return getattr(importlib.import_module(target), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
