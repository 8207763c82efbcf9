"""A scripted model server that answers by conversation, for concurrent runs (evaluations, benches).

``FakeOpenAI`` answers requests in arrival order, which concurrent conversations make arbitrary;
``RoutedOpenAI(route)`` asks ``route(prompt, turn, body)`` instead, where ``prompt`` is the
conversation's first user message and ``turn`` counts the assistant messages already in it (0 for the
first request). Every request body is still kept in ``requests``; ``on_request`` (optional) is called
with each body, e.g. to interrupt a run after N requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.fake_openai import FakeOpenAI, Reply

__all__ = ["RoutedOpenAI", "prompt_of", "turn_of"]

Route = Callable[[str, int, dict[str, Any]], Reply]


def prompt_of(body: dict[str, Any]) -> str:
    return next((str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"), "")


def turn_of(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


class RoutedOpenAI(FakeOpenAI):
    """``with RoutedOpenAI(route) as srv: ...``; the reply for each request comes from ``route``."""

    def __init__(self, route: Route, *, on_request: Callable[[dict[str, Any]], None] | None = None,
                 keep_requests: bool = True) -> None:
        super().__init__([])
        self.route = route
        self.on_request = on_request
        self.keep_requests = keep_requests
        self.count = 0
        # the handler writes headers and body separately: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every reply, which would swamp the latency a bench sets
        self._server.RequestHandlerClass.disable_nagle_algorithm = True  # type: ignore[attr-defined]

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.count += 1
            if self.keep_requests:
                self.requests.append(body)
        if self.on_request is not None:
            self.on_request(body)
        return self.route(prompt_of(body), turn_of(body), body)
