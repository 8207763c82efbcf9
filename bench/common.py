"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], *, min_time: float = 0.3, repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds per call of ``fn``, each round running at least ``min_time``."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start >= min_time / 10:
            break
        n *= 2
    rounds = max(1, int(n * (min_time / 10) / max(time.perf_counter() - start, 1e-9)))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(rounds):
            fn()
        best = min(best, (time.perf_counter() - start) / rounds)
    return best


class TargetMissed(Exception):
    """A benchmark's target was missed: ``make bench`` exits non-zero."""


def require(ok: bool, what: str) -> None:
    """Fail the benchmark (after it printed its figures) when a target is missed."""
    if not ok:
        raise TargetMissed(what)


def verdict(ok: bool) -> str:
    return "target met" if ok else "target MISSED"


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
