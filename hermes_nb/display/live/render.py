"""Rendering a live agent display: the transcript as HTML and as text, and an ``AgentResult``'s own repr.

Pure functions of ``hermes_nb.display.live.state``'s records; every string from the model, a tool or the person
passes ``hermes_nb.display.escaping.escape_html`` on its way into HTML.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from hermes_nb.display import colours, markdown
from hermes_nb.display.cards import aside_html
from hermes_nb.display.checklist import checklist_html, checklist_text
from hermes_nb.display.escaping import escape_html
from hermes_nb.display.live.seen import seen_html, seen_text
from hermes_nb.display.live.state import Card, Transcript
from hermes_nb.display.nested import children_html, children_text

__all__ = ["RESULT_PREVIEW_CHARS", "RunResult", "card_html", "card_line", "card_text", "note_html", "note_text", "result_html",
           "result_text", "short_path", "spill_of", "timeline_html", "timeline_text", "transcript_html",
           "transcript_text", "usage_text"]

RESULT_PREVIEW_CHARS = 4_000
_RED, _GREY = colours.ERROR, colours.MUTED


class RunResult(Protocol):
    """What a run's own repr needs of it (``hermes_nb.agent.loop.AgentResult`` has it)."""

    @property
    def text(self) -> str: ...
    @property
    def stopped_reason(self) -> str: ...
    @property
    def iterations(self) -> int: ...
    @property
    def usage(self) -> Mapping[str, Any]: ...
    @property
    def tool_calls(self) -> Sequence[Any]: ...
    @property
    def transcript(self) -> Any: ...  # a Transcript, or None when the run had no view


def transcript_html(t: Transcript) -> str:
    """The whole transcript as one HTML block (live updates redraw it whole)."""
    parts = [f'<div class="hermes-nb-transcript" style="font-family:sans-serif;font-size:13px;'
             f'{colours.solid("border-left", "3px solid " + colours.ACCENT)};padding:4px 10px;margin:4px 0">'
             f'<div style="color:{_GREY}">🤖 agent · {escape_html(t.model)}</div>'
             f'<div style="margin:4px 0"><b>You:</b> {escape_html(t.prompt)}</div>']
    previous = None
    for item in t.items:
        kind = item[0]
        if kind == "turn":
            if item[2] is not None:
                parts.append(seen_html(item[2], previous, _turn_price(t, item[2])))
                previous = item[2]
        elif kind == "text":
            parts.append(f'<div style="margin:6px 0">{markdown.to_html(item[1])}</div>')
        elif kind == "tool":
            parts.append(card_html(item[1]))
        elif kind == "timeline":
            parts.append(timeline_html(item[1]))
        elif kind == "checklist":
            parts.append(checklist_html(item[1].todos, updates=item[1].updates))
        else:
            parts.append(note_html((item[1], item[2])))
    if not t.done and not any(c.state in ("queued", "running") for c in t.cards.values()):
        # a running call's card already says "⏳ running…"; the footer speaks only between calls
        parts.append(f'<div style="color:{_GREY}">⏳ waiting for the model…</div>')
    if t.usage:
        u = t.usage
        parts.append(f'<div style="color:{_GREY};margin-top:4px">{escape_html(usage_text(u, t.cost))}</div>')
    parts.append("</div>")
    return "".join(parts)


def transcript_text(t: Transcript) -> str:
    """The whole transcript as text lines (text/plain, terminals)."""
    lines = [f"🤖 agent ({t.model})", f"You: {t.prompt}"]
    for item in t.items:
        if item[0] == "turn":
            if item[2] is not None:
                lines.append(seen_text(item[2], _turn_price(t, item[2])))
        elif item[0] == "text":
            lines.append(item[1])
        elif item[0] == "tool":
            lines.append(card_text(item[1]))
        elif item[0] == "checklist":
            lines.append(checklist_text(item[1].todos))
        elif item[0] == "timeline":
            lines.append(timeline_text(item[1]))
        else:
            lines.append(note_text((item[1], item[2])).strip())
    if t.usage:
        lines.append(usage_text(t.usage, t.cost))
    return "\n".join(lines)


def _turn_price(t: Transcript, turn: Any) -> Any:
    """The turn's price once the run finished (None while it runs)."""
    if t.cost is None or not 0 < turn.iteration <= len(t.cost.turns):
        return None
    return t.cost.turns[turn.iteration - 1]


def _icon(level: str) -> str:
    return {"info": "ℹ", "approval": "🔐", "denied": "🔐"}.get(level, "⚠")


def note_text(note: tuple[str, str]) -> str:
    """A ``(message, level)`` notice as an indented line."""
    return f"  {_icon(note[1])} {note[0]}"


def note_html(note: tuple[str, str]) -> str:
    """A ``(message, level)`` notice as a coloured line."""
    color = _RED if note[1] in ("error", "denied") else colours.WARN if note[1] in ("warning", "retry") else _GREY
    return f'<div style="color:{color};margin:3px 0">{_icon(note[1])} {escape_html(note[0])}</div>'


def short_path(path: str) -> str:
    """``path`` with the home folder written ``~``, so a transcript reads the same on every machine."""
    home = str(Path.home())
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def _args_short(arguments: str, limit: int = 200) -> str:
    try:
        value = json.loads(arguments) if arguments else {}
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items()) \
            if isinstance(value, dict) else arguments
    except ValueError:
        text = arguments
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spill_of(content: str) -> Any:
    """The spill block's size and path when ``content`` is one, else None."""
    from hermes_nb.tools.budget import parse_spill_block

    return parse_spill_block(content)


def card_html(card: Card) -> str:
    """One call: a line while it runs, then a folded result under its duration."""
    head = f'{card.emoji} <b>{escape_html(card.name)}</b>(<code>{escape_html(_args_short(card.arguments))}</code>)'
    if card.state in ("queued", "running"):
        return (f'<div style="margin:3px 0">{head} <span style="color:{_GREY}">⏳ {card.state}…</span></div>'
                + "".join(note_html(n) for n in card.notes) + _children_html(card)
                + children_html(card.subagents, True, transcript_html))
    color = _RED if card.state == "error" else colours.OK
    mark = "✗" if card.state == "error" else "✓"
    dur = f"{card.ended - card.started:.2f} s" if card.ended else ""
    if card.cost is not None and card.cost.tokens:
        dur += f" · ~{card.cost.tokens:,} tokens in the next request, {card.cost}"
    spill = spill_of(card.content)
    note = (f' <span style="color:{colours.WARN}" title="{escape_html(spill["path"])}">spilled {spill["size"]:,} chars → '
            f'{escape_html(short_path(spill["path"]))}</span>' if spill else "")
    asked = "".join(note_html(n) for n in card.notes)
    body = card.content if len(card.content) <= RESULT_PREVIEW_CHARS else \
        card.content[:RESULT_PREVIEW_CHARS] + f"\n… ({len(card.content):,} chars in all)"
    return (f'{asked}<details style="margin:3px 0"><summary>{head} <span style="color:{color}">{mark} {dur}</span>'
            f'{note}</summary><pre style="white-space:pre-wrap;max-height:20em;overflow:auto;'
            f'background:{colours.SURFACE};padding:4px;color:{colours.TEXT}">'
            f'{escape_html(body)}</pre></details>{changes_html(card.changes)}{aside_html(card.aside)}'
            f'{_children_html(card)}{children_html(card.subagents, False, transcript_html)}')


_KIND_MARK = {"created": "+", "modified": "~", "deleted": "−"}


def changes_html(changes: Sequence[Any]) -> str:
    """The files a call changed, folded: one line naming them, the diffs inside."""
    if not changes:
        return ""
    names = ", ".join(f"{_KIND_MARK.get(c.kind, '~')}{c.path}" for c in changes[:6]) + (
        f", … {len(changes) - 6} more" if len(changes) > 6 else "")
    diffs = "".join(c.diff or f"{c.kind}: {c.path} (not text)\n" for c in changes)
    return (f'<details style="margin:0 0 3px 1.2em"><summary style="color:{_GREY}">changed {len(changes)} '
            f'file{"s" if len(changes) != 1 else ""}: {escape_html(names)}</summary><pre style="white-space:pre;'
            f'max-height:24em;overflow:auto;background:{colours.SURFACE};padding:4px;color:{colours.TEXT}">'
            f'{escape_html(diffs)}</pre></details>')


def changes_text(changes: Sequence[Any]) -> str:
    """``changes_html``'s text twin: the names on one line (the diffs stay in ``ToolCallRecord.changes``)."""
    return ("    changed: " + ", ".join(f"{_KIND_MARK.get(c.kind, '~')}{c.path}" for c in changes)) if changes else ""


def _children_html(card: Card) -> str:
    """The calls a script made, as cards indented under its own."""
    if not card.children:
        return ""
    inner = "".join(card_html(child) for child in card.children)
    return (f'<div class="hermes-nb-nested" style="margin:2px 0 4px 1.2em;padding-left:8px;'
            f'{colours.solid("border-left", "2px solid " + colours.BORDER)}">{inner}</div>')


def timeline_html(cards: list[Card]) -> str:
    """A batch's calls as bars on one time axis."""
    start = min(c.started for c in cards)
    span = max(max(c.ended for c in cards) - start, 1e-6)
    mode = "in parallel" if any(c.parallel for c in cards) else "one after another"
    rows = [f'<div style="color:{_GREY};margin-top:4px">batch of {len(cards)} calls, {mode}: {span:.2f} s</div>']
    for c in cards:
        left, width = 100 * (c.started - start) / span, max(100 * (c.ended - c.started) / span, 0.5)
        bar = colours.ERROR_MARK if c.state == "error" else colours.ACCENT
        rows.append(f'<div style="display:flex;align-items:center;height:16px"><div style="width:9em;'
                    f'overflow:hidden;font-size:11px">{escape_html(c.name)}</div><div style="position:relative;flex:1;'
                    f'height:10px;{colours.solid("background", colours.TRACK)}"><div style="position:absolute;'
                    f'left:{left:.1f}%;width:{width:.1f}%;height:10px;{colours.solid("background", bar)}">'
                    f'</div></div></div>')
    return "".join(rows)


def card_text(card: Card) -> str:
    """``card_html``'s text twin: the approval notes, the call's line, the calls a script made indented under
    it, then its sub-agents' transcripts (at any depth, as the HTML shows them)."""
    lines = [*(note_text(n) for n in card.notes), _card_line(card)]
    if card.changes:
        lines.append(changes_text(card.changes))
    lines += ["    " + card_text(child).replace("\n", "\n    ") for child in card.children]
    if card.subagents:
        lines.append(children_text(card.subagents, transcript_text))
    return "\n".join(lines)


def card_line(card: Card) -> str:
    """One call as one line, indented under the script's line when a script made it (live text views)."""
    return ("    " if card.parent else "") + _card_line(card)


def _card_line(card: Card) -> str:
    if card.state in ("queued", "running"):
        return f"  {card.emoji} {card.name}({_args_short(card.arguments, 80)}) …"
    mark = "✗" if card.state == "error" else "✓"
    spill = spill_of(card.content)
    tail = f"spilled {spill['size']:,} chars → {short_path(spill['path'])}" if spill else \
        card.content.replace("\n", " ")[:100]
    return f"  {mark} {card.name} {card.ended - card.started:.2f} s → {tail}"


def timeline_text(cards: list[Card]) -> str:
    """A batch's span as one line."""
    start = min(c.started for c in cards)
    span = max(c.ended for c in cards) - start
    mode = "in parallel" if any(c.parallel for c in cards) else "serially"
    return f"  ⏱ batch of {len(cards)} ran {mode} in {span:.2f} s"


def usage_text(u: Mapping[str, Any], cost: Any = None) -> str:
    """The token counts in one line; turns the server did not report are said, never counted as 0. With the
    run's ``cost`` (once it finished), its price too."""
    unreported = int(u.get("unreported", 0) or 0)
    if unreported and not u.get("total_tokens"):
        text = "tokens: not reported by the server"
    else:
        text = (f"tokens: {u.get('prompt_tokens', 0)} prompt + {u.get('completion_tokens', 0)} completion = "
                f"{u.get('total_tokens', 0)}") + (f" ({unreported} turn(s) not reported)" if unreported else "")
    return text if cost is None else f"{text} · {cost.total} ({cost.source})"


# -- the result's own repr --------------------------------------------------------------------------

def result_html(result: RunResult) -> str:
    """The full transcript; when it was already shown live in this cell (``%%agent``, or a run as a cell's
    last line), only the stats: the answer is right above, and showing it twice confuses a class."""
    t: Transcript | None = result.transcript
    if t is not None and not t.shown_live:
        return transcript_html(t)
    if t is not None:
        return (f'<div class="hermes-nb-transcript" style="font-family:sans-serif;font-size:13px;color:{_GREY}">'
                f'{escape_html(_summary(result))} · {_where(result, html=True)}</div>')
    if result.stopped_reason == "done":
        answer = markdown.to_html(result.text)  # escaped first: no HTML from the model runs
    else:
        color = _RED if result.stopped_reason == "error" else colours.WARN
        answer = f'<div style="white-space:pre-wrap;color:{color}">{escape_html(result.text)}</div>'
    return (f'<div class="hermes-nb-transcript" style="font-family:sans-serif;font-size:13px">{answer}'
            f'<div style="color:{_GREY}">{escape_html(_summary(result))}</div></div>')


def result_text(result: RunResult) -> str:
    """``result_html``'s text twin."""
    t: Transcript | None = result.transcript
    if t is not None and not t.shown_live:
        return transcript_text(t)
    if t is not None:
        return f"[{_summary(result)} · {_where(result, html=False)}]"
    return f"{result.text}\n[{_summary(result)}]"


def _summary(result: RunResult) -> str:
    cost = getattr(result, "cost", None)
    return (f"{result.stopped_reason} · {result.iterations} turn(s) · {len(result.tool_calls)} tool call(s) · "
            + ("tokens not reported" if result.usage.get("unreported") and not result.usage.get("total_tokens")
               else f"{result.usage.get('total_tokens', 0)} tokens") + (f" · {cost.total}" if cost is not None else ""))


def _where(result: RunResult, *, html: bool) -> str:
    """Where the answer is: above when there is one; after an error or an interrupt, there is none."""
    if result.stopped_reason == "done" and result.text:
        return "the answer is above (<code>_.text</code>)" if html else "the answer is above (_.text)"
    return f"no answer ({result.stopped_reason}): the transcript above says why"
