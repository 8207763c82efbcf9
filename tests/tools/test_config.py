"""The home folder and config.yaml."""

from __future__ import annotations

import pytest

from hermes_nb.tools import config
from hermes_nb.tools.errors import ConfigError


def test_home_follows_env_at_call_time(hermes_home, monkeypatch, tmp_path):
    assert config.hermes_home() == hermes_home
    monkeypatch.setenv("HERMES_NB_HOME", str(tmp_path / "other"))
    assert config.hermes_home() == tmp_path / "other"
    monkeypatch.delenv("HERMES_NB_HOME")
    assert config.hermes_home().name == ".hermes_nb"


def test_missing_config_is_empty():
    assert config.load_config() == {}


def test_expansion_with_defaults(hermes_home, monkeypatch):
    monkeypatch.setenv("HNB_TOKEN", "abc")
    monkeypatch.delenv("HNB_UNSET", raising=False)
    (hermes_home / "config.yaml").write_text(
        "a: Bearer ${HNB_TOKEN}\nb: ${HNB_UNSET:-fallback}\nc: [\"${HNB_UNSET}\"]\n", encoding="utf-8"
    )
    assert config.load_config() == {"a": "Bearer abc", "b": "fallback", "c": [""]}
    assert config.load_config(expand=False)["a"] == "Bearer ${HNB_TOKEN}"


@pytest.mark.parametrize(("text", "fragment"), [("a: [", "not valid YAML"), ("- 1\n- 2\n", "must be a mapping")])
def test_bad_config_is_one_clear_error(hermes_home, text, fragment):
    (hermes_home / "config.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=fragment):
        config.load_config()


def test_update_round_trip_keeps_unexpanded_values(hermes_home, monkeypatch):
    monkeypatch.setenv("HNB_TOKEN", "abc")
    (hermes_home / "config.yaml").write_text("token: ${HNB_TOKEN}\n", encoding="utf-8")
    config.update_config(lambda cfg: cfg.setdefault("approval", {}).setdefault("always", []).append("ls -la"))
    raw = (hermes_home / "config.yaml").read_text(encoding="utf-8")
    assert "${HNB_TOKEN}" in raw and "ls -la" in raw


def test_using_home_sets_and_restores(hermes_home, tmp_path):
    with config.using_home(tmp_path / "elsewhere") as home:
        assert config.hermes_home() == home == tmp_path / "elsewhere"
    assert config.hermes_home() == hermes_home
