"""Durable notes across runs and kernels, kept as Hermes keeps them: ``MEMORY.md`` and ``USER.md``.

Both live in ``$HERMES_NB_HOME/memories/``; entries are separated by a line holding ``§`` (Hermes's
delimiter), and each file has a character limit (Hermes's defaults: 2 200 for the agent's notes, 1 375
for what it knows about the person). A change is read-modify-write under an exclusive lock on a side
file (``MEMORY.md.lock``), and the new text goes to a temporary file in the same folder that replaces
the old one (``os.replace``): a reader sees the old file or the new one, never half of either, and two
kernels writing at once both keep their entries.

``load()`` is what a run puts in its system prompt: read once when the run starts, so the prompt
stays the same for the whole run (its prefix stays cacheable) while writes land on disk at once.

Both ways in are scanned (``tools.safety.memory_scan``, the classes Hermes refuses and a few more): an add or
replace whose text looks like instructions to the model, a way to send data out, hidden characters or a
secret is refused with the reason; and an entry that reaches the file another way (edited by hand, written by
another program) is left out of the system prompt when it is loaded, and named in ``MemoryBlock.left_out``.
The entries the tool shows back to the model (``current_entries``) leave such entries out the same way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hermes_nb.tools.config import hermes_home
from hermes_nb.tools.safety.memory_scan import Threat, scan

__all__ = ["DELIMITER", "LIMITS", "LeftOut", "MemoryBlock", "MemoryStore", "MemoryTarget"]

MemoryTarget = Literal["memory", "user"]
DELIMITER = "\n§\n"
#: Hermes's character limits (characters, not tokens: the same for every model).
LIMITS: dict[str, int] = {"memory": 2_200, "user": 1_375}
_FILES = {"memory": "MEMORY.md", "user": "USER.md"}
_HEADERS = {"memory": "MEMORY (your notes from earlier runs)", "user": "USER PROFILE (what you know about the person)"}


@dataclass(frozen=True, slots=True, kw_only=True)
class LeftOut:
    """An entry the scan kept out of the system prompt."""

    file: str  # "MEMORY.md" or "USER.md"
    number: int  # 1-based, in the file
    entry: str
    threat: Threat

    def line(self) -> str:
        """One line for the transcript: which entry, why, and how to get rid of it."""
        from hermes_nb.tools.safety.approvals.visible import make_visible

        preview = make_visible(self.entry, keep="")
        preview = preview if len(preview) <= 60 else preview[:60] + "…"
        return (f"memory entry {self.number} of {self.file} left out of the system prompt: {self.threat.kind}, "
                f"{self.threat.reason} (\"{preview}\"); remove it with the memory tool or edit the file")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBlock:
    """What a run's system prompt carries of memory: the block's text ("" when empty) and what was left out."""

    text: str
    left_out: tuple[LeftOut, ...] = ()
    entries: int = 0  # how many entries the text holds


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryStore:
    """The two files under ``folder`` (default: the home's ``memories/``, looked up when used)."""

    folder: Path | None = None
    memory_limit: int = LIMITS["memory"]
    user_limit: int = LIMITS["user"]

    # -- reading ----------------------------------------------------------------------------------

    def path(self, target: MemoryTarget) -> Path:
        return (self.folder or hermes_home() / "memories") / _FILES[target]

    def entries(self, target: MemoryTarget) -> list[str]:
        """The entries of one file, in order (an absent or unreadable file has none)."""
        try:
            raw = self.path(target).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return []
        return _split(raw)

    def limit(self, target: MemoryTarget) -> int:
        return self.user_limit if target == "user" else self.memory_limit

    def usage(self, target: MemoryTarget, entries: list[str] | None = None) -> str:
        used = len(DELIMITER.join(self.entries(target) if entries is None else entries))
        return f"{used:,}/{self.limit(target):,} chars"

    def snapshot(self) -> str:
        """Both files as one block for a system prompt ("" when both are empty): ``load().text``."""
        return self.load().text

    def load(self) -> MemoryBlock:
        """Both files as one block for a system prompt, each entry scanned again (the files are edited by hand
        too): an entry the scan refuses is left out and named."""
        blocks, left_out, count = [], [], 0
        for target in ("memory", "user"):
            kept = []
            for n, entry in enumerate(self.entries(target), 1):  # type: ignore[arg-type]
                threat = scan(entry)
                if threat is None:
                    kept.append(entry)
                else:
                    left_out.append(LeftOut(file=_FILES[target], number=n, entry=entry, threat=threat))
            if kept:
                count += len(kept)
                blocks.append(f"{_HEADERS[target]} [{self.usage(target, kept)}]\n" + DELIMITER.join(kept))  # type: ignore[arg-type]
        return MemoryBlock(text="\n\n".join(blocks), left_out=tuple(left_out), entries=count)

    # -- the memory tool's actions (Hermes's result shapes) ---------------------------------------

    def add(self, target: MemoryTarget, content: str) -> dict[str, Any]:
        return self.apply(target, [{"action": "add", "content": content}])

    def replace(self, target: MemoryTarget, old_text: str, content: str) -> dict[str, Any]:
        return self.apply(target, [{"action": "replace", "old_text": old_text, "content": content}])

    def remove(self, target: MemoryTarget, old_text: str) -> dict[str, Any]:
        return self.apply(target, [{"action": "remove", "old_text": old_text}])

    def apply(self, target: MemoryTarget, operations: list[Any]) -> dict[str, Any]:
        """Hermes's ``operations``: add / replace / remove steps applied together or not at all, the limit
        checked on the result only (so one call can make room and add)."""
        if not operations:
            return {"success": False, "error": "operations is empty."}
        with self._locked(target) as entries:
            new, messages = list(entries), []
            for n, op in enumerate(operations, 1):
                where = f"Operation {n}: " if len(operations) > 1 else ""
                step = _step(new, op if isinstance(op, dict) else {})
                if isinstance(step, str):
                    return {"success": False, "error": where + step, "current_entries": _shown(entries)}
                new, message = step
                messages.append(message)
            too_long = max((len(e) for e in new if e not in entries), default=0)
            if too_long > self.limit(target):  # "is full (0/2,200 chars)" about an empty file misled
                return {"success": False, "error": f"The entry is {too_long:,} chars; {_FILES[target]} holds at "
                        f"most {self.limit(target):,}. Shorten it.", "current_entries": entries}
            if len(DELIMITER.join(new)) > self.limit(target):
                return self._full(target, entries, f"The {'change' if len(operations) == 1 else 'operations'} "
                                                   "would exceed the limit.")
            if new != entries:
                self._write(target, new)
        return self._done(target, new, messages[0] if len(messages) == 1 else f"Applied {len(messages)} operations.")

    # -- plumbing ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, target: MemoryTarget) -> Iterator[list[str]]:
        """The file's entries, read under an exclusive lock held until the block ends (other kernels wait)."""
        path = self.path(target)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            _lock(fd)
            yield self.entries(target)
        finally:
            os.close(fd)  # closing releases the lock

    def _write(self, target: MemoryTarget, entries: list[str]) -> None:
        path = self.path(target)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(DELIMITER.join(entries))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _done(self, target: MemoryTarget, entries: list[str], message: str) -> dict[str, Any]:
        return {"success": True, "done": True, "target": target, "usage": self.usage(target, entries),
                "entry_count": len(entries), "message": message,
                "note": "Saved. It is in the system prompt from the next run on; do not repeat this update."}

    def _full(self, target: MemoryTarget, entries: list[str], why: str) -> dict[str, Any]:
        return {"success": False, "error": f"{_FILES[target]} is full ({self.usage(target, entries)}). {why} "
                                           "Use 'replace' to shorten entries or 'remove' stale ones, then retry.",
                "current_entries": _shown(entries), "usage": self.usage(target, entries)}


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: msvcrt locks a byte range
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _shown(entries: list[str]) -> list[str]:
    """The entries as the model may read them back: one the scan refuses is named, not repeated (it would enter
    the conversation through the tool's answer instead of the system prompt)."""
    out = []
    for entry in entries:
        threat = scan(entry)
        out.append(entry if threat is None else f"[left out: {threat.kind}, {threat.reason}]")
    return out


def _refused(threat: Threat) -> str:
    return (f"Refused: this entry looks like {threat.kind} ({threat.reason}). Memory goes into the system prompt "
            "of every later run, so it may not hold instructions to the model, ways to send data out, hidden "
            "characters or secrets. Nothing was saved; save the fact in plain words, or leave it out.")


def _split(raw: str) -> list[str]:
    return list(dict.fromkeys(e.strip() for e in raw.split(DELIMITER) if e.strip()))


def _clean(content: Any) -> str:
    """The entry as stored: stripped, nothing hidden in it (zero-width, bidi and other invisible characters are
    written out, ``tools.safety.approvals.visible``: it goes into later system prompts), and never holding the delimiter
    (which would split it in two)."""
    from hermes_nb.tools.safety.approvals.visible import make_visible

    text = make_visible(str(content or "").strip(), keep="\n")
    return text.replace(DELIMITER, "\n").replace("\n§", "\n§ ") if "§" in text else text


def _step(entries: list[str], op: dict[str, Any]) -> tuple[list[str], str] | str:
    """One operation on ``entries``: the entries after it and what it did, or why it cannot be done."""
    action, content, old_text = op.get("action"), _clean(op.get("content")), str(op.get("old_text") or "").strip()
    if action in ("add", "replace") and (threat := scan(str(op.get("content") or ""))) is not None:
        return _refused(threat)  # scanned as the model sent it: before hidden characters are written out
    if action == "add":
        if not content:
            return "content is empty: say what to remember."
        if content in entries:
            return entries, "Entry already exists (no duplicate added)."
        return [*entries, content], "Entry added."
    if action not in ("replace", "remove"):
        return f"Unknown action {action!r}: use add, replace or remove."
    if not old_text:
        return f"{action} needs old_text: a short unique part of the entry to {action}."
    if action == "replace" and not content:
        return "replace needs content (the new text); use remove to delete an entry."
    hits = [i for i, e in enumerate(entries) if old_text in e]
    if not hits:
        return f"No entry matched {old_text!r}; see current_entries and retry with part of the exact text."
    if len({entries[i] for i in hits}) > 1:
        return f"Several entries matched {old_text!r}; be more specific."
    i = hits[0]
    if action == "remove":
        return entries[:i] + entries[i + 1:], "Entry removed."
    return [*entries[:i], content, *entries[i + 1:]], "Entry replaced."
