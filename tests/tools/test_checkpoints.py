"""checkpoints.record: each landed change keeps its pre-image, and what the model wrote enters the ledger."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from hermes_nb.tools.config import hermes_home
from hermes_nb.tools.safety.writes import checkpoints, ledger
from hermes_nb.tools.safety.writes.changes import Change, sha256


def _call() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def _land(ws: Path, rel: str, data: bytes | None, **kw) -> Change:
    """Write ``data`` at ``ws/rel`` (None deletes) and return the Change describing it."""
    path = ws / rel
    before = path.read_bytes() if path.is_file() else None
    mode_before = path.stat().st_mode & 0o7777 if path.exists() else None
    if data is None:
        path.unlink()
        return Change(path=str(path), kind="deleted", before=before, mode_before=mode_before)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Change(path=str(path), kind="modified" if before is not None else "created", before=before,
                  after=data, mode_before=mode_before, mode_after=path.stat().st_mode & 0o7777, **kw)


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return Path(os.path.realpath(ws))


def test_created_and_modified_enter_the_ledger_with_their_hash_and_call(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / "old.py").write_text("x = 1\n")
    call = _call()
    changes = [_land(ws, "h2.py", b"raise ImportError\n"), _land(ws, "old.py", b"x = 2\n")]
    checkpoints.record(call_id=call, tool="write_file", workspace=ws, changes=changes)
    for rel, data in (("h2.py", b"raise ImportError\n"), ("old.py", b"x = 2\n")):
        entry = ledger.model_written(str(ws / rel))
        assert entry is not None and entry.sha256 == sha256(data) and entry.call_id == call
        assert entry.tool == "write_file" and entry.workspace == str(ws)


def test_a_trusted_path_stays_out_and_a_deleted_one_leaves(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    first = [_land(ws, "a.py", b"1"), _land(ws, "b.py", b"1")]
    checkpoints.record(call_id=_call(), tool="patch", workspace=ws, changes=first)
    assert ledger.lookup(str(ws / "a.py")) and ledger.lookup(str(ws / "b.py"))
    # the person said yes to a.py's new content (relative to the workspace), and the model deleted b.py
    second = [_land(ws, "a.py", b"2"), _land(ws, "b.py", None)]
    checkpoints.record(call_id=_call(), tool="terminal", workspace=ws, changes=second, trusted={"a.py"})
    assert ledger.lookup(str(ws / "a.py")) is None
    assert ledger.lookup(str(ws / "b.py")) is None
    # an absolute trusted path works the same
    checkpoints.record(call_id=_call(), tool="patch", workspace=ws, changes=[_land(ws, "c.py", b"1")],
                       trusted=[str(ws / "c.py")])
    assert ledger.lookup(str(ws / "c.py")) is None


def test_the_pre_image_is_kept_and_one_call_stays_one_checkpoint(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / "data.csv").write_bytes(b"a,b\n1,2\n")
    os.chmod(ws / "data.csv", 0o640)
    call = _call()
    checkpoints.record(call_id=call, tool="patch", workspace=ws, changes=[_land(ws, "data.csv", b"a,b\n")])
    checkpoints.record(call_id=call, tool="patch", workspace=ws, changes=[_land(ws, "new.txt", b"n")])
    mine = [cp for cp in checkpoints.checkpoints() if cp.call_id == call]
    assert len(mine) == 1 and [Path(s.path).name for s in mine[0].files] == ["data.csv", "new.txt"]
    saved = mine[0].files[0]
    assert checkpoints.blob(saved.before_blob) == b"a,b\n1,2\n" and saved.mode_before == 0o640
    assert os.stat(saved.before_blob).st_mode & 0o777 == 0o600  # pre-images are the person's data
    assert mine[0].files[1].before_blob is None and mine[0].files[1].kind == "created"


def test_the_ledger_outlives_the_kernel(tmp_path: Path) -> None:
    """A fresh process (no cache) reads the same ledger from the home."""
    ws = _ws(tmp_path)
    checkpoints.record(call_id="call_x", tool="write_file", workspace=ws, changes=[_land(ws, "pytz.py", b"p")])
    ledger._cache = None
    raw = json.loads((hermes_home() / "ledger.json").read_text())
    assert raw["workspaces"][str(ws)][str(ws / "pytz.py")]["call_id"] == "call_x"
    assert ledger.model_written(str(ws / "pytz.py")).call_id == "call_x"


def test_a_hand_edit_makes_the_file_the_persons(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    checkpoints.record(call_id=_call(), tool="write_file", workspace=ws, changes=[_land(ws, "u.py", b"m")])
    (ws / "u.py").write_bytes(b"mine")
    assert ledger.lookup(str(ws / "u.py")) is not None and ledger.model_written(str(ws / "u.py")) is None


def test_a_link_planted_at_the_ledger_is_replaced_not_followed(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    victim = tmp_path / "bashrc"
    victim.write_text("keep\n")
    hermes_home().mkdir(parents=True, exist_ok=True)
    (hermes_home() / "ledger.json").symlink_to(victim)
    with pytest.raises(OSError):  # the reader never follows it either
        ledger.lookup(str(ws / "x.py"))
    (hermes_home() / "ledger.json").unlink()
    (hermes_home() / "ledger.json").symlink_to(tmp_path / "nowhere.json")
    ledger._cache = None
    checkpoints.record(call_id=_call(), tool="write_file", workspace=ws, changes=[_land(ws, "x.py", b"x")])
    assert victim.read_text() == "keep\n" and not (tmp_path / "nowhere.json").exists()
    assert not (hermes_home() / "ledger.json").is_symlink()
