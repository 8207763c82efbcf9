"""``@modelcontextprotocol/server-everything`` for tests: installed once with npm into a cache folder.

The folder is ``$HERMES_NB_TEST_CACHE`` (if set) or ``<repo>/.cache/npm-everything``; an existing
install is reused. ``everything_entry()`` returns the path to its ``dist/index.js``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@modelcontextprotocol/server-everything"


def cache_dir() -> Path:
    env = os.environ.get("HERMES_NB_TEST_CACHE")
    return Path(env) if env else ROOT / ".cache" / "npm-everything"


def everything_entry() -> Path:
    """Install (if needed) and return ``.../server-everything/dist/index.js``; RuntimeError if npm fails."""
    folder = cache_dir()
    entry = folder / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if entry.exists():
        return entry
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError("node and npm are needed for server-everything tests")
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", PACKAGE],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0 or not entry.exists():
        raise RuntimeError(f"npm install {PACKAGE} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return entry
