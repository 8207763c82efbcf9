"""The sandbox behind the classifier: what a terminal command can read, change and leave, whatever it was judged.

One choice per call (``status``), said in ``%tools doctor`` and in every approval prompt:

1. **bubblewrap** (``tools.safety.sandbox.bwrap``), where it is installed and may make namespaces: read-only
   root, the workspace (an overlay: its writes land after the call) and a private ``/tmp`` writable, what the
   model does not see hidden (``tools.safety.sandbox.hidden``: the home outside the workspace, the home's
   dot-entries when the workspace holds it, the hermes_nb home, Jupyter's runtime files), the kernel's
   interpreter read-only wherever it lives, no network, a pid namespace (nothing outlives the call);
2. **Landlock** (``tools.safety.sandbox.landlock``) otherwise, on Linux >= 5.13: writes bounded, file reads
   bounded to what the model sees (folder listings are not), no TCP, leftovers swept;
3. **none**: the prompt says "Not sandboxed" (macOS, old kernels, ``sandbox: {enabled: false}``).

Writes, said beside the mechanism (``writes``): under bubblewrap the command writes an overlay of the
workspace (``tools.safety.sandbox.overlay``), never the workspace itself; when it ends, its exact write-set goes
through the one landing policy (``tools.safety.writes.landing``, applied by ``tools.safety.writes.lander``): each
path lands, asks the person with its diff, or is refused and kept aside. Where there is no overlay (Landlock, no
user namespaces, not Linux) a full-depth scan of the workspace before and after (``tools.safety.sandbox.scan``)
finds the write-set instead, and refused paths are moved out. ``config.yaml``'s ``sandbox:`` section:
``enabled`` (default true), ``mechanism`` (``bubblewrap`` / ``landlock``; default the first that works),
``network`` (default off; under bubblewrap, on means only through ``tools.safety.sandbox.netproxy``: public
addresses, never this machine or its LAN),
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

from hermes_nb.tools.safety.sandbox import bwrap, netproxy, overlay
from hermes_nb.tools.safety.sandbox.landlock import Confinement, landlock_abi
from hermes_nb.tools.safety.sandbox.scan import Snapshot

__all__ = ["Box", "Confinement", "SandboxStatus", "landlock_abi", "open_box", "status", "writable_paths"]

log = logging.getLogger(__name__)
Stdio = tuple[int, int, int]  # stdin, stdout, stderr: file descriptors or subprocess.PIPE / DEVNULL / STDOUT
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
    writes: str = ""  # how its writes reach the workspace: through an overlay, or found by a full-depth scan


_OVERLAY = "its writes go to an overlay, and each one lands, asks you with its diff, or is refused"


def _scan(why: str) -> str:
    return (f"no overlay ({why}): a full-depth scan after the command finds its writes, and refused ones are "
            "moved out (a changed file's old content cannot be restored)")


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
                             writes="its writes land as it makes them, unjudged",
                             detail="not sandboxed: switched off in config.yaml (sandbox: {enabled: false})")
    wanted = cfg.get("mechanism")
    why_not = bwrap.probe() if wanted != "landlock" else "config.yaml asks for landlock"
    if not why_not:
        network = cfg.get("network") is True
        no_overlay = overlay.probe()
        writes = _OVERLAY if not no_overlay else _scan(no_overlay)
        detail = ("sandboxed (bubblewrap " + bwrap.version() + "): read-only system, writes only to the workspace "
                  "and a private /tmp; your home folder outside the workspace (and its dot-entries, when the workspace "
                  "holds it, unless sandbox.visible names them), the hermes_nb home and Jupyter's connection files "
                  "hidden; "
                  + writes + "; "
                  + ("network only through a proxy to public addresses (never this machine or its LAN); " if network
                     else "no network; ") + "everything the command starts dies with it")
        return SandboxStatus(available=True, mechanism=f"bubblewrap {bwrap.version()}", detail=detail,
                             network=network, sweeps=True, hides=True, writes=writes)
    abi = landlock_abi()
    if abi < 1:
        writes = _scan("no sandbox")
        return SandboxStatus(available=False, mechanism="none", network=True, writes=writes,
                             detail=f"not sandboxed: {why_not}, and this system has no Landlock; commands can "
                                    f"read and write wherever the kernel can; {writes}")
    network = cfg.get("network") is True
    parts = [f"writes only to the workspace and a private temp dir (Landlock ABI {abi}; {why_not})",
             "file reads bounded to what the model sees (your home folder outside the workspace and its "
             "dot-entries are out of reach; folder listings are not bounded)",
             _scan("Landlock cannot mount one")]
    if not network:
        parts.append("no TCP" if abi >= 4 else "network stays on (needs Landlock ABI 4)")
    sweep = abi >= 6
    parts.append("background jobs die with the call" if sweep else
                 "a background job that calls setsid can outlive the call (needs Landlock ABI 6)")
    return SandboxStatus(available=True, mechanism=f"landlock ABI {abi}", detail="sandboxed: " + "; ".join(parts),
                         abi=abi, network=network or abi < 4, sweeps=sweep, writes=_scan("Landlock cannot mount one"))


def writable_paths(workspace: Path, tmp: str) -> list[str]:
    """The folders a sandboxed command may write beneath (the workspace, ``tmp``, ``/dev/shm``, then the
    config's additions); never the home."""
    extra = _config().get("writable")
    paths = [str(workspace), tmp, "/dev/shm"]
    if isinstance(extra, list):
        paths += [os.path.expanduser(str(p)) for p in extra]
    return paths


class Box:
    """One call's sandbox: ``spawn`` the command, ``sweep`` leftovers, ``close`` to land what it wrote."""

    def __init__(self, state: SandboxStatus, workspace: Path, tmp: str) -> None:
        self.state, self.workspace, self.tmp = state, workspace, tmp
        self._landlock: Confinement | None = None
        self._init: int | None = None  # a pidfd of the pid namespace's init (bubblewrap)
        self._proxy: netproxy.Proxy | None = None
        self._layers: overlay.Layers | None = None
        self._snapshot: Snapshot | None = None
        self._unsettled = False  # the pid namespace was not seen empty
        if state.mechanism.startswith("landlock"):
            from hermes_nb.tools.config import hermes_home

            home = Path(os.path.realpath(hermes_home()))
            if home.is_relative_to(workspace):  # Landlock cannot take a folder out of a writable one: refuse
                raise OSError(f"the hermes_nb home {home} lies inside the workspace, and Landlock cannot keep "
                              "a command from writing it (install bubblewrap, or move HERMES_NB_HOME out)")
            self._landlock = Confinement(writable_paths(workspace, tmp), network=state.network,
                                         readable=_readable(workspace, tmp))
        if state.mechanism.startswith("bubblewrap") and not overlay.usable_for(workspace):
            self._layers = overlay.layers(workspace)
        else:  # the whole tree, before the command starts
            self._snapshot = Snapshot(workspace)

    def spawn(self, command: str, env: Mapping[str, str], stdio: Stdio | None = None) -> subprocess.Popen[bytes]:
        """``bash -c command`` in the box; ``stdio`` (stdin, stdout, stderr) for a background job's pipes or
        pty, else no stdin and two pipes."""
        io = stdio or (subprocess.DEVNULL, subprocess.PIPE, subprocess.PIPE)
        if not self.state.available:  # nothing confines it; its write-set is still judged (the scan)
            return _popen(["bash", "-c", command], self.workspace, env, io=io)
        clean = bwrap.scrub_env(env)
        if self._landlock is not None:
            return self._landlock.run(lambda: _popen(["bash", "-c", command], self.workspace, clean, io=io))
        inner = ["bash", "-c", command]
        if self.state.network:  # the only way out: the proxy, offered inside at 127.0.0.1:PORT
            sock = os.path.join(self.tmp, "proxy.sock")
            self._proxy = netproxy.Proxy(sock)
            inner = [sys.executable, "-S", "-c", netproxy.FORWARDER, sock, command]
            url = f"http://127.0.0.1:{netproxy.PORT}"
            clean.update({k: url for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")})
        read, write = os.pipe()
        try:
            extra = writable_paths(self.workspace, self.tmp)[3:]
            argv = bwrap.argv(inner, workspace=self.workspace, tmp=self.tmp, writable=extra, info_fd=write)
            if self._layers is not None:
                argv = overlay.wrap(argv, self.workspace, self._layers, direct=extra)
            proc = _popen(argv, self.workspace, clean, pass_fds=(write,), io=io)
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
            # the pidfd is readable only once every other process of the namespace has exited
            self._unsettled = not select.select([self._init], [], [], _NAMESPACE_GRACE)[0]
            os.close(self._init)
            self._init = None
        return 0

    def close(self) -> list[str]:
        """End the sandbox and land what the command wrote; one line per path that did not land."""
        if self._landlock is not None:
            self._landlock.close()
        if self._proxy is not None:
            self._proxy.close()
        return self._land()

    def _land(self) -> list[str]:
        from hermes_nb.tools.safety.approvals.gate import current_approver
        from hermes_nb.tools.safety.writes.lander import approver_asker, land

        if self._layers is not None:
            try:
                if self._unsettled:  # something may still write the upper folder: nothing of it lands
                    raise OSError("the command's processes were not all ended when it returned")
                found = overlay.write_set(self._layers.upper, self.workspace)
            except OSError as exc:  # fail closed: nothing of a write-set that cannot be read whole lands
                return [f"the command's writes could not be read from its overlay, so none of them landed: {exc}"]
            finally:  # now, not in a thread an exiting kernel may cut short: in /dev/shm they would hold memory
                self._layers.remove()
                self._layers = None
            changes, special, in_place = list(found.changes), list(found.special), False
            how = "The sandboxed command (writing through an overlay)"
        elif self._snapshot is not None:
            changes, special = self._snapshot.changes()
            in_place, self._snapshot = True, None
            how = "The command (its writes found by a full-depth scan, no overlay)"
        else:
            return []
        if not changes and not special:
            return []
        result = land(changes, workspace=self.workspace, tool="terminal", in_place=in_place, special=special,
                      ask=approver_asker(current_approver(), how=how))
        return list(result.notes)


def _readable(workspace: Path, tmp: str) -> list[str]:
    """What a command under Landlock may read: what the model sees (``tools.safety.sandbox.hidden``)."""
    from hermes_nb.tools.safety.sandbox.hidden import view

    back = [Path(os.path.realpath(p)) for p in writable_paths(workspace, tmp)]
    return [str(p) for p in view(workspace).readable(back)]


def _popen(argv: list[str], cwd: Path, env: Mapping[str, str], pass_fds: tuple[int, ...] = (), *,
           io: Stdio) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=io[0], stdout=io[1], stderr=io[2],
                            start_new_session=True, pass_fds=pass_fds)


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
    """This call's sandbox (without a mechanism here: a bare run whose writes are still judged, by a scan), or
    None when the person switched it off; one that exists but cannot be set up raises
    RuntimeError, so the command does not run (fail closed)."""
    if _config().get("enabled", True) is False:
        return None  # the person switched it off: the command runs as they would run it
    state = status()
    try:
        return Box(state, workspace, tmp)
    except OSError as exc:
        raise RuntimeError(f"the sandbox could not be set up, so the command did not run: {exc}") from exc
