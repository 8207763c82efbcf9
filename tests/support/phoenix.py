"""Arize Phoenix for tests: ``arize-phoenix`` from PyPI in a cached venv (``.venv-phoenix``), started on
127.0.0.1 only, with a throwaway working directory; spans read back through Phoenix's own REST API."""

from __future__ import annotations

import json
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.venvs import cached_venv, python_of

#: Phoenix's REST API for spans (``/v1/projects/{project}/spans``) is in every release since 11.
PHOENIX = "arize-phoenix>=11"


def phoenix_venv() -> Path:
    return cached_venv("phoenix", [[PHOENIX]])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def phoenix_server(*, ready_within: float = 180) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1; yields its base URL (``http://127.0.0.1:PORT``), OTLP/HTTP at
    ``/v1/traces``. A wait for it to answer only bounds a hang; it returns as soon as it is up."""
    venv = phoenix_venv()
    port, grpc = _free_port(), _free_port()
    work = tempfile.mkdtemp(prefix="hermes-nb-phoenix-")
    env = {"PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
           "PHOENIX_WORKING_DIR": work, "PATH": str(venv / "bin") + ":/usr/bin:/bin", "HOME": work,
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = Path(work) / "phoenix.log"  # a file, not a pipe nobody drains while the test runs
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(python_of(venv)), "-m", "phoenix.server.main", "serve"], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_within
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"phoenix exited: {log.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"phoenix did not answer in time: {log.read_text(errors='replace')[-3000:]}") \
                        from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def spans(base: str, project: str = "default") -> list[dict[str, Any]]:
    """Every span Phoenix holds for ``project``, through its REST API (paged by cursor)."""
    out: list[dict[str, Any]] = []
    cursor = ""
    while True:
        url = f"{base}/v1/projects/{project}/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(url, timeout=10) as response:
            page = json.load(response)
        out += page.get("data", [])
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return out
