"""Packages a tool needs (``register(..., requires_packages=["duckdb>=1.1"])``): which are missing, and
installing them once the person approved the exact command.

A requirement is a PEP 508 string for a package from an index (``duckdb>=1.1``, ``pandas[parquet]``,
markers allowed), checked with ``packaging.requirements`` at registration: a URL (``x @ https://…``), a
path or a file is refused. A tool whose packages are missing is unavailable with that reason (``%tools
doctor``, the picker). Nothing installs by itself: only ``install`` does (``%tools install NAME``, the
picker's button), after the approval gate asked the person about the exact command it shows. It installs
into the kernel's own environment: ``sys.executable -m pip --isolated install …``, or ``uv pip install
--no-config --python sys.executable …`` when pip is missing and uv is present. Then
``importlib.invalidate_caches()``, so the tool is available without a restart.

The install reads no configuration the model could have written, so the command approved is the command that
runs: no ``PIP_*`` or ``UV_*`` variable reaches it, pip reads no configuration file (``--isolated`` still reads the
environment's own ``pip.conf``, which the model could write where the environment lies in the workspace, so
``PIP_CONFIG_FILE`` is ``os.devnull``: pip's one way to read none), uv reads no ``uv.toml`` / ``pyproject.toml``
(``--no-config``), and it runs in an empty folder of its own (``python -m`` puts the working folder first on the
module path, and the kernel's is the workspace). Index options come only from the config's ``lazy_install_args``,
shown in the command.

Settings (``config.yaml``): ``security: {allow_lazy_installs: false}`` turns installing off (any value but
true/absent counts as off); ``security: {lazy_install_args: ["--no-index", "--find-links", DIR]}`` adds
index options to the command, shown with the rest.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.errors import HermesNbError, ToolSchemaError

__all__ = ["LAZY_DEPS", "FeatureUnavailable", "InstallResult", "LazyInstallError", "checked_requirements", "ensure",
           "feature_install_command", "feature_missing", "feature_specs", "install", "install_command", "install_env",
           "installs_allowed", "is_available", "missing", "requirements_of"]

PATTERN_KEY = "lazy-install"


class LazyInstallError(HermesNbError, RuntimeError):
    """Installing is switched off, or the config's install options are malformed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallResult:
    """What ``install`` did: the command shown (and run, when approved), its output and whether it worked."""

    command: str
    ok: bool
    message: str
    output: str = ""
    still_missing: tuple[str, ...] = ()


def checked_requirements(name: str, items: Iterable[str] | str | None) -> tuple[str, ...]:
    """The requirement strings of tool ``name``, normalised; ``ToolSchemaError`` for anything but index packages."""
    if items is None:
        return ()
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for item in (items,) if isinstance(items, str) else items:
        if not isinstance(item, str):
            raise ToolSchemaError(f"tool {name!r}: requires_packages holds {item!r}, not a requirement string")
        try:
            req = Requirement(item)
        except InvalidRequirement as exc:
            raise ToolSchemaError(f"tool {name!r}: {item!r} is not a package requirement ({exc})") from None
        if req.url is not None or any(c in item for c in "/\\"):
            raise ToolSchemaError(f"tool {name!r}: {item!r} names a URL or a path; only packages from an "
                                  f"index may be required (e.g. 'duckdb>=1.1')")
        out.append(str(req))
    return tuple(out)


def missing(requirements: Sequence[str]) -> tuple[str, ...]:
    """The requirements not met in this environment (not installed, or another version), as given."""
    if not requirements:
        return ()
    import importlib.metadata

    from packaging.requirements import Requirement

    out = []
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue  # not needed here (another platform or Python)
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            out.append(text)
            continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            out.append(f"{text} ({version} installed)")
    return tuple(out)


def _security() -> dict[str, Any]:
    from hermes_nb.tools.config import load_config

    section = load_config().get("security")
    return section if isinstance(section, dict) else {}


def installs_allowed() -> bool:
    """``security: {allow_lazy_installs: ...}``: absent or true allows; anything else is off (fail closed)."""
    return _security().get("allow_lazy_installs", True) is True


def _installer() -> list[str]:
    import importlib.util

    try:
        has_pip = importlib.util.find_spec("pip") is not None
    except ModuleNotFoundError:  # the kernel's import guard: found only where the model can write
        has_pip = False
    if has_pip:
        return [sys.executable, "-m", "pip", "--isolated", "install"]
    uv = _uv()
    if uv is None:
        raise LazyInstallError(f"neither pip nor uv is available to {sys.executable}; install the packages "
                               f"yourself and re-run the tool's cell")
    return [uv, "pip", "install", "--no-config", "--python", sys.executable]


def _uv() -> str | None:
    try:
        import uv  # the uv wheel's own locator, when it is installed here

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    import shutil

    found = shutil.which("uv")
    beside = Path(sys.executable).with_name("uv")
    return found or (str(beside) if beside.exists() else None)


def install_command(requirements: Sequence[str]) -> list[str]:
    """The command that installs ``requirements`` into the kernel's environment (config's index options first)."""
    extra = _security().get("lazy_install_args", [])
    if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
        raise LazyInstallError("security.lazy_install_args in config.yaml must be a list of strings")
    bare = [r.split(" (", 1)[0] for r in requirements]  # "x>=2 (1.0 installed)" → "x>=2"
    return [*_installer(), *extra, *bare]


def install_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for the installer: without any ``PIP_*`` / ``UV_*`` variable (case as written: Windows folds it),
    and with ``PIP_CONFIG_FILE`` at ``os.devnull``, so pip loads no configuration file at all."""
    out = {k: v for k, v in env.items() if not k.upper().startswith(("PIP_", "UV_"))}
    out["PIP_CONFIG_FILE"] = os.devnull
    return out


def install(requirements: Sequence[str], *, approver: Any = None, why: str = "",
            on_line: Callable[[str], None] | None = None, shown_before: str | None = None) -> InstallResult:
    """Ask the person about the exact command, then run it; ``on_line`` sees its output as it comes.

    ``shown_before``: the command a button showed the person (clicking it was the approval); when the
    command is another one now (the config or the environment changed), nothing runs."""
    if not installs_allowed():
        raise LazyInstallError("installing packages is off (security: {allow_lazy_installs: false} in config.yaml)")
    needed = missing(requirements)
    if not needed:
        return InstallResult(command="", ok=True, message="nothing to install: every package is there")
    import shlex
    import subprocess

    command = install_command(needed)
    shown = shlex.join(command)
    if shown_before is not None and shown_before != shown:
        return InstallResult(command=shown, ok=False, message="the install command changed since it was shown; "
                                                              "nothing ran (look at the new one first)")
    from hermes_nb.tools.safety.approvals.gate import Ask, decide_ask

    ask = Ask(tool="install_packages", subject=shown, key=PATTERN_KEY, scopes=frozenset(),
              description=f"installs {', '.join(needed)} into the kernel's environment{why}.")
    decision = decide_ask("install_packages", ask, approver)
    if not decision.approved:
        return InstallResult(command=shown, ok=False, message=decision.message)
    import tempfile

    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hermes-nb-install-") as empty, subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
            cwd=empty, env=install_env(os.environ)) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if on_line is not None:
                on_line(line.rstrip("\n"))
    importlib.invalidate_caches()  # the new distributions are found without a restart
    left = missing(requirements)
    ok = proc.returncode == 0 and not left
    message = ("installed " + ", ".join(needed)) if ok else (
        f"the command exited with {proc.returncode}" + (f"; still missing: {', '.join(left)}" if left else ""))
    return InstallResult(command=shown, ok=ok, message=message, output="".join(lines), still_missing=left)


def requirements_of(names: Iterable[str], reg: Any) -> tuple[str, ...]:
    """The packages the named tools of ``reg`` require, each once, in order."""
    seen: dict[str, None] = {}
    for name in names:
        entry = reg.get_entry(name)
        for req in getattr(entry, "requires_packages", ()) if entry is not None else ():
            seen.setdefault(req, None)
    return tuple(seen)


# -- Hermes's API by feature name ------------------------------------------------------------------------
# Hermes plugins call ``from tools.lazy_deps import ensure`` and ``ensure("search.exa")`` before importing a
# backend's SDK (``tools`` is aliased to ``hermes_nb.tools`` for plugin code). ``LAZY_DEPS`` holds the features
# the person allows, from config.yaml (``lazy_features: {"search.exa": ["exa-py==2.10.2"]}``) or set from
# Python; unlike Hermes there is no built-in table of pinned versions, so a feature nobody listed is
# unavailable with that reason, as an unknown feature is in Hermes. ``ensure`` never installs on its own say:
# it goes through ``install`` above, so the person approves the exact command (fail closed: nobody to ask,
# nothing runs).

class FeatureUnavailable(RuntimeError):
    """A feature's packages are missing and were not installed: ``feature``, ``missing`` and ``reason``
    (Hermes's attributes)."""

    def __init__(self, feature: str, missing: tuple[str, ...], reason: str) -> None:
        self.feature, self.missing, self.reason = feature, tuple(missing), reason
        hint = f" To enable it yourself: pip install {' '.join(map(shlex.quote, missing))}." if missing else ""
        super().__init__(f"Feature {feature!r} unavailable: {reason}.{hint}")


class _Features(dict[str, tuple[str, ...]]):
    """``LAZY_DEPS``: what Python set, over what ``config.yaml``'s ``lazy_features`` lists (read each time)."""

    def _configured(self) -> dict[str, tuple[str, ...]]:
        from hermes_nb.tools.config import load_config

        section = load_config().get("lazy_features")
        if not isinstance(section, dict):
            return {}
        return {str(k): (v,) if isinstance(v, str) else tuple(v) for k, v in section.items()
                if isinstance(v, str) or (isinstance(v, list) and all(isinstance(i, str) for i in v))}

    def __missing__(self, feature: str) -> tuple[str, ...]:
        return self._configured()[feature]

    def __contains__(self, feature: object) -> bool:
        return dict.__contains__(self, feature) or feature in self._configured()

    def get(self, feature: str, default: Any = None) -> Any:
        return self[feature] if feature in self else default


LAZY_DEPS: MutableMapping[str, tuple[str, ...]] = _Features()


def feature_specs(feature: str) -> tuple[str, ...]:
    """The requirement strings of ``feature``; KeyError for a feature nobody listed."""
    if feature not in LAZY_DEPS:
        raise KeyError(f"Unknown lazy feature: {feature!r}")
    return tuple(LAZY_DEPS[feature])


def feature_missing(feature: str) -> tuple[str, ...]:
    """The requirements of ``feature`` not met in the kernel's environment."""
    return missing(feature_specs(feature))


def is_available(feature: str) -> bool:
    """True when ``feature`` is listed and every package it needs is installed."""
    return feature in LAZY_DEPS and not feature_missing(feature)


def feature_install_command(feature: str) -> str | None:
    """The command that would install ``feature``'s packages here (as ``%tools install`` shows it), or None."""
    if feature not in LAZY_DEPS:
        return None
    try:
        return shlex.join(install_command(feature_specs(feature)))
    except LazyInstallError:
        return None


def ensure(feature: str, *, prompt: bool = True, approver: Any = None) -> None:
    """Make ``feature``'s packages importable, or raise ``FeatureUnavailable`` saying why.

    Missing packages are installed only through ``lazy_deps.install``: the person approves the exact command
    (``approver``, else the notebook's prompt). ``prompt`` is Hermes's and changes nothing here: there is no
    install without that approval (fail closed)."""
    if feature not in LAZY_DEPS:
        raise FeatureUnavailable(feature, (), f"feature {feature!r} is not in LAZY_DEPS (list it under "
                                              f"lazy_features in config.yaml)")
    try:
        specs = checked_requirements(f"feature {feature}", feature_specs(feature))
    except ToolSchemaError as exc:
        raise FeatureUnavailable(feature, (), str(exc)) from None
    needed = feature_missing(feature)
    if not needed:
        return
    try:
        result = install(specs, approver=approver, why=f" for the feature {feature!r} (lazy_deps.ensure)")
    except LazyInstallError as exc:
        raise FeatureUnavailable(feature, needed, str(exc)) from None
    if not result.ok:
        raise FeatureUnavailable(feature, result.still_missing or needed, result.message)
