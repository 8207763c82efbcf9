"""The model's answers, Markdown → safe HTML, with markdown-it-py (CommonMark, plus tables and strikethrough).

Model output is untrusted: raw HTML is off (it shows as text), links are kept only for http(s) and
mailto and open in a new tab without an opener, images are off (no tracking pixels), and headings drop
two levels so an answer's ``#`` does not shout over the notebook. Colours come from JupyterLab's theme
variables, so the answer reads in the light and the dark theme alike. The parser loads on first use.
"""

from __future__ import annotations

import functools
from typing import Any

from hermes_nb.display.escaping import escape_html

__all__ = ["CODE_STYLE", "to_html"]

#: Inline code: the theme's secondary layout colour behind the theme's text colour.
CODE_STYLE = (
    "background:var(--jp-layout-color2,#f3f3f3);color:var(--jp-content-font-color1,inherit);"
    "padding:0 3px;border-radius:3px"
)
_CELL_STYLE = "border:1px solid var(--jp-border-color2,#ddd);padding:2px 6px"
_SAFE_SCHEMES = ("http://", "https://", "mailto:")


def _safe_link(url: str) -> bool:
    return url.strip().lower().startswith(_SAFE_SCHEMES)


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"]).disable("image")
    md.validateLink = _safe_link  # type: ignore[method-assign]

    def link_open(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        if not _safe_link(str(tokens[idx].attrGet("href") or "")):  # e.g. an empty one: keep the text only
            env["dropped_link"] = True
            return ""
        tokens[idx].attrSet("target", "_blank")
        tokens[idx].attrSet("rel", "noopener noreferrer")
        return self.renderToken(tokens, idx, options, env)

    def link_close(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        if env.pop("dropped_link", False):  # links do not nest, so the next close is its own
            return ""
        return self.renderToken(tokens, idx, options, env)

    def heading(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        level = min(int(tokens[idx].tag[1]) + 2, 6)
        tokens[idx].tag = f"h{level}"
        return self.renderToken(tokens, idx, options, env)

    def code_inline(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        return f'<code style="{CODE_STYLE}">{escape_html(tokens[idx].content)}</code>'

    def block_code(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        # no class from the info string: the model must not pick the notebook's CSS classes
        return f"<pre><code>{escape_html(tokens[idx].content)}</code></pre>\n"

    def cell(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("style", _CELL_STYLE)
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("link_close", link_close)
    md.add_render_rule("heading_open", heading)
    md.add_render_rule("heading_close", heading)
    md.add_render_rule("code_inline", code_inline)
    md.add_render_rule("fence", block_code)
    md.add_render_rule("code_block", block_code)
    md.add_render_rule("th_open", cell)
    md.add_render_rule("td_open", cell)
    return md


def to_html(text: str) -> str:
    """``text`` (Markdown from a model) as safe HTML."""
    return str(_parser().render(text.replace("\x00", ""), {}))
