"""Lazy dependencies: requirement strings only, what is missing, the exact command, nothing runs unapproved."""

from __future__ import annotations

import sys

import pytest
import yaml

from hermes_nb.tools import lazy_deps
from hermes_nb.tools.errors import ToolSchemaError
from hermes_nb.tools.registry import registry

SCHEMA = {"description": "Needs a package.", "parameters": {"type": "object", "properties": {}}}


@pytest.mark.parametrize(("text", "why"), [
    ("duckdb>=1.1", "a version range"),
    ("pandas[parquet]", "extras"),
    ('tomli; python_version < "3.11"', "a marker"),
    ("Some_Package==2.0.1", "mixed case and an exact pin"),
])
def test_requirement_strings_are_accepted(text, why):
    assert lazy_deps.checked_requirements("t", [text]) == (str(__import__("packaging.requirements").requirements
                                                               .Requirement(text)),), why


@pytest.mark.parametrize(("text", "why"), [
    ("evil @ https://example.com/evil.whl", "a direct URL"),
    ("evil @ file:///tmp/evil.whl", "a file URL"),
    ("./evil", "a relative path"),
    ("/tmp/evil-1.0-py3-none-any.whl", "an absolute path to a wheel"),
    ("C:\\evil", "a Windows path"),
    ("--index-url=https://example.com", "an installer option"),
    ("-e .", "an editable install"),
    ("duckdb >= ", "a broken specifier"),
    ("", "empty"),
])
def test_urls_paths_and_options_are_refused(text, why):
    with pytest.raises(ToolSchemaError):
        lazy_deps.checked_requirements("t", [text])
    with pytest.raises(ValueError):
        registry.register(name="needs", toolset="lazy", schema=SCHEMA, handler=lambda a: "x", requires_packages=[text])
    assert "needs" not in registry, why


def test_missing_reads_the_environment():
    assert lazy_deps.missing(["pytest", "PyYAML>=3"]) == ()
    assert lazy_deps.missing(["hnb-no-such-package>=1"]) == ("hnb-no-such-package>=1",)
    (too_new,) = lazy_deps.missing(["pytest>=999"])
    assert too_new.startswith("pytest>=999 (") and too_new.endswith(" installed)")
    assert lazy_deps.missing(['hnb-no-such-package; python_version < "3"']) == ()  # not needed here


def test_a_tool_missing_packages_is_unavailable_with_the_reason():
    registry.register(name="needs", toolset="lazy", schema=SCHEMA, handler=lambda a: "x",
                      requires_packages=["hnb-no-such-package>=1.1"])
    registry.register(name="has", toolset="lazy", schema=SCHEMA, handler=lambda a: "x", requires_packages="pytest")
    status = registry.availability("needs")
    assert not status.available and status.missing_packages == ("hnb-no-such-package>=1.1",)
    assert status.reason == "missing packages: hnb-no-such-package>=1.1 (install: %tools install needs)"
    assert registry.availability("has").available
    assert [d["function"]["name"] for d in registry.get_definitions(["needs", "has"])] == ["has"]
    assert "needs" in registry.get_unavailable()


def _config(home, **security) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"security": security}))


def test_the_command_uses_pip_when_present_else_uv(monkeypatch, hermes_home):
    import importlib.util

    _config(hermes_home, lazy_install_args=["--no-index", "--find-links", "/wheels"])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "pip" else real(name, *a))
    assert lazy_deps.install_command(["a>=1 (0.5 installed)"]) == [
        sys.executable, "-m", "pip", "--isolated", "install", "--no-index", "--find-links", "/wheels", "a>=1"]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a))
    monkeypatch.setattr(lazy_deps, "_uv", lambda: "/bin/uv")
    assert lazy_deps.install_command(["a"]) == ["/bin/uv", "pip", "install", "--no-config", "--python", sys.executable,
                                                "--no-index", "--find-links", "/wheels", "a"]
    _config(hermes_home, lazy_install_args="--index-url x")
    with pytest.raises(lazy_deps.LazyInstallError, match="list of strings"):
        lazy_deps.install_command(["a"])


@pytest.mark.parametrize(("value", "allowed"), [(None, True), (True, True), (False, False), ("no", False),
                                                ("false", False), (0, False)])
def test_allow_lazy_installs_fails_closed(hermes_home, value, allowed):
    if value is not None:
        _config(hermes_home, allow_lazy_installs=value)
    assert lazy_deps.installs_allowed() is allowed
    if not allowed:
        with pytest.raises(lazy_deps.LazyInstallError, match="off"):
            lazy_deps.install(["hnb-no-such-package"], approver=lambda *a: "once")


def _no_subprocess(monkeypatch):
    import subprocess

    def refuse(*a, **k):
        raise AssertionError("the installer ran")

    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_nothing_runs_unless_the_person_approves_the_exact_command(monkeypatch):
    _no_subprocess(monkeypatch)
    asked = []

    def deny(subject, key, description):
        asked.append((subject, key, description))
        return "deny"

    result = lazy_deps.install(["hnb-no-such-package>=2"], approver=deny)
    assert not result.ok and "BLOCKED" in result.message
    ((subject, key, description),) = asked
    assert subject == result.command and subject.endswith(" 'hnb-no-such-package>=2'") and key == "lazy-install"
    assert "hnb-no-such-package>=2" in description
    # nobody to ask: blocked, never run
    assert "no one is available" in lazy_deps.install(["hnb-no-such-package"]).message
    # a button's command that is not the command any more: nothing runs, nobody is asked
    stale = lazy_deps.install(["hnb-no-such-package"], approver=deny, shown_before="pip install other")
    assert not stale.ok and "changed" in stale.message and len(asked) == 1


def test_a_tool_never_installs_by_itself(monkeypatch):
    _no_subprocess(monkeypatch)
    registry.register(name="needs", toolset="lazy", schema=SCHEMA, handler=lambda a: "ran",
                      requires_packages=["hnb-no-such-package"])
    assert registry.dispatch("needs", {}) == "ran"  # called anyway: it runs as it is, nothing is installed


# -- Hermes's API by feature name -------------------------------------------------------------------------

@pytest.fixture
def feature(monkeypatch):
    monkeypatch.setitem(lazy_deps.LAZY_DEPS, "search.hnb", ("hnb-no-such-package==1.0",))
    return "search.hnb"


def test_hermes_feature_api_is_served_beside_ours(feature, hermes_home):
    """``ensure``, ``is_available``, ``FeatureUnavailable``, ``LAZY_DEPS``, ``feature_install_command`` (the
    module had another API: a Hermes plugin's ``from tools.lazy_deps import ensure`` failed)."""
    assert lazy_deps.is_available(feature) is False and lazy_deps.is_available("nope.nothing") is False
    assert lazy_deps.is_available("tool.packaging") is False
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"lazy_features": {"tool.packaging": ["packaging"]}}))
    assert lazy_deps.is_available("tool.packaging") is True  # listed in config.yaml, and installed
    lazy_deps.ensure("tool.packaging")  # nothing missing: returns, nothing asked
    command = lazy_deps.feature_install_command(feature)
    assert command is not None and command.endswith(" hnb-no-such-package==1.0")
    assert lazy_deps.feature_install_command("nope.nothing") is None
    with pytest.raises(lazy_deps.FeatureUnavailable, match="not in LAZY_DEPS") as info:
        lazy_deps.ensure("nope.nothing")
    assert info.value.feature == "nope.nothing" and info.value.missing == ()


def test_a_plugins_ensure_goes_through_the_approval_and_install_flow(feature, monkeypatch):
    """Denied or nobody to ask: nothing runs; approved: our command runs (the same gate as %tools install)."""
    _no_subprocess(monkeypatch)
    with pytest.raises(lazy_deps.FeatureUnavailable, match="no one is available") as nobody:
        lazy_deps.ensure(feature)
    assert nobody.value.missing == ("hnb-no-such-package==1.0",)
    asked = []
    with pytest.raises(lazy_deps.FeatureUnavailable, match="BLOCKED"):
        lazy_deps.ensure(feature, approver=lambda subject, key, description: asked.append(description) or "deny")
    assert asked and "lazy_deps.ensure" in asked[0] and "search.hnb" in asked[0]

    import subprocess

    ran = []

    class FakeInstall:
        def __init__(self, command, **kwargs):
            ran.append(command)
            self.stdout, self.returncode = iter(["pretend install\n"]), 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(subprocess, "Popen", FakeInstall)
    with pytest.raises(lazy_deps.FeatureUnavailable, match="still missing"):  # the fake installed nothing
        lazy_deps.ensure(feature, approver=lambda *a: "once")
    assert ran == [lazy_deps.install_command(["hnb-no-such-package==1.0"])]


def test_ensure_refuses_a_feature_whose_spec_is_a_url(monkeypatch):
    _no_subprocess(monkeypatch)
    monkeypatch.setitem(lazy_deps.LAZY_DEPS, "evil", ("x @ https://example.invalid/x.whl",))
    with pytest.raises(lazy_deps.FeatureUnavailable, match="URL or a path"):
        lazy_deps.ensure("evil", approver=lambda *a: "once")


def test_a_hermes_plugin_imports_ensure_from_tools_lazy_deps():
    from hermes_nb.tools.sources.hermes_imports import hermes_name

    assert hermes_name("tools.lazy_deps") == "hermes_nb.tools.lazy_deps"
    import importlib

    module = importlib.import_module(hermes_name("tools.lazy_deps"))
    assert module.ensure is lazy_deps.ensure and issubclass(module.FeatureUnavailable, RuntimeError)
