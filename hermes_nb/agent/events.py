"""What an agent run tells its view, one record type per kind of event.

The run's core (on the background loop, and tool workers) emits these into a queue; the calling thread
drains the queue into a view (``hermes_nb.display.live``), so a view never sees a string it has to parse and
mypy checks every producer and consumer against the same fields. ``AgentEvent`` is the union of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    from hermes_nb.agent.turns import Turn
    from hermes_nb.models import Usage
    from hermes_nb.tools.batch.records import BatchEvent, ToolCallResult

__all__ = ["AgentEvent", "ApprovalAnswered", "BatchDone", "ChildEvent", "Emit", "MemoryLoaded", "ModelNamed", "Notice",
           "NoticeLevel",
           "TextDelta", "TodoUpdated", "ToolCallQueued", "ToolEnded", "ToolRecord", "ToolStarted", "TurnDone",
           "TurnStarted", "UsageUpdate", "tool_event"]

#: How a notice reads: "retry" is a model retry, "approval"/"denied" an approval's answer, "memory" a memory write.
NoticeLevel = Literal["info", "warning", "error", "retry", "approval", "denied", "memory"]


class ToolRecord(Protocol):
    """The fields of a finished call a view shows (``hermes_nb.agent.loop.ToolCallRecord`` has them)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def content(self) -> str: ...  # after the result budget: what the model saw
    @property
    def is_error(self) -> bool: ...
    @property
    def started(self) -> float: ...
    @property
    def ended(self) -> float: ...
    @property
    def changes(self) -> tuple[Any, ...]: ...  # the files it changed (tools.safety.writes.lander.ChangedFile)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted:
    """A model turn begins (1-based)."""

    iteration: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnDone:
    """A model turn answered: what it was sent and what it said (``hermes_nb.agent.turns.Turn``)."""

    turn: Turn


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of the model's streamed text."""

    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageUpdate:
    """The run's token counts so far, after each model turn."""

    usage: Usage  # a copy: the run keeps adding to its own


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelNamed:
    """The server named the model that answered (it differs from the name the run started with)."""

    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallQueued:
    """The model asked for a call; it waits for its batch to start it."""

    index: int
    id: str
    name: str
    arguments: str  # the raw JSON text the model sent
    parent: str = ""  # the call this one was made from (an execute_code script's), else "" (the model's own)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStarted:
    """A call's clock started (after its approval, if it asked one)."""

    tool_call_id: str
    time: float
    parallel: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEnded:
    """A call finished; ``result`` is its outcome before the result budget."""

    tool_call_id: str
    time: float
    parallel: bool = False
    result: ToolCallResult | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchDone:
    """A batch's calls as the model receives them, in call order (also the answers after an interrupt)."""

    records: tuple[ToolRecord, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalAnswered:
    """An approval for ``command`` was answered, by the run's own callback or by the person at the inline prompt
    (shown on the card of the call that asked)."""

    command: str
    choice: str
    message: str
    level: NoticeLevel = "approval"


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """A line for the person: a retry, a limit reached, an interrupt, an error."""

    message: str
    level: NoticeLevel = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryLoaded:
    """The memory block this run's system prompt carries (shown under "what the model saw")."""

    text: str
    entries: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TodoUpdated:
    """The ``todo`` call ``tool_call_id`` changed the run's plan to ``todos`` (the checklist redraws in place)."""

    tool_call_id: str
    todos: tuple[dict[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildEvent:
    """An event of sub-agent ``index`` started by the ``delegate_task`` call ``tool_call_id``."""

    tool_call_id: str
    index: int
    label: str
    event: AgentEvent


AgentEvent: TypeAlias = (TurnStarted | TurnDone | TextDelta | UsageUpdate | ModelNamed | ToolCallQueued | ToolStarted
              | ToolEnded | BatchDone
              | ApprovalAnswered | Notice | TodoUpdated | ChildEvent | MemoryLoaded)
#: Where the core puts its events (a queue's ``put_nowait``; the evaluation ignores them).
Emit: TypeAlias = Callable[[AgentEvent], None]


def tool_event(event: BatchEvent) -> ToolStarted | ToolEnded:
    """The scheduler's start/end event as the agent's own."""
    if event.kind == "start":
        return ToolStarted(tool_call_id=event.tool_call_id, time=event.time, parallel=event.parallel)
    return ToolEnded(tool_call_id=event.tool_call_id, time=event.time, parallel=event.parallel, result=event.result)
