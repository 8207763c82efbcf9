"""Make text that could hide something from a reader visible: control characters, ANSI escapes,
zero-width characters, bidi overrides and Unicode tag characters."""

from __future__ import annotations

import unicodedata

__all__ = ["hidden_characters", "make_visible"]

_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00", "\x7f": "\\x7f", "\x08": "\\b", "\x0b": "\\v", "\x0c": "\\f"}


def _is_hidden(ch: str, keep: str) -> bool:
    if ch in keep:
        return False
    # Cc: control characters (C0, DEL, C1); Cf: format characters (zero-width, bidi, tags, BOM, soft hyphen);
    # Zl/Zp: line and paragraph separators that break a line without looking like a newline.
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def make_visible(text: str, *, keep: str = "\n\t") -> str:
    """Replace every hidden character with a visible token: ``\\x1b``, ``\\r``, ``<U+202E>``.

    Newlines and tabs are kept by default (pass ``keep=""`` to escape them as well).
    """
    out: list[str] = []
    for ch in text:
        if not _is_hidden(ch, keep):
            out.append(ch)
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"<U+{ord(ch):04X}>")
    return "".join(out)


def hidden_characters(text: str, *, keep: str = "\n\t") -> list[str]:
    """The distinct hidden characters in ``text``, in order of first appearance."""
    seen: dict[str, None] = {}
    for ch in text:
        if _is_hidden(ch, keep):
            seen.setdefault(ch, None)
    return list(seen)
