"""Real MCP clients for tests of ``%mcp serve``: the SDK's streamable HTTP client, and the inspector CLI.

``connect(url, token, name=...)`` opens an SDK ``ClientSession`` (handshake era, as Hermes and most
clients speak) and records every ``tools/list_changed`` it receives in ``Connected.changes``.
``inspector_cli()`` installs ``@modelcontextprotocol/inspector`` once into a cache folder (like
``npm_everything``) and returns the path of its CLI entry point.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


@dataclass
class Connected:
    session: Any
    changes: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)

    async def next_change(self, timeout: float = 30) -> None:
        await asyncio.wait_for(self.changes.get(), timeout)


@asynccontextmanager
async def connect(url: str, token: str | None, *, name: str = "test-client",
                  headers: dict[str, str] | None = None) -> AsyncIterator[Connected]:
    import httpx2
    import mcp_types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    changes: asyncio.Queue[Any] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            changes.put_nowait(message)

    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(60, read=None)) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write, message_handler=on_message,
                          client_info=mcp_types.Implementation(name=name, version="1")) as session:
        await session.initialize()
        yield Connected(session=session, changes=changes)


def inspector_cli() -> Path:
    """Install (if needed) and return the inspector's CLI ``index.js``; RuntimeError if npm fails."""
    env = os.environ.get("HERMES_NB_TEST_CACHE")
    folder = (Path(env) if env else ROOT / ".cache") / "npm-inspector"
    entry = folder / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "cli" / "build" / "index.js"
    if entry.exists():
        return entry
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError("node and npm are needed for the inspector tests")
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", INSPECTOR],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not entry.exists():
        raise RuntimeError(f"npm install {INSPECTOR} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return entry
