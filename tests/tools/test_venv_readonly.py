"""A virtual environment (a folder holding ``pyvenv.cfg``) is read-only to the model as a whole, by class: the
file tools refuse to write into it (create, modify, through a link, whatever its name or depth), and a sandboxed
command cannot change it (create, modify, delete, rename into, rename away, link into). Measured before: the model
wrote ``.venv/pip.conf``, which the next approved ``pip install`` read.

Each table runs twice: with the defence nothing changes; without it (the landing policy answering "lands" for
every path, and for commands the sandbox's read-only binds off too) every row changes the environment, so the
row is honest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import hermes_nb.tools.file_tools  # noqa: F401  (registers the tools)
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.sandbox import bwrap
from hermes_nb.tools.safety.writes import lander, landing
from hermes_nb.tools.terminal_tool import run_command
from tests.support.bubblewrap import require_bwrap

VENVS = (".venv", "env", "tools/py", "a/b/c/.venv")  # the last is deeper than the write-deny list's scan


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    for venv in VENVS:
        folder = root / venv
        (folder / "bin").mkdir(parents=True)
        (folder / "lib/python3.11/site-packages").mkdir(parents=True)
        (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (folder / "bin/pip").write_text("#!/bin/sh\necho pip\n")
        (folder / "bin/pip").chmod(0o755)
    (root / "notes.txt").write_text("mine\n")
    (root / "link").symlink_to(root / ".venv")
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # the kernel's own environment is the deep one: shown read-only wherever it lives
    monkeypatch.setattr(sys, "prefix", str(root / "a/b/c/.venv"))
    monkeypatch.setattr(sys, "exec_prefix", str(root / "a/b/c/.venv"))
    return root.resolve()


def call(name: str, **args: object) -> str:
    return registry.dispatch(name, args)


WRITES = [
    ("write_file", ".venv/pip.conf", "pip reads the environment's own pip.conf, --isolated or not"),
    ("write_file", ".venv/pip.ini", "the same on Windows"),
    ("write_file", "env/pip.conf", "an environment named env"),
    ("write_file", "tools/py/pip.conf", "one named anything, one level down"),
    ("write_file", "a/b/c/.venv/pip.conf", "the kernel's own, deeper than any scan"),
    ("write_file", ".venv/share/jupyter/kernels/k/kernel.json", "a kernelspec Jupyter offers next"),
    ("write_file", ".venv/etc/jupyter/jupyter_server_config.py", "configuration the server runs"),
    ("write_file", ".venv/lib/python3.11/site-packages/numpy.py", "a module the kernel imports"),
    ("write_file", "link/pip.conf", "through a link in the workspace"),
    ("write_file", "a/b/../../.venv/pip.conf", "through a .. path"),
    ("write_file", "fresh/pyvenv.cfg", "a new pyvenv.cfg makes its folder an environment"),
    ("patch", ".venv/pyvenv.cfg", "modify: point the environment at another interpreter"),
    ("patch", ".venv/bin/pip", "modify: the person's next pip runs it"),
]


def _write(tool: str, path: str) -> str:
    if tool == "patch":
        return call("patch", mode="replace", path=path, old_string="/usr/bin" if path.endswith(".cfg") else "echo pip",
                    new_string="/tmp/evil" if path.endswith(".cfg") else "touch /tmp/evil")
    return call("write_file", path=path, content="[install]\nrequirement = /tmp/evil.txt\n")


def _land_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defence off: the one landing policy lets every path land (the file tools ask it before the call, the
    lander after)."""
    lands = lambda *a, **k: landing.Verdict(action="lands", reason="the defence is off")  # noqa: E731
    monkeypatch.setattr(landing, "judge", lands)
    monkeypatch.setattr(lander, "judge", lands)


def _changed(ws: Path, path: str) -> bool:
    real = ws / path
    return real.exists() and ("evil" in real.read_text())


@pytest.mark.parametrize(("tool", "path", "why"), WRITES, ids=[w[1] for w in WRITES])
def test_the_file_tools_refuse_writes_into_an_environment(ws: Path, tool: str, path: str, why: str) -> None:
    result = _write(tool, path)
    assert "refusing to write" in result and "environment" in result, (why, result)
    assert len(json.loads(result)["error"].splitlines()) == 1, result  # one line
    assert not _changed(ws, path), why


@pytest.mark.parametrize(("tool", "path", "why"), WRITES, ids=[w[1] for w in WRITES])
def test_without_the_refusal_the_file_tools_write_it(ws: Path, tool: str, path: str, why: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _land_everything(monkeypatch)
    _write(tool, path)
    assert _changed(ws, path), why


@dataclass(frozen=True)
class Row:
    command: str
    effect: Callable[[Path], bool]
    why: str


SANDBOXED = [
    Row("echo evil > .venv/pip.conf", lambda w: (w / ".venv/pip.conf").exists(), "create"),
    Row("echo evil >> .venv/pyvenv.cfg", lambda w: "evil" in (w / ".venv/pyvenv.cfg").read_text(), "modify"),
    Row("rm -f .venv/bin/pip", lambda w: not (w / ".venv/bin/pip").exists(), "delete"),
    Row("echo evil > p && mv p .venv/pip.conf", lambda w: (w / ".venv/pip.conf").exists(), "rename into"),
    Row("mv .venv .venv-old; mkdir -p .venv && echo evil > .venv/pip.conf",
        lambda w: (w / ".venv/pip.conf").exists() or (w / ".venv-old").exists(), "rename the environment away"),
    Row("ln -s /tmp/evil .venv/pip.conf", lambda w: (w / ".venv/pip.conf").is_symlink(), "symlink into"),
    Row("ln notes.txt .venv/pip.conf", lambda w: (w / ".venv/pip.conf").exists(), "hard link into"),
    Row("chmod 644 .venv/bin/pip", lambda w: not (w / ".venv/bin/pip").stat().st_mode & 0o100, "change a mode"),
    Row("echo evil > env/pip.conf", lambda w: (w / "env/pip.conf").exists(), "an environment named env"),
    Row("echo evil > tools/py/pip.conf", lambda w: (w / "tools/py/pip.conf").exists(), "one level down"),
    Row("echo evil > a/b/c/.venv/pip.conf", lambda w: (w / "a/b/c/.venv/pip.conf").exists(),
        "the kernel's own environment, deeper than the scan"),
    Row("echo evil > link/pip.conf", lambda w: (w / ".venv/pip.conf").exists(), "through a link"),
    Row("mkdir -p .venv/lib/python3.11/site-packages/x && echo 1 > .venv/lib/python3.11/site-packages/x/__init__.py",
        lambda w: (w / ".venv/lib/python3.11/site-packages/x").exists(), "a package the kernel imports"),
]


@pytest.mark.sandbox
@pytest.mark.parametrize("row", SANDBOXED, ids=[r.why for r in SANDBOXED])
def test_a_sandboxed_command_cannot_change_an_environment(ws: Path, row: Row) -> None:
    require_bwrap()
    result = run_command(row.command, timeout=30)
    assert not row.effect(ws), (row.why, result)


@pytest.mark.sandbox
@pytest.mark.parametrize("row", SANDBOXED, ids=[r.why for r in SANDBOXED])
def test_without_the_read_only_binds_the_command_changes_it(ws: Path, row: Row,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    monkeypatch.setattr(bwrap, "view_mounts", lambda seen, writable=(): [])
    _land_everything(monkeypatch)
    result = run_command(row.command, timeout=30)
    assert row.effect(ws), (row.why, result)
