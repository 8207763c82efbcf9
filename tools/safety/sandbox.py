"""The sandbox behind the classifier: what a terminal command can change, whatever the classifier said.

On Linux with Landlock (kernel >= 5.13; the ABI version comes from ``landlock_create_ruleset(NULL, 0, 1)``)
every terminal command runs with:
- writes only beneath the workspace, the spill folder, a private temp dir (its ``TMPDIR``), ``/dev/shm``
  and the ``sandbox.writable`` folders of ``config.yaml`` (plus ``/dev/null``-like devices);
- TCP connect/bind refused when ``sandbox: {network: false}`` (Landlock ABI >= 4; default: network on);
- no signals to processes outside the sandbox (ABI >= 6), so it cannot kill the kernel;
- a seccomp filter refusing ``setsid``/``setpgid``: every process stays in the command's own process
  group, which the terminal kills when the call ends, so background jobs die with the call.

Pure ctypes system calls, so a pip-installed library needs nothing else. The restriction is applied in
the child between fork and exec (``preexec_fn``) with buffers built beforehand. Where Landlock is missing
(macOS, old kernels, containers that filter the syscalls, ``sandbox: {enabled: false}``) ``status()`` says
"not sandboxed" and commands run with the kernel's own rights (still in their own process group).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import platform
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SandboxStatus", "landlock_abi", "preexec_for", "status"]

log = logging.getLogger(__name__)

_SYS_CREATE, _SYS_ADD_RULE, _SYS_RESTRICT = 444, 445, 446  # the same numbers on every architecture
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_O_PATH = getattr(os, "O_PATH", 0o10000000)

# access rights (include/uapi/linux/landlock.h)
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_SIGNAL = 2
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxStatus:
    """Whether terminal commands are confined, how, and what that leaves out."""

    available: bool
    mechanism: str  # "landlock ABI 7 + seccomp", or "none"
    detail: str  # one line for %tools doctor and the approval prompt
    abi: int = 0
    network: bool = True
    process_groups: bool = False  # seccomp keeps every process in the command's group


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when there is none (not Linux, too old, or filtered)."""
    if sys.platform != "linux":
        return 0
    try:
        libc = _libc()
        libc.syscall.restype = ctypes.c_long
        abi = libc.syscall(ctypes.c_long(_SYS_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(0, int(abi))


def _config() -> dict[str, Any]:
    from hermes_nb.tools.config import load_config
    from hermes_nb.tools.errors import ConfigError

    try:
        section = load_config().get("sandbox")
    except ConfigError:
        return {}
    return section if isinstance(section, dict) else {}


def _seccomp_arch() -> tuple[int, int, int] | None:
    """(audit arch, setsid, setpgid) for the architectures this filter knows."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return 0xC000003E, 112, 109
    if machine in ("aarch64", "arm64"):
        return 0xC00000B7, 157, 154
    return None


def status() -> SandboxStatus:
    """What the next terminal command gets (the config is read each time)."""
    cfg = _config()
    network = cfg.get("network", True) is not False
    if cfg.get("enabled", True) is False:
        return SandboxStatus(available=False, mechanism="none", network=True,
                             detail="not sandboxed: switched off in config.yaml (sandbox: {enabled: false})")
    abi = landlock_abi()
    if abi < 1:
        where = "this system has no Landlock" if sys.platform == "linux" else f"no sandbox exists on {sys.platform}"
        return SandboxStatus(available=False, mechanism="none", network=True,
                             detail=f"not sandboxed: {where}; commands can write wherever the kernel can")
    groups = _seccomp_arch() is not None
    parts = [f"writes only to the workspace, the spill folder and a private temp dir (Landlock ABI {abi})"]
    if not network:
        parts.append("no TCP" if abi >= 4 else "network stays on (needs Landlock ABI 4)")
    parts.append("background jobs die with the call" if groups else "setsid not blocked on this architecture")
    return SandboxStatus(available=True, mechanism=f"landlock ABI {abi}" + (" + seccomp" if groups else ""),
                         detail="sandboxed: " + "; ".join(parts), abi=abi, network=network or abi < 4,
                         process_groups=groups)


# -- building the restriction in the parent ----------------------------------------------------------

def _handled_fs(abi: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def _ruleset(abi: int, writable: Sequence[str], network: bool) -> int:
    """A Landlock ruleset fd allowing writes beneath ``writable``; raises OSError when the kernel refuses."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = _handled_fs(abi)
    attr = struct.pack("=Q", handled)
    if abi >= 4:
        attr += struct.pack("=Q", 0 if network else _NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        attr += struct.pack("=Q", _SCOPE_SIGNAL)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(ctypes.c_long(_SYS_CREATE), buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    try:
        for path in writable:
            try:
                target = os.open(path, _O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist yet cannot be written either
            try:
                is_dir = os.path.isdir(path)
                allowed = handled if is_dir else handled & (_WRITE_FILE | _TRUNCATE)
                rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, target), 12)
                if libc.syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(fd), ctypes.c_int(1), rule,
                                ctypes.c_uint32(0)) < 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"landlock_add_rule({path}): {os.strerror(err)}")
            finally:
                os.close(target)
    except BaseException:
        os.close(fd)
        raise
    return int(fd)


def _bpf(arch: tuple[int, int, int]) -> bytes:
    """A classic-BPF seccomp program: EPERM for setsid/setpgid (and x32 calls), allow the rest."""
    audit_arch, setsid, setpgid = arch
    ld_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    insns = [
        (ld_abs, 0, 0, 4),  # 0: arch
        (jeq, 0, 5, audit_arch),  # 1: another ABI (i386 via int 0x80): -> 7 (deny those two by number too)
        (ld_abs, 0, 0, 0),  # 2: syscall number
        (jge, 8, 0, 0x40000000),  # 3: x32 calls -> 12
        (jeq, 7, 0, setsid),  # 4: -> 12
        (jeq, 6, 0, setpgid),  # 5: -> 12
        (ret, 0, 0, allow),  # 6
        (ld_abs, 0, 0, 0),  # 7: foreign ABI: deny i386's setsid (66) and setpgid (57)
        (jeq, 3, 0, 66),  # 8: -> 12
        (jeq, 2, 0, 57),  # 9: -> 12
        (ret, 0, 0, allow),  # 10
        (ret, 0, 0, allow),  # 11 (unused padding keeps the offsets readable)
        (ret, 0, 0, eperm),  # 12
    ]
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in insns)


@dataclass(frozen=True, slots=True)
class _Prepared:
    fd: int
    fprog: Any  # keeps the BPF buffers alive until the child has used them
    filter_buf: Any


def preexec_for(writable: Sequence[str], *, network: bool = True) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(preexec_fn, cleanup)`` confining a child to ``writable``; raise OSError when impossible.

    The preexec function makes only system calls on buffers built here: it runs in the forked child of
    a multi-threaded process, where taking a lock (logging, imports, allocation-heavy work) could hang.
    """
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available")
    fd = _ruleset(abi, [*writable, *_DEVICES], network)
    arch = _seccomp_arch()
    filter_buf = fprog = None
    if arch is not None:
        program = _bpf(arch)
        filter_buf = ctypes.create_string_buffer(program, len(program))
        fprog = ctypes.create_string_buffer(struct.pack("=HxxxxxxQ", len(program) // 8,
                                                        ctypes.addressof(filter_buf)), 16)
    prepared = _Prepared(fd, fprog, filter_buf)
    libc = _libc()
    prctl, syscall = libc.prctl, libc.syscall
    one, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)
    restrict, fd_arg, flags = ctypes.c_long(_SYS_RESTRICT), ctypes.c_int(fd), ctypes.c_uint32(0)
    seccomp_args = (ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER), fprog)

    def confine() -> None:
        if prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), one, zero, zero, zero) != 0:
            os._exit(126)
        if syscall(restrict, fd_arg, flags) != 0:
            os._exit(126)  # never run the command unconfined when confinement was promised
        if prepared.fprog is not None and prctl(*seccomp_args) != 0:
            os._exit(126)

    def cleanup() -> None:
        os.close(prepared.fd)

    return confine, cleanup


def writable_paths(workspace: Path, spill: Path, tmp: str) -> list[str]:
    """The folders a sandboxed command may write beneath, config additions included."""
    extra = _config().get("writable")
    paths = [str(workspace), str(spill), tmp, "/dev/shm"]
    if isinstance(extra, list):
        paths += [os.path.expanduser(str(p)) for p in extra]
    return paths
