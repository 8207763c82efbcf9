"""What hermes_nb shows: tool cards, tool results and tables, as HTML with a text/plain fallback.

Every object here has ``_repr_mimebundle_`` with ``text/plain``, so terminal IPython and a notebook
saved as static HTML both read well; every string that reaches HTML is escaped.

Public surface (the agent display reuses it):

- ``render_result(content, *, name="", call_id="", max_chars=20_000) -> ResultView``
- ``tool_card(entry, *, expand_schema=False) -> ToolCard``
- ``Table(headers=..., rows=..., title=...)``
- ``availability_text(entry) -> str``
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html
from hermes_nb.tools.registry import ToolEntry, registry
from hermes_nb.tools.safety.approvals.visible import make_visible

if TYPE_CHECKING:
    from hermes_nb.display.asides import Aside

__all__ = ["ResultView", "Table", "ToolCard", "aside_html", "aside_text", "availability_text", "render_result",
           "tool_card"]

#: Results longer than this are shown cut in the notebook (the model may still receive more).
DEFAULT_MAX_CHARS = 20_000
#: JSON longer than this many lines starts collapsed.
_COLLAPSE_LINES = 20

def _mimebundle(text: str, html_text: str) -> dict[str, str]:
    return {"text/plain": text, "text/html": html_text}


# -- results --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultView:
    """A tool result as the model receives it. ``content`` is the exact string."""

    content: str
    name: str = ""
    call_id: str = ""
    max_chars: int = DEFAULT_MAX_CHARS
    #: the traceback / printed output of a notebook tool, which the model does not get
    aside: Aside | None = None
    #: from the call's ``Outcome`` (``render_result`` fills it), never re-read from ``content``
    is_error: bool = False

    @property
    def spill(self) -> dict[str, Any] | None:
        """What the budget layer's spill block says (path, size, lines, tool), or None."""
        from hermes_nb.tools.budget import parse_spill_block

        info = parse_spill_block(self.content)
        return dict(info) if info is not None else None

    @property
    def spill_path(self) -> str | None:
        """The file holding the full result, if the budget layer spilled it."""
        spill = self.spill
        return str(spill["path"]) if spill else None

    def _body(self) -> tuple[str, bool]:
        """The text to show (pretty JSON when it parses) and whether it was cut."""
        data = _json_or_none(self.content)
        text = json.dumps(data, indent=2, ensure_ascii=False) if data is not None else self.content
        if len(text) > self.max_chars:
            return text[: self.max_chars], True
        return text, False

    def _header(self) -> str:
        label = f"{self.name} → " if self.name else ""
        size = len(self.content)
        kind = "error" if self.is_error else "result"
        spill = self.spill
        if spill:
            return f"{label}{kind} spilled: {spill['size']:,} chars saved to {spill['path']} (the model sees {size:,})"
        return f"{label}{kind} ({size:,} chars)"

    def __str__(self) -> str:
        return self.content

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        body, cut = self._body()
        more = f"\n… {len(self.content) - self.max_chars:,} more chars not shown" if cut else ""
        text = f"{self._header()}\n{body}{more}" + (f"\n{aside_text(self.aside)}" if self.aside else "")
        color = colours.ERROR if self.is_error else colours.TEXT
        mark = colours.ERROR_MARK if self.is_error else colours.BORDER
        opened = " open" if body.count("\n") < _COLLAPSE_LINES else ""
        html_text = (
            f'<div class="hermes-nb-result" style="{colours.solid("border-left", "3px solid " + mark)};padding-left:6px">'
            f'<details{opened}><summary style="color:{color}">{escape_html(self._header())}</summary>'
            f'<pre style="color:{color};white-space:pre-wrap">{escape_html(body)}</pre>'
            f"{f'<em>{escape_html(more.strip())}</em>' if cut else ''}</details>{aside_html(self.aside)}</div>"
        )
        return _mimebundle(text, html_text)


def render_result(content: str, *, name: str = "", call_id: str = "", max_chars: int = DEFAULT_MAX_CHARS,
                  aside: Aside | None = None, is_error: bool | None = None) -> ResultView:
    """Wrap a tool result string for display: pretty JSON, collapsible, errors in red, cut if huge.

    ``is_error`` is the call's ``Outcome.is_error``; without one (a string from elsewhere) Hermes's error
    shape decides (``{"error": ...}`` set; ``{"error": null}`` is no error)."""
    if is_error is None:
        from hermes_nb.tools.calls.outcome import text_says_error

        is_error = text_says_error(content)
    return ResultView(content=content, name=name, call_id=call_id, max_chars=max_chars, aside=aside,
                      is_error=is_error)


# -- what the person sees and the model does not ---------------------------------------------------

#: Lines of printed output shown (folded); the rest is counted.
_PRINTED_LINES = 200


def _printed_head(aside: Aside) -> tuple[str, str]:
    """The printed text shown (a head of it) and its summary line."""
    lines = aside.printed.splitlines()
    shown = "\n".join(lines[:_PRINTED_LINES])
    cut = aside.printed_chars > len(aside.printed) or len(lines) > _PRINTED_LINES
    more = f", first {min(len(lines), _PRINTED_LINES):,} shown" if cut else ""
    summary = (f"printed {aside.printed_chars:,} chars{more}; "
               "the model does not see printed output, only the return value")
    return shown, summary


def aside_text(aside: Aside | None) -> str:
    """The traceback and a summary of printed output, as plain text ("" when there is neither)."""
    if aside is None:
        return ""
    out = [aside.converted] if aside.converted else []
    if aside.traceback:
        out.append("traceback (for you; the model got the one-line error):\n" + aside.traceback)
    if aside.printed:
        out.append(_printed_head(aside)[1])
    return "\n".join(out)


def aside_html(aside: Aside | None) -> str:
    """The traceback and printed output, each folded in a ``<details>``."""
    if aside is None:
        return ""
    parts = [f'<div class="hermes-nb-converted" style="color:{colours.MUTED}">'
             f"{escape_html(aside.converted)}</div>"] if aside.converted else []
    pre = (f'<pre style="white-space:pre-wrap;max-height:20em;overflow:auto;background:{colours.SURFACE};'
           f'color:{colours.TEXT}">')
    if aside.traceback:
        parts.append(f'<details class="hermes-nb-traceback"><summary style="color:{colours.ERROR}">'
                     "traceback (for you; the model got the one-line error)</summary>"
                     f"{pre}{escape_html(aside.traceback)}</pre></details>")
    if aside.printed:
        shown, summary = _printed_head(aside)
        parts.append(f'<details class="hermes-nb-printed"><summary style="color:{colours.MUTED}">'
                     f"{escape_html(summary)}</summary>{pre}{escape_html(shown)}</pre></details>")
    return "".join(parts)


def _json_or_none(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# -- tables ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Table:
    """A plain table: HTML in a notebook, aligned columns as text."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = ()
    title: str = ""
    empty: str = "(nothing)"

    def text(self, width: int | None = None) -> str:
        """Aligned columns; with ``width``, the last column wraps under itself so no line is longer (a saved
        notebook's text form is read at a notebook's width: a long row wrapped onto the next one's columns)."""
        rows = [tuple(str(c) for c in r) for r in self.rows]
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(self.headers)]
        indent = sum(widths[:-1]) + 2 * (len(widths) - 1)
        if width is not None and widths and indent + widths[-1] > width:
            widths[-1] = max(20, width - indent)
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()  # noqa: E731
        out = [self.title] if self.title else []
        if not rows:
            return "\n".join([*out, self.empty])
        out += [line(self.headers), line(["-" * w for w in widths])]
        for r in rows:
            last = textwrap.wrap(r[-1], widths[-1], break_on_hyphens=False) if width is not None and r else []
            if len(last) <= 1:
                out.append(line(r))
            else:
                out += [line((*r[:-1], last[0])), *(" " * indent + more for more in last[1:])]
        return "\n".join(out)

    def html(self) -> str:
        title = f"<strong>{escape_html(self.title)}</strong>" if self.title else ""
        if not self.rows:
            return f"{title}<p>{escape_html(self.empty)}</p>"
        head = "".join(f'<th style="text-align:left">{escape_html(h)}</th>' for h in self.headers)
        body = "".join(
            "<tr>" + "".join(f'<td style="text-align:left">{escape_html(str(c))}</td>' for c in row) + "</tr>"
            for row in self.rows
        )
        return f'{title}<table class="hermes-nb-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def __str__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _mimebundle(self.text(), self.html())


# -- tool cards -----------------------------------------------------------------------------------


def availability_text(entry: ToolEntry) -> str:
    """``available``, or ``unavailable: <reason>`` (names of missing variables, never values)."""
    if registry.get_entry(entry.name) is None:  # removed since, or from another registry
        return "not registered"
    status = registry.availability(entry.name)  # the live entry: set_disabled replaces the record
    return "available" if status.available else f"unavailable: {status.reason}"


def _flags(entry: ToolEntry) -> list[str]:
    flags = [f for f, on in (("read-only", entry.read_only), ("interactive", entry.interactive),
                             ("async", entry.is_async), ("needs approval", entry.needs_approval)) if on]
    if entry.path_params:
        flags.append("path params: " + ", ".join(entry.path_params))
    if entry.max_result_size_chars is not None:
        flags.append(f"max result {entry.max_result_size_chars:g} chars")
    if entry.requires_env:
        flags.append("requires env: " + ", ".join(entry.requires_env))
    return flags


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCard:
    """One tool: emoji, name, toolset, availability, flags, and its JSON schema (collapsible)."""

    entry: ToolEntry
    expand_schema: bool = False
    extra: tuple[str, ...] = field(default=())
    #: one line each: what the model will miss (``hermes_nb.tools.schema.lint``)
    warnings: tuple[str, ...] = field(default=())

    def _schema_json(self) -> str:
        # A description is text the model obeys: show hidden characters (zero-width, bidi, ANSI) to the person.
        return make_visible(json.dumps(self.entry.definition(), indent=2, ensure_ascii=False))

    def text(self) -> str:
        e = self.entry
        lines = [
            f"{e.emoji + ' ' if e.emoji else ''}{e.name}  [toolset {e.toolset}, {e.source}]  {availability_text(e)}",
        ]
        if e.description:
            lines.append(make_visible(e.description.splitlines()[0]))
        flags = _flags(e)
        if flags:
            lines.append("flags: " + "; ".join(flags))
        lines += list(self.extra)
        lines += [f"warning: {w}" for w in self.warnings]
        if self.expand_schema:
            lines.append(self._schema_json())
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        e = self.entry
        avail = availability_text(e)
        color = colours.OK if avail == "available" else colours.ERROR
        flags = _flags(e)
        parts = [
            f'<div class="hermes-nb-card" style="{colours.solid("border", "1px solid " + colours.BORDER)};'
            'border-radius:6px;padding:6px 10px">',
            f"<div><span style='font-size:1.3em'>{escape_html(e.emoji)}</span> <strong>{escape_html(e.name)}</strong> "
            f"<span style='color:{colours.MUTED}'>toolset <code>{escape_html(e.toolset)}</code> · {escape_html(e.source)}</span> "
            f"<span style='color:{color}'>{escape_html(avail)}</span></div>",
        ]
        if e.description:
            parts.append(f"<div>{escape_html(make_visible(e.description.splitlines()[0]))}</div>")
        if flags:
            parts.append(f"<div style='color:{colours.MUTED}'>{escape_html('; '.join(flags))}</div>")
        parts += [f"<div>{escape_html(x)}</div>" for x in self.extra]
        parts += [f"<div class='hermes-nb-warning' style='color:{colours.WARN}'>⚠ {escape_html(w)}</div>" for w in self.warnings]
        opened = " open" if self.expand_schema else ""
        parts.append(f"<details{opened}><summary>JSON schema</summary><pre>{escape_html(self._schema_json())}</pre></details>")
        parts.append("</div>")
        return _mimebundle(self.text(), "".join(parts))


def tool_card(entry: ToolEntry, *, expand_schema: bool = False, extra: tuple[str, ...] = (),
              warnings: tuple[str, ...] = ()) -> ToolCard:
    """A card for one tool, as ``%%tool`` and ``%tools show`` display it."""
    return ToolCard(entry=entry, expand_schema=expand_schema, extra=extra, warnings=warnings)
