"""Landlock: the sandbox where bubblewrap cannot run (no user namespaces, a container that forbids them).

On Linux >= 5.13 (the ABI version comes from ``landlock_create_ruleset(NULL, 0, 1)``) a command confined
here gets:
- writes only beneath the workspace, a private temp dir (its ``TMPDIR``), ``/dev/shm`` and the
  ``sandbox.writable`` folders of ``config.yaml`` (plus ``/dev/null``-like devices); never the hermes_nb
  home or its spill folder;
- TCP connect/bind refused unless ``sandbox: {network: true}`` (Landlock ABI >= 4);
- no signals to processes outside the sandbox (ABI >= 6), so it cannot kill the kernel;
- its own process group, killed when the call ends; with ABI >= 6 every other process of the call's
  Landlock domain too (a daemon that called ``setsid`` to leave the group included).

Reads: given ``readable`` (``tools.safety.sandbox.hidden.View.readable``: the root carved around what the
model does not see), a command reads files only there, so the home outside the workspace and its dot-entries
are out of reach here too; folders can still be listed (Landlock's listing right holds for a whole tree, so it
is not bounded), and a file made later at the top of a carved folder (the workspace, when it holds the home) is
not readable until the next call. A path inside the workspace cannot be excluded from a writable folder, so
the landing policy holds through a full-depth scan after the command (``tools.safety.sandbox.scan``; refused
paths are moved out).

Pure ctypes system calls, so a pip-installed library needs nothing else. A fresh thread per call restricts
itself and spawns the command (``Confinement``), so the child is confined from its first instruction
without ``preexec_fn`` (which would force a slow fork of the kernel process).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import queue
import signal
import struct
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Confinement", "landlock_abi"]

log = logging.getLogger(__name__)

_SYS_CREATE, _SYS_ADD_RULE, _SYS_RESTRICT = 444, 445, 446  # the same numbers on every architecture
_PR_SET_NO_NEW_PRIVS = 38
_O_PATH = getattr(os, "O_PATH", 0o10000000)

# access rights (include/uapi/linux/landlock.h)
_WRITE_FILE, _READ_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 2, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_SIGNAL = 2
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


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


# -- building the restriction in the parent ----------------------------------------------------------

def _handled_fs(abi: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def _ruleset(abi: int, writable: Sequence[str], network: bool, readable: Sequence[str] | None = None) -> int:
    """A Landlock ruleset fd allowing writes beneath ``writable`` and, when ``readable`` is given, reading files
    only beneath it and ``writable``; raises OSError when the kernel refuses."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = _handled_fs(abi) | (_READ_FILE if readable is not None else 0)
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
        # writing a folder does not make it readable: reads come only from ``readable`` (the workspace is there,
        # carved around the home's dot-entries when it holds the home)
        rules = [(p, handled & ~_READ_FILE) for p in writable] + [(p, _READ_FILE) for p in readable or ()]
        for path, rights in rules:
            try:
                target = os.open(path, _O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist yet cannot be written either
            try:
                is_dir = os.path.isdir(path)
                allowed = rights if is_dir else rights & (_WRITE_FILE | _TRUNCATE | _READ_FILE)
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


class Confinement:
    """One call's sandbox: a thread that restricts itself, spawns the command, and at the end kills every
    process left in its Landlock domain.

    Landlock and ``no_new_privs`` apply to the calling thread and everything it spawns, so restricting a
    fresh thread confines the command without ``preexec_fn`` (the child is spawned with vfork, cheap even
    from a large kernel). With signal scoping (ABI >= 6) a process inside the domain can signal only
    processes of the same domain, so ``kill(pid, 0)`` from the thread finds exactly this call's leftovers,
    including daemons that called ``setsid`` to leave the process group.
    """

    def __init__(self, writable: Sequence[str], *, network: bool = True, readable: Sequence[str] | None = None) -> None:
        abi = landlock_abi()
        if abi < 1:
            raise OSError("Landlock is not available")
        self.abi = abi
        self._fd = _ruleset(abi, [*writable, *_DEVICES], network, readable)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="hermes-nb-sandbox", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise OSError(f"the sandbox could not be entered: {self._error}")

    def _serve(self) -> None:
        try:
            libc = _libc()
            libc.syscall.restype = ctypes.c_long
            if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0),
                          ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
            if libc.syscall(ctypes.c_long(_SYS_RESTRICT), ctypes.c_int(self._fd), ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        except BaseException as exc:  # reported to the caller, which refuses to run the command
            self._error = exc
            self._ready.set()
            return
        finally:
            os.close(self._fd)
        self._ready.set()
        while True:  # this thread is confined for good: it serves its call, then ends
            job, done, out = self._jobs.get()
            if job is None:
                return
            try:
                out.append((True, job()))
            except BaseException as exc:  # handed back to the caller
                out.append((False, exc))
            done.set()

    def run(self, fn: Callable[[], Any]) -> Any:
        """Call ``fn`` on the confined thread (what it spawns is confined) and return its result."""
        done, out = threading.Event(), list[tuple[bool, Any]]()
        self._jobs.put((fn, done, out))
        done.wait()
        ok, value = out[0]
        if not ok:
            raise value
        return value

    def sweep(self) -> int:
        """Kill every process of this call's domain (ABI >= 6); returns how many were signalled."""
        if self.abi < 6:
            return 0
        return int(self.run(_kill_domain))

    def close(self) -> None:
        self._jobs.put((None, None, None))


def _kill_domain() -> int:
    """On the confined thread: SIGKILL every process this domain may signal (its own), except ours."""
    me, killed = os.getpid(), 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        try:
            os.kill(pid, 0)  # EPERM outside the domain (signal scoping), so only this call's processes pass
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            continue
    return killed
