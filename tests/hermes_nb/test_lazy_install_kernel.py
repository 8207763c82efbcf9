"""Lazy dependencies for real: a kernel in a fresh environment, a wheel folder the test builds, no network.

The environment is an empty venv that sees this project's packages through a ``.pth`` line (so it starts in
a fraction of a second), while packages installed into it land in its own site-packages: what the tool
installs goes into the kernel's environment, and the test venv stays as it was.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.kernel import KernelSession
from tests.support.venvs import _uv

pytestmark = [pytest.mark.kernel, pytest.mark.packaging, pytest.mark.timeout(240)]


def build_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel whose module says its version."""
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hermes-nb-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    out = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)
    return out


@pytest.fixture
def lazy_kernel(tmp_path: Path) -> Iterator[tuple[KernelSession, Path, Path]]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "hnb_probe_a", "1.2.0")
    build_wheel(wheels, "hnb_probe_b", "0.3.0")
    venv = tmp_path / "env"
    subprocess.run([_uv(), "venv", "-q", str(venv), "--python", sys.executable], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "_hermes_nb_tests.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"security": {"lazy_install_args": ["--no-index", "--find-links", str(wheels)]}}))
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(home)}, python=venv / "bin" / "python") as k:
        k.run("%load_ext hermes_nb")
        yield k, venv, wheels


PROBE = '''%%tool --toolset lazy --requires "hnb_probe_a>=1.0"
def probe_version() -> str:
    """The probe package's version."""
    import hnb_probe_a
    return hnb_probe_a.VERSION
'''


@pytest.mark.slow
def test_install_after_approval_then_available_without_restart(lazy_kernel):
    """``%tools install`` after the prompt's yes, then the Install button, in one kernel (each start costs ~10 s)."""
    kernel, venv, wheels = lazy_kernel
    card = kernel.run(PROBE)
    assert "needs packages" in card.text and "%tools install probe_version" in card.text  # the button's fallback
    doctor = kernel.run("%tools doctor").text
    assert "missing packages: hnb_probe_a>=1.0 (install: %tools install probe_version)" in doctor
    kernel.run("from hermes_nb.tools.approval import set_default_approval_callback\nasked = []\n"
               "undo = set_default_approval_callback(lambda s, k, d: asked.append((k, s)) or 'once')")
    out = kernel.run("%tools install probe_version").stdout
    assert "✓ installed hnb_probe_a>=1.0" in out and "probe_version: available" in out
    (key, command), = ast.literal_eval(kernel.run("print(asked)").stdout)
    assert key == "lazy-install"
    python = str(venv / "bin" / "python")
    # pip when the kernel's environment has it (a venv made by `make`), else uv (one made by uv)
    has_pip = kernel.run("import importlib.util\nprint(importlib.util.find_spec('pip') is not None)").stdout.strip()
    installer = ([python, "-m", "pip", "--isolated", "install"] if has_pip == "True"
                 else [_uv(), "pip", "install", "--no-config", "--python", python])
    assert command.split() == [*installer, "--no-index", "--find-links", str(wheels), "'hnb_probe_a>=1.0'"]
    assert (next((venv / "lib").glob("python*/site-packages")) / "hnb_probe_a").is_dir()  # the kernel's env
    r = kernel.run("from hermes_nb.tools.model_tools import get_tool_definitions\n"
                   "print([d['function']['name'] for d in get_tool_definitions(['lazy'])])\n"
                   "%tools call probe_version")
    assert "['probe_version']" in r.stdout and "1.2.0" in r.text

    # the button: clicking it approves exactly the command it shows
    kernel.run(PROBE.replace("hnb_probe_a>=1.0", "hnb_probe_b==0.3.0").replace("hnb_probe_a", "hnb_probe_b"))
    r = kernel.run("from hermes_nb.display.installs import install_button\nb = install_button(['probe_version'])\n"
                   "print(b.command)\nr = b.click()\nprint(r.ok, r.message)\n%tools call probe_version")
    assert " ".join(installer) in r.stdout and "True installed hnb_probe_b==0.3.0" in r.stdout  # the same installer
    assert "0.3.0" in r.text
    assert len(ast.literal_eval(kernel.run("print(asked)").stdout)) == 1  # the click was the only approval


PIP_RUN = """
import json, sys
from hermes_nb.tools.registry import registry
from hermes_nb.tools import lazy_deps
registry.register(name="probe", toolset="lazy", handler=lambda a: "x", requires_packages=["hnb_probe_b==0.3.0"],
                  schema={"description": "Probe.", "parameters": {"type": "object", "properties": {}}})
before = registry.availability("probe").reason
asked = []
result = lazy_deps.install(registry.get_entry("probe").requires_packages,
                           approver=lambda s, k, d: asked.append(s) or "once")
import hnb_probe_b
print(json.dumps({"before": before, "asked": asked, "ok": result.ok, "after": registry.availability("probe").available,
                  "version": hnb_probe_b.VERSION, "python": sys.executable}))
"""


@pytest.mark.slow
def test_pip_installs_from_the_wheel_folder_into_the_running_environment(tmp_path):
    """The pip form, ``sys.executable -m pip install --no-index --find-links DIR``, in an environment with pip
    (the pip wheel CPython bundles, so no download) and without a kernel."""
    import ensurepip
    import json

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "hnb_probe_b", "0.3.0")
    venv = tmp_path / "env"
    subprocess.run([_uv(), "venv", "-q", str(venv), "--python", sys.executable], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    bundled = next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    (site / "_hermes_nb_tests.pth").write_text(
        f"{bundled}\nimport site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"security": {"lazy_install_args": ["--no-index", "--find-links", str(wheels)]}}))
    python = str(venv / "bin" / "python")
    out = subprocess.run([python, "-c", PIP_RUN], capture_output=True, text=True, cwd=tmp_path, timeout=180,
                         env={"PATH": "/usr/bin:/bin", "HERMES_NB_HOME": str(home), "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"].startswith("missing packages: hnb_probe_b==0.3.0")
    assert got["asked"] == [f"{python} -m pip --isolated install --no-index --find-links {wheels} hnb_probe_b==0.3.0"]
    assert got["ok"] and got["after"] and got["version"] == "0.3.0" and got["python"] == python
