""""What the model saw": one fold per model turn of a transcript (HTML) or one line (text).

A fold lists the messages that turn sent which the previous turn had not (earlier ones are named, not
repeated, so a long run does not grow as the square of its turns), the tools offered, the tokens and the
price. ``result.turns[i].request`` has the whole request. Inline styles only: a saved notebook opened
untrusted keeps them.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

__all__ = ["seen_html", "seen_text"]

MESSAGE_CHARS = 1_500


def _arguments(text: Any) -> str:
    """A call's arguments as the model wrote them, with ``\\u00e9`` escapes shown as the letters they are."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False) if isinstance(text, str) else str(text)
    except ValueError:
        return str(text)  # not JSON: as sent


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        text = " ".join(str(p.get("text", f"[{p.get('type', 'part')}]")) for p in content if isinstance(p, dict))
    else:
        text = "" if content is None else str(content)
    calls = [f"→ {c.get('function', {}).get('name', '')}({_arguments(c.get('function', {}).get('arguments', ''))})"
             for c in message.get("tool_calls") or ()]
    return "\n".join([t for t in [text, *calls] if t])


def _content_html(message: dict[str, Any]) -> str:
    """The whole message: its first ``MESSAGE_CHARS`` shown, the rest one click away (it was cut, no way to open)."""
    text = _content(message)
    if len(text) <= MESSAGE_CHARS:
        return escape_html(text)
    return (f'{escape_html(text[:MESSAGE_CHARS])}<details style="display:inline"><summary style="display:inline;'
            f'cursor:pointer;color:{colours.MUTED}">… show the other {len(text) - MESSAGE_CHARS:,} chars</summary>'
            f'{escape_html(text[MESSAGE_CHARS:])}</details>')


def _label(message: dict[str, Any]) -> str:
    role = str(message.get("role", "?"))
    name = message.get("name")
    return f"{role} {name}" if role == "tool" and name else role


def _summary(turn: Any, new: int, price: Any) -> str:
    usage = turn.usage
    parts = [f"👁 what the model saw · turn {turn.iteration}",
             f"{turn.request.count} messages" + (f" ({new} new)" if new < turn.request.count else ""),
             f"{len(turn.request.tools)} tools offered",
             "placeholder usage (a scripted recording)" if getattr(turn, "placeholder", False) else
             f"{usage.get('prompt_tokens', 0)} + {usage.get('completion_tokens', 0)} tokens"]
    if price is not None:
        parts.append(str(price))
    return " · ".join(parts)


def seen_html(turn: Any, previous: Any, price: Any = None) -> str:
    """The fold for ``turn`` (a ``hermes_nb.agent.turns.Turn``); ``previous`` is the turn before, or None."""
    messages = list(turn.request.messages)
    start = min(previous.request.count, len(messages)) if previous is not None else 0
    rows = []
    if start:
        rows.append(f'<div style="color:{colours.MUTED}">… {start} earlier message(s), as in turn '
                    f'{previous.iteration}</div>')
    for message in messages[start:]:
        rows.append(f'<div style="margin:2px 0"><b>{escape_html(_label(message))}</b> '
                    f'<span style="white-space:pre-wrap">{_content_html(message)}</span></div>')
    names = ", ".join(turn.request.tool_names) or "none"
    rows.append(f'<div style="color:{colours.MUTED}">tools offered: {escape_html(names)}</div>')
    return (f'<details class="hermes-nb-seen" style="margin:2px 0;font-size:12px">'
            f'<summary style="color:{colours.MUTED}">{escape_html(_summary(turn, len(messages) - start, price))}'
            f'</summary><div style="{colours.solid("border-left", "2px solid " + colours.BORDER)};padding:2px 8px;'
            f'color:{colours.TEXT}">'
            f'{"".join(rows)}</div></details>')


def seen_text(turn: Any, price: Any = None) -> str:
    """One line: what the turn sent, and where to read it whole."""
    tail = f" · {price}" if price is not None else ""
    return (f"  👁 turn {turn.iteration}: the model saw {turn.request.count} messages and "
            f"{len(turn.request.tools)} tools (result.turns[{turn.iteration - 1}].request){tail}")

