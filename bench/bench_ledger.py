"""The ledger of model-written files and the checkpoints (issue 32): what the import guard adds to each import,
what recording and rolling back 1 000 changed files cost, each against a baseline in the same process.

- the guard: the import system's own search for a module (``importlib``'s ``_find_spec``), with the guard
  first on ``sys.meta_path`` and without it, over every module this process has imported; with an empty ledger
  (most kernels) and with 1 000 entries. Targets: <= 1.5x and <= 3x the search without the guard (a module's
  load, which follows the search, costs far more than either).
- ``checkpoints.record`` of a 1 000-file write-set (pre-images kept, hashes, the ledger written) against
  landing those 1 000 files (each written to a fresh name and renamed, as the lander does): <= 1.5x.
  ``rollback`` of the same call: <= 3x. On a tmpfs where there is one.
"""

from __future__ import annotations

import importlib._bootstrap as bootstrap
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.common import fmt, limit, per_call, require, verdict
from hermes_nb.tools.config import using_home
from hermes_nb.tools.safety.writes import checkpoints, imports, ledger, rollback
from hermes_nb.tools.safety.writes.changes import Change

FILES = 1000
GUARD_EMPTY_TARGET = 1.5
GUARD_FULL_TARGET = 3.0
RECORD_TARGET = 1.5
ROLLBACK_TARGET = 3.0


def _search_cost() -> float:
    names = [(n, getattr(sys.modules[n.rpartition(".")[0]], "__path__", None) if "." in n else None)
             for n in sorted(sys.modules) if getattr(sys.modules[n], "__file__", None)]
    names = [(n, p) for n, p in names if "." not in n or p is not None]

    def search() -> None:
        for name, path in names:
            bootstrap._find_spec(name, path)  # type: ignore[attr-defined]

    return per_call(search, min_time=0.3) / len(names)


def _write_all(ws: Path, tag: bytes) -> list[Change]:
    """Land ``FILES`` files as the lander does (a fresh name, then a rename), and describe each change."""
    out = []
    for i in range(FILES):
        path = ws / f"m{i}.py"
        before = path.read_bytes() if path.exists() else None
        data = b"# %s %d\n" % (tag, i) * 20
        (ws / f".m{i}.tmp").write_bytes(data)
        os.replace(ws / f".m{i}.tmp", path)
        out.append(Change(path=str(path), kind="modified" if before is not None else "created", before=before,
                          after=data, mode_before=0o644 if before is not None else None, mode_after=0o644))
    return out


def main() -> None:
    # on a tmpfs where there is one: on this machine's disk a file's creation alone costs ~2 ms under load
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp, using_home(Path(tmp) / "home"):
        ws = Path(os.path.realpath(tmp)) / "ws"
        ws.mkdir()
        bare = _search_cost()
        undo = imports.install()
        try:
            empty = _search_cost()
            _write_all(ws, b"person")
            start = time.perf_counter()
            changes = _write_all(ws, b"model")
            t_write = time.perf_counter() - start
            start = time.perf_counter()
            checkpoints.record(call_id="bench_call", tool="terminal", workspace=ws, changes=changes)
            t_record = time.perf_counter() - start
            ledger.current()  # the guard's first look after a landing reads the new ledger once
            full = _search_cost()
        finally:
            undo()
        start = time.perf_counter()
        result = rollback.rollback("bench_call")
        t_rollback = time.perf_counter() - start
        assert len(result.restored) == FILES and not result.kept, result.kept[:3]
    print(f"import search: {fmt(bare)} per module without the guard; with it and an empty ledger {fmt(empty)} "
          f"({empty / bare:.2f}x, target <= {limit(GUARD_EMPTY_TARGET)}x): "
          f"{verdict(empty / bare <= limit(GUARD_EMPTY_TARGET))}")
    print(f"  with {FILES} ledger entries {fmt(full)} ({full / bare:.2f}x, target <= {limit(GUARD_FULL_TARGET)}x): "
          f"{verdict(full / bare <= limit(GUARD_FULL_TARGET))}")
    print(f"record {FILES} changed files: {fmt(t_record)} ({t_record / t_write:.2f}x landing them, {fmt(t_write)}; "
          f"target <= {limit(RECORD_TARGET)}x): {verdict(t_record / t_write <= limit(RECORD_TARGET))}")
    print(f"roll them back: {fmt(t_rollback)} ({t_rollback / t_write:.2f}x; target <= {limit(ROLLBACK_TARGET)}x): "
          f"{verdict(t_rollback / t_write <= limit(ROLLBACK_TARGET))}")
    require(empty / bare <= limit(GUARD_EMPTY_TARGET), "the import guard with an empty ledger")
    require(full / bare <= limit(GUARD_FULL_TARGET), f"the import guard with {FILES} ledger entries")
    require(t_record / t_write <= limit(RECORD_TARGET), f"recording {FILES} changed files")
    require(t_rollback / t_write <= limit(ROLLBACK_TARGET), f"rolling back {FILES} changed files")


if __name__ == "__main__":
    main()
