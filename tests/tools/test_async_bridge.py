"""The background loop: one per process, safe from sync code, from other loops, and interruptible."""

from __future__ import annotations

import _thread
import asyncio
import threading

import pytest

from hermes_nb.tools import async_bridge
from hermes_nb.tools.errors import BridgeError
from tests.support.interrupts import interrupts_land


def test_one_loop_per_process():
    assert async_bridge.get_loop() is async_bridge.get_loop()
    assert async_bridge.get_loop().is_running()


def test_run_sync_from_plain_code_and_from_a_running_loop():
    async def where():
        return threading.current_thread().name

    assert async_bridge.run_sync(where()) == "hermes-nb-loop"

    async def outer():
        # A running loop on this thread, as in a Jupyter cell: asyncio.run would be refused here.
        return async_bridge.run_sync(where)

    assert asyncio.run(outer()) == "hermes-nb-loop"


def test_run_async_from_another_loop_and_from_the_loop_itself():
    async def value():
        return 7

    assert asyncio.run(async_bridge.run_async(value())) == 7

    async def nested():
        return await async_bridge.run_async(value())

    assert async_bridge.run_sync(nested()) == 7


def test_run_sync_on_the_loop_thread_raises_instead_of_deadlocking():
    async def inner():
        async def never():
            await asyncio.sleep(3600)

        with pytest.raises(BridgeError, match="await the coroutine instead"):
            async_bridge.run_sync(never())
        return "ok"

    assert async_bridge.run_sync(inner()) == "ok"


def test_exceptions_propagate():
    async def boom():
        raise LookupError("x")

    with pytest.raises(LookupError):
        async_bridge.run_sync(boom())


def test_timeout_cancels_the_task():
    cancelled = threading.Event()

    async def slow():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        async_bridge.run_sync(slow(), timeout=0.1)
    assert cancelled.wait(5)


def test_keyboard_interrupt_while_waiting_cancels_and_propagates():
    started = threading.Event()
    cancelled = threading.Event()

    async def slow():
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def interrupt_when_started():
        started.wait(5)
        _thread.interrupt_main()  # what a kernel interrupt does to the main thread

    with interrupts_land(), pytest.raises(KeyboardInterrupt):
        threading.Thread(target=interrupt_when_started, daemon=True).start()
        async_bridge.run_sync(slow())
    assert cancelled.wait(5)
    # the loop is still healthy afterwards
    assert async_bridge.run_sync(asyncio.sleep(0, result=1)) == 1
