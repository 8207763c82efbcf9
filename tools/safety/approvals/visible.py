"""Make text that could hide something from a reader visible, chosen by Unicode properties, not by a list.

Hidden are: control characters (``Cc``), format characters (``Cf``: zero-width, bidi controls, tags,
the BOM, the soft hyphen), every ``Default_Ignorable_Code_Point`` (what renderers draw as nothing: Hangul
fillers, combining grapheme joiner, variation selectors, Mongolian free variation selectors), line and
paragraph separators, space separators other than the ASCII space (a no-break or ideographic space looks
like the space bash splits words at, and is not), private-use, surrogate and unassigned code points (no
agreed glyph), characters Unicode names as a blank or a filler (``BRAILLE PATTERN BLANK``), and combining
marks (``Mn``, ``Me``) placed on an ASCII character (an overlay can strike text through or change a letter).

The properties come from the ``regex`` module's Unicode tables (newer than Python's ``unicodedata``),
imported on first use.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

__all__ = ["hidden_characters", "make_visible"]

_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00", "\x7f": "\\x7f", "\x08": "\\b", "\x0b": "\\v", "\x0c": "\\f",
          "\n": "\\n", "\t": "\\t"}


@functools.cache
def _pattern() -> Any:
    import regex

    return regex.compile(r"[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}]"
                         r"|(?! )\p{Zs}")


@functools.lru_cache(maxsize=4096)
def _is_hidden(ch: str) -> bool:
    if " " <= ch <= "~":
        return False  # printable ASCII, the common case
    if _pattern().match(ch):
        return True
    name = unicodedata.name(ch, "")
    return "BLANK" in name or "FILLER" in name


@functools.cache
def _pictographic() -> Any:
    import regex

    return regex.compile(r"\p{Extended_Pictographic}")


def _emoji_part(text: str, i: int) -> bool:
    """A variation selector or zero-width joiner inside an emoji sequence (``❤️``, ``👩‍💻``) draws as part
    of the emoji it follows: shown as it is. Anywhere else it is hidden."""
    ch = text[i]
    if ch not in "\ufe0e\ufe0f\u200d" or i == 0:
        return False
    before = text[i - 1]
    if ch == "\u200d":  # joins two pictographs, the first maybe with its selector
        after = text[i + 1] if i + 1 < len(text) else ""
        if before == "\ufe0f" and i >= 2:
            before = text[i - 2]
        return bool(after) and bool(_pictographic().match(before)) and bool(_pictographic().match(after))
    return bool(_pictographic().match(before))


def _hidden_at(text: str, i: int, keep: str) -> bool:
    ch = text[i]
    if ch in keep:
        return False
    if _is_hidden(ch):
        return not _emoji_part(text, i)
    # a combining mark on an ASCII character (an overlay stroke, an accent on a program name) changes what
    # the text looks like without being a letter of it
    return i > 0 and text[i - 1].isascii() and unicodedata.category(ch) in ("Mn", "Me")


def make_visible(text: str, *, keep: str = "\n\t") -> str:
    """Replace every hidden character with a visible token: ``\\x1b``, ``\\r``, ``<U+202E>``.

    Newlines and tabs are kept by default (pass ``keep=""`` to escape them as well).
    """
    if text.isascii() and text.isprintable():
        return text
    out: list[str] = []
    for i, ch in enumerate(text):
        if not _hidden_at(text, i, keep):
            out.append(ch)
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"<U+{ord(ch):04X}>")
    return "".join(out)


def hidden_characters(text: str, *, keep: str = "\n\t") -> list[str]:
    """The distinct hidden characters in ``text``, in order of first appearance."""
    if text.isascii() and text.isprintable():
        return []
    seen: dict[str, None] = {}
    for i, ch in enumerate(text):
        if _hidden_at(text, i, keep):
            seen.setdefault(ch, None)
    return list(seen)
