"""Whether this runs in a Jupyter kernel: where HTML, display handles and widgets reach a frontend."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["in_kernel"]


def in_kernel(shell: Any = None) -> bool:
    """Whether ``shell`` (default: the running IPython) is a Jupyter kernel's shell (ipykernel's
    ``ZMQInteractiveShell`` or a subclass, e.g. the in-process kernel's)."""
    if "ipykernel.zmqshell" not in sys.modules:  # a kernel has imported it; elsewhere, importing it costs ~0.1 s
        return False
    from ipykernel.zmqshell import ZMQInteractiveShell

    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    return isinstance(shell, ZMQInteractiveShell)
