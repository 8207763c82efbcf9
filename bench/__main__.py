"""Run every benchmark: ``python -m bench`` (or ``python -m bench registry scheduling`` for some).

``python -m bench --quick [names]`` runs the cut-down set of ``bench.quick`` with 2x targets (``make
bench-quick``, part of ``make test``); it exits non-zero when one misses.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback
from pathlib import Path

from bench.common import TargetMissed


def main(argv: list[str]) -> int:
    if "--quick" in argv:
        from bench.quick import run

        start = time.perf_counter()
        failed = run([a for a in argv if a != "--quick"])
        print(f"\nbench-quick: {time.perf_counter() - start:.1f} s"
              + (f"; missed or crashed: {', '.join(failed)}" if failed else "; every target met"))
        return 1 if failed else 0
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if argv:
        names = [n for n in names if n.removeprefix("bench_") in argv or n in argv]
    failed = []
    for name in names:
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").main()
        except TargetMissed as exc:
            print(f"TARGET MISSED: {exc}")
            failed.append(name)
        except SystemExit as exc:  # a benchmark that exits non-zero has missed a target
            if exc.code not in (0, None):
                failed.append(name)
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"({name}: {time.perf_counter() - start:.1f} s)", flush=True)
    if failed:
        print(f"\nbenchmarks that missed a target or crashed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
