"""Keep the CPUs busy for a bounded time, to run the test suite under load.

    .venv/bin/python scripts/cpu_hog.py --seconds 1800 &   # one busy process per core, ends by itself
    make test

Each worker spins in pure Python until the deadline, then exits; the parent waits for them and exits
too, so a forgotten hog never outlives ``--seconds`` (default 600). Ctrl-C or SIGTERM stops it early.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time

MAX_SECONDS = 4 * 3600  # bounded even when asked for more


def _spin(deadline: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    n = 0
    while time.monotonic() < deadline:
        for _ in range(100_000):
            n += 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to keep busy (at most 4 h)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="busy processes (default: cores)")
    args = parser.parse_args(argv)
    seconds = min(max(args.seconds, 0.0), MAX_SECONDS)
    deadline = time.monotonic() + seconds
    ctx = multiprocessing.get_context("spawn")  # no fork of a threaded parent
    workers = [ctx.Process(target=_spin, args=(deadline,), daemon=True) for _ in range(max(1, args.workers))]
    for w in workers:
        w.start()
    print(f"cpu_hog: {len(workers)} busy processes for {seconds:g} s (pids {' '.join(str(w.pid) for w in workers)})",
          flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()) + 5)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
