"""Installing a tool's missing packages from the notebook: ``%tools install NAME`` and the Install button.

Both show the exact command first (``hermes_nb.tools.lazy_deps.install_command``). The magic asks through the
approval gate (the inline prompt); the button *is* the question: it shows the command, and clicking it
approves that command only (if the command changed since, nothing runs). Output lines are shown as they
come (a progress line, or the button's status), and the tools are available afterwards without a restart.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from hermes_nb.display.escaping import escape_html
from hermes_nb.tools import lazy_deps
from hermes_nb.tools.registry import registry

__all__ = ["InstallButton", "install_button", "install_tools"]


def install_tools(names: Sequence[str], *, approver: Any = None) -> lazy_deps.InstallResult:
    """Install what the named tools need, asking the person about the command; progress in the cell."""
    from hermes_nb.display.progress import Progress

    requirements = lazy_deps.requirements_of(names, registry)
    progress = Progress(f"installing for {', '.join(names)}", 1)
    result = lazy_deps.install(requirements, approver=approver, why=f" for {', '.join(names)}",
                               on_line=lambda line: progress.update(0, line[-120:]))
    progress.update(1 if result.ok else 0, result.message, force=True)
    return result


class InstallButton:
    """The command to install a tool's missing packages, and a button that runs it (``click()`` does what
    clicking does). Text fallback: the command and how to run it with ``%tools install``."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.requirements = lazy_deps.requirements_of(self.names, registry)
        self.command = shlex.join(lazy_deps.install_command(lazy_deps.missing(self.requirements)))
        self.result: lazy_deps.InstallResult | None = None
        self._widget: Any = None
        self._status: Any = None

    def click(self) -> lazy_deps.InstallResult:
        """Run the command shown (the click approved exactly it)."""
        lines: list[str] = []

        def line(text: str) -> None:
            lines.append(text)
            self._show(escape_html(text[-160:]))

        self.result = lazy_deps.install(self.requirements, approver=lambda *a: "once", on_line=line,
                                        shown_before=self.command, why=f" for {', '.join(self.names)}")
        self._show(("✓ " if self.result.ok else "✗ ") + escape_html(self.result.message))
        return self.result

    def _show(self, html: str) -> None:
        if self._status is not None:
            self._status.value = f"<code>{html}</code>"

    def widget(self) -> Any:
        import ipywidgets as w

        if self._widget is None:
            button = w.Button(description="Install", button_style="warning", tooltip=self.command)
            button.on_click(lambda _b: self.click())
            self._status = w.HTML()
            label = w.HTML(f"{escape_html(', '.join(self.names))} needs packages: <code>{escape_html(self.command)}</code>")
            self._widget = w.VBox([w.HBox([button, label]), self._status])
        return self._widget

    def __repr__(self) -> str:
        return (f"{', '.join(self.names)} needs packages; to install them: %tools install {' '.join(self.names)}\n"
                f"  runs: {self.command}")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        bundle = self.widget()._repr_mimebundle_(include=include, exclude=exclude)
        if isinstance(bundle, dict):
            bundle["text/plain"] = repr(self)
        return bundle


def install_button(names: Sequence[str]) -> InstallButton | None:
    """A button for the named tools when some of their packages are missing and installing is allowed."""
    if not lazy_deps.installs_allowed() or not lazy_deps.missing(lazy_deps.requirements_of(names, registry)):
        return None
    try:
        return InstallButton(names)
    except lazy_deps.LazyInstallError:
        return None
