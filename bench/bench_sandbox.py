"""The sandbox's overhead per terminal call: the same command with and without it, in one process.

Target: at most 20 ms more per call (Landlock ruleset, seccomp filter, fork instead of vfork). A missed
target exits non-zero (``python -m bench.bench_sandbox``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from statistics import median

from bench.common import fmt, verdict
from hermes_nb.tools.config import save_config, using_home
from hermes_nb.tools.safety import sandbox
from hermes_nb.tools.terminal_tool import run_command

TARGET = 20e-3
ROUNDS = 40


def _timed(n: int) -> list[float]:
    import time

    out = []
    for _ in range(n):
        start = time.perf_counter()
        result = run_command("true", timeout=30)
        out.append(time.perf_counter() - start)
        assert result["exit_code"] == 0, result
    return out


def main() -> int:
    with tempfile.TemporaryDirectory() as home, using_home(home):
        import os

        os.environ["HERMES_NB_WORKSPACE"] = str(Path(home))
        state = sandbox.status()
        if not state.available:
            print(f"{state.detail}: nothing to measure")
            return 0
        ballast = bytearray(200 * 1024 * 1024)  # a kernel's memory: fork (not vfork) copies page tables
        ballast[::4096] = b"x" * len(ballast[::4096])
        _timed(3)  # warm: imports, the first config read
        on, off = [], []
        for _ in range(ROUNDS // 10):  # interleave so a busy machine hurts both sides alike
            save_config({"sandbox": {"enabled": False}})
            off += _timed(10)
            save_config({})
            on += _timed(10)
        base, confined = median(off), median(on)
        overhead = confined - base
        ok = overhead <= TARGET
        print(f"terminal call `true`: {fmt(confined)} sandboxed ({state.mechanism}) vs {fmt(base)} without "
              f"({confined / base:.2f}x); overhead {fmt(overhead)} per call (target <= {fmt(TARGET)}): {verdict(ok)}")
        del ballast
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
