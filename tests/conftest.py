"""Shared fixtures: every test gets its own HERMES_NB_HOME and a clean global registry afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests must never talk to a real model or read the person's own config.
os.environ.pop("OPENAI_API_KEY", None)
os.environ.pop("OPENAI_BASE_URL", None)
os.environ.pop("HERMES_NB_MODEL", None)


def _discover_builtins_once() -> None:
    """Register the built-in tools before any test snapshots the registry, so that the test which
    happens to trigger discovery first does not take them away from every later test."""
    import tempfile

    from hermes_nb.tools.config import using_home
    from hermes_nb.tools.model_tools import ensure_discovered

    with tempfile.TemporaryDirectory() as home, using_home(home):  # the discovery cache stays out of the real home
        ensure_discovered()


_discover_builtins_once()


@pytest.fixture(autouse=True)
def hermes_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private home folder (config, spill files, plugins) for each test."""
    home = tmp_path_factory.mktemp("hermes_home")
    monkeypatch.setenv("HERMES_NB_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _restore_registry() -> Iterator[None]:
    """Whatever a test registers, replaces or removes in the global registry is undone after it."""
    from hermes_nb.tools.registry import registry

    before = registry.snapshot()
    yield
    registry.restore(before)


@pytest.fixture
def fresh_registry():
    """An empty ToolRegistry, independent of the global one."""
    from hermes_nb.tools.registry import ToolRegistry

    return ToolRegistry()


#: A full run collects hundreds of tests; far fewer under CI means collection silently broke.
MIN_TESTS_IN_CI = 200


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import sys

    # The repository root is on sys.path in a test run, so a stray `import tools` would load a second copy
    # of the core from the raw folder (the installed name is hermes_nb.tools): fail the run if one did.
    stray = [name for name in ("tools", "model_tools", "toolsets") if name in sys.modules]
    if stray and exitstatus == 0:
        print(f"\nlayout guard: the test process imported {stray}; the core is hermes_nb.tools")
        session.exitstatus = 1
    positional = [a for a in session.config.invocation_params.args if not str(a).startswith("-")]
    if os.environ.get("CI") and not positional and not session.config.option.keyword:
        collected = session.testscollected
        if collected < MIN_TESTS_IN_CI and exitstatus == 0:
            print(f"\nCI guard: only {collected} tests collected (expected ≥ {MIN_TESTS_IN_CI}); failing the run")
            session.exitstatus = 1
