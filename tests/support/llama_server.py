"""A real OpenAI-compatible server written by others, with real weights, for the tests that need one.

llama-cpp-python's own ``python -m llama_cpp.server`` (from ``.venv-llama``) serving SmolLM2-135M-Instruct
on 127.0.0.1, with the ``chatml-function-calling`` chat format (the one of that server that takes tools) and
one inference thread (two threads on a shared 2-core machine were measured 10x slower). The session fixture
``llama_server`` (``tests/hermes_nb/conftest.py``) keeps one for the whole run, started on first use.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.llama_venv import gguf_path, llama_venv
from tests.support.venvs import python_of

__all__ = ["LlamaServer", "running_llama_server", "start_llama_server"]

#: Loading 93 MB of weights and starting uvicorn takes ~3 s alone; a loaded machine, much longer.
START_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaServer:
    base_url: str
    gguf: Path
    process: subprocess.Popen[str]
    log: list[str]  # what the server printed (its tracebacks, for a failing test's message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama_server() -> LlamaServer:
    """Start the server and return once it listens (its own "Uvicorn running" line, not a poll loop)."""
    venv = llama_venv()
    gguf = gguf_path(venv)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [str(python_of(venv)), "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "4096",
         "--chat_format", "chatml-function-calling"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    log: list[str] = []
    ready = threading.Event()

    def read() -> None:  # drains stderr for the server's whole life, so it never blocks on a full pipe
        assert process.stderr is not None
        for line in process.stderr:
            if not line.startswith(("llama_", "load", "print_info", "gguf", "model_loader", ".")):
                log.append(line.rstrip())
            if "Uvicorn running on" in line:
                ready.set()
        ready.set()  # it exited

    threading.Thread(target=read, name="llama-server-log", daemon=True).start()
    if not ready.wait(START_TIMEOUT) or process.poll() is not None:
        process.kill()
        raise RuntimeError("llama_cpp.server did not start:\n" + "\n".join(log[-40:]))
    return LlamaServer(base_url=f"http://127.0.0.1:{port}/v1", gguf=gguf, process=process, log=log)


@contextmanager
def running_llama_server() -> Iterator[LlamaServer]:
    """The server for the block (the session fixture ``llama_server`` in ``tests/hermes_nb/conftest.py``)."""
    server = start_llama_server()
    try:
        yield server
    finally:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
