"""Offline model turns: record a live session into a cassette, replay it with no network and no key.

A cassette is JSON::

    {"version": 1, "model": "...", "turns": [
        {"request": {"tools": [names offered], "messages": [what was sent], "definitions": [tool definitions],
                     "n_messages": 3, "last_messages_digest": "sha256...", "tool_results": [{"id", "name", "content"}]},
         "response": {"content": "...", "tool_calls": [{"id", "name", "arguments"}], "usage": {...}}}]}

Replay checks each recorded tool call against today's registry (the tool exists, is offered, and its
arguments still validate with ``registry.prepare``) and raises ``ReplayDriftError`` naming the turn,
the tool and what changed, so a classroom notebook fails loudly rather than replaying nonsense.

It is also honest about results: before each turn it compares the tool results the notebook produced
just now with the ones the turn was recorded after (spill-file paths aside). When they differ — a
denial, a timeout, an error, other output — the recorded answer no longer describes what happened, so
by default (``on_drift="mark"``) that turn's text, and every later one, starts with a visible drift
note naming the tool, what was recorded and what came now; ``on_drift="stop"`` raises
``ReplayDriftError`` instead. Cassettes recorded before results were kept are compared by digest.

And about the conversation: at the first turn of each run it compares the prompt, the system prompt and
the tools offered with the recorded request (``hermes_nb.models.conversation_drift``); a recording asked
another question says so in the same way instead of answering as if nothing changed.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from hermes_nb.models import (
    Model,
    ModelTurn,
    RetryCallback,
    TextCallback,
    ToolCallSpec,
    Usage,
    usage_from,
)
from hermes_nb.models.conversation_drift import conversation_note, request_record, short, tool_names
from hermes_nb.tools.errors import HermesNbError, OneLineError

__all__ = ["Cassette", "RecordingModel", "ReplayDriftError", "ReplayModel", "load_cassette"]

CASSETTE_VERSION = 1


class ReplayDriftError(OneLineError, RuntimeError):
    """The recording and the notebook no longer agree (tool gone, arguments invalid, turns run out); shown
    as one line, what to do is in the message."""


class CassetteCall(TypedDict):
    id: str
    name: str
    arguments: str


class CassetteResponse(TypedDict):
    content: str
    tool_calls: list[CassetteCall]
    usage: Usage


class CassetteResult(TypedDict):
    id: str
    name: str
    content: str


class CassetteRequest(TypedDict, total=False):
    tools: list[str]
    messages: list[dict[str, Any]]  # what the model was sent (cassettes from issue 26 on)
    definitions: list[dict[str, Any]]  # the tool definitions offered
    n_messages: int
    last_messages_digest: str
    tool_results: list[CassetteResult]


class CassetteTurn(TypedDict):
    request: CassetteRequest
    response: CassetteResponse


class Cassette(TypedDict):
    version: int
    model: str
    turns: list[CassetteTurn]
    local: NotRequired[bool]  # recorded from a local model: priced as unknown on replay
    provider_url: NotRequired[str]  # the endpoint recorded from, which prices the replay


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


def _latest_results(messages: list[dict[str, Any]]) -> list[CassetteResult]:
    """The tool messages after the last assistant message: what the model is about to read."""
    names: dict[str, str] = {}
    out: list[CassetteResult] = []
    for message in messages:
        if message.get("role") == "assistant":
            out = []
            names = {c.get("id", ""): c.get("function", {}).get("name", "") for c in message.get("tool_calls") or ()}
        elif message.get("role") == "tool":
            content = message.get("content")
            out.append({"id": str(message.get("tool_call_id", "")), "name": names.get(message.get("tool_call_id", ""), ""),
                        "content": content if isinstance(content, str) else json.dumps(content, default=str)})
    return out


#: Fields of a JSON result that differ between a recording and its replay by design: how long something
#: took, when and where (which notebook) a run happened and its random id, which model answered (a replay's
#: name is its path).
_VOLATILE = frozenset({"duration_seconds", "total_duration_seconds", "session_id", "when", "model", "notebook"})


def _comparable(content: str) -> str:
    """A result without what changes from run to run by design: the spill file's path, ``_VOLATILE`` fields."""
    from hermes_nb.tools.budget import parse_spill_block

    info = parse_spill_block(content)
    if info:
        return content.replace(info["path"], "<spill file>")
    if content.startswith("{") and any(f'"{key}"' in content for key in _VOLATILE):
        try:
            return json.dumps(_steady(json.loads(content)), sort_keys=True, ensure_ascii=False)
        except ValueError:
            return content
    return content


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


class ReplayModel:
    """Plays back a cassette's turns in order; streams content in chunks so live display looks live."""

    def __init__(self, path: str | os.PathLike[str], *, stream: bool = True, chunk_delay: float = 0.01,
                 on_drift: str = "mark") -> None:
        if on_drift not in ("mark", "stop"):
            raise ValueError(f"on_drift must be 'mark' or 'stop', got {on_drift!r}")
        self.path = Path(path)
        self.on_drift = on_drift
        #: ``(turn, note)`` for each turn whose live tool results differ from the recording.
        self.drift: list[tuple[int, str]] = []
        self.cassette = load_cassette(self.path)
        self.name = f"replay:{path}"
        self.stream = stream
        self.chunk_delay = chunk_delay
        self.position = 0
        #: the request the turn being replayed was recorded with (``hermes_nb.agent.turns.Turn.recorded_request``)
        self.recorded_request: CassetteRequest | None = None

    #: its usage is the recording's, not measured now (``hermes_nb.agent.cost`` says "recorded usage")
    replays_recording = True

    def __repr__(self) -> str:
        return f"ReplayModel(path={str(self.path)!r}, on_drift={self.on_drift!r})"

    def fresh(self) -> ReplayModel:
        """The same recording and settings from its first turn, for another conversation (a replay's place
        in its cassette belongs to one conversation: concurrent ones must not share it)."""
        fresh = copy.copy(self)  # the cassette itself is only read: shared
        fresh.rewind()
        fresh.recorded_request = None
        return fresh

    def check_config(self) -> None:
        """A replay needs no network and no key; a run after the last recorded turn is refused before it
        starts, in one line (a follow-up question the recording has no answer for)."""
        turns = len(self.cassette["turns"])
        if turns and self.position >= turns:
            raise ReplayDriftError(
                f"replay {self.path}: the recording has no answer for a follow-up question (its {turns} "
                f"turn(s) are used up); start again with agent.reset() (%agent reset), or record the follow-up")

    def rewind(self) -> None:
        """Start again from the first turn (``Agent.reset`` calls this)."""
        self.position = 0
        self.drift = []

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
        self.recorded_request = turns[index]["request"]  # the turn record shows the recorded context too
        response = turns[index]["response"]
        calls = tuple(
            ToolCallSpec(id=c["id"], name=c["name"], arguments=c.get("arguments", "") or "")
            for c in response.get("tool_calls", [])
        )
        self._check_calls(index, calls, tools)
        content = response.get("content", "") or ""
        asked = self._compare_conversation(index, turns[index]["request"], messages, tools)
        note = self._compare_results(index, turns[index]["request"], messages)
        for found in (asked, note):
            if found is not None:
                self.drift.append((index + 1, found))
        if asked is not None:
            content = f"⚠️ **Replay drift** — recorded for another conversation: {asked}\n\n" + content
        elif note is not None:
            content = f"⚠️ **Replay drift** — recorded with different tool results: {note}\n\n" + content
        elif self.drift:
            content = "⚠️ **Replayed from a different run** (see above).\n\n" + content
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

    def _compare_conversation(self, index: int, request: CassetteRequest, messages: list[dict[str, Any]],
                              tools: list[dict[str, Any]]) -> str | None:
        """A note naming how this run's prompt, system prompt or tools differ from the recording, or None."""
        note = conversation_note(request, messages, tools)  # type: ignore[arg-type]
        if note is not None and self.on_drift == "stop":
            raise ReplayDriftError(f"replay {self.path}, turn {index + 1}: {note} (the recording answers another "
                                   "conversation; re-record, or replay with on_drift='mark')")
        return note

    def _compare_results(self, index: int, request: CassetteRequest, messages: list[dict[str, Any]]) -> str | None:
        """A note naming what differs between the recorded and the live tool results, or None."""
        recorded = request.get("tool_results")
        if recorded is None:  # an older cassette: only the digest of the last messages was kept
            digest = request.get("last_messages_digest")
            if index == 0 or digest is None or digest == _digest(messages):
                return None
            note = "the tool results differ from the recording"
        else:
            live = {r["id"]: r["content"] for r in _latest_results(messages)}
            differences = []
            for result in recorded:
                now = live.get(result["id"])
                if now is None:
                    differences.append(f"`{result['name']}` has no result now")
                elif _comparable(now) != _comparable(result["content"]):
                    differences.append(f"`{result['name']}` returned “{short(result['content'])}” then, "
                                       f"“{short(now)}” now")
            if not differences:
                return None
            note = "; ".join(differences)
        if self.on_drift == "stop":
            raise ReplayDriftError(f"replay {self.path}, turn {index + 1}: {note} (the recorded answer no longer "
                                   "describes what happened; re-record, or replay with on_drift='mark')")
        return note

    def _check_calls(self, index: int, calls: tuple[ToolCallSpec, ...], tools: list[dict[str, Any]]) -> None:
        from hermes_nb.tools.registry import registry

        offered = set(tool_names(tools))
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
        from hermes_nb.models import is_local_url

        base_url = getattr(inner, "base_url", None)
        if inner.name == "local" or is_local_url(base_url):
            self.cassette["local"] = True
        elif base_url:
            self.cassette["provider_url"] = base_url

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
            "request": {**request_record(messages, tools), "n_messages": len(messages),  # type: ignore[typeddict-item]
                        "last_messages_digest": _digest(messages), "tool_results": _latest_results(messages)},
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
