"""``ToolCallRecord.changes``: the files a call changed (path, kind, unified diff), for write_file, patch and a
sandboxed command alike, and each card folds its diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.display.live import transcript_html, transcript_text
from tests.support.bubblewrap import require_bwrap
from tests.support.fake_openai import FakeOpenAI, Reply, call


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from hermes_nb.tools.model_tools import ensure_discovered

    ensure_discovered()
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\n")
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    monkeypatch.chdir(root)
    return root


def _run(script: list[Reply], toolsets: list[str]) -> object:
    with FakeOpenAI(script) as srv:
        return Agent(model="fake", base_url=srv.base_url, display=False, enabled_toolsets=toolsets,
                     approval_callback=lambda *a: "once").run("go")


def test_write_file_and_patch_record_their_changes_and_the_card_folds_the_diff(ws: Path) -> None:
    result = _run([Reply(tool_calls=(call("write_file", {"path": "out/table.csv", "content": "a,b\n"}, "w"),
                                      call("patch", {"path": "notes.txt", "old_string": "two",
                                                     "new_string": "deux"}, "p"))),
                   Reply(content="done")], ["file"])
    write, patch = result.tool_calls  # type: ignore[attr-defined]
    assert [(c.path, c.kind) for c in write.changes] == [("out/table.csv", "created")]
    assert "+a,b" in write.changes[0].diff
    assert [(c.path, c.kind) for c in patch.changes] == [("notes.txt", "modified")]
    assert "-two" in patch.changes[0].diff and "+deux" in patch.changes[0].diff
    html = transcript_html(result.transcript)  # type: ignore[attr-defined]
    assert "changed 1 file: ~notes.txt</summary>" in html and "+deux" in html
    assert "changed: +out/table.csv" in transcript_text(result.transcript)  # type: ignore[attr-defined]


def test_a_refused_write_changes_nothing_and_its_card_says_where_it_was_kept(ws: Path, hermes_home: Path) -> None:
    result = _run([Reply(tool_calls=(call("write_file", {"path": "uv.toml", "content": "x = 1\n"}, "u"),)),
                   Reply(content="done")], ["file"])
    (record,) = result.tool_calls  # type: ignore[attr-defined]
    assert record.changes == () and record.is_error
    assert "uv.toml was not landed" in record.content and str(hermes_home / "kept-aside") in record.content
    assert not (ws / "uv.toml").exists()


def test_a_sandboxed_command_records_what_landed(ws: Path) -> None:
    require_bwrap()
    result = _run([Reply(tool_calls=(call("terminal", {"command": "echo hi > made.txt && rm notes.txt"}, "t"),)),
                   Reply(content="done")], ["terminal"])
    (record,) = result.tool_calls  # type: ignore[attr-defined]
    assert sorted((c.path, c.kind) for c in record.changes) == [("made.txt", "created"), ("notes.txt", "deleted")]
    assert (ws / "made.txt").read_text() == "hi\n" and not (ws / "notes.txt").exists()
