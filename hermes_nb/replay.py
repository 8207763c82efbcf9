"""Offline model turns: record a live session into a cassette, replay it with no network and no key.

A cassette is JSON::

    {"version": 1, "model": "...", "turns": [
        {"request": {"tools": [names offered], "n_messages": 3, "last_messages_digest": "sha256..."},
         "response": {"content": "...", "tool_calls": [{"id", "name", "arguments"}], "usage": {...}}}]}

Replay checks each recorded tool call against today's registry (the tool exists, is offered, and its
arguments still validate with ``registry.prepare``) and raises ``ReplayDriftError`` naming the turn,
the tool and what changed, so a classroom notebook fails loudly rather than replaying nonsense.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any, TypedDict

from hermes_nb.models import Model, ModelTurn, RetryCallback, TextCallback, ToolCallSpec, Usage, usage_from
from hermes_nb.tools.errors import HermesNbError

__all__ = ["Cassette", "RecordingModel", "ReplayDriftError", "ReplayModel", "load_cassette"]

CASSETTE_VERSION = 1


class ReplayDriftError(HermesNbError, RuntimeError):
    """The recording and the notebook no longer agree (tool gone, arguments invalid, turns run out)."""


class CassetteCall(TypedDict):
    id: str
    name: str
    arguments: str


class CassetteResponse(TypedDict):
    content: str
    tool_calls: list[CassetteCall]
    usage: Usage


class CassetteRequest(TypedDict, total=False):
    tools: list[str]
    n_messages: int
    last_messages_digest: str


class CassetteTurn(TypedDict):
    request: CassetteRequest
    response: CassetteResponse


class Cassette(TypedDict):
    version: int
    model: str
    turns: list[CassetteTurn]


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read and check a cassette file; ``HermesNbError`` with the path when it is missing or malformed."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HermesNbError(f"replay cassette not found: {p.resolve()}") from None
    except ValueError as exc:
        raise HermesNbError(f"replay cassette {p} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != CASSETTE_VERSION or not isinstance(data.get("turns"), list):
        raise HermesNbError(f"replay cassette {p} is not a version-{CASSETTE_VERSION} cassette")
    return data  # type: ignore[return-value]


def _digest(messages: list[dict[str, Any]]) -> str:
    tail = json.dumps(messages[-2:], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(tail.encode()).hexdigest()[:16]


def _tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in tools]


class ReplayModel:
    """Plays back a cassette's turns in order; streams content in chunks so live display looks live."""

    def __init__(self, path: str | os.PathLike[str], *, stream: bool = True, chunk_delay: float = 0.01) -> None:
        self.path = Path(path)
        self.cassette = load_cassette(self.path)
        self.name = f"replay:{path}"
        self.stream = stream
        self.chunk_delay = chunk_delay
        self.position = 0

    def check_config(self) -> None:
        """Nothing to configure: a replay needs no network and no key."""

    def rewind(self) -> None:
        """Start again from the first turn (``Agent.reset`` calls this)."""
        self.position = 0

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelTurn:
        turns = self.cassette["turns"]
        index = self.position
        if index >= len(turns):
            raise ReplayDriftError(
                f"replay {self.path}: the cassette has {len(turns)} turn(s) and the run asked for turn "
                f"{index + 1}; the notebook now takes more model turns than were recorded (re-record it)"
            )
        self.position += 1
        response = turns[index]["response"]
        calls = tuple(
            ToolCallSpec(id=c["id"], name=c["name"], arguments=c.get("arguments", "") or "")
            for c in response.get("tool_calls", [])
        )
        self._check_calls(index, calls, tools)
        content = response.get("content", "") or ""
        if content and on_text is not None:
            if self.stream:
                for start in range(0, len(content), 16):
                    on_text(content[start:start + 16])
                    if self.chunk_delay:
                        await asyncio.sleep(self.chunk_delay)
            else:
                on_text(content)
        return ModelTurn(content=content, tool_calls=calls, usage=usage_from(response.get("usage")),
                         finish_reason="tool_calls" if calls else "stop")

    def _check_calls(self, index: int, calls: tuple[ToolCallSpec, ...], tools: list[dict[str, Any]]) -> None:
        from hermes_nb.tools.registry import registry

        offered = set(_tool_names(tools))
        for call in calls:
            where = f"replay {self.path}, turn {index + 1}, tool {call.name!r}"
            entry = registry.get_entry(call.name)
            if entry is None:
                raise ReplayDriftError(f"{where}: the recording calls a tool that is no longer registered "
                                       f"(define it again or re-record)")
            if call.name not in offered:
                raise ReplayDriftError(f"{where}: the tool exists but is not offered to the model now "
                                       f"(its toolset {entry.toolset!r} is not selected, or it is unavailable)")
            prepared = registry.prepare(call.name, call.arguments)
            if isinstance(prepared, str):
                message = json.loads(prepared).get("error", prepared)
                raise ReplayDriftError(f"{where}: the recorded arguments {call.arguments} no longer "
                                       f"validate: {message}")


class RecordingModel:
    """Wraps a live model and writes every turn to a cassette (the whole file, after each turn)."""

    def __init__(self, inner: Model, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name = inner.name
        self.cassette: Cassette = {"version": CASSETTE_VERSION, "model": inner.name, "turns": []}

    def check_config(self) -> None:
        check = getattr(self.inner, "check_config", None)
        if check is not None:
            check()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelTurn:
        turn = await self.inner.complete(messages, tools, on_text=on_text, on_retry=on_retry)
        self.cassette["turns"].append({
            "request": {"tools": sorted(_tool_names(tools)), "n_messages": len(messages),
                        "last_messages_digest": _digest(messages)},
            "response": {
                "content": turn.content,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls],
                "usage": turn.usage,
            },
        })
        self.save()
        return turn

    def save(self) -> None:
        """Write the cassette atomically (a crash mid-write never leaves half a file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.cassette, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
