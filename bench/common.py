"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], *, min_time: float = 0.3, repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds per call of ``fn``, each round running at least ``min_time``
    (a fifth of it, and at most 3 rounds, under ``--quick``)."""
    if QUICK:
        min_time, repeat = min_time / 5, min(repeat, 3)
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


#: ``python -m bench --quick`` (``make bench-quick``): fewer rounds, and every target loosened to
#: ``QUICK_MARGIN`` times the full one, so a noisy shared machine passes and a 2x regression fails.
QUICK = False
QUICK_MARGIN = 2.0


def limit(target: float) -> float:
    """The target in force: the full one, or ``QUICK_MARGIN`` times it in quick mode (lower is better)."""
    return target * QUICK_MARGIN if QUICK else target


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
