"""The sandbox behind the classifier: what a terminal command can read, change and leave, whatever it was judged.

One choice per call (``status``), said in ``%tools doctor`` and in every approval prompt:

1. **bubblewrap** (``tools.safety.bwrap``), where it is installed and may make namespaces: read-only root,
   the workspace and a private ``/tmp`` writable, what the model does not see hidden (``tools.safety.hidden``:
   the home outside the workspace, the home's dot-entries when the workspace holds it, the hermes_nb home,
   Jupyter's runtime files), the kernel's interpreter read-only wherever it lives, the write-deny list
   read-only, no network, a pid namespace (nothing outlives the call);
2. **Landlock** (``tools.safety.landlock``) otherwise, on Linux >= 5.13: writes bounded, no TCP, leftovers
   swept; reads are not bounded there;
3. **none**: the prompt says "Not sandboxed" (macOS, old kernels, ``sandbox: {enabled: false}``).

With either mechanism, the write-deny list also holds after the call (``tools.safety.watch``): anything the
command made or swapped in there is set aside and named in its result. ``config.yaml``'s ``sandbox:`` section:
``enabled`` (default true), ``mechanism`` (``bubblewrap`` / ``landlock``; default the first that works),
``network`` (default off; under bubblewrap, on means only through ``tools.safety.netproxy``: public addresses,
never this machine or its LAN),
``writable`` (more folders a command may write), ``visible`` (dot-entries of the home, or paths in it, the model
may read: ``[.kaggle, ~/.config/git]``).
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.safety import bwrap, netproxy
from hermes_nb.tools.safety.landlock import Confinement, landlock_abi
from hermes_nb.tools.safety.watch import Watch

__all__ = ["Box", "Confinement", "SandboxStatus", "landlock_abi", "open_box", "status", "writable_paths"]

log = logging.getLogger(__name__)
_NAMESPACE_GRACE = 5.0  # seconds for bwrap's report, and for the kernel to empty the pid namespace


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxStatus:
    """Whether terminal commands are confined, how, and what that leaves out."""

    available: bool
    mechanism: str  # "bubblewrap 0.8.0", "landlock ABI 7", or "none"
    detail: str  # one line for %tools doctor and the approval prompt
    abi: int = 0
    network: bool = False
    sweeps: bool = False  # leftovers die with the call, even those that left the process group
    hides: bool = False  # the home outside the workspace, its dot-entries, the kernel's keys are unreadable inside


def _config() -> dict[str, Any]:
    from hermes_nb.tools.config import load_config
    from hermes_nb.tools.errors import ConfigError

    try:
        section = load_config().get("sandbox")
    except ConfigError:
        return {}
    return section if isinstance(section, dict) else {}


def status() -> SandboxStatus:
    """What the next terminal command gets (the config is read each time; the probes once per process)."""
    cfg = _config()
    if cfg.get("enabled", True) is False:
        return SandboxStatus(available=False, mechanism="none", network=True,
                             detail="not sandboxed: switched off in config.yaml (sandbox: {enabled: false})")
    wanted = cfg.get("mechanism")
    why_not = bwrap.probe() if wanted != "landlock" else "config.yaml asks for landlock"
    if not why_not:
        network = cfg.get("network") is True
        detail = ("sandboxed (bubblewrap " + bwrap.version() + "): read-only system, writes only to the workspace "
                  "and a private /tmp; your home folder outside the workspace (and its dot-entries, when the workspace "
                  "holds it, unless sandbox.visible names them), the hermes_nb home and Jupyter's connection files "
                  "hidden; "
                  "shell rc files, .git/hooks, .git/config, venvs and the rest of the write-deny list read-only; "
                  + ("network only through a proxy to public addresses (never this machine or its LAN); " if network
                     else "no network; ") + "everything the command starts dies with it")
        return SandboxStatus(available=True, mechanism=f"bubblewrap {bwrap.version()}", detail=detail,
                             network=network, sweeps=True, hides=True)
    abi = landlock_abi()
    if abi < 1:
        return SandboxStatus(available=False, mechanism="none", network=True,
                             detail=f"not sandboxed: {why_not}, and this system has no Landlock; commands can "
                                    "read and write wherever the kernel can")
    network = cfg.get("network") is True
    parts = [f"writes only to the workspace and a private temp dir (Landlock ABI {abi}; {why_not})",
             "reads are not bounded: the kernel's connection file and the hermes_nb home stay readable (your home "
             "folder outside the workspace and its dot-entries do not; folder listings do)",
             "the write-deny list holds only for what a command creates or swaps in, not inside existing "
             "folders such as .git/hooks or a virtualenv (that needs bubblewrap)"]
    if not network:
        parts.append("no TCP" if abi >= 4 else "network stays on (needs Landlock ABI 4)")
    sweep = abi >= 6
    parts.append("background jobs die with the call" if sweep else
                 "a background job that calls setsid can outlive the call (needs Landlock ABI 6)")
    return SandboxStatus(available=True, mechanism=f"landlock ABI {abi}", detail="sandboxed: " + "; ".join(parts),
                         abi=abi, network=network or abi < 4, sweeps=sweep)


def writable_paths(workspace: Path, tmp: str) -> list[str]:
    """The folders a sandboxed command may write beneath (the workspace, ``tmp``, ``/dev/shm``, then the
    config's additions); never the home."""
    extra = _config().get("writable")
    paths = [str(workspace), tmp, "/dev/shm"]
    if isinstance(extra, list):
        paths += [os.path.expanduser(str(p)) for p in extra]
    return paths


class Box:
    """One call's sandbox: ``spawn`` the command, ``sweep`` leftovers, ``close`` for the after-call notes."""

    def __init__(self, state: SandboxStatus, workspace: Path, tmp: str) -> None:
        self.state, self.workspace, self.tmp = state, workspace, tmp
        self._watch = Watch(workspace)
        self._landlock: Confinement | None = None
        self._init: int | None = None  # a pidfd of the pid namespace's init (bubblewrap)
        self._proxy: netproxy.Proxy | None = None
        if state.mechanism.startswith("landlock"):
            from hermes_nb.tools.config import hermes_home

            home = Path(os.path.realpath(hermes_home()))
            if home.is_relative_to(workspace):  # Landlock cannot take a folder out of a writable one: refuse
                raise OSError(f"the hermes_nb home {home} lies inside the workspace, and Landlock cannot keep "
                              "a command from writing it (install bubblewrap, or move HERMES_NB_HOME out)")
            self._landlock = Confinement(writable_paths(workspace, tmp), network=state.network,
                                         readable=_readable(workspace, tmp))

    def spawn(self, command: str, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        clean = bwrap.scrub_env(env)
        if self._landlock is not None:
            return self._landlock.run(lambda: _popen(["bash", "-c", command], self.workspace, clean))
        inner = ["bash", "-c", command]
        if self.state.network:  # the only way out: the proxy, offered inside at 127.0.0.1:PORT
            sock = os.path.join(self.tmp, "proxy.sock")
            self._proxy = netproxy.Proxy(sock)
            inner = [sys.executable, "-S", "-c", netproxy.FORWARDER, sock, command]
            url = f"http://127.0.0.1:{netproxy.PORT}"
            clean.update({k: url for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")})
        read, write = os.pipe()
        try:
            argv = bwrap.argv(inner, workspace=self.workspace, tmp=self.tmp,
                              writable=writable_paths(self.workspace, self.tmp)[3:],
                              protected=self._watch.protected, info_fd=write)
            proc = _popen(argv, self.workspace, clean, pass_fds=(write,))
        except OSError as exc:  # gone or unrunnable since the probe: never a fallback to running it bare
            raise RuntimeError(f"the sandbox (bubblewrap) could not start, so the command did not run: {exc}") from exc
        finally:
            os.close(write)
        try:
            self._init = _namespace_init(read)
        finally:
            os.close(read)
        return proc

    def sweep(self) -> int:
        """Kill what is left of the call; with bubblewrap, wait until its pid namespace is empty (the kernel
        kills every process in it when its init ends, but bwrap itself may exit a moment before)."""
        if self._landlock is not None:
            return self._landlock.sweep()
        if self._init is not None:
            select.select([self._init], [], [], _NAMESPACE_GRACE)
            os.close(self._init)
            self._init = None
        return 0

    def close(self) -> list[str]:
        """End the sandbox; what the command put on the write-deny list was set aside (one line each)."""
        if self._landlock is not None:
            self._landlock.close()
        if self._proxy is not None:
            self._proxy.close()
        return self._watch.settle()


def _readable(workspace: Path, tmp: str) -> list[str]:
    """What a command under Landlock may read: what the model sees (``tools.safety.hidden``)."""
    from hermes_nb.tools.safety.hidden import view

    back = [Path(os.path.realpath(p)) for p in writable_paths(workspace, tmp)]
    return [str(p) for p in view(workspace).readable(back)]


def _popen(argv: list[str], cwd: Path, env: Mapping[str, str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, pass_fds=pass_fds)


def _namespace_init(read: int) -> int | None:
    """A pidfd for the init of the sandbox's pid namespace, from bwrap's ``--info-fd`` report (written and
    closed as soon as the namespace exists); None when it ended already or bwrap failed before."""
    data = b""
    while select.select([read], [], [], _NAMESPACE_GRACE)[0]:
        chunk = os.read(read, 4096)
        if not chunk:
            break
        data += chunk
    try:
        pid = int(json.loads(data or b"{}")["child-pid"])
        return os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError):
        return None


def open_box(workspace: Path, tmp: str) -> Box | None:
    """This call's sandbox, or None where there is none; one that exists but cannot be set up raises
    RuntimeError, so the command does not run (fail closed)."""
    state = status()
    if not state.available:
        return None
    try:
        return Box(state, workspace, tmp)
    except OSError as exc:
        raise RuntimeError(f"the sandbox could not be set up, so the command did not run: {exc}") from exc
