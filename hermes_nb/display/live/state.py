"""The state of a live agent display: the transcript that agent events build, call by call.

``Transcript.handle`` applies one ``hermes_nb.agent.events`` record; rendering it is
``hermes_nb.display.live.render``'s job and showing it a view's (``hermes_nb.display.live.views``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never

from hermes_nb.agent.events import (
    AgentEvent,
    ApprovalAnswered,
    BatchDone,
    ChildEvent,
    ModelNamed,
    Notice,
    TextDelta,
    TodoUpdated,
    ToolCallQueued,
    ToolEnded,
    ToolStarted,
    TurnDone,
    TurnStarted,
    UsageUpdate,
)
from hermes_nb.tools.calls.entry import DEFAULT_EMOJI

__all__ = ["Card", "Checklist", "Transcript", "set_cost", "tool_emoji"]


@dataclass
class Card:
    """One tool call as shown: arguments, state, then duration and result."""

    id: str
    name: str
    arguments: str
    emoji: str = DEFAULT_EMOJI
    state: str = "queued"  # queued | running | done | error
    started: float = 0.0
    ended: float = 0.0
    content: str = ""
    parallel: bool = False
    notes: list[tuple[str, str]] = field(default_factory=list)  # (message, level), e.g. the approval asked
    aside: Any = None  # a notebook tool's traceback / printed text (hermes_nb.display.asides), for the person only
    cost: Any = None  # its result's share of the next request (hermes_nb.agent.cost.Price), after the run
    children: list[Card] = field(default_factory=list)  # the calls an execute_code script made, in order
    parent: str = ""  # the id of the script's call this one was made from ("" for the model's own calls)
    subagents: dict[int, Transcript] = field(default_factory=dict)  # delegate_task's sub-agents, by task index
    changes: tuple[Any, ...] = ()  # the files the call changed, each with its diff (ToolCallRecord.changes)


@dataclass
class Checklist:
    """The run's ``todo`` plan: one item in the transcript, changed in place by every update."""

    todos: tuple[dict[str, str], ...]
    updates: int = 1


@dataclass
class Transcript:
    """Everything a run showed, in order: text blocks, tool cards, batch timelines, notices."""

    prompt: str = ""
    model: str = ""
    # ["text", str] | ["tool", Card] | ["timeline", [Card]] | ["notice", msg, level] | ["turn", n, Turn | None]
    # | ["checklist", Checklist]
    items: list[list[Any]] = field(default_factory=list)
    cards: dict[str, Card] = field(default_factory=dict)
    usage: Mapping[str, object] = field(default_factory=dict)
    checklist: Checklist | None = None
    shown_live: bool = False
    done: bool = False
    cost: Any = None  # the run's cost (hermes_nb.agent.cost.RunCost), set when it finishes

    def handle(self, event: AgentEvent) -> None:
        """Apply one agent event."""
        match event:
            case TextDelta(delta=delta):
                if self.items and self.items[-1][0] == "text":
                    self.items[-1][1] += delta
                else:
                    self.items.append(["text", delta])
            case ToolCallQueued():
                card = Card(id=event.id, name=event.name, arguments=event.arguments, emoji=tool_emoji(event.name),
                            parent=event.parent)
                self.cards[card.id] = card
                parent = self.cards.get(event.parent) if event.parent else None
                if parent is not None:
                    parent.children.append(card)  # drawn under the script's card, not as a call of the model
                else:
                    self.items.append(["tool", card])
            case ToolStarted() | ToolEnded():
                self._tool_moved(event)
            case BatchDone(records=records):
                batch = []
                for rec in records:
                    known = self.cards.get(rec.id)
                    if known is None:
                        continue
                    known.content = rec.content  # after the budget: what the model saw
                    known.changes = rec.changes
                    known.state = "error" if rec.is_error else "done"
                    for child in known.subagents.values():  # its sub-agents have all answered
                        child.done = True
                    _take_aside(known)
                    if rec.ended:
                        known.started, known.ended = rec.started, rec.ended
                    batch.append(known)
                if len(batch) > 1:
                    self.items.append(["timeline", batch])
            case ApprovalAnswered():
                # Shown with the call that asked, before its result, even though the card came first.
                asking = self._asking_card(event.command)
                note = (event.message, event.level)
                if asking is not None:
                    asking.notes.append(note)
                else:
                    self.items.append(["notice", *note])
            case Notice(message=message, level=level):
                self.items.append(["notice", message, level])
            case UsageUpdate(usage=usage):
                self.usage = usage
            case TodoUpdated():
                self._plan(event)
            case ChildEvent(tool_call_id=call_id, index=index, label=label, event=inner):
                parent = self.cards.get(call_id)
                if parent is not None:
                    if index not in parent.subagents:
                        parent.subagents[index] = Transcript(prompt=label, model=self.model)
                    parent.subagents[index].handle(inner)
            case ModelNamed(name=name):
                self.model = name  # the header names the model the server says answered
            case TurnStarted(iteration=n):
                self.items.append(["turn", n, None])  # filled by TurnDone: "what the model saw"
            case TurnDone(turn=turn):
                for item in reversed(self.items):
                    if item[0] == "turn" and item[1] == turn.iteration:
                        item[2] = turn
                        break
            case _:
                assert_never(event)

    def _tool_moved(self, event: ToolStarted | ToolEnded) -> None:
        card = self.cards.get(event.tool_call_id)
        if card is None:
            return
        card.parallel = event.parallel
        if isinstance(event, ToolStarted):
            card.state, card.started = "running", event.time
        elif event.result is not None:
            r = event.result
            card.state = "error" if r.is_error else "done"
            card.started, card.ended, card.content = r.started, r.ended, r.content
            _take_aside(card)

    def _plan(self, event: TodoUpdated) -> None:
        """The todo call's card gives way to the one checklist (made by the first update, then redrawn)."""
        card = self.cards.pop(event.tool_call_id, None)
        at = next((i for i, item in enumerate(self.items) if item[0] == "tool" and item[1] is card), None)
        if self.checklist is None:
            self.checklist = Checklist(todos=event.todos)
            if at is None:
                self.items.append(["checklist", self.checklist])
            else:
                self.items[at] = ["checklist", self.checklist]
            return
        self.checklist.todos = event.todos
        self.checklist.updates += 1
        if at is not None:
            del self.items[at]

    def _asking_card(self, command: str) -> Card | None:
        """The call an approval belongs to: an unfinished one whose arguments hold the command (the gate
        asks before the call starts, so it may still be queued)."""
        running = [c for c in self.cards.values() if c.state in ("queued", "running")]
        quoted = json.dumps(command, ensure_ascii=False)[1:-1]
        for card in running:
            if command and (command in card.arguments or quoted in card.arguments):
                return card
        return running[-1] if running else None


def set_cost(t: Transcript, cost: Any) -> None:
    """Give the finished transcript its run's cost: the footer's total, each call's share on its card."""
    t.cost = cost
    if cost is not None:
        for card in t.cards.values():
            card.cost = cost.tool_calls.get(card.id)


def _take_aside(card: Card) -> None:
    if card.aside is None:
        from hermes_nb.display.asides import take

        card.aside = take(card.name)


def tool_emoji(name: str) -> str:
    """The tool's own emoji, else the one default (``tools.calls.entry.DEFAULT_EMOJI``)."""
    from hermes_nb.tools.registry import registry

    return registry.get_emoji(name)
