"""Bubblewrap for the sandbox tests: installed from Debian the way ``.ci/run`` installs Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def require_bwrap() -> None:
    """Install ``bubblewrap`` with apt when it is missing (as root); skip, saying why, only when that is
    impossible here (not Debian, not root, no namespaces)."""
    from hermes_nb.tools.safety.sandbox import bwrap

    if shutil.which("bwrap") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            pytest.skip("bubblewrap is not installed and cannot be installed here (needs root and apt-get): "
                        "apt-get install -y bubblewrap")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-qq", "bubblewrap"]
        if subprocess.run(install, env=env, capture_output=True, check=False).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, check=False)
            done = subprocess.run(install, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                pytest.skip(f"apt-get could not install bubblewrap: {done.stderr.strip()[-200:]}")
        bwrap.version.cache_clear()
        bwrap.probe.cache_clear()
    why = bwrap.probe()
    if why:
        pytest.skip(f"bubblewrap cannot sandbox on this machine: {why}")


def live_pids(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds ``token``: a sandboxed command's
    own ``$!`` is a pid of its namespace, so the tests find its processes by a marker instead."""
    from pathlib import Path

    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmd and state != "Z":
            found.append(int(name))
    return found
