"""Opening a file the checks and the file tools read (a script, a git config) only when it is a regular file.

The checks read files the model may have made or named: a named pipe blocks ``open`` until something
writes to it, and ``/dev/zero`` or ``/dev/urandom`` never end, so either would hang the kernel inside an
approval check. Opened without blocking and looked at before a byte is read, anything but a regular file
raises ``OSError``, which every caller already reads as "cannot be read".
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

__all__ = ["open_regular", "regular_fd"]


def regular_fd(fd: int, name: str) -> int:
    """``fd``, opened with ``O_NONBLOCK`` (a pipe with no writer opens at once), made blocking again when it
    is a regular file; otherwise it is closed and ``OSError`` says what it is not."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe, a device or a folder)", name)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")`` for a regular file (links followed); ``OSError`` for a pipe, device or folder."""
    fd = regular_fd(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), os.fspath(path))
    return os.fdopen(fd, "rb")
