"""Interrupting the main thread in a test (``_thread.interrupt_main()``, what a kernel interrupt does).

Two things can make such an interrupt vanish, and each made the interrupt mid-batch test wait for its
whole timeout in a loaded ``make test``:

- **SIGINT ignored.** A shell starts a background job (``make test &``, ``nohup … &``) with SIGINT ignored;
  Python then leaves it ignored instead of installing ``default_int_handler``, and ``interrupt_main()``
  does nothing at all. A kernel always handles SIGINT, so while a test interrupts, it is handled.
- **A finalizer on the main thread.** CPython drops a ``KeyboardInterrupt`` raised while a ``__del__`` or
  a weakref callback runs there ("Exception ignored"); the garbage of earlier tests is collected on
  whichever thread allocates next. A person whose ■ lands there presses it again; a test sends one, so
  while it does, nothing is collected.
"""

from __future__ import annotations

import gc
import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interrupts_land() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` and the cyclic collector is off until the block ends."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        signal.signal(signal.SIGINT, previous)
