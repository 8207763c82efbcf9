"""Showing an agent run as it happens: one inline HTML output updated in place, or text lines.

The agent's calling thread feeds events into a ``Transcript`` (the state) and a view renders it:
``HtmlView`` owns a display handle made in the cell and updates it at most ``MAX_UPDATES_PER_S`` times
a second, ending with the full static transcript (so a saved notebook keeps the whole story);
``TextView`` prints compact lines (terminal IPython, plain Python); ``NullView`` shows nothing.
Views are only ever called from the calling thread (ARCHITECTURE rule 6).
"""

from __future__ import annotations

import html
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb import colours, markdown
from hermes_nb.display import aside_html, aside_text
from hermes_nb.tools.entry import DEFAULT_EMOJI

__all__ = ["HtmlView", "NullView", "TextView", "Transcript", "make_view", "result_html", "result_text",
           "short_path"]

MAX_UPDATES_PER_S = 10
RESULT_PREVIEW_CHARS = 4_000
_RED, _GREY = colours.ERROR, colours.MUTED
_clock = time.monotonic  # a seam for tests of the throttle


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
    aside: Any = None  # a notebook tool's traceback / printed text (hermes_nb.asides), for the person only


@dataclass
class Transcript:
    """Everything a run showed, in order: text blocks, tool cards, batch timelines, notices."""

    prompt: str = ""
    model: str = ""
    items: list[list[Any]] = field(default_factory=list)  # ["text", str] | ["tool", Card] | ["timeline", [Card]] | ["notice", msg, level]
    cards: dict[str, Card] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    shown_live: bool = False
    done: bool = False

    def handle(self, kind: str, data: dict[str, Any]) -> None:
        """Apply one agent event."""
        if kind == "text":
            if self.items and self.items[-1][0] == "text":
                self.items[-1][1] += data["delta"]
            else:
                self.items.append(["text", data["delta"]])
        elif kind == "tool_call":
            card = Card(id=data["id"], name=data["name"], arguments=data["arguments"], emoji=_emoji(data["name"]))
            self.cards[card.id] = card
            self.items.append(["tool", card])
        elif kind in ("tool_start", "tool_end"):
            event = data["event"]
            found = self.cards.get(event.tool_call_id)
            if found is None:
                return
            card = found
            card.parallel = event.parallel
            if kind == "tool_start":
                card.state, card.started = "running", event.time
            elif event.result is not None:
                r = event.result
                card.state = "error" if r.is_error else "done"
                card.started, card.ended, card.content = r.started, r.ended, r.content
                _take_aside(card)
        elif kind == "batch":
            batch = []
            for rec in data["records"]:
                known = self.cards.get(rec.id)
                if known is None:
                    continue
                card = known
                card.content = rec.content  # after the budget: what the model saw
                card.state = "error" if rec.is_error else "done"
                _take_aside(card)
                if rec.ended:
                    card.started, card.ended = rec.started, rec.ended
                batch.append(card)
            if len(batch) > 1:
                self.items.append(["timeline", batch])
        elif kind == "approval":
            # Shown with the call that asked, before its result, even though the card came first.
            card_for = self._asking_card(data.get("command", ""))
            note = (data["message"], data.get("level", "info"))
            if card_for is not None:
                card_for.notes.append(note)
            else:
                self.items.append(["notice", *note])
        elif kind == "notice":
            self.items.append(["notice", data["message"], data.get("level", "info")])
        elif kind == "usage":
            self.usage = data["usage"]

    def _asking_card(self, command: str) -> Card | None:
        """The call an approval belongs to: an unfinished one whose arguments hold the command (the gate
        asks before the call starts, so it may still be queued)."""
        running = [c for c in self.cards.values() if c.state in ("queued", "running")]
        quoted = json.dumps(command, ensure_ascii=False)[1:-1]
        for card in running:
            if command and (command in card.arguments or quoted in card.arguments):
                return card
        return running[-1] if running else None

    # -- rendering --------------------------------------------------------------------------------

    def html(self) -> str:
        parts = [f'<div class="hermes-nb-transcript" style="font-family:sans-serif;font-size:13px;'
                 f'border-left:3px solid {colours.ACCENT};padding:4px 10px;margin:4px 0">'
                 f'<div style="color:{_GREY}">🤖 agent · {_e(self.model)}</div>'
                 f'<div style="margin:4px 0"><b>You:</b> {_e(self.prompt)}</div>']
        for item in self.items:
            kind = item[0]
            if kind == "text":
                parts.append(f'<div style="margin:6px 0">{markdown.to_html(item[1])}</div>')
            elif kind == "tool":
                parts.append(_card_html(item[1]))
            elif kind == "timeline":
                parts.append(_timeline_html(item[1]))
            else:
                parts.append(_note_html((item[1], item[2])))
        if not self.done and not any(c.state in ("queued", "running") for c in self.cards.values()):
            # a running call's card already says "⏳ running…"; the footer speaks only between calls
            parts.append(f'<div style="color:{_GREY}">⏳ waiting for the model…</div>')
        if self.usage:
            u = self.usage
            parts.append(f'<div style="color:{_GREY};margin-top:4px">tokens: {u.get("prompt_tokens", 0)} prompt + '
                         f'{u.get("completion_tokens", 0)} completion = {u.get("total_tokens", 0)}</div>')
        parts.append("</div>")
        return "".join(parts)

    def text(self) -> str:
        lines = [f"🤖 agent ({self.model})", f"You: {self.prompt}"]
        for item in self.items:
            if item[0] == "text":
                lines.append(item[1])
            elif item[0] == "tool":
                lines += [_note_text(n) for n in item[1].notes]
                lines.append(_card_text(item[1]))
            elif item[0] == "timeline":
                lines.append(_timeline_text(item[1]))
            else:
                lines.append(_note_text((item[1], item[2])).strip())
        if self.usage:
            lines.append(_usage_text(self.usage))
        return "\n".join(lines)


def _take_aside(card: Card) -> None:
    if card.aside is None:
        from hermes_nb.asides import take

        card.aside = take(card.name)


def _e(text: Any) -> str:
    return html.escape(str(text))


def _icon(level: str) -> str:
    return {"info": "ℹ", "approval": "🔐", "denied": "🔐"}.get(level, "⚠")


def _note_text(note: tuple[str, str]) -> str:
    return f"  {_icon(note[1])} {note[0]}"


def _note_html(note: tuple[str, str]) -> str:
    color = _RED if note[1] in ("error", "denied") else colours.WARN if note[1] in ("warning", "retry") else _GREY
    return f'<div style="color:{color};margin:3px 0">{_icon(note[1])} {_e(note[0])}</div>'


def short_path(path: str) -> str:
    """``path`` with the home folder written ``~``, so a transcript reads the same on every machine."""
    home = str(Path.home())
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def _emoji(name: str) -> str:
    from hermes_nb.tools.registry import registry

    return registry.get_emoji(name)  # the tool's own, else the one default (tools.entry.DEFAULT_EMOJI)


def _args_short(arguments: str, limit: int = 200) -> str:
    try:
        value = json.loads(arguments) if arguments else {}
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items()) \
            if isinstance(value, dict) else arguments
    except ValueError:
        text = arguments
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _spill(content: str) -> Any:
    try:
        from hermes_nb.tools.budget import parse_spill_block
    except ImportError:
        return None
    return parse_spill_block(content)


def _card_html(card: Card) -> str:
    head = f'{card.emoji} <b>{_e(card.name)}</b>(<code>{_e(_args_short(card.arguments))}</code>)'
    if card.state in ("queued", "running"):
        return (f'<div style="margin:3px 0">{head} <span style="color:{_GREY}">⏳ {card.state}…</span></div>'
                + "".join(_note_html(n) for n in card.notes))
    color = _RED if card.state == "error" else colours.OK
    mark = "✗" if card.state == "error" else "✓"
    dur = f"{card.ended - card.started:.2f} s" if card.ended else ""
    spill = _spill(card.content)
    note = (f' <span style="color:{colours.WARN}" title="{_e(spill["path"])}">spilled {spill["size"]:,} chars → '
            f'{_e(short_path(spill["path"]))}</span>' if spill else "")
    asked = "".join(_note_html(n) for n in card.notes)
    body = card.content if len(card.content) <= RESULT_PREVIEW_CHARS else \
        card.content[:RESULT_PREVIEW_CHARS] + f"\n… ({len(card.content):,} chars in all)"
    return (f'{asked}<details style="margin:3px 0"><summary>{head} <span style="color:{color}">{mark} {dur}</span>'
            f'{note}</summary><pre style="white-space:pre-wrap;max-height:20em;overflow:auto;'
            f'background:{colours.SURFACE};padding:4px;color:{colours.TEXT}">'
            f'{_e(body)}</pre></details>{aside_html(card.aside)}')


def _timeline_html(cards: list[Card]) -> str:
    start = min(c.started for c in cards)
    span = max(max(c.ended for c in cards) - start, 1e-6)
    mode = "in parallel" if any(c.parallel for c in cards) else "one after another"
    rows = [f'<div style="color:{_GREY};margin-top:4px">batch of {len(cards)} calls, {mode}: {span:.2f} s</div>']
    for c in cards:
        left, width = 100 * (c.started - start) / span, max(100 * (c.ended - c.started) / span, 0.5)
        rows.append(f'<div style="display:flex;align-items:center;height:16px"><div style="width:9em;'
                    f'overflow:hidden;font-size:11px">{_e(c.name)}</div><div style="position:relative;flex:1;'
                    f'height:10px;background:{colours.TRACK}"><div style="position:absolute;left:{left:.1f}%;'
                    f'width:{width:.1f}%;height:10px;background:{colours.ERROR_MARK if c.state == "error" else colours.ACCENT}">'
                    f'</div></div></div>')
    return "".join(rows)


def _card_text(card: Card) -> str:
    if card.state in ("queued", "running"):
        return f"  {card.emoji} {card.name}({_args_short(card.arguments, 80)}) …"
    mark = "✗" if card.state == "error" else "✓"
    spill = _spill(card.content)
    tail = f"spilled {spill['size']:,} chars → {short_path(spill['path'])}" if spill else \
        card.content.replace("\n", " ")[:100]
    return f"  {mark} {card.name} {card.ended - card.started:.2f} s → {tail}"


def _timeline_text(cards: list[Card]) -> str:
    start = min(c.started for c in cards)
    span = max(c.ended for c in cards) - start
    mode = "in parallel" if any(c.parallel for c in cards) else "serially"
    return f"  ⏱ batch of {len(cards)} ran {mode} in {span:.2f} s"


def _usage_text(u: dict[str, int]) -> str:
    return (f"tokens: {u.get('prompt_tokens', 0)} prompt + {u.get('completion_tokens', 0)} completion = "
            f"{u.get('total_tokens', 0)}")


# -- views ----------------------------------------------------------------------------------------

class NullView:
    """Shows nothing (``display=False``); still keeps the transcript for the result."""


    def __init__(self, prompt: str, model: str) -> None:
        self.transcript = Transcript(prompt=prompt, model=model)

    def handle(self, kind: str, data: dict[str, Any]) -> None:
        self.transcript.handle(kind, data)

    def tick(self) -> None:
        pass

    def finish(self, result: Any) -> None:
        self.transcript.done = True

    def abort(self, message: str) -> None:
        """The run raised: show why and end the display (the exception is re-raised by the caller)."""
        self.transcript.handle("notice", {"message": message, "level": "error"})
        self.transcript.done = True


class HtmlView(NullView):
    """One output in the cell, updated in place (throttled), static HTML at the end."""


    def __init__(self, prompt: str, model: str) -> None:
        from IPython.display import display

        super().__init__(prompt, model)
        # raw bundle: HTML for the notebook, the text transcript for converters and text front ends
        self.handle_ = display(self._bundle(), raw=True, display_id=True)
        self._dirty = False
        self._last = 0.0
        self.updates = 0

    def handle(self, kind: str, data: dict[str, Any]) -> None:
        self.transcript.handle(kind, data)
        self._dirty = True

    def tick(self) -> None:
        now = _clock()
        if self._dirty and now - self._last >= 1 / MAX_UPDATES_PER_S:
            self._update()
            self._last = now

    def _update(self) -> None:
        self._dirty = False
        self.updates += 1
        self.handle_.update(self._bundle(), raw=True)

    def abort(self, message: str) -> None:
        super().abort(message)
        self._update()

    def _bundle(self) -> dict[str, str]:
        return {"text/html": self.transcript.html(), "text/plain": self.transcript.text()}

    def finish(self, result: Any) -> None:
        self.transcript.done = True
        self.transcript.shown_live = True
        self._update()


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

    def handle(self, kind: str, data: dict[str, Any]) -> None:
        t = self.transcript
        t.handle(kind, data)
        if kind == "text":
            print(data["delta"], end="", flush=True)
            self._in_text = True
        elif kind == "tool_end":
            card = t.cards.get(data["event"].tool_call_id)
            if card is not None:
                self._line(_card_text(card))
                if card.aside is not None:  # a notebook tool's traceback / printed text, for the person
                    self._line("\n".join("      " + line for line in aside_text(card.aside).splitlines()))
        elif kind == "tool_start":
            card = t.cards.get(data["event"].tool_call_id)
            if card is not None:
                self._line(_card_text(card))
        elif kind == "batch":
            for rec in data["records"]:
                spill = _spill(rec.content)
                if spill:
                    self._line(f"  ↳ {rec.name}: {spill['size']:,} chars spilled to {short_path(spill['path'])}")
            if t.items and t.items[-1][0] == "timeline":
                self._line(_timeline_text(t.items[-1][1]))
        elif kind == "approval":
            self._line(_note_text((data["message"], data.get("level", "info"))))
        elif kind == "notice":
            self._line(_note_text((data["message"], data.get("level", "info"))).strip())

    def abort(self, message: str) -> None:
        super().abort(message)
        self._line(f"✗ {message}")

    def finish(self, result: Any) -> None:
        self.transcript.done = True
        self.transcript.shown_live = True
        self._line(f"■ {result.stopped_reason} after {result.iterations} turn(s); {_usage_text(result.usage)}")


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (where HTML and display handles reach a frontend)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def make_view(display: bool | str | None, *, prompt: str, model: str) -> NullView:
    """``None``: HTML in a Jupyter kernel, text elsewhere; ``False``: nothing; or "html" / "text"."""
    if display is False:
        return NullView(prompt, model)
    if display == "html" or (display in (None, True) and in_kernel()):
        return HtmlView(prompt, model)
    return TextView(prompt, model)


# -- the result's own repr --------------------------------------------------------------------------

def result_html(result: Any) -> str:
    """The full transcript; when it was already shown live in this cell (``%%agent``, or a run as a cell's
    last line), only the stats: the answer is right above, and showing it twice confuses a class."""
    t: Transcript | None = result.transcript
    if t is not None and not t.shown_live:
        return t.html()
    if t is not None:
        return (f'<div class="hermes-nb-transcript" style="font-family:sans-serif;font-size:13px;color:{_GREY}">'
                f'{_e(_summary(result))} · the answer is above (<code>_.text</code>)</div>')
    if result.stopped_reason == "done":
        answer = markdown.to_html(result.text)  # escaped first: no HTML from the model runs
    else:
        color = _RED if result.stopped_reason == "error" else colours.WARN
        answer = f'<div style="white-space:pre-wrap;color:{color}">{_e(result.text)}</div>'
    return (f'<div class="hermes-nb-transcript" style="font-family:sans-serif;font-size:13px">{answer}'
            f'<div style="color:{_GREY}">{_e(_summary(result))}</div></div>')


def result_text(result: Any) -> str:
    t: Transcript | None = result.transcript
    if t is not None and not t.shown_live:
        return t.text()
    if t is not None:
        return f"[{_summary(result)} · the answer is above (_.text)]"
    return f"{result.text}\n[{_summary(result)}]"


def _summary(result: Any) -> str:
    return (f"{result.stopped_reason} · {result.iterations} turn(s) · {len(result.tool_calls)} tool call(s) · "
            f"{result.usage.get('total_tokens', 0)} tokens")
