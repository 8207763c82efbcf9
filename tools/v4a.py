"""V4A patches (the multi-file format of ``patch`` with ``mode: "patch"``): parsed and applied in memory.

```text
*** Begin Patch
*** Add File: notes/new.txt
+first line
*** Update File: app.py
*** Move to: src/app.py
@@ def main():
     x = 1
-    y = 2
+    y = 3
*** Delete File: old.txt
*** Move File: a.txt -> b.txt
*** End Patch
```

``changes`` turns a patch and the current files into the ``Change`` records of the whole patch, or raises
``PatchError`` (one line naming the file and the hunk that does not apply); it writes nothing, so the caller
lands every change or none. Pure: the files are read through the ``read`` callable it is given, and paths
are mapped to absolute ones by ``where``.

Rules, each failing closed: a path is relative, without ``..``, ``~``, a backslash or a NUL; each file is
named once (a move's destination too); an added or moved-to file must not exist, an updated, moved or
deleted one must; a hunk's lines must occur once in what follows the previous hunk (an ``@@`` line names
the line to look after when they occur more than once); only UTF-8 text without NUL bytes is patched. A
file's line endings (CRLF kept) and its missing last newline survive the hunks that touch them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hermes_nb.tools.safety.writes.changes import Change

__all__ = ["FileOp", "Hunk", "PatchError", "changes", "parse"]

BEGIN, END = "*** Begin Patch", "*** End Patch"
_HEADER = re.compile(r"\*\*\*\s*(Add|Update|Delete) File:\s*(.*)")
_MOVE_TO = re.compile(r"\*\*\*\s*Move to:\s*(.*)")
_MOVE_FILE = re.compile(r"\*\*\*\s*Move File:\s*(.*?)\s*->\s*(.*)")
_END_OF_FILE = "*** End of File"

#: ``(data, mode)`` of the file at an absolute path, or None when nothing is there.
Reader = Callable[[str], "tuple[bytes, int] | None"]


class PatchError(ValueError):
    """A patch that does not parse or apply: one line, naming the file and the hunk."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Hunk:
    """``lines``: ``(" " | "-" | "+", text)``; ``hints`` the texts of its ``@@`` lines (a class, then a def in
    it); ``at_end``: ``*** End of File`` (the lines end the file)."""

    hints: tuple[str, ...] = ()
    lines: tuple[tuple[str, str], ...] = ()
    at_end: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FileOp:
    kind: Literal["add", "update", "delete"]
    path: str
    move_to: str | None = None
    hunks: tuple[Hunk, ...] = ()


def parse(text: str) -> tuple[FileOp, ...]:
    """The file sections of ``text``; ``PatchError`` for anything that is not a whole V4A patch."""
    lines = [line.removesuffix("\r") for line in text.strip().split("\n")] if text.strip() else []
    if not lines:
        raise PatchError("the patch is empty; give '*** Begin Patch', file sections, '*** End Patch'")
    if lines[0].strip() != BEGIN:
        raise PatchError(f"the patch must start with '{BEGIN}', got {lines[0][:60]!r}")
    if lines[-1].strip() != END:
        raise PatchError(f"the patch must end with '{END}' (was it cut off?); nothing was changed")
    ops: list[FileOp] = []
    i, body = 1, lines[1:-1]
    while i - 1 < len(body):
        line, number = body[i - 1], i + 1
        if not line.strip():
            i += 1
            continue
        if m := _MOVE_FILE.fullmatch(line.strip()):
            ops.append(FileOp(kind="update", path=_path(m[1], number), move_to=_path(m[2], number)))
            i += 1
            continue
        m = _HEADER.fullmatch(line.strip())
        if m is None:
            raise PatchError(f"line {number}: expected '*** Add File:', '*** Update File:', '*** Delete File:' or "
                             f"'*** Move File:', got {line[:60]!r}")
        kind, path = m[1].lower(), _path(m[2], number)
        i += 1
        section: list[tuple[int, str]] = []
        while i - 1 < len(body) and not (body[i - 1].startswith("***") and body[i - 1].strip() != _END_OF_FILE
                                         and not _MOVE_TO.fullmatch(body[i - 1].strip())):
            section.append((i + 1, body[i - 1]))
            i += 1
        ops.append(_section(kind, path, section))
    if not ops:
        raise PatchError("the patch names no file; nothing was changed")
    return tuple(ops)


def _path(raw: str, number: int) -> str:
    """A patch path as given, if it is one the workspace can hold (relative, no climbing, no home)."""
    path = raw.strip()
    why = ("it is empty" if not path else "it holds a NUL byte" if "\0" in path
           else "it is absolute" if path.startswith("/") or re.match(r"[A-Za-z]:", path)
           else "it holds a backslash" if "\\" in path else "it starts with ~" if path.startswith("~")
           else "it climbs with '..'" if ".." in path.split("/") else "it names a folder" if path.endswith("/")
           else None)
    if why:
        raise PatchError(f"line {number}: path {raw.strip()[:80]!r} is refused: {why} (paths are relative to "
                         "the workspace root)")
    return "/".join(p for p in path.split("/") if p not in ("", "."))


def _section(kind: str, path: str, section: list[tuple[int, str]]) -> FileOp:
    move_to = None
    if section and (m := _MOVE_TO.fullmatch(section[0][1].strip())):
        if kind != "update":
            raise PatchError(f"line {section[0][0]}: '*** Move to:' follows only '*** Update File:'")
        move_to, section = _path(m[1], section[0][0]), section[1:]
    if kind == "delete":
        if any(line.strip() for _, line in section):
            raise PatchError(f"line {section[0][0]}: '*** Delete File: {path}' takes no lines")
        return FileOp(kind="delete", path=path)
    if kind == "add":
        bad = next(((n, line) for n, line in section if not line.startswith("+")), None)
        if bad is not None:
            raise PatchError(f"line {bad[0]}: every line of '*** Add File: {path}' starts with '+'")
        return FileOp(kind="add", path=path, hunks=(Hunk(lines=tuple(("+", line[1:]) for _, line in section)),))
    hunks: list[Hunk] = []
    hints: list[str] = []
    lines: list[tuple[str, str]] = []
    at_end = False
    for number, line in section:
        if line.startswith("@@"):
            if lines:
                hunks.append(Hunk(hints=tuple(hints), lines=tuple(lines), at_end=at_end))
                hints, lines, at_end = [], [], False
            if hint := line[2:].strip().removesuffix("@@").strip():
                hints.append(hint)
        elif line.strip() == _END_OF_FILE:
            at_end = True
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file": the file's own last line decides
        elif _MOVE_TO.fullmatch(line.strip()):
            raise PatchError(f"line {number}: '*** Move to:' must follow its '*** Update File:' line")
        else:
            # a line without its prefix is context, as Hermes reads it (an empty line is an empty context line)
            prefix = line[:1] if line[:1] in (" ", "-", "+") else " "
            lines.append((prefix, line[1:] if line[:1] in (" ", "-", "+") else line))
    if lines:
        hunks.append(Hunk(hints=tuple(hints), lines=tuple(lines), at_end=at_end))
    if not hunks and move_to is None:
        raise PatchError(f"'*** Update File: {path}' has no hunk ('@@' and ' '/'-'/'+' lines)")
    return FileOp(kind="update", path=path, move_to=move_to, hunks=tuple(hunks))


def changes(text: str, *, where: Callable[[str], str], read: Reader) -> list[Change]:
    """The ``Change`` of every file the patch touches (all of them, or ``PatchError`` and none).

    ``where(path)`` is the absolute path of a patch path (it raises a one-line error of its own for a path
    the workspace refuses); ``read(absolute)`` the file's ``(bytes, mode)`` there, None when absent."""
    ops = parse(text)
    named: dict[str, str] = {}

    def claim(path: str) -> str:
        real = where(path)
        if real in named:
            raise PatchError(f"{path} is named twice in the patch (as {named[real]!r} too); give each file one "
                             "section")
        named[real] = path
        return real

    out: list[Change] = []
    for op in ops:
        real = claim(op.path)
        target = claim(op.move_to) if op.move_to is not None else None
        current = read(real)
        if op.kind == "add":
            if current is not None:
                raise PatchError(f"*** Add File: {op.path} already exists; use '*** Update File:' to change it")
            data = "".join(text + "\n" for _, text in op.hunks[0].lines).encode("utf-8")
            out.append(Change(path=real, kind="created", after=data, mode_after=0o644))
            continue
        if current is None:
            raise PatchError(f"{op.path} does not exist (paths are relative to the workspace root); use "
                             "'*** Add File:' to create it")
        before, mode = current
        if op.kind == "delete":
            out.append(Change(path=real, kind="deleted", before=before, mode_before=mode))
            continue
        after = _updated(op, before) if op.hunks else before
        if target is None:
            if after == before:
                raise PatchError(f"{op.path}: the hunks change nothing (only context lines)")
            out.append(Change(path=real, kind="modified", before=before, after=after, mode_before=mode,
                              mode_after=mode))
            continue
        if read(target) is not None:
            raise PatchError(f"cannot move {op.path} to {op.move_to}: it already exists (a move never overwrites)")
        out += [Change(path=real, kind="deleted", before=before, mode_before=mode),
                Change(path=target, kind="created", after=after, mode_after=mode)]
    return out


def _updated(op: FileOp, before: bytes) -> bytes:
    """``before`` with ``op``'s hunks applied in order, each after the previous one's place."""
    if b"\0" in before:
        raise PatchError(f"{op.path} is a binary file; V4A patches change text only (use write_file)")
    try:
        text = before.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(f"{op.path} is not UTF-8 text ({exc.reason} at byte {exc.start}); V4A patches change "
                         "text only") from None
    # each line as (text, ending): a CRLF file keeps CRLF, a last line without newline keeps none
    lines = [(m[1], m[2]) for m in re.finditer(r"([^\r\n]*)(\r\n|\n|\r|$)", text) if m[0]]
    eol = lines[0][1] if lines and lines[0][1] else "\n"
    cursor = 0
    for number, hunk in enumerate(op.hunks, start=1):
        label = f"{op.path}: hunk {number}" + (f" (@@ {hunk.hints[-1][:60]})" if hunk.hints else "")
        old = [t for p, t in hunk.lines if p != "+"]
        anchor = _anchor(lines, hunk.hints, cursor, label)
        if not old:  # additions only: after the @@ line, else at the end
            if hunk.hints and anchor is None:
                raise PatchError(f"{label} does not apply: its @@ line is not in the file"
                                 + (" after the previous hunk" if cursor else "") + "; it says where to add")
            at = len(lines) if anchor is None else anchor
        elif hunk.at_end:
            at = len(lines) - len(old)
            if at < cursor or not _same([t for t, _ in lines[at:]], old):
                raise PatchError(f"{label} does not apply: its lines are not the end of the file")
        elif anchor is not None:  # the first place after the @@ lines
            at = _find(lines, old, anchor, label, first=True)
        else:  # no @@ line (or one the file does not have): the lines must occur once
            at = _find(lines, old, cursor, label, first=False)
        span = lines[at:at + len(old)]
        new: list[tuple[str, str]] = []
        kept = iter(span)
        for prefix, line in hunk.lines:
            if prefix == "+":
                new.append((line, eol))
            else:
                original = next(kept)
                if prefix == " ":
                    new.append((original[0], original[1] or eol))
        if at + len(old) == len(lines):  # the hunk reaches the end: the file's last ending stays as it was
            last = lines[-1][1] if lines else eol
            if new:
                new[-1] = (new[-1][0], last)
            elif at > 0:
                lines[at - 1] = (lines[at - 1][0], last)  # the new last line ends as the old last one did
            if lines and not lines[-1][1] and at > 0 and not span:
                lines[-1] = (lines[-1][0], eol)  # appended after a last line that had no newline
        lines[at:at + len(old)] = new
        cursor = at + len(new)
    return "".join(t + e for t, e in lines).encode("utf-8")


def _same(have: list[str], want: list[str]) -> bool:
    return len(have) == len(want) and all(h.rstrip() == w.rstrip() for h, w in zip(have, want, strict=True))


def _anchor(lines: list[tuple[str, str]], hints: tuple[str, ...], start: int, label: str) -> int | None:
    """The line after the hunk's ``@@`` lines (each looked for after the one before), None when one is not there.

    A line is the hint exactly, else once its spaces are stripped, else when it contains it (as Hermes reads
    a hint). The first ``@@`` line must be one place; the next ones are the first place after it."""
    texts = [t for t, _ in lines]
    at = start
    for k, hint in enumerate(hints):
        bare = hint.strip()
        found = [i for i in range(at, len(texts)) if texts[i] == hint] or \
                [i for i in range(at, len(texts)) if texts[i].strip() == bare] or \
                [i for i in range(at, len(texts)) if bare in texts[i]]
        if not found:
            return None
        if k == 0 and len(found) > 1:
            raise PatchError(f"{label} does not apply: its @@ line occurs {len(found)} times (lines "
                             f"{', '.join(str(i + 1) for i in found[:5])}); give one that occurs once")
        at = found[0] + 1
    return at if hints else None


def _find(lines: list[tuple[str, str]], want: list[str], start: int, label: str, *, first: bool) -> int:
    """Where ``want`` occurs in ``lines`` from ``start``: exactly, else ignoring trailing spaces. More than one
    place is an error unless ``first`` (after an ``@@`` line, the first place is the one meant)."""
    texts = [t for t, _ in lines]
    n = len(want)
    found = [i for i in range(start, len(texts) - n + 1) if texts[i:i + n] == want] or \
            [i for i in range(start, len(texts) - n + 1) if _same(texts[i:i + n], want)]
    if not found:
        raise PatchError(f"{label} does not apply: its lines are not in the file"
                         + (" after the previous hunk" if start else "") + "; read the file again and copy its "
                         "lines exactly")
    if len(found) > 1 and not first:
        raise PatchError(f"{label} does not apply: its lines occur {len(found)} times (lines "
                         f"{', '.join(str(i + 1) for i in found[:5])}); add context lines or an @@ line naming the "
                         "enclosing def or class")
    return found[0]
