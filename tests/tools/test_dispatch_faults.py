"""Dispatch never raises for any BaseException but KeyboardInterrupt, sync or async, on any loop or thread,
and a batch always returns."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from hermes_nb.tools import async_bridge
from hermes_nb.tools.batch.scheduling import arun_tool_batch, run_tool_batch
from hermes_nb.tools.registry import ToolRegistry

WAIT = 30.0
SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}


class Custom(BaseException):
    """Neither an Exception nor one of Python's own BaseExceptions."""


class BadItems(dict):  # type: ignore[type-arg]
    """A result whose serialisation raises from inside json's encoder."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(a=1)
        self.exc = exc

    def items(self) -> Any:
        raise self.exc


def _raiser(exc: BaseException) -> Callable[..., Any]:
    def handler(args: dict[str, Any], **kw: Any) -> Any:
        raise exc
    return handler


def _async_raiser(exc: BaseException) -> Callable[..., Any]:
    async def handler(args: dict[str, Any], **kw: Any) -> Any:
        raise exc
    return handler


# (reason, handler factory, is_async, words the error result must hold)
CASES: list[tuple[str, Callable[[], Callable[..., Any]], bool, str]] = [
    ("GeneratorExit from a sync handler", lambda: _raiser(GeneratorExit("gen")), False, "GeneratorExit"),
    ("a custom BaseException from a sync handler", lambda: _raiser(Custom("mine")), False, "Custom: mine"),
    ("GeneratorExit from an async handler", lambda: _async_raiser(GeneratorExit("gen")), True, "GeneratorExit"),
    ("a custom BaseException from an async handler", lambda: _async_raiser(Custom("mine")), True, "Custom: mine"),
    ("a stray CancelledError from an async handler", lambda: _async_raiser(asyncio.CancelledError("own")), True,
     "CancelledError"),
    ("a dict subclass whose items() raises ValueError", lambda: (lambda a, **k: BadItems(ValueError("v"))), False,
     "not JSON-serialisable"),
    ("a dict subclass whose items() raises a custom BaseException",
     lambda: (lambda a, **k: BadItems(Custom("items"))), False, "Custom: items"),
    ("a dict subclass whose items() raises GeneratorExit", lambda: (lambda a, **k: BadItems(GeneratorExit())), False,
     "GeneratorExit"),
]
IDS = [c[0] for c in CASES]


@pytest.fixture(params=CASES, ids=IDS)
def faulty(request: pytest.FixtureRequest, fresh_registry: ToolRegistry) -> tuple[ToolRegistry, str]:
    _, make, is_async, words = request.param
    fresh_registry.register("faulty", "t", SCHEMA, make(), is_async=is_async, read_only=True)
    fresh_registry.register("fine", "t", SCHEMA, lambda a, **k: "fine", read_only=True)
    return fresh_registry, words


def _error(content: str, words: str) -> None:
    body = json.loads(content)
    assert words in body["error"], body


def _in_thread(fn: Callable[[], Any]) -> Any:
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive(), "never returned"
    assert not errors, f"raised {errors[0]!r}"
    return out[0]


def test_sync_dispatch(faulty: tuple[ToolRegistry, str]) -> None:
    reg, words = faulty
    _error(_in_thread(lambda: reg.dispatch("faulty", {})), words)


def test_async_dispatch_on_a_fresh_loop_in_another_thread(faulty: tuple[ToolRegistry, str]) -> None:
    reg, words = faulty
    _error(_in_thread(lambda: asyncio.run(reg.dispatch_async("faulty", {}))), words)


def test_async_dispatch_on_the_background_loop(faulty: tuple[ToolRegistry, str]) -> None:
    reg, words = faulty
    _error(_in_thread(lambda: async_bridge.run_sync(reg.dispatch_async("faulty", {}))), words)
    assert async_bridge.run_sync(asyncio.sleep(0, "alive")) == "alive"  # the shared loop survived


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_a_batch_always_returns(faulty: tuple[ToolRegistry, str], runner: str) -> None:
    reg, words = faulty
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
             for i, n in enumerate(["faulty", "fine", "faulty"])]
    if runner == "sync":
        results = _in_thread(lambda: run_tool_batch(calls, registry=reg))
    else:
        results = _in_thread(lambda: asyncio.run(arun_tool_batch(calls, registry=reg)))
    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2"]
    _error(results[0].content, words)
    _error(results[2].content, words)
    assert results[1].content == "fine"


def test_a_raising_validator_is_an_error_result(fresh_registry: ToolRegistry) -> None:
    class Args(dict):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            raise Custom("iter")

        def items(self) -> Any:
            raise Custom("items")

        def keys(self) -> Any:
            raise Custom("keys")

    schema = {"description": "t", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}
    fresh_registry.register("typed", "t", schema, lambda a, **k: "ran")
    _error(fresh_registry.dispatch("typed", Args(x="1")), "Custom")


def test_keyboard_interrupt_still_raises(fresh_registry: ToolRegistry) -> None:
    fresh_registry.register("stop", "t", SCHEMA, _raiser(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        fresh_registry.dispatch("stop", {})


def test_a_keyboard_interrupt_from_an_async_handler_in_a_batch_leaves_the_loop_running(
        fresh_registry: ToolRegistry) -> None:
    fresh_registry.register("stop", "t", SCHEMA, _async_raiser(KeyboardInterrupt()), is_async=True)
    calls = [{"id": "k", "type": "function", "function": {"name": "stop", "arguments": "{}"}}]
    (result,) = _in_thread(lambda: run_tool_batch(calls, registry=fresh_registry))
    _error(result.content, "KeyboardInterrupt")
    assert async_bridge.run_sync(asyncio.sleep(0, "alive")) == "alive"
