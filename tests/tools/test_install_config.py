"""Installs read no configuration the model can write: the command the person approves is the command that runs.

Each row plants what a hostile model could have written (the kernel's environment in the workspace, so
``.venv/pip.conf``; the workspace, which is the installer's working folder; the environment's variables; the
home's installer settings, when the workspace holds the home) and runs a real approved install from a local wheel
folder, no network: with the defence nothing planted is read; without it (no flags, the environment kept, the
workspace as working folder) every row takes effect, so the row is honest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hermes_nb.tools import lazy_deps
from tests.hermes_nb.test_lazy_install_kernel import build_wheel
from tests.support.venvs import _uv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


# -- the command and its environment, without running anything --------------------------------------------------

def test_the_command_has_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "pip" else real(name, *a))
    assert lazy_deps.install_command(["a"])[:5] == [sys.executable, "-m", "pip", "--isolated", "install"]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a))
    monkeypatch.setattr(lazy_deps, "_uv", lambda: "/bin/uv")
    assert lazy_deps.install_command(["a"])[:4] == ["/bin/uv", "pip", "install", "--no-config"]


@pytest.mark.parametrize(("name", "why"), [
    ("PIP_INDEX_URL", "an index the model chose"), ("PIP_FIND_LINKS", "a wheel folder the model filled"),
    ("PIP_REQUIREMENT", "more packages than the person approved"), ("PIP_CONFIG_FILE", "a config file the model wrote"),
    ("pip_extra_index_url", "lower case: Windows reads it the same"), ("UV_INDEX_URL", "uv's index"),
    ("UV_FIND_LINKS", "uv's wheel folder"), ("UV_CONFIG_FILE", "uv's config file"), ("Uv_Python", "mixed case"),
])
def test_the_environment_is_scrubbed(name: str, why: str) -> None:
    env = lazy_deps.install_env({name: "/evil", "PATH": "/usr/bin", "HOME": "/home/me"})
    assert env == {"PATH": "/usr/bin", "HOME": "/home/me", "PIP_CONFIG_FILE": os.devnull}, why


# -- real installs ----------------------------------------------------------------------------------------------

RUN = """
import importlib.util, json, os, subprocess, sys
from hermes_nb.tools import lazy_deps
if os.environ.get("NO_PIP"):  # this environment sees the test's pip through its .pth: as if it had none
    real_find_spec = importlib.util.find_spec
    importlib.util.find_spec = lambda name, *a: None if name == "pip" else real_find_spec(name, *a)
if os.environ.get("NO_DEFENCE"):  # the install as it was: no flags, the environment kept, the kernel's folder
    lazy_deps.install_env = lambda env: dict(env)
    real_installer = lazy_deps._installer
    lazy_deps._installer = lambda: [a for a in real_installer() if a not in ("--isolated", "--no-config")]
    real_popen = subprocess.Popen
    subprocess.Popen = lambda *a, **k: real_popen(*a, **{**k, "cwd": os.getcwd()})
result = lazy_deps.install(["hnb_probe_b>=0.3"], approver=lambda s, k, d: "once")
print(json.dumps({"ok": result.ok, "command": result.command, "output": result.output}))
"""


@dataclass(frozen=True)
class Plant:
    name: str
    installer: str  # "pip" or "uv"
    why: str


PLANTS = [
    Plant("venv-pip.conf-requirement", "pip", "[install] requirement in the environment's own pip.conf"),
    Plant("venv-pip.conf-find-links", "pip", "[global] find-links in it: a higher version from the model's folder"),
    Plant("user-pip.conf", "pip", "~/.config/pip/pip.conf, a dot-entry of the home the workspace holds"),
    Plant("env-PIP_REQUIREMENT", "pip", "a PIP_ variable in the kernel's environment"),
    Plant("env-PIP_CONFIG_FILE", "pip", "PIP_CONFIG_FILE naming a file in the workspace"),
    Plant("cwd-pip-package", "pip", "python -m pip imports pip from the working folder first"),
    Plant("cwd-uv.toml", "uv", "uv reads uv.toml in the working folder (the workspace)"),
    Plant("user-uv.toml", "uv", "~/.config/uv/uv.toml"),
    Plant("env-UV_OVERRIDE", "uv", "a UV_ variable: an override that swaps the approved package for another"),
]


def _plant(row: Plant, *, venv: Path, ws: Path, evil: Path, env: dict[str, str]) -> None:
    requirement = ws / "more.txt"
    requirement.write_text(f"--find-links {evil}\nhnb_probe_evil\n")  # -r's file may name its own wheel folder
    conf = f"[global]\nfind-links = {evil}\n[install]\nrequirement = {requirement}\n"
    toml = f'find-links = ["{evil}"]\n'
    if row.name == "venv-pip.conf-requirement":
        (venv / "pip.conf").write_text(f"[install]\nrequirement = {requirement}\n")
    elif row.name == "venv-pip.conf-find-links":
        (venv / "pip.conf").write_text(f"[global]\nfind-links = {evil}\n")
    elif row.name == "user-pip.conf":
        (ws / ".config/pip").mkdir(parents=True)
        (ws / ".config/pip/pip.conf").write_text(conf)
    elif row.name == "env-PIP_REQUIREMENT":
        env["PIP_REQUIREMENT"] = str(requirement)
    elif row.name == "env-PIP_CONFIG_FILE":
        (ws / "my.conf").write_text(conf)
        env["PIP_CONFIG_FILE"] = str(ws / "my.conf")
    elif row.name == "cwd-pip-package":
        (ws / "pip").mkdir()
        (ws / "pip" / "__init__.py").write_text("")
        (ws / "pip" / "__main__.py").write_text(f"open({str(ws / 'ran')!r}, 'w').close()\n")
    elif row.name == "cwd-uv.toml":
        (ws / "uv.toml").write_text(toml)
    elif row.name == "user-uv.toml":
        (ws / ".config/uv").mkdir(parents=True)
        (ws / ".config/uv/uv.toml").write_text(toml)
    elif row.name == "env-UV_OVERRIDE":
        (ws / "over.txt").write_text(f"hnb_probe_b @ {next(evil.glob('hnb_probe_b-9*')).as_uri()}\n")
        env["UV_OVERRIDE"] = str(ws / "over.txt")


def _install(tmp_path: Path, row: Plant, *, defended: bool) -> tuple[dict, Path, Path]:
    """A fresh environment (pip from CPython's bundled wheel, or none so uv installs), the planted row, and an
    approved install of ``hnb_probe_b>=0.3`` from the good wheel folder; the workspace is the home."""
    good, evil, ws = tmp_path / "good", tmp_path / "evil", tmp_path / "me"
    for folder in (good, evil, ws):
        folder.mkdir()
    build_wheel(good, "hnb_probe_b", "0.3.0")
    build_wheel(evil, "hnb_probe_b", "9.0.0")  # the model's "newer" version
    build_wheel(evil, "hnb_probe_evil", "1.0.0")
    venv = ws / ".venv"  # the kernel's environment inside the workspace, as the measured attack had it
    subprocess.run([_uv(), "venv", "-q", str(venv), "--python", sys.executable], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    lines = [f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})"]
    if row.installer == "pip":
        import ensurepip

        lines.insert(0, str(next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))))
    (site / "_hermes_nb_tests.pth").write_text("\n".join(lines) + "\n")
    home = tmp_path / "hermes_home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"security": {"lazy_install_args": ["--no-index", "--find-links", str(good)]}}))
    uv_dir = str(Path(_uv()).parent)
    env = {"PATH": f"{uv_dir}:/usr/bin:/bin", "HERMES_NB_HOME": str(home), "HOME": str(ws),
           "HERMES_NB_WORKSPACE": str(ws), "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
           "XDG_CONFIG_HOME": str(ws / ".config")}
    if row.installer == "uv":
        env["NO_PIP"] = "1"
    _plant(row, venv=venv, ws=ws, evil=evil, env=env)
    if not defended:
        env["NO_DEFENCE"] = "1"
    out = subprocess.run([str(venv / "bin/python"), "-c", RUN], capture_output=True, text=True, cwd=ws, timeout=180,
                         env=env, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), venv, ws


def _planted_took_effect(venv: Path, ws: Path) -> list[str]:
    site = next((venv / "lib").glob("python*/site-packages"))
    effects = [d.name for d in site.glob("hnb_probe_evil*")] + [d.name for d in site.glob("hnb_probe_b-9*")]
    return effects + (["the planted pip ran"] if (ws / "ran").exists() else [])


@pytest.mark.parametrize("row", PLANTS, ids=[p.name for p in PLANTS])
def test_the_install_reads_nothing_the_model_planted(tmp_path: Path, row: Plant) -> None:
    result, venv, ws = _install(tmp_path, row, defended=True)
    assert _planted_took_effect(venv, ws) == [], (row.why, result)
    assert result["ok"] and ("--isolated" in result["command"] or "--no-config" in result["command"]), result


@pytest.mark.parametrize("row", PLANTS, ids=[p.name for p in PLANTS])
def test_without_the_defence_the_plant_takes_effect(tmp_path: Path, row: Plant) -> None:
    result, venv, ws = _install(tmp_path, row, defended=False)
    assert _planted_took_effect(venv, ws) != [], (row.why, result)
