"""``hermes-nb-mcp-proxy``: a stdio MCP server that forwards everything to the kernel's ``%mcp serve``.

For clients that speak only stdio (Claude Desktop, many agents' configs). It reads the running server's
``url`` and ``token`` from ``$HERMES_NB_HOME/mcp_serve.json`` (written by ``%mcp serve``), so the token
never sits in a client's config file, and passes JSON-RPC messages through unchanged in both directions
(the SDK's streamable HTTP client keeps the session id and the GET stream that carries
``tools/list_changed``). Diagnostics go to stderr; stdout is the protocol.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "read_serve_file"]


def read_serve_file(path: Path | None = None) -> dict[str, Any]:
    """The running server's url and token; SystemExit with a one-line reason when there is none."""
    from hermes_nb.serve.server import serve_file  # where %mcp serve writes it (the home's mcp_serve.json)

    path = path or serve_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"hermes-nb-mcp-proxy: no {path}; run %mcp serve in a notebook first") from None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"hermes-nb-mcp-proxy: cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not data.get("url") or not data.get("token"):
        raise SystemExit(f"hermes-nb-mcp-proxy: {path} has no url and token")
    return data


async def _pump(source: Any, sink: Any, label: str) -> None:
    async with sink:
        async for message in source:
            if isinstance(message, Exception):  # unreadable input: say so, keep the session
                print(f"hermes-nb-mcp-proxy: {label}: {message}", file=sys.stderr)
                continue
            await sink.send(message)


async def bridge(url: str, token: str) -> None:
    """Serve stdio, forwarding to ``url`` with the bearer token, until either side closes."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30.0, read=None)  # a long tool call or the idle GET stream must not time out
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http, \
            streamable_http_client(url, http_client=http) as (http_read, http_write), \
            stdio_server() as (stdio_read, stdio_write), anyio.create_task_group() as tg:

        async def upstream() -> None:
            await _pump(stdio_read, http_write, "from the client")
            tg.cancel_scope.cancel()  # the client closed stdin: we are done

        async def downstream() -> None:
            await _pump(http_read, stdio_write, "from the kernel")
            tg.cancel_scope.cancel()

        tg.start_soon(upstream)
        tg.start_soon(downstream)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes-nb-mcp-proxy", description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default=None, help="the served URL (default: the one in the home file)")
    parser.add_argument("--home", default=None, help="the hermes_nb home (default: $HERMES_NB_HOME or ~/.hermes_nb)")
    args = parser.parse_args(argv)
    from hermes_nb.serve.server import SERVE_FILE

    data = read_serve_file(Path(args.home).expanduser() / SERVE_FILE if args.home else None)
    url = args.url or data["url"]
    import anyio

    try:
        anyio.run(bridge, url, str(data["token"]))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
