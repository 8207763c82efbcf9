"""A real Jupyter kernel for tests: the project's own ipykernel, driven with jupyter_client.

Use ``KernelSession`` as a context manager; ``run(code)`` executes a cell and returns what it printed,
displayed and raised, the same messages a notebook front end receives.
"""

from __future__ import annotations

import os
import queue
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class CellResult:
    status: str = "ok"
    stdout: str = ""
    stderr: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """All text/plain data displayed or returned, joined."""
        parts = []
        for out in self.outputs:
            data = out.get("data", {})
            if "text/plain" in data:
                parts.append(data["text/plain"])
        return "\n".join(parts)

    @property
    def html(self) -> str:
        return "\n".join(o.get("data", {}).get("text/html", "") for o in self.outputs)

    def mime(self, mimetype: str) -> list[Any]:
        return [o["data"][mimetype] for o in self.outputs if mimetype in o.get("data", {})]


class KernelSession:
    """Start a kernel with this interpreter (the .venv's), in ``cwd``, with extra environment."""

    def __init__(self, cwd: Path | str | None = None, env: dict[str, str] | None = None,
                 python: Path | str | None = None) -> None:
        self.cwd = Path(cwd or ROOT)
        self.env = {**os.environ, **(env or {})}
        self.python = python  # another venv's interpreter (it needs ipykernel); None: this one
        self.km: KernelManager | None = None
        self.kc: Any = None

    def __enter__(self) -> KernelSession:
        self.km = KernelManager(kernel_cmd=None) if self.python is None else _venv_kernel(self.python, self.env)
        self.km.kernel_spec  # noqa: B018  (resolve before start)
        self.km.start_kernel(
            cwd=str(self.cwd),
            env=self.env,
            # the TCP-without-encryption warning on every start is noise on 127.0.0.1
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            self.km.shutdown_kernel(now=False)

    @property
    def pid(self) -> int:
        assert self.km is not None and self.km.provisioner is not None
        return self.km.provisioner.pid  # type: ignore[attr-defined]

    def run(self, code: str, timeout: float = 60, *, allow_error: bool = False,
            cell_id: str | None = None) -> CellResult:
        """Run ``code`` as a notebook cell; ``cell_id`` is sent as JupyterLab sends it (``metadata.cellId``)."""
        if cell_id is None:
            msg_id = self.kc.execute(code, store_history=True)
        else:
            content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                       "allow_stdin": False, "stop_on_error": True}
            msg = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
            self.kc.shell_channel.send(msg)
            msg_id = msg["header"]["msg_id"]
        return self.collect(msg_id, timeout, allow_error=allow_error)

    def collect(self, msg_id: str, timeout: float = 60, *, allow_error: bool = False) -> CellResult:
        result = CellResult()
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell did not finish in {timeout} s; so far: {result}")
            try:
                msg = self.kc.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    result.stdout += content["text"]
                else:
                    result.stderr += content["text"]
            elif kind in ("display_data", "execute_result", "update_display_data"):
                result.outputs.append({"type": kind, **content})
            elif kind == "error":
                result.error = content
                result.status = "error"
            elif kind == "status" and content["execution_state"] == "idle":
                break
        if result.error and not allow_error:
            tb = "\n".join(result.error.get("traceback", []))
            raise AssertionError(f"cell raised {result.error['ename']}: {result.error['evalue']}\n{tb}")
        return result

    def interrupt(self) -> None:
        assert self.km is not None
        self.km.interrupt_kernel()


def _venv_kernel(python: Path | str, env: dict[str, str]) -> KernelManager:
    """A KernelManager whose kernel runs ``python`` (a kernelspec written to a temporary folder)."""
    import json
    import tempfile

    from jupyter_client.kernelspec import KernelSpecManager

    folder = Path(tempfile.mkdtemp(prefix="hermes-nb-kernelspec-"))
    (folder / "venv").mkdir()
    spec = {"argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "venv", "language": "python"}
    (folder / "venv" / "kernel.json").write_text(json.dumps(spec))
    env.pop("PYTHONPATH", None)  # the venv's own packages, not this interpreter's
    env["VIRTUAL_ENV"] = str(Path(python).parent.parent)
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    return KernelManager(kernel_name="venv", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(folder)]))


def python_executable() -> str:
    return sys.executable
