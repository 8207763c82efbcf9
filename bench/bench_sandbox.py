"""The sandbox's overhead per terminal call: the same command sandboxed and not, interleaved in one process.

Target: at most 20 ms more per call, for the mechanism in force (bubblewrap: namespaces, mounts, the
write-deny scan and the check after the call; Landlock: the ruleset). The workspace is a copy of a small
project with a git repository and a virtualenv, so the write-deny list has something to bind. The process
carries a kernel's memory (200 MB) so the spawn pays what it pays in a kernel. A missed target exits non-zero
(``python -m bench.bench_sandbox``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from bench.common import fmt, verdict
from hermes_nb.tools.config import save_config, using_home
from hermes_nb.tools.safety import sandbox
from hermes_nb.tools.terminal_tool import run_command

TARGET = 20e-3
ROUNDS = 60


def _timed(n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        result = run_command("true", timeout=30)
        out.append(time.perf_counter() - start)
        assert result["exit_code"] == 0, result
    return out


def _bare_bwrap() -> float:
    from hermes_nb.tools.safety import bwrap

    sandboxed = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *bwrap._NAMESPACES, "true"]
    times: dict[str, list[float]] = {"bwrap": [], "true": []}
    for _ in range(ROUNDS // 2):
        for name, argv in (("bwrap", sandboxed), ("true", ["true"])):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            times[name].append(time.perf_counter() - start)
    return median(times["bwrap"]) - median(times["true"])


def _project(root: Path) -> Path:
    ws = root / "project"
    for folder in ("src/pkg", "tests", "docs", ".venv/bin", ".venv/lib/python3.11/site-packages", "data/raw"):
        (ws / folder).mkdir(parents=True)
    (ws / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    for i in range(30):
        (ws / "src/pkg" / f"m{i}.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def main() -> int:
    with tempfile.TemporaryDirectory() as root, using_home(Path(root) / "home"):
        os.environ["HERMES_NB_WORKSPACE"] = str(_project(Path(root)))
        state = sandbox.status()
        if not state.available:
            print(f"{state.detail}: nothing to measure")
            return 0
        ballast = bytearray(200 * 1024 * 1024)  # a kernel's memory: fork (not vfork) copies page tables
        ballast[::4096] = b"x" * len(ballast[::4096])
        _timed(3)  # warm: imports, the probes, the first config read
        on, off = [], []
        for _ in range(ROUNDS // 10):  # interleave so a busy machine hurts both sides alike
            save_config({"sandbox": {"enabled": False}})
            off += _timed(10)
            save_config({})
            on += _timed(10)
        base, confined = median(off), median(on)
        overhead = confined - base
        ok = overhead <= TARGET
        if state.mechanism.startswith("bubblewrap"):  # how much of it is bubblewrap's own start, not ours
            bare = _bare_bwrap()
            print(f"  of which bubblewrap itself (its namespaces, `bwrap --ro-bind / / ... true` vs `true`): "
                  f"{fmt(bare)}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"terminal call `true`: {fmt(confined)} sandboxed ({state.mechanism}) vs {fmt(base)} without "
              f"({confined / base:.2f}x); overhead {fmt(overhead)} per call (target <= {fmt(TARGET)}): {verdict(ok)}")
        del ballast
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
