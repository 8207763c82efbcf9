"""One HTML escaping function: ``escape_html`` escapes as ``html.escape(quote=True)`` does, and no other
module of ours escapes HTML by itself (a grep over the source, which a planted offender fails)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_nb.display.escaping import escape_html

REPO = Path(__file__).resolve().parents[2]
HELPER = REPO / "hermes_nb" / "display" / "escaping.py"

#: Ways a module could escape HTML on its own, each with why it is refused.
_OWN_ESCAPING = [
    (re.compile(r"\bhtml\.escape\s*\("), "calls html.escape"),
    (re.compile(r"^\s*import html\s*(?:$|as\b|,)", re.M), "imports the html module (for its escape)"),
    (re.compile(r"^\s*from html import\b(?!\s*unescape\s*$)", re.M), "imports from the html module"),  # unescape reads
    (re.compile(r"\bescapeHtml\b"), "uses markdown-it's escapeHtml"),
    (re.compile(r"\bmarkupsafe\b"), "uses markupsafe's escape"),
    (re.compile(r"""["']&lt;["']"""), "writes its own escaping table"),
]


def _offences(source: str) -> list[str]:
    return [why for pattern, why in _OWN_ESCAPING if pattern.search(source)]


@given(st.text())
def test_escape_html_is_html_escape(text: str) -> None:
    assert escape_html(text) == html.escape(text, quote=True)


@pytest.mark.parametrize("hostile", [
    '<script>alert(1)</script>', '" onmouseover="alert(1)', "' onfocus='x", "&lt;already&gt;", "<!--", "]]>",
])
def test_escaped_text_holds_no_markup(hostile: str) -> None:
    out = escape_html(hostile)
    assert not any(c in out for c in "<>\"'"), out  # safe in content and in either kind of quoted attribute
    assert html.unescape(out) == hostile  # nothing lost: the person reads what was there


def test_non_strings_are_escaped_as_their_str() -> None:
    class Sly:
        def __str__(self) -> str:
            return "<b>"

    assert escape_html(Sly()) == "&lt;b&gt;" and escape_html(3) == "3"


@pytest.mark.parametrize(("line", "expected"), [
    ("x = html.escape(name)", "calls html.escape"),
    ("import html", "imports the html module (for its escape)"),
    ("from html import escape", "imports from the html module"),
    ("from markdown_it.common.utils import escapeHtml", "uses markdown-it's escapeHtml"),
    ("_T = str.maketrans({'<': '&lt;'})", "writes its own escaping table"),
])
def test_the_scan_finds_a_planted_offender(line: str, expected: str) -> None:
    assert _offences(f"from __future__ import annotations\n{line}\n") == [expected]


def test_the_scan_lets_the_helper_and_harmless_lines_through() -> None:
    assert _offences("from html.parser import HTMLParser\ntext = html_text.strip()\n") == []
    assert _offences("from html import unescape\nplain = unescape(text)\n") == []  # decoding, not escaping


def test_no_module_escapes_html_but_the_helper() -> None:
    sources = [p for root in ("hermes_nb", "tools") for p in sorted((REPO / root).rglob("*.py"))]
    assert HELPER in sources and len(sources) > 50
    found = {str(p.relative_to(REPO)): why for p in sources if p != HELPER
             if (why := _offences(p.read_text(encoding="utf-8")))}
    assert found == {}, f"escape HTML with hermes_nb.display.escaping.escape_html: {found}"
