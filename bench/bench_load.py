"""How long ``%load_ext hermes_nb`` takes in a fresh real kernel, and how long ``import tools`` takes.

Targets: load under 150 ms, ``import tools`` under 50 ms. The baseline, measured the same way in the
same kernels, is IPython's own ``%load_ext autoreload``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

LOAD_TARGET_MS = 150.0
IMPORT_TARGET_MS = 50.0
RUNS = 3

_MEASURE = """
import time, sys
def _ms(line):
    t = time.perf_counter()
    get_ipython().run_line_magic("load_ext", line)
    return (time.perf_counter() - t) * 1000
_base = _ms("autoreload")
_load = _ms("hermes_nb")
print("RESULT", _base, _load, "openai" in sys.modules, "mcp" in sys.modules)
"""


#: Measure as a person's machine runs: with bytecode caches (this sandbox sets PYTHONDONTWRITEBYTECODE,
#: which would add the compile time of every module to every load). ``COLD`` shows that case too.
CACHED = {"PYTHONDONTWRITEBYTECODE": ""}
COLD = {"PYTHONDONTWRITEBYTECODE": "1"}


def _one_kernel(extra_env: dict[str, str] = CACHED) -> tuple[float, float, bool]:
    from tests.support.kernel import KernelSession

    with tempfile.TemporaryDirectory() as home, KernelSession(cwd=home, env={"HERMES_NB_HOME": home, **extra_env}) as k:
        out = k.run(_MEASURE).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT"))
    _, base, load, openai, mcp = line.split()
    return float(base), float(load), openai == "True" or mcp == "True"


_BREAKDOWN = """
import time, importlib
import hermes_nb
_t = time.perf_counter()
from hermes_nb.tools.model_tools import ensure_discovered
ensure_discovered()
print("PART built-in tools (tools.model_tools + discovery)", (time.perf_counter() - _t) * 1000)
for _name, _fn in hermes_nb._FEATURES:
    _t = time.perf_counter()
    _undo = getattr(importlib.import_module(_name), _fn)(get_ipython())
    print("PART", _name + "." + _fn, (time.perf_counter() - _t) * 1000)
    if callable(_undo):
        _undo()
"""


def _breakdown() -> list[tuple[str, float]]:
    """Import + set-up cost of each part of the load, in one more fresh kernel."""
    from tests.support.kernel import KernelSession

    with tempfile.TemporaryDirectory() as home, KernelSession(cwd=home, env={"HERMES_NB_HOME": home, **CACHED}) as k:
        out = k.run(_BREAKDOWN).stdout
    parts = [line[5:].rsplit(" ", 1) for line in out.splitlines() if line.startswith("PART ")]
    return [(name, float(ms)) for name, ms in parts]


def _import_ms(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    env = {**os.environ, **CACHED}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    return float(out.strip())


def main() -> None:
    _one_kernel()  # warm-up: writes the bytecode caches
    bases, loads, heavy = [], [], False
    for _ in range(RUNS):
        base, load, imported = _one_kernel()
        bases.append(base)
        loads.append(load)
        heavy |= imported
    base, load = statistics.median(bases), statistics.median(loads)
    verdict = "met" if load <= LOAD_TARGET_MS else "missed"
    print(f"%load_ext hermes_nb: {load:.1f} ms median of {RUNS} fresh kernels "
          f"(min {min(loads):.1f}, max {max(loads):.1f}); target {LOAD_TARGET_MS:.0f} ms {verdict}")
    print(f"baseline %load_ext autoreload: {base:.2f} ms; hermes_nb / baseline = {load / max(base, 1e-6):.0f}x")
    print(f"openai or mcp imported by the load: {heavy}")
    colds = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as empty_cache:  # no caches to read either
            colds.append(_one_kernel({**COLD, "PYTHONPYCACHEPREFIX": empty_cache})[1])
    cold = statistics.median(colds)
    print(f"%load_ext hermes_nb without bytecode caches (every module compiled): {cold:.1f} ms")
    for name, ms in _breakdown():
        print(f"  part: {name}: {ms:.1f} ms")
    imports = [_import_ms("tools") for _ in range(RUNS)]
    baseline_import = statistics.median(_import_ms("json") for _ in range(RUNS))
    imp = statistics.median(imports)
    verdict = "met" if imp <= IMPORT_TARGET_MS else "missed"
    print(f"import tools: {imp:.2f} ms median; target {IMPORT_TARGET_MS:.0f} ms {verdict}; "
          f"import json (baseline) {baseline_import:.2f} ms, ratio {imp / max(baseline_import, 1e-6):.1f}x")
    model_tools = statistics.median(_import_ms("hermes_nb.tools.model_tools") for _ in range(RUNS))
    print(f"import tools.model_tools (registry + built-in discovery): {model_tools:.1f} ms")


if __name__ == "__main__":
    main()
