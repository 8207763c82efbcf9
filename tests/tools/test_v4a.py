"""V4A patches in memory (``hermes_nb.tools.v4a``): a hostile or sloppy patch gives one line naming the file and
the hunk, and no change at all; a good one gives every file's ``Change`` with its line endings kept.

Each class is a table with a reason per row; ``changes`` is pure (files come from a dict), so every case
shows what would have been written."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hermes_nb.tools.v4a import PatchError, changes, parse

ROOT = "/ws"


def _files(**files: bytes) -> dict[str, tuple[bytes, int]]:
    return {f"{ROOT}/{name.replace('__', '/')}": (data, 0o644) for name, data in files.items()}


def _run(body: str, files: dict[str, tuple[bytes, int]] | None = None, *, where: Any = None) -> list[Any]:
    files = {} if files is None else files
    return changes(f"*** Begin Patch\n{body}\n*** End Patch", where=where or (lambda p: f"{ROOT}/{p}"),
                   read=files.get)


def _by_path(out: list[Any]) -> dict[str, Any]:
    return {c.path.removeprefix(ROOT + "/"): c for c in out}


BASE = _files(**{"a.py": b"def f():\n    x = 1\n    y = 2\n\ndef g():\n    y = 2\n", "b.txt": b"one\ntwo\n",
                 "bin.dat": b"\x00\x01\x02", "latin.txt": "caf\xe9\n".encode("latin-1")})

# -- class 1: paths the workspace must not be asked about at all ------------------------------------------

PATHS = [
    ("*** Update File: ../a.py\n-x", "'..'", "climbs out of the workspace"),
    ("*** Update File: sub/../../a.py\n-x", "'..'", "climbs out from inside a folder"),
    ("*** Add File: /etc/cron.d/x\n+x", "absolute", "an absolute path"),
    ("*** Delete File: /ws/a.py", "absolute", "an absolute path inside the workspace is still refused"),
    ("*** Add File: ~/.bashrc\n+x", "~", "the home by tilde"),
    ("*** Add File: C:/Windows/x\n+x", "absolute", "a drive path"),
    ("*** Add File: a\\..\\..\\x\n+x", "backslash", "a Windows separator hiding a climb"),
    ("*** Add File: \n+x", "empty", "no path"),
    ("*** Add File: dir/\n+x", "folder", "a folder, not a file"),
    ("*** Update File: a.py\n*** Move to: ../out.py\n-x", "'..'", "a move's destination that climbs"),
    ("*** Update File: a.py\n*** Move to: /tmp/out.py\n-x", "absolute", "a move's absolute destination"),
    ("*** Move File: a.py -> ../../x.py", "'..'", "Hermes's move form, climbing"),
    ("*** Add File: a\0b\n+x", "NUL", "a NUL byte in the path"),
]


@pytest.mark.parametrize(("body", "says", "reason"), PATHS, ids=[r[2] for r in PATHS])
def test_a_path_outside_the_workspace_is_refused_before_any_file_is_read(body: str, says: str,
                                                                          reason: str) -> None:
    asked: list[str] = []
    with pytest.raises(PatchError, match="is refused") as exc:
        changes(f"*** Begin Patch\n{body}\n*** End Patch", where=lambda p: asked.append(p) or f"{ROOT}/{p}",
                read=BASE.get)
    assert says in str(exc.value) and "\n" not in str(exc.value), reason
    assert asked == [], reason  # refused while parsing: no path was even resolved


# -- class 2: text that is not a whole patch --------------------------------------------------------------

MALFORMED = [
    ("", "empty", "an empty patch"),
    ("   \n\n  ", "empty", "only blank lines"),
    ("*** Update File: b.txt\n-one\n+uno\n*** End Patch", "must start with", "no Begin Patch"),
    ("*** Begin Patch\n*** Update File: b.txt\n-one\n+uno", "must end with", "cut off: no End Patch"),
    ("*** Begin Patch\n*** Update File: b.txt\n-one\n+uno\n*** End Patch\nrm -rf /", "must end with",
     "text after End Patch"),
    ("*** Begin Patch\n*** End Patch", "names no file", "no file section"),
    ("*** Begin Patch\n*** Rename File: b.txt\n*** End Patch", "expected '*** Add File:'", "an unknown header"),
    ("*** Begin Patch\ngarbage\n*** End Patch", "expected '*** Add File:'", "a line before any header"),
    ("*** Begin Patch\n*** Add File: n.txt\n+ok\nnot added\n*** End Patch", "starts with '+'",
     "an Add File line without +"),
    ("*** Begin Patch\n*** Delete File: b.txt\n-one\n*** End Patch", "takes no lines", "lines under Delete"),
    ("*** Begin Patch\n*** Update File: b.txt\n*** End Patch", "has no hunk", "an Update without hunks"),
    ("*** Begin Patch\n*** Add File: n.txt\n*** Move to: m.txt\n+x\n*** End Patch", "follows only",
     "Move to under Add"),
    ("*** Begin Patch\n*** Update File: b.txt\n-one\n*** Move to: m.txt\n*** End Patch", "must follow",
     "Move to after the hunks"),
]


@pytest.mark.parametrize(("text", "says", "reason"), MALFORMED, ids=[r[2] for r in MALFORMED])
def test_a_malformed_patch_is_one_line_and_no_change(text: str, says: str, reason: str) -> None:
    with pytest.raises(PatchError, match=re.escape(says)) as exc:
        changes(text, where=lambda p: f"{ROOT}/{p}", read=BASE.get)
    assert "\n" not in str(exc.value), reason


# -- class 3: patches that do not apply to these files: one line naming the file and the hunk -------------

NOT_APPLYING = [
    ("*** Update File: b.txt\n-three\n+drei", "b.txt: hunk 1 does not apply: its lines are not in the file",
     "context not in the file"),
    ("*** Update File: a.py\n-    y = 2\n+    y = 3", "a.py: hunk 1 does not apply: its lines occur 2 times",
     "context that occurs twice, no @@ line"),
    ("*** Update File: a.py\n@@ def f():\n-    x = 1\n+    x = 0\n@@\n-    x = 1\n+    x = 5",
     "a.py: hunk 2 does not apply: its lines are not in the file after the previous hunk",
     "a second hunk looks only after the first"),
    ("*** Update File: a.py\n@@ def h():\n+    z = 0", "a.py: hunk 1 (@@ def h():) does not apply: its @@ line",
     "an addition after an @@ line the file does not have"),
    ("*** Update File: a.py\n@@     y = 2\n+    z = 0", "a.py: hunk 1 (@@ y = 2) does not apply: its @@ line "
     "occurs 2 times", "an @@ line that occurs twice"),
    ("*** Update File: b.txt\n-one\n+uno\n*** End of File", "b.txt: hunk 1 does not apply: its lines are not the "
     "end", "End of File on lines that are not the end"),
    ("*** Update File: missing.txt\n-x\n+y", "missing.txt does not exist", "updating a file that is not there"),
    ("*** Delete File: missing.txt", "missing.txt does not exist", "deleting a file that is not there"),
    ("*** Add File: b.txt\n+x", "b.txt already exists", "adding over a file"),
    ("*** Update File: a.py\n*** Move to: b.txt\n@@ def g():\n-    y = 2\n+    y = 3", "b.txt: it already exists",
     "a move onto an existing file"),
    ("*** Move File: a.py -> b.txt", "b.txt: it already exists", "Hermes's move form onto an existing file"),
    ("*** Update File: b.txt\n-one\n+uno\n*** Update File: b.txt\n-two\n+deux", "b.txt is named twice",
     "the same file updated twice"),
    ("*** Update File: b.txt\n-one\n+uno\n*** Delete File: b.txt", "b.txt is named twice",
     "updated then deleted"),
    ("*** Add File: n.txt\n+x\n*** Update File: a.py\n*** Move to: n.txt\n@@ def g():\n-    y = 2\n+    y = 3",
     "n.txt is named twice", "added, and moved onto"),
    ("*** Update File: a.py\n*** Move to: a.py\n@@ def g():\n-    y = 2\n+    y = 3", "a.py is named twice",
     "moved onto itself"),
    ("*** Update File: ./b.txt\n-one\n+uno\n*** Delete File: b.txt", "b.txt is named twice",
     "the same file under two spellings"),
    ("*** Update File: bin.dat\n-x\n+y", "bin.dat is a binary file", "a binary file"),
    ("*** Update File: latin.txt\n-x\n+y", "latin.txt is not UTF-8 text", "a file in another encoding"),
    ("*** Update File: b.txt\n one\n two", "b.txt: the hunks change nothing", "context only"),
]


@pytest.mark.parametrize(("body", "says", "reason"), NOT_APPLYING, ids=[r[2] for r in NOT_APPLYING])
def test_a_patch_that_does_not_apply_names_the_file_and_the_hunk(body: str, says: str, reason: str) -> None:
    files = dict(BASE)
    with pytest.raises(PatchError) as exc:
        _run(body, files)
    assert str(exc.value).startswith(says) or says in str(exc.value), (reason, str(exc.value))
    assert "\n" not in str(exc.value), reason
    assert files == BASE  # nothing read was changed (changes never writes)


def test_two_patch_paths_that_resolve_to_one_file_are_named_twice() -> None:
    """A link (or any spelling) ``where`` resolves to a file the patch already names is the same file."""
    alias = {"link.txt": f"{ROOT}/b.txt"}
    with pytest.raises(PatchError, match="link.txt is named twice in the patch"):
        _run("*** Update File: b.txt\n-one\n+uno\n*** Delete File: link.txt", dict(BASE),
             where=lambda p: alias.get(p, f"{ROOT}/{p}"))


def test_one_bad_section_among_good_ones_gives_no_change_at_all() -> None:
    body = ("*** Add File: new.txt\n+fine\n*** Update File: b.txt\n-one\n+uno\n*** Delete File: a.py\n"
            "*** Update File: a.py\n-nowhere\n+x")
    with pytest.raises(PatchError, match="a.py is named twice"):
        _run(body, dict(BASE))
    with pytest.raises(PatchError, match=r"b.txt: hunk 2 does not apply"):
        _run("*** Add File: new.txt\n+fine\n*** Update File: b.txt\n@@\n-one\n+uno\n@@\n-nowhere\n+x", dict(BASE))


# -- class 4: what applies, and what it keeps -----------------------------------------------------------

def test_a_multi_file_patch_adds_updates_moves_and_deletes() -> None:
    body = ("*** Add File: docs/new.md\n+# Title\n+\n+text\n"
            "*** Update File: a.py\n@@ def g():\n-    y = 2\n+    y = 3\n"
            "*** Update File: b.txt\n*** Move to: moved/b.txt\n one\n-two\n+zwei\n"
            "*** Delete File: bin.dat\n"
            "*** Move File: latin.txt -> latin2.txt")
    out = _by_path(_run(body, dict(BASE)))
    assert {k: c.kind for k, c in out.items()} == {
        "docs/new.md": "created", "a.py": "modified", "b.txt": "deleted", "moved/b.txt": "created",
        "bin.dat": "deleted", "latin.txt": "deleted", "latin2.txt": "created"}
    assert out["docs/new.md"].after == b"# Title\n\ntext\n"
    assert out["a.py"].after == b"def f():\n    x = 1\n    y = 2\n\ndef g():\n    y = 3\n"  # the one after the @@
    assert out["moved/b.txt"].after == b"one\nzwei\n" and out["b.txt"].before == b"one\ntwo\n"
    assert out["bin.dat"].before == b"\x00\x01\x02"  # a binary file can be deleted or moved, not patched
    assert out["latin2.txt"].after == "caf\xe9\n".encode("latin-1")
    assert "+    y = 3" in out["a.py"].diff()


KEPT = [
    (b"one\r\ntwo\r\nthree\r\n", " one\n-two\n+TWO\n+2b", b"one\r\nTWO\r\n2b\r\nthree\r\n", "CRLF lines stay CRLF"),
    (b"one\r\ntwo\r\n", "-two\n+TWO", b"one\r\nTWO\r\n", "CRLF on the last line"),
    (b"one\ntwo", "-two\n+TWO", b"one\nTWO", "no newline at the end stays none"),
    (b"one\ntwo", " two\n+three", b"one\ntwo\nthree", "a line added after a last line without newline"),
    (b"one\ntwo", "+three", b"one\ntwo\nthree", "appended at the end (no context): the old last line ends now"),
    (b"one\ntwo\nthree", " one\n-two\n-three", b"one", "the last lines removed: the file still ends without one"),
    (b"a\nb\n", "-b\n+B\n\\ No newline at end of file", b"a\nB\n", "the \\ marker: the file's own end decides"),
    (b"x = 1   \ny = 2\n", "-x = 1\n+x = 0", b"x = 0\ny = 2\n", "trailing spaces in the file are tolerated"),
    (b"a\nb\nc\n", " b\n-c\n+C\n*** End of File", b"a\nb\nC\n", "End of File anchors the hunk at the end"),
    (b"class A:\n    def run(self):\n        pass\nclass B:\n    def run(self):\n        pass\n",
     "@@ class B:\n@@     def run(self):\n-        pass\n+        return 1",
     b"class A:\n    def run(self):\n        pass\nclass B:\n    def run(self):\n        return 1\n",
     "nested @@ lines: a class, then its method"),
    (b"def f():\n    pass\n", "@@ def f\n+    '''doc'''", b"def f():\n    '''doc'''\n    pass\n",
     "an addition after an @@ line given as part of the line (as Hermes reads it)"),
    (b"", "+first", b"first\n", "an empty file"),
]


@pytest.mark.parametrize(("before", "hunk", "after", "reason"), KEPT, ids=[r[3] for r in KEPT])
def test_line_endings_and_the_last_newline_survive(before: bytes, hunk: str, after: bytes, reason: str) -> None:
    [change] = _run(f"*** Update File: f.txt\n{hunk}", _files(**{"f.txt": before}))
    assert change.after == after, reason


def test_a_patch_written_with_crlf_applies_and_a_move_keeps_the_mode() -> None:
    files = {f"{ROOT}/run.sh": (b"echo a\n", 0o755)}
    out = changes("*** Begin Patch\r\n*** Update File: run.sh\r\n*** Move to: bin/run.sh\r\n-echo a\r\n+echo b\r\n"
                  "*** End Patch\r\n", where=lambda p: f"{ROOT}/{p}", read=files.get)
    deleted, created = out
    assert (deleted.kind, created.kind, created.after, created.mode_after) == ("deleted", "created", b"echo b\n",
                                                                             0o755)


def test_parse_reads_hermes_and_codex_forms_alike() -> None:
    ops = parse("*** Begin Patch\n*** Move File: a -> b\n*** Update File: c\n*** Move to: d\n@@ x @@\n-1\n+2\n"
                "*** End Patch")
    assert [(o.kind, o.path, o.move_to) for o in ops] == [("update", "a", "b"), ("update", "c", "d")]
    assert ops[1].hunks[0].hints == ("x",)


def test_any_text_gives_changes_or_one_patch_error_never_another_exception() -> None:
    """Seeded fuzz over the format's own pieces: whatever a model sends, the answer is a list or a PatchError."""
    import random

    pieces = ["*** Begin Patch", "*** End Patch", "*** Update File: b.txt", "*** Add File: n.txt",
              "*** Delete File: a.py", "*** Move to: m.txt", "*** Move File: b.txt -> c.txt", "*** End of File",
              "@@", "@@ def g():", "@@ @@", " one", "-one", "+uno", "-two", " two", "", "\\ No newline", "+",
              "-", " ", "*** Update File: ../x", "*** Add File: ", "\r", "-    y = 2", "+    y = 3"]
    rng = random.Random(33)
    outcomes = {"changes": 0, "error": 0}
    for _ in range(2_000):
        lines = [rng.choice(pieces) for _ in range(rng.randint(0, 12))]
        if rng.random() < 0.7:
            lines = ["*** Begin Patch", *lines, "*** End Patch"]
        try:
            changes("\n".join(lines), where=lambda p: f"{ROOT}/{p}", read=dict(BASE).get)
            outcomes["changes"] += 1
        except PatchError as exc:
            assert "\n" not in str(exc), lines
            outcomes["error"] += 1
    assert outcomes["changes"] > 20 and outcomes["error"] > 1_000, outcomes
