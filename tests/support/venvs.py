"""Extra virtualenvs for tests that need the built wheel or another set of packages (hermes-agent, mcp 1.x).

Each venv lives in ``<repo>/.venv-<name>`` (ignored by git) and is rebuilt only when what went into it
changed: a digest of its requirements (and of the wheel, for wheel venvs) is stored beside it. The first
build on a fresh machine downloads from PyPI with ``uv`` (installed into the test venv on demand); later
runs reuse it. Builds are serialised with a lock file, so parallel pytest processes never race.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: Source paths whose content decides whether the wheel must be rebuilt.
_WHEEL_INPUTS = ("pyproject.toml", "README.md", "hermes_nb", "tools")


@contextmanager
def _locked(name: str) -> Iterator[None]:
    lock_path = REPO / f".venv-{name}.lock"
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _uv() -> str:
    """The ``uv`` executable, installed into the running interpreter's environment if missing."""
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "uv"], check=True)
        found = str(Path(sys.executable).with_name("uv"))
    return found


def _source_digest() -> str:
    digest = hashlib.sha256()
    for item in _WHEEL_INPUTS:
        path = REPO / item
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            digest.update(str(file.relative_to(REPO)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def built_wheel() -> Path:
    """The hermes-nb wheel built from the working tree (cached in ``.venv-wheel/`` by source digest)."""
    out = REPO / ".venv-wheel" / _source_digest()
    with _locked("wheel"):
        wheels = sorted(out.glob("hermes_nb-*.whl"))
        if wheels:
            return wheels[0]
        shutil.rmtree(REPO / ".venv-wheel", ignore_errors=True)
        out.mkdir(parents=True)
        subprocess.run(
            [_uv(), "build", "--wheel", "--out-dir", str(out), str(REPO)],
            check=True, capture_output=True, text=True,
        )
        return sorted(out.glob("hermes_nb-*.whl"))[0]


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def cached_venv(name: str, steps: Sequence[Sequence[str]], *, extra_digest: str = "",
                build_env: dict[str, str] | None = None) -> Path:
    """``.venv-<name>``, built by running each ``uv pip install`` argument list in ``steps`` in order.

    An item ``"{wheel}"`` in a step is replaced by the built hermes-nb wheel. The venv is reused while
    the steps (and the wheel, if used) are unchanged; otherwise it is rebuilt from scratch. ``build_env``
    is added to the environment of the installs (e.g. how a source build compiles; not part of the key).
    """
    uses_wheel = any("{wheel}" in step for step in steps)
    wheel = built_wheel() if uses_wheel else None
    key = hashlib.sha256(
        repr([list(s) for s in steps]).encode() + (wheel.name.encode() if wheel else b"")
        + str(wheel.parent.name if wheel else "").encode() + extra_digest.encode()
    ).hexdigest()[:16]
    venv = REPO / f".venv-{name}"
    stamp = venv / ".hermes-nb-stamp"
    with _locked(name):
        if stamp.exists() and stamp.read_text() == key and python_of(venv).exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        env = {**os.environ, **(build_env or {}), "VIRTUAL_ENV": str(venv)}
        env.pop("PYTHONPATH", None)
        subprocess.run([_uv(), "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env)
        for step in steps:
            args = [str(wheel) if part == "{wheel}" else part for part in step]
            proc = subprocess.run(
                [_uv(), "pip", "install", "-q", "--python", str(python_of(venv)), *args],
                capture_output=True, text=True, env=env,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"building .venv-{name} failed at {args}:\n{proc.stderr[-3000:]}")
        stamp.write_text(key)
        return venv


def run_in(venv: Path, args: Sequence[str], *, cwd: Path | None = None, timeout: float = 300,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``args`` with the venv's ``bin`` first on PATH (``python`` means the venv's), never raising."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYTHONPATH", None)
    full_env["VIRTUAL_ENV"] = str(venv)
    full_env["PATH"] = f"{venv / 'bin'}{os.pathsep}{full_env.get('PATH', '')}"
    command = [str(python_of(venv)), *args[1:]] if args and args[0] == "python" else list(args)
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def venv_name(venv: Path) -> str:
    return venv.name.removeprefix(".venv-")


def installed_files(venv: Path, dist: str) -> set[str]:
    """The paths ``dist``'s RECORD lists, relative to site-packages (byte-code caches left out)."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "print(json.dumps([str(p) for p in m.files(sys.argv[1]) or ()]))"
    )
    proc = run_in(venv, ["python", "-c", code, dist], cwd=venv)  # not the repo: its egg-info would answer
    if proc.returncode != 0:
        raise RuntimeError(f"cannot list the files of {dist} in {venv}:\n{proc.stderr[-2000:]}")
    import json

    return {p for p in json.loads(proc.stdout) if "__pycache__" not in p}


@contextmanager
def uninstalled(venv: Path, dist: str, *, reinstall: Sequence[str]) -> Iterator[None]:
    """``dist`` removed from the cached ``venv`` for the block, then put back (``uv pip install
    --no-deps`` with ``reinstall``, "{wheel}" meaning the built wheel). If it cannot be put back the
    venv's stamp is dropped, so the next ``cached_venv`` rebuilds it instead of reusing a broken one."""
    python = str(python_of(venv))
    wheel = built_wheel() if "{wheel}" in reinstall else None
    args = [str(wheel) if part == "{wheel}" else part for part in reinstall]
    with _locked(venv_name(venv)):
        try:
            subprocess.run([_uv(), "pip", "uninstall", "-q", "--python", python, dist], check=True,
                           capture_output=True, text=True)
            yield
        finally:
            proc = subprocess.run([_uv(), "pip", "install", "-q", "--no-deps", "--python", python, *args],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                (venv / ".hermes-nb-stamp").unlink(missing_ok=True)


def venv_kernel(venv: Path, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """A ``tests.support.kernel.KernelSession`` whose kernel is the venv's own Python and ipykernel,
    started in ``cwd`` (the test process drives it with its own jupyter_client)."""
    from tests.support.kernel import KernelSession

    base = {k: v for k, v in (env or {}).items()}
    return KernelSession(cwd=cwd, env=base, python=python_of(venv))
