"""The bridge's life cycle without hermes-agent: the Hermes import is the seam, held open by a test."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hermes_nb.interop import hermes_tools
from hermes_nb.tools.registry import ToolRegistry


@pytest.fixture
def held_import(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Pretend hermes-agent is installed; its import waits until the test releases it."""
    entered, release = threading.Event(), threading.Event()

    def slow_import() -> Any:
        entered.set()
        assert release.wait(30)
        return object()  # never read: the discovery was discarded before it mirrors anything

    monkeypatch.setattr(hermes_tools, "hermes_installed", lambda: True)
    monkeypatch.setattr(hermes_tools, "_shadowed", lambda: None)
    monkeypatch.setattr(hermes_tools, "_import_hermes", slow_import)
    return entered, release


def test_stop_during_discovery_discards_it(held_import: tuple[threading.Event, threading.Event]) -> None:
    entered, release = held_import
    bridge = hermes_tools.HermesBridge(ToolRegistry())
    assert bridge.start().state == "loading"
    assert entered.wait(30)
    assert bridge.start().state == "loading"  # a second start while loading starts nothing new
    assert bridge.stop().state == "off"
    assert bridge.wait(0).state == "off"  # wait() does not hang on the discarded thread
    release.set()
    threads = [t for t in threading.enumerate() if t.name == "hermes-discovery"]
    for t in threads:
        t.join(30)
    status = bridge.status()
    assert (status.state, status.tools) == ("off", 0)
    from hermes_nb.tools.sources.load_report import failures

    assert not [f for f in failures() if f.source == "hermes"]


def test_absent_hermes_is_a_state_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hermes_tools, "hermes_installed", lambda: False)
    status = hermes_tools.HermesBridge(ToolRegistry()).start()
    assert (status.state, status.message) == ("absent", "hermes-agent is not installed in this environment")


def test_a_bridge_never_started_without_hermes_agent_says_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The load skips the bridge when hermes-agent is missing; its status must still say why (it said "off",
    and ``bench_hermes_load`` crashed on it)."""
    monkeypatch.setattr(hermes_tools, "hermes_installed", lambda: False)
    status = hermes_tools.HermesBridge(ToolRegistry()).status()
    assert (status.state, status.tools) == ("absent", 0)
    assert "not installed" in status.message


class _FeatureUnavailable(RuntimeError):
    def __init__(self, feature: str, missing: tuple[str, ...], reason: str) -> None:
        super().__init__(f"{feature}: {reason}")


def test_a_hermes_check_never_installs_but_a_call_still_may() -> None:
    # Hermes's TTS check calls lazy_deps.ensure, which pip-installs (up to 300 s): a check only looks
    installs: list[str] = []
    lazy_deps = type("LazyDeps", (), {})()
    lazy_deps.FeatureUnavailable = _FeatureUnavailable
    lazy_deps.feature_missing = lambda feature: ("edge-tts==7.2.7",)
    lazy_deps.ensure = lambda feature, prompt=True: installs.append(feature)

    def check() -> bool:
        try:
            lazy_deps.ensure("tts.edge", prompt=False)
        except _FeatureUnavailable:
            return False
        return True

    undo = hermes_tools._checks_never_install(lazy_deps)
    try:
        assert hermes_tools._Check(check, lambda fn: bool(fn()))() is False
        assert installs == []
        lazy_deps.ensure("tts.edge", prompt=False)  # a tool's call, not a check
        assert installs == ["tts.edge"]
    finally:
        undo()
    assert hermes_tools._Check(check, lambda fn: bool(fn()))() is True  # undone: Hermes's own ensure again
