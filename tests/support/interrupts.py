"""Interrupting the main thread in a test (``_thread.interrupt_main()``, what a kernel interrupt does).

CPython drops a ``KeyboardInterrupt`` that is raised while a finalizer (``__del__``, a weakref callback) runs
on the main thread: it is printed as "Exception ignored" and the interrupted code never hears of it. The
garbage of earlier tests (an openai client's ``__del__`` closes its connections) is collected on whichever
thread allocates next, so now and then an interrupt landed in such a finalizer and the run under test waited
forever (seen once in a loaded ``make test``: the interrupt mid-batch test hung for its whole timeout). A
person whose ■ lands there presses it again; a test sends one, so while it does, nothing is collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interrupts_land() -> Iterator[None]:
    """Collect earlier garbage now, then keep the cyclic collector off until the block ends."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
