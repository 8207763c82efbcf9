"""A throwaway JupyterLab server for browser tests: random token, free port, 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class JupyterLab:
    """``with JupyterLab(root_dir) as lab: lab.url("lab/tree/x.ipynb")``; stopped (and waited for) on exit."""

    def __init__(self, root_dir: Path, env: dict[str, str] | None = None, timeout: float = 60, *,
                 theme: str | None = None, windowing: str | None = None) -> None:
        """``theme``: e.g. "JupyterLab Dark"; ``windowing``: the notebook's ``windowingMode`` ("none" draws
        every cell, so all outputs can be clicked and screenshotted)."""
        self.theme, self.windowing = theme, windowing
        self.root_dir = Path(root_dir)
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.env = {**os.environ, **(env or {})}
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.root_dir / ".jupyterlab.log"
        #: the server's trust database and secret, private: ``untrust`` edits it, the person's own is untouched
        self.notary_dir = self.root_dir / ".jupyterlab-settings" / "notary"

    def url(self, path: str = "lab") -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}?token={self.token}"

    def _write_settings(self) -> Path:
        """A private settings folder: never ask about Jupyter news (its toast covers the page)."""
        settings = self.root_dir / ".jupyterlab-settings"
        notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notification.parent.mkdir(parents=True, exist_ok=True)
        self.notary_dir.mkdir(exist_ok=True)
        notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        if self.theme:
            themes = settings / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
            themes.write_text(json.dumps({"theme": self.theme}))
        if self.windowing:
            tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
            tracker.parent.mkdir(parents=True, exist_ok=True)
            tracker.write_text(json.dumps({"windowingMode": self.windowing}))
        return settings

    def __enter__(self) -> JupyterLab:
        jupyter = Path(sys.executable).with_name("jupyter")
        settings = self._write_settings()
        cmd = [
            str(jupyter), "lab", "--no-browser", "--allow-root",
            f"--ServerApp.token={self.token}", "--ServerApp.ip=127.0.0.1", f"--port={self.port}",
            f"--ServerApp.root_dir={self.root_dir}", "--ServerApp.open_browser=False",
            f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={settings / 'workspaces'}",
            "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run commands without menu clicks
            f"--NotebookNotary.data_dir={self.notary_dir}",
        ]
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=self.env, cwd=self.root_dir)
        deadline = time.monotonic() + self.timeout
        status = f"http://127.0.0.1:{self.port}/api/status?token={self.token}"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(status, timeout=2) as resp:
                    json.load(resp)
                    return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)  # polling with a deadline, not a fixed wait
        self.__exit__()
        raise TimeoutError(f"jupyter lab did not answer /api/status in {self.timeout} s:\n{self.log()}")

    def untrust(self, path: str) -> None:
        """Take the saved notebook ``path`` out of this server's trust database: it reopens untrusted, outputs and
        all, as a notebook handed to someone else does (JupyterLab signs what it saves from a trusted session)."""
        import nbformat
        from nbformat.sign import NotebookNotary

        nb = nbformat.read(self.root_dir / path, as_version=4)
        NotebookNotary(data_dir=str(self.notary_dir)).unsign(nb)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None) is not None:
            self._log.close()
