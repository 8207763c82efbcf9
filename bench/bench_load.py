"""How long ``%load_ext hermes_nb`` takes in a fresh real kernel, against the closest peer in the same run.

The peer is jupyter-ai-hermes-magics from PyPI (its extension registers ``%%hermes`` and starts a
background connection, nothing else); it is unpacked once into ``.venv-peer-magics/`` and put on the
kernel's path. Offline, a stand-in extension that registers two magics takes its place. Every kernel
first loads IPython's own ``autoreload`` (so both sides find IPython's magic machinery imported), then
one of the two, alternating. Targets: ours <= 30 ms median and <= 1.1x the peer; a miss raises
``TargetMissed`` (``python -m bench`` exits non-zero). Quick mode: 3 kernels each, 2x margins.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import common
from bench.common import limit, require

LOAD_TARGET_MS = 30.0
PEER_RATIO_TARGET = 1.1
IMPORT_TARGET_MS = 50.0
RUNS = 5
QUICK_RUNS = 3

REPO = Path(__file__).resolve().parents[1]
PEER = "jupyter-ai-hermes-magics==0.5.2"
PEER_MODULE = "jupyter_ai_hermes_magics"
PEER_DIR = REPO / ".venv-peer-magics"

_MEASURE = """
import time, sys
def _ms(line):
    t = time.perf_counter()
    get_ipython().run_line_magic("load_ext", line)
    return (time.perf_counter() - t) * 1000
_base = _ms("autoreload")
_load = _ms({ext!r})
print("RESULT", _base, _load, "openai" in sys.modules, "mcp" in sys.modules)
"""

#: Registers two magics and nothing else: the peer's shape, for when PyPI cannot be reached.
_STAND_IN = '''
from IPython.core.magic import Magics, line_magic, cell_magic, magics_class

@magics_class
class StandInMagics(Magics):
    @line_magic
    def standin(self, line):
        "A line magic."
    @cell_magic
    def standin_cell(self, line, cell):
        "A cell magic."

def load_ipython_extension(ip):
    ip.register_magics(StandInMagics)
'''

#: Measure as a person's machine runs: with bytecode caches (this sandbox sets PYTHONDONTWRITEBYTECODE,
#: which would add the compile time of every module to every load). ``COLD`` shows that case too.
CACHED = {"PYTHONDONTWRITEBYTECODE": ""}
COLD = {"PYTHONDONTWRITEBYTECODE": "1"}


def _peer() -> tuple[str, str, str]:
    """(extension module, its folder for PYTHONPATH, label): the real peer if it can be had, else the stand-in."""
    stamp = PEER_DIR / ".stamp"
    if not (stamp.exists() and stamp.read_text() == PEER):
        shutil.rmtree(PEER_DIR, ignore_errors=True)
        uv = Path(sys.executable).with_name("uv")
        found = str(uv) if uv.exists() else shutil.which("uv")
        installer = [found, "pip"] if found else [sys.executable, "-m", "pip"]
        command = [*installer, "install", "-q", "--no-deps", "--target", str(PEER_DIR), PEER]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            done = subprocess.CompletedProcess(command, 1, "", str(exc))
        if done.returncode == 0 and (PEER_DIR / PEER_MODULE).is_dir():
            stamp.write_text(PEER)
    if stamp.exists():
        return PEER_MODULE, str(PEER_DIR), PEER
    folder = REPO / ".venv-peer-standin"
    folder.mkdir(exist_ok=True)
    (folder / "standin_ext.py").write_text(_STAND_IN)
    return "standin_ext", str(folder), "a stand-in extension registering two magics (the peer could not be installed)"


def _one_kernel(ext: str = "hermes_nb", extra_env: dict[str, str] = CACHED, path: str = "") -> tuple[float, float, bool]:
    from tests.support.kernel import KernelSession

    env = {**extra_env, **({"PYTHONPATH": path} if path else {})}
    with tempfile.TemporaryDirectory() as home, KernelSession(cwd=home, env={"HERMES_NB_HOME": home, **env}) as k:
        out = k.run(_MEASURE.format(ext=ext)).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT"))
    _, base, load, openai, mcp = line.split()
    return float(base), float(load), openai == "True" or mcp == "True"


_BREAKDOWN = """
import time, importlib
import hermes_nb
for _name, _fn in hermes_nb._FEATURES:
    _t = time.perf_counter()
    _undo = getattr(importlib.import_module(_name), _fn)(get_ipython())
    print("PART", _name + "." + _fn, (time.perf_counter() - _t) * 1000)
    if callable(_undo):
        _undo()
_t = time.perf_counter()
from hermes_nb.tools.model_tools import ensure_discovered
ensure_discovered()
print("PART first use: built-in tools (model_tools + discovery)", (time.perf_counter() - _t) * 1000)
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
    runs = QUICK_RUNS if common.QUICK else RUNS
    peer_ext, peer_path, peer_label = _peer()
    _one_kernel()  # warm-up: writes the bytecode caches (ours and the peer's)
    _one_kernel(peer_ext, path=peer_path)
    bases, loads, peers, heavy = [], [], [], False
    for i in range(runs):  # alternate, so a busy moment of the machine falls on both sides
        order = (True, False) if i % 2 == 0 else (False, True)
        for ours in order:
            if ours:
                base, load, imported = _one_kernel()
                bases.append(base)
                loads.append(load)
                heavy |= imported
            else:
                peers.append(_one_kernel(peer_ext, path=peer_path)[1])
    base, load, peer = statistics.median(bases), statistics.median(loads), statistics.median(peers)
    ratio = load / max(peer, 1e-6)
    load_limit, ratio_limit = limit(LOAD_TARGET_MS), limit(PEER_RATIO_TARGET)
    load_ok, ratio_ok = load <= load_limit, ratio <= ratio_limit
    print(f"%load_ext hermes_nb: {load:.1f} ms median of {runs} fresh kernels (min {min(loads):.1f}, "
          f"max {max(loads):.1f}); target <= {load_limit:.0f} ms {common.verdict(load_ok)}")
    print(f"peer %load_ext {peer_ext} ({peer_label}): {peer:.1f} ms median (min {min(peers):.1f}, "
          f"max {max(peers):.1f}); hermes_nb / peer = {ratio:.2f}x; target <= {ratio_limit:.2f}x "
          f"{common.verdict(ratio_ok)}")
    print(f"baseline %load_ext autoreload (first in each kernel): {base:.2f} ms")
    print(f"openai or mcp imported by the load: {heavy}")
    if not common.QUICK:
        colds = []
        for _ in range(3):
            with tempfile.TemporaryDirectory() as empty_cache:  # no caches to read either
                colds.append(_one_kernel(extra_env={**COLD, "PYTHONPYCACHEPREFIX": empty_cache})[1])
        print(f"%load_ext hermes_nb without bytecode caches (every module compiled): {statistics.median(colds):.1f} ms")
        for name, ms in _breakdown():
            print(f"  part: {name}: {ms:.1f} ms")
        imp = statistics.median(_import_ms("hermes_nb.tools") for _ in range(3))
        baseline_import = statistics.median(_import_ms("json") for _ in range(3))
        print(f"import hermes_nb.tools: {imp:.2f} ms median; target {IMPORT_TARGET_MS:.0f} ms "
              f"{common.verdict(imp <= IMPORT_TARGET_MS)}; import json (baseline) {baseline_import:.2f} ms")
    misses = [what for ok, what in (
        (load_ok, f"%load_ext hermes_nb {load:.1f} ms > {load_limit:.0f} ms"),
        (ratio_ok, f"{ratio:.2f}x the peer's load > {ratio_limit:.2f}x"),
        (not heavy, "the load imported openai or mcp"),
    ) if not ok]
    require(not misses, "; ".join(misses))


if __name__ == "__main__":
    main()
