"""Discovery of 500 generated tool files: cold (empty cache, nothing imported) against warm (all cached).

Target: a warm discovery (every verdict cached, every module imported) in at most 30 ms.
The generated files register into the global registry under unique names; they are removed afterwards.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from hermes_nb.tools.config import using_home

N_FILES = 500
N_PLAIN = 100  # helper modules without a registration: scanned, never imported
WARM_TARGET_S = 0.030
PREFIX = "hermes_nb_bench_discovery"

_TOOL = '''"""Generated tool {i}."""
import json

from tools.registry import registry


def _handler(args, **kw):
    return json.dumps({{"n": {i}, "echo": args.get("text", "")}})


if True:  # a module-level block, as some Hermes tools guard their registration
    registry.register(
        name="bench_disc_{i}",
        toolset="bench_discovery",
        schema={{"description": "Echo {i}.", "parameters": {{"type": "object",
                 "properties": {{"text": {{"type": "string"}}}}}}}},
        handler=_handler,
        emoji="🧪",
    )
'''

_PLAIN = '''"""A helper that mentions register but never calls registry.register at import."""


def register_later(registry):
    registry.register(name="never", toolset="x", schema={{"parameters": {{}}}}, handler=print)


VALUE = {i}
'''


def _generate(folder: Path) -> None:
    for i in range(N_FILES):
        (folder / f"tool_{i:04d}.py").write_text(_TOOL.format(i=i), encoding="utf-8")
    for i in range(N_PLAIN):
        (folder / f"helper_{i:04d}.py").write_text(_PLAIN.format(i=i), encoding="utf-8")


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    from hermes_nb.tools.registry import registry
    from hermes_nb.tools.sources.discovery import discover_tool_files, scan_file

    with tempfile.TemporaryDirectory(prefix="bench_discovery_") as tmp, using_home(Path(tmp, "home")):
        folder = Path(tmp, "tools")
        folder.mkdir()
        _generate(folder)
        try:
            files = sorted(folder.glob("*.py"))
            scan_only = _best(lambda: [scan_file(f) for f in files], 3)

            t0 = time.perf_counter()
            loaded = discover_tool_files(folder, module_prefix=PREFIX, source_label="builtin")
            cold = time.perf_counter() - t0
            assert len(loaded) == N_FILES, f"expected {N_FILES} modules, got {len(loaded)}"
            assert len(registry.get_tool_names_for_toolset("bench_discovery")) == N_FILES

            warm = _best(lambda: discover_tool_files(folder, module_prefix=PREFIX, source_label="builtin"), 5)
        finally:
            for name in registry.get_tool_names_for_toolset("bench_discovery"):
                registry.deregister(name)
            for mod in [m for m in sys.modules if m == PREFIX or m.startswith(PREFIX + ".")]:
                del sys.modules[mod]

    total = N_FILES + N_PLAIN
    print(f"discovery: {N_FILES} tool files + {N_PLAIN} helpers ({total} files scanned)")
    print(f"  AST scan only (baseline, no cache, no import): {scan_only * 1000:8.1f} ms")
    print(f"  cold (empty cache, parse + import + register): {cold * 1000:8.1f} ms")
    print(f"  warm (all verdicts cached, modules imported):  {warm * 1000:8.1f} ms")
    print(f"  ratio cold/warm: {cold / warm:.1f}x; scan/warm: {scan_only / warm:.1f}x")
    verdict = "target met" if warm <= WARM_TARGET_S else "target missed"
    print(f"  warm target <= {WARM_TARGET_S * 1000:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
