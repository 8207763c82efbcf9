"""Views of a live agent run: where the calling thread sends the run's events as they happen.

``HtmlView`` owns a display handle made in the cell and updates it at most ``MAX_UPDATES_PER_S`` times a
second, ending with the full static transcript (so a saved notebook keeps the whole story); ``TextView``
prints compact lines (terminal IPython, plain Python); ``NullView`` shows nothing. Each keeps the
transcript for the result. Views are only ever called from the calling thread (ARCHITECTURE rule 6).
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from hermes_nb.agent.events import (
    AgentEvent,
    ApprovalAnswered,
    BatchDone,
    ChildEvent,
    Notice,
    TextDelta,
    TodoUpdated,
    ToolEnded,
    ToolStarted,
)
from hermes_nb.display.cards import aside_text
from hermes_nb.display.checklist import checklist_text
from hermes_nb.display.kernel import in_kernel
from hermes_nb.display.live.render import (
    RunResult,
    card_line,
    note_text,
    short_path,
    spill_of,
    timeline_text,
    transcript_html,
    transcript_text,
    usage_text,
)
from hermes_nb.display.live.state import Transcript, set_cost

__all__ = ["MAX_UPDATES_PER_S", "HtmlView", "NullView", "TextView", "View", "in_kernel", "make_view"]

MAX_UPDATES_PER_S = 10
_clock = time.monotonic  # a seam for tests of the throttle


@runtime_checkable
class View(Protocol):
    """What an agent run drives: events as they come, ticks while it waits, then finish or abort."""

    @property
    def transcript(self) -> Transcript: ...

    def handle(self, event: AgentEvent) -> None:
        """Take one event (state first, drawing may wait for ``tick``)."""

    def tick(self) -> None:
        """The run is waiting: draw what changed, if the view draws at a limited rate."""

    def finish(self, result: RunResult) -> None:
        """The run returned ``result``: draw the final state."""

    def abort(self, message: str) -> None:
        """The run raised: show why and end the display (the caller re-raises)."""


class NullView:
    """Shows nothing (``display=False``); still keeps the transcript for the result."""

    def __init__(self, prompt: str, model: str) -> None:
        self.transcript = Transcript(prompt=prompt, model=model)

    def handle(self, event: AgentEvent) -> None:
        self.transcript.handle(event)

    def tick(self) -> None:
        pass

    def finish(self, result: RunResult) -> None:
        set_cost(self.transcript, getattr(result, "cost", None))
        self.transcript.usage = result.usage  # the run's, its sub-agents' included
        self.transcript.done = True

    def abort(self, message: str) -> None:
        """The run raised: show why and end the display (the exception is re-raised by the caller)."""
        self.transcript.handle(Notice(message=message, level="error"))
        self.transcript.done = True


class HtmlView(NullView):
    """One output in the cell, updated in place (throttled), static HTML at the end."""

    def __init__(self, prompt: str, model: str) -> None:
        from IPython.display import display

        super().__init__(prompt, model)
        # raw bundle: HTML for the notebook, the text transcript for converters and text front ends
        self.handle_ = display(self._bundle(), raw=True, display_id=True)
        from hermes_nb import _state
        from hermes_nb.display import running

        # a restart before the end leaves "⏳ running" in the saved notebook: the next load says so
        marker_id = getattr(self.handle_, "display_id", None) or f"view-{id(self):x}"
        self._marker = running.begin(str(marker_id), prompt=prompt, cell=_state.cell[0])
        from hermes_nb.display import prompts

        self._unrecord = prompts.record_on_card(self._take_answer)  # an inline prompt's answer goes on its card
        self._dirty = False
        self._last = 0.0
        self.updates = 0

    def handle(self, event: AgentEvent) -> None:
        self.transcript.handle(event)
        self._dirty = True

    def tick(self) -> None:
        from hermes_nb.tools import interaction

        now = _clock()
        asking = interaction.asking()  # a question takes the main thread next: draw what is true now, unthrottled
        if asking != self.transcript.asking:
            self.transcript.asking, self._dirty = asking, True
        if self._dirty and (asking or now - self._last >= 1 / MAX_UPDATES_PER_S):
            self._update()
            self._last = now

    def _update(self) -> None:
        self._dirty = False
        self.updates += 1
        self.handle_.update(self._bundle(), raw=True)

    def abort(self, message: str) -> None:
        super().abort(message)
        self._update()
        self._ended()

    def _take_answer(self, answer: ApprovalAnswered) -> bool:
        """An inline prompt's answer, onto the card of the unfinished call that asked, drawn at once (the prompt
        clears itself); False when no call of this run waits (the prompt keeps its own record)."""
        if not any(c.state in ("queued", "running") for c in self.transcript.cards.values()):
            return False
        self.handle(answer)
        self._update()
        return True

    def _ended(self) -> None:
        from hermes_nb.display import running

        self._unrecord()
        running.end(self._marker)

    def _bundle(self) -> dict[str, str]:
        return {"text/html": transcript_html(self.transcript), "text/plain": transcript_text(self.transcript)}

    def finish(self, result: RunResult) -> None:
        super().finish(result)
        self.transcript.shown_live = True
        self._update()
        self._ended()


class TextView(NullView):
    """Compact lines as events happen; streamed text is printed as it arrives."""

    def __init__(self, prompt: str, model: str) -> None:
        super().__init__(prompt, model)
        self._in_text = False
        print(f"🤖 agent ({model}) — You: {prompt}", flush=True)

    def _line(self, text: str) -> None:
        if self._in_text:
            print(flush=True)
            self._in_text = False
        print(text, flush=True)

    def handle(self, event: AgentEvent) -> None:
        t = self.transcript
        t.handle(event)
        match event:
            case TextDelta(delta=delta):
                print(delta, end="", flush=True)
                self._in_text = True
            case ToolStarted() | ToolEnded():
                card = t.cards.get(event.tool_call_id)
                if card is not None:
                    self._line(card_line(card))  # a script's calls have their own lines: not its whole tree
                    if isinstance(event, ToolEnded) and card.aside is not None:
                        # a notebook tool's traceback / printed text, for the person
                        self._line("\n".join("      " + line for line in aside_text(card.aside).splitlines()))
            case BatchDone(records=records):
                for rec in records:
                    spill = spill_of(rec.content)
                    if spill:
                        self._line(f"  ↳ {rec.name}: {spill['size']:,} chars spilled to {short_path(spill['path'])}")
                if t.items and t.items[-1][0] == "timeline":
                    self._line(timeline_text(t.items[-1][1]))
            case ApprovalAnswered(message=message, level=level):
                self._line(note_text((message, level)))
            case Notice(message=message, level=level):
                self._line(note_text((message, level)).strip())
            case TodoUpdated(todos=todos):  # a terminal cannot redraw: the plan again, as it is now
                self._line(checklist_text(todos))
            case ChildEvent(tool_call_id=parent, index=index, label=label, event=ToolEnded(tool_call_id=call_id)):
                self._child_line(parent, index, label, call_id)
            case _:
                pass  # usage and turns: the last line says the totals

    def _child_line(self, parent: str, index: int, label: str, call_id: str) -> None:
        """The sub-agent's finished call as its own line, found by the event's ids (a label may repeat:
        the same goal delegated again in a later turn)."""
        card = self.transcript.cards.get(parent)
        child = card.subagents.get(index) if card is not None else None
        if child is not None and call_id in child.cards:
            self._line(f"    ↳ {label[:40]} {card_line(child.cards[call_id]).strip()}")  # its line alone

    def abort(self, message: str) -> None:
        super().abort(message)
        self._line(f"✗ {message}")

    def finish(self, result: RunResult) -> None:
        super().finish(result)
        self.transcript.shown_live = True
        self._line(f"■ {result.stopped_reason} after {result.iterations} turn(s); "
                   f"{usage_text(result.usage, self.transcript.cost)}")


def make_view(display: bool | str | None, *, prompt: str, model: str) -> View:
    """``None``: HTML in a Jupyter kernel, text elsewhere; ``False``: nothing; or "html" / "text"."""
    if display is False:
        return NullView(prompt, model)
    if display == "html" or (display in (None, True) and in_kernel()):
        return HtmlView(prompt, model)
    return TextView(prompt, model)
