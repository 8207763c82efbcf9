"""Hermes's lazy-dependency API by feature name, over hermes_nb's own approval and install flow.

Hermes plugins call ``from tools.lazy_deps import ensure`` and ``ensure("search.exa")`` before importing a
backend's SDK. hermes_nb serves that name (``tools`` is aliased to ``hermes_nb.tools`` for plugin code), so
``hermes_nb.tools.lazy_deps`` re-exports this API beside its own: ``LAZY_DEPS`` (feature → requirement
strings), ``ensure``, ``is_available``, ``feature_specs``, ``feature_missing``, ``feature_install_command``
and ``FeatureUnavailable``. ``ensure`` never installs on its own say: the packages go through
``lazy_deps.install``, so the person approves the exact command (the same gate, pattern key and
``security.allow_lazy_installs`` switch as ``%tools install``); nobody to ask means nothing runs.

``LAZY_DEPS`` holds the features the person allows, from ``config.yaml``
(``lazy_features: {"search.exa": ["exa-py==2.10.2"]}``) or set from Python; unlike Hermes it ships no table
of pinned versions of its own, so a feature nobody listed is unavailable with that reason, as an unknown
feature is in Hermes.
"""

from __future__ import annotations

import shlex
from collections.abc import MutableMapping
from typing import Any

__all__ = ["LAZY_DEPS", "FeatureUnavailable", "ensure", "feature_install_command", "feature_missing",
           "feature_specs", "is_available"]


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
    from hermes_nb.tools.lazy_deps import missing

    return missing(feature_specs(feature))


def is_available(feature: str) -> bool:
    """True when ``feature`` is listed and every package it needs is installed."""
    return feature in LAZY_DEPS and not feature_missing(feature)


def feature_install_command(feature: str) -> str | None:
    """The command that would install ``feature``'s packages here (as ``%tools install`` shows it), or None."""
    from hermes_nb.tools.lazy_deps import LazyInstallError, install_command

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
    from hermes_nb.tools.errors import ToolSchemaError
    from hermes_nb.tools.lazy_deps import LazyInstallError, checked_requirements, install

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
