"""A small, safe Markdown → HTML renderer for the model's answers.

Model output is untrusted, so everything is HTML-escaped *first* and only then a subset of Markdown is
turned into tags: headings, paragraphs, bullet and numbered lists, fenced code blocks, inline
``code``, **bold**, *italic* and http(s) links. Raw HTML from the model therefore shows as text and
never runs. No dependency: the ``markdown`` package would pass raw HTML through.
"""

from __future__ import annotations

import html
import re

__all__ = ["to_html"]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,9}[.)]\s+(.*)$")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
# Applied to already-escaped text, so the URL cannot contain a raw quote or angle bracket.
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)")
_CODE_STYLE = "background:#f3f3f3;padding:0 3px;border-radius:3px"


def _inline(escaped: str) -> str:
    """Inline Markdown on escaped text; code spans are cut out first so ``**`` inside them stays literal."""
    spans: list[str] = []

    def keep(m: re.Match[str]) -> str:
        spans.append(f'<code style="{_CODE_STYLE}">{m.group(1)}</code>')
        return f"\x00{len(spans) - 1}\x00"

    def link(m: re.Match[str]) -> str:  # cut out too, so "*" or "_" in a URL is never emphasis
        spans.append(f'<a href="{m.group(2)}" target="_blank" rel="noopener noreferrer">{_emphasis(m.group(1))}</a>')
        return f"\x00{len(spans) - 1}\x00"

    text = _LINK.sub(link, _CODE_SPAN.sub(keep, escaped))
    text = _emphasis(text)
    for _ in range(2):  # twice: a link's text may hold a code span
        text = re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], text)
    return text


def _emphasis(text: str) -> str:
    text = _BOLD.sub(lambda m: f"<b>{m.group(1) or m.group(2)}</b>", text)
    return _ITALIC.sub(lambda m: f"<i>{m.group(1) or m.group(2)}</i>", text)


def to_html(text: str) -> str:
    """``text`` (Markdown from a model) as safe HTML: escaped, then a small Markdown subset."""
    out: list[str] = []
    para: list[str] = []
    list_tag: str | None = None
    lines = html.escape(text.replace("\x00", "")).splitlines()

    def flush_para() -> None:
        if para:
            out.append('<p style="margin:4px 0">' + "<br>".join(_inline(p) for p in para) + "</p>")
            para.clear()

    def close_list() -> None:
        nonlocal list_tag
        if list_tag:
            out.append(f"</{list_tag}>")
            list_tag = None

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush_para()
            close_list()
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            out.append('<pre style="background:#f6f6f6;padding:4px;white-space:pre-wrap"><code>'
                       + "\n".join(body) + "</code></pre>")
            i += 1  # past the closing fence (or the end)
            continue
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        numbered = None if bullet else _NUMBERED.match(line)
        if heading:
            flush_para()
            close_list()
            level = min(len(heading.group(1)) + 2, 6)  # an answer's "#" is a section, not the page title
            out.append(f'<h{level} style="margin:6px 0 2px">{_inline(heading.group(2))}</h{level}>')
        elif bullet or numbered:
            flush_para()
            tag = "ul" if bullet else "ol"
            if list_tag != tag:
                close_list()
                out.append(f'<{tag} style="margin:2px 0;padding-left:1.5em">')
                list_tag = tag
            out.append(f"<li>{_inline((bullet or numbered).group(1))}</li>")  # type: ignore[union-attr]
        elif not line.strip():
            flush_para()
            close_list()
        elif list_tag and line.startswith((" ", "\t")) and out[-1].endswith("</li>"):
            out[-1] = out[-1][: -len("</li>")] + "<br>" + _inline(line.strip()) + "</li>"  # a wrapped item
        else:
            close_list()
            para.append(line)
        i += 1
    flush_para()
    close_list()
    return "".join(out)
