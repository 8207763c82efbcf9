""""What the model saw": one fold per model turn of a transcript (HTML) or one line (text).

A fold lists the messages that turn sent which the previous turn had not (earlier ones are named, not
repeated, so a long run does not grow as the square of its turns), the tools the request as sent carried
(``turn.response.sent``), for the local model the prompt as rendered, the tokens ("not reported", never 0)
and the price. ``result.turns[i].request`` has the whole request. Inline styles only: a saved notebook opened
untrusted keeps them.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

__all__ = ["seen_html", "seen_text"]

MESSAGE_CHARS = 1_500


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        text = " ".join(str(p.get("text", f"[{p.get('type', 'part')}]")) for p in content if isinstance(p, dict))
    else:
        text = "" if content is None else str(content)
    calls = [f"→ {c.get('function', {}).get('name', '')}({c.get('function', {}).get('arguments', '')})"
             for c in message.get("tool_calls") or ()]
    text = "\n".join([t for t in [text, *calls] if t])
    if len(text) > MESSAGE_CHARS:
        text = text[:MESSAGE_CHARS] + f"… ({len(text):,} chars in all)"
    return text


def _label(message: dict[str, Any]) -> str:
    role = str(message.get("role", "?"))
    name = message.get("name")
    return f"{role} {name}" if role == "tool" and name else role


def _offered(turn: Any) -> tuple[str, ...]:
    """The tools the request as sent carried (``response.sent``: a named choice or the local model's prompt
    may carry fewer than the run offered), else the run's offer."""
    sent = getattr(turn.response, "sent", None)
    if sent is None:
        return tuple(turn.request.tool_names)
    return tuple(t if isinstance(t, str) else str((t.get("function") or {}).get("name", ""))
                 for t in sent.get("tools") or ())


def _tokens(usage: Any) -> str:
    if usage.get("unreported") and not usage.get("total_tokens"):
        return "tokens not reported"
    return f"{usage.get('prompt_tokens', 0)} + {usage.get('completion_tokens', 0)} tokens"


def _summary(turn: Any, new: int, price: Any) -> str:
    parts = [f"👁 what the model saw · turn {turn.iteration}",
             f"{turn.request.count} messages" + (f" ({new} new)" if new < turn.request.count else ""),
             f"{len(_offered(turn))} tools offered", _tokens(turn.usage)]
    if price is not None:
        parts.append(str(price))
    return " · ".join(parts)


def _memory_html(memory: Any) -> str:
    """The memory block the system prompt carried, whole (the system message above is cut at MESSAGE_CHARS)."""
    return (f'<div style="margin:2px 0"><b>🧠 memory in the system prompt</b> ({memory.entries} entries, '
            f'{len(memory.text):,} chars) <span style="white-space:pre-wrap">{escape_html(memory.text)}</span></div>')


def seen_html(turn: Any, previous: Any, price: Any = None, *, memory: Any = None) -> str:
    """The fold for ``turn`` (a ``hermes_nb.agent.turns.Turn``); ``previous`` is the turn before, or None;
    ``memory``: the run's ``MemoryLoaded`` (shown in the first turn's fold)."""
    messages = list(turn.request.messages)
    start = min(previous.request.count, len(messages)) if previous is not None else 0
    rows = []
    if start:
        rows.append(f'<div style="color:{colours.MUTED}">… {start} earlier message(s), as in turn '
                    f'{previous.iteration}</div>')
    for message in messages[start:]:
        rows.append(f'<div style="margin:2px 0"><b>{escape_html(_label(message))}</b> '
                    f'<span style="white-space:pre-wrap">{escape_html(_content(message))}</span></div>')
    if memory is not None and memory.text:
        rows.append(_memory_html(memory))
    names = ", ".join(_offered(turn)) or "none"
    rows.append(f'<div style="color:{colours.MUTED}">tools offered: {escape_html(names)}</div>')
    sent = getattr(turn.response, "sent", None) or {}
    if sent.get("prompt"):  # the local model: the prompt as rendered, <tools> block and all
        rows.append(f'<details><summary style="color:{colours.MUTED}">the prompt as rendered '
                    f'({escape_html(str(sent.get("tool_choice", "")))})</summary>'
                    f'<pre style="white-space:pre-wrap;margin:0">{escape_html(str(sent["prompt"]))}</pre></details>')
    return (f'<details class="hermes-nb-seen" style="margin:2px 0;font-size:12px">'
            f'<summary style="color:{colours.MUTED}">{escape_html(_summary(turn, len(messages) - start, price))}'
            f'</summary><div style="{colours.solid("border-left", "2px solid " + colours.BORDER)};padding:2px 8px;'
            f'color:{colours.TEXT}">'
            f'{"".join(rows)}</div></details>')


def seen_text(turn: Any, price: Any = None, *, memory: Any = None) -> str:
    """One line: what the turn sent (and the memory its system prompt carried), and where to read it whole."""
    tail = f" · {price}" if price is not None else ""
    if memory is not None and memory.text:
        tail += f" · 🧠 memory in the system prompt: {memory.entries} entries, {len(memory.text):,} chars"
    return (f"  👁 turn {turn.iteration}: the model saw {turn.request.count} messages and "
            f"{len(_offered(turn))} tools (result.turns[{turn.iteration - 1}].request){tail}")

