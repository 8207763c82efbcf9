"""tools.safety.writes.rollback: one call's changes, or all since one call, put back; hand edits kept and named."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from hermes_nb.tools.safety.writes import checkpoints, ledger, rollback
from hermes_nb.tools.safety.writes.changes import Change


def _id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def _state(path: Path) -> tuple[bytes | None, int | None, str | None]:
    if path.is_symlink():
        return None, None, os.readlink(path)
    if not path.exists():
        return None, None, None
    return (None if path.is_dir() else path.read_bytes()), path.stat().st_mode & 0o7777, None


class Land:
    """Makes changes in ``ws`` as a tool call would and records them under one call id."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws

    def __call__(self, ops: list[tuple[str, object]], *, tool: str = "write_file") -> str:
        call = _id()
        changes = []
        for rel, what in ops:
            p = self.ws / rel
            before, mode_before, link_before = _state(p)
            was = p.exists() or p.is_symlink()
            is_dir = p.is_dir() and not p.is_symlink()
            if what is None:  # delete
                if is_dir:
                    p.rmdir()
                else:
                    p.unlink()
                changes.append(Change(path=str(p), kind="deleted", before=before, mode_before=mode_before,
                                      link_before=link_before, is_dir=is_dir))
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            if what == "dir":
                p.mkdir()
                changes.append(Change(path=str(p), kind="created", is_dir=True, mode_after=0o755))
                continue
            if isinstance(what, tuple) and what[0] == "link":
                if was:
                    p.unlink()
                p.symlink_to(what[1])
                changes.append(Change(path=str(p), kind="modified" if was else "created", before=before,
                                      link_before=link_before, link_after=what[1], mode_before=mode_before))
                continue
            data, mode = (what if isinstance(what, tuple) else (what, 0o644))
            if p.is_symlink():
                p.unlink()
            p.write_bytes(data)
            os.chmod(p, mode)
            changes.append(Change(path=str(p), kind="modified" if was else "created", before=before, after=data,
                                  mode_before=mode_before, mode_after=mode, link_before=link_before))
        checkpoints.record(call_id=call, tool=tool, workspace=self.ws, changes=changes)
        return call


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


@pytest.fixture
def land(ws: Path) -> Land:
    return Land(ws)


def test_created_deleted_and_modified_go_back_modes_and_links_too(ws: Path, land: Land) -> None:
    (ws / "data.csv").write_bytes(b"a,b\n")
    os.chmod(ws / "data.csv", 0o640)
    (ws / "run.sh").write_bytes(b"echo hi\n")
    os.chmod(ws / "run.sh", 0o755)
    (ws / "old").mkdir()
    (ws / "old" / "notes.txt").write_bytes(b"keep me\n")
    (ws / "latest").symlink_to("data.csv")
    before = {p: _state(ws / p) for p in ("data.csv", "run.sh", "old", "old/notes.txt", "latest")}
    call = land([("new/mod.py", b"x = 1\n"), ("data.csv", (b"overwritten\n", 0o666)), ("old/notes.txt", None),
                 ("old", None), ("run.sh", (b"echo hi\n", 0o600)), ("latest", ("link", "/etc/passwd")),
                 ("made", "dir")])
    assert ledger.lookup(str(ws / "new/mod.py")) is not None
    result = rollback.rollback(call)
    assert result.kept == () and result.calls == (call,)
    assert {p: _state(ws / p) for p in before} == before
    assert not (ws / "new" / "mod.py").exists() and not (ws / "made").exists()
    assert ledger.lookup(str(ws / "new/mod.py")) is None and ledger.lookup(str(ws / "data.csv")) is None
    assert [cp.undone for cp in checkpoints.checkpoints() if cp.call_id == call] == [True]
    with pytest.raises(rollback.RollbackError, match="rolled back already"):
        rollback.rollback(call)


def test_a_hand_edit_is_kept_and_named_and_the_rest_is_undone(ws: Path, land: Land) -> None:
    call = land([("a.py", b"model a\n"), ("b.py", b"model b\n")])
    (ws / "a.py").write_bytes(b"model a\n# the person's fix\n")
    result = rollback.rollback(call)
    assert result.kept == ((str(ws / "a.py"), f"edited by hand after call {call} wrote it; kept as it is"),)
    assert result.restored == (str(ws / "b.py"),)
    assert (ws / "a.py").read_bytes() == b"model a\n# the person's fix\n" and not (ws / "b.py").exists()
    # the kept file is still the call's: a second try keeps it again, and the call is not marked undone
    assert rollback.rollback(call).kept[0][0] == str(ws / "a.py")
    assert [cp.undone for cp in checkpoints.checkpoints() if cp.call_id == call] == [False]


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda p: p.write_bytes(b"other\n"), "content changed"),
    (lambda p: p.unlink(), "deleted by hand"),
    (lambda p: (p.unlink(), p.symlink_to("/etc/hostname")), "replaced by a link"),
    (lambda p: (p.unlink(), p.mkdir()), "replaced by a folder"),
])
def test_every_kind_of_hand_edit_is_kept(ws: Path, land: Land, edit, reason: str) -> None:
    (ws / "f.txt").write_bytes(b"the person's\n")
    call = land([("f.txt", b"the model's\n")])
    edit(ws / "f.txt")
    after_edit = _state(ws / "f.txt")
    result = rollback.rollback(call)
    assert [p for p, _ in result.kept] == [str(ws / "f.txt")], reason
    assert _state(ws / "f.txt") == after_edit, reason


def test_a_later_call_blocks_one_call_and_since_undoes_both(ws: Path, land: Land) -> None:
    (ws / "f.py").write_bytes(b"v0\n")
    first = land([("f.py", b"v1\n"), ("g.py", b"g\n")])
    second = land([("f.py", b"v2\n")], tool="patch")
    result = rollback.rollback(first)
    assert result.kept == ((str(ws / "f.py"), f"call {second} changed it later (roll that back first, or use "
                                              "--since)"),)
    assert not (ws / "g.py").exists() and (ws / "f.py").read_bytes() == b"v2\n"
    result = rollback.rollback(since=first)
    assert result.calls == (first, second) and result.kept == ()
    assert (ws / "f.py").read_bytes() == b"v0\n" and ledger.lookup(str(ws / "f.py")) is None


def test_undoing_the_latest_leaves_the_earlier_model_write_in_the_ledger(ws: Path, land: Land) -> None:
    first = land([("m.py", b"v1\n")])
    land_second = land([("m.py", b"v2\n")])
    rollback.rollback(land_second)
    assert (ws / "m.py").read_bytes() == b"v1\n"
    entry = ledger.model_written(str(ws / "m.py"))
    assert entry is not None and entry.call_id == first  # still the model's: the guard still refuses it


def test_a_hand_edit_between_two_calls_is_kept_by_since(ws: Path, land: Land) -> None:
    first = land([("f.py", b"v1\n")])
    (ws / "f.py").write_bytes(b"v1 + the person's line\n")
    second = land([("f.py", b"v2\n")])
    result = rollback.rollback(since=first)
    assert result.kept == ((str(ws / "f.py"), f"edited by hand between calls {first} and {second}; kept as "
                                              "it is"),)
    assert (ws / "f.py").read_bytes() == b"v2\n"


def test_a_folder_the_person_filled_since_stays(ws: Path, land: Land) -> None:
    call = land([("made", "dir"), ("made/a.txt", b"a")])
    (ws / "made" / "mine.txt").write_bytes(b"mine")
    result = rollback.rollback(call)
    assert result.restored == (str(ws / "made/a.txt"),)
    assert [p for p, _ in result.kept] == [str(ws / "made")] and (ws / "made" / "mine.txt").exists()


# --- link safety: a link planted where the restore writes never redirects it ------------------------------
# Each row: the call's change, then what is planted at the path (or a folder above it) between the check for
# hand edits and the write — the check itself would catch a link there — and what the restore must do.

LINK_ROWS = [
    ("modified", "link", "replaced", "a modified file's restore renames over the link"),
    ("modified", "folder_link", "kept", "a folder above swapped for a link: the walk refuses to follow it"),
    ("modified", "hard_link", "replaced", "a hard link to an outside file: the rename replaces the name only"),
    ("deleted", "link", "replaced", "a deleted file comes back over the link, not through it"),
    ("created", "link", "removed", "undoing a created file removes the link, never its target"),
    ("deleted_dir", "link", "kept", "a deleted folder's restore never chmods through a link"),
]


@pytest.mark.parametrize(("change", "plant", "outcome", "reason"), LINK_ROWS)
def test_a_link_planted_after_the_check_never_redirects_the_restore(ws: Path, land: Land, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     change: str, plant: str, outcome: str,
                                                                     reason: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "f.txt"
    victim.write_bytes(b"outside, untouched\n")
    os.chmod(victim, 0o600)
    (ws / "sub").mkdir()
    target = ws / "sub" / "f.txt"
    if change in ("modified", "deleted"):
        target.write_bytes(b"pre-image\n")
    if change == "deleted_dir":
        target.mkdir(mode=0o755)
    call = land([("sub/f.txt", {"modified": b"the model's\n", "created": b"the model's\n", "deleted": None,
                                "deleted_dir": None}[change])])
    real_check = rollback._why_kept

    def check_then_plant(*a):
        why = real_check(*a)
        if target.is_dir() and not target.is_symlink():
            target.rmdir()
        elif target.exists() or target.is_symlink():
            target.unlink()
        if plant == "link":
            target.symlink_to(outside if change == "deleted_dir" else victim)
        elif plant == "hard_link":
            os.link(victim, target)
        else:
            (ws / "sub").rmdir()
            (ws / "sub").symlink_to(outside)
        return why

    monkeypatch.setattr(rollback, "_why_kept", check_then_plant)
    before_mode = outside.stat().st_mode
    result = rollback.rollback(call)
    assert victim.read_bytes() == b"outside, untouched\n", reason
    assert os.stat(victim).st_mode & 0o777 == 0o600 and outside.stat().st_mode == before_mode, reason
    if outcome == "replaced":
        assert not target.is_symlink() and target.read_bytes() == b"pre-image\n", reason
    elif outcome == "removed":
        assert not target.exists() and not target.is_symlink(), reason
    else:
        assert [p for p, _ in result.kept] == [str(target)], reason


def test_without_the_defence_a_restore_by_name_follows_the_link(tmp_path: Path) -> None:
    """What the walk and the rename prevent: writing the pre-image back by name goes through a planted link."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"outside\n")
    (tmp_path / "f.txt").symlink_to(victim)
    (tmp_path / "f.txt").write_bytes(b"pre-image\n")
    assert victim.read_bytes() == b"pre-image\n"


def test_bad_call_ids_are_one_line_errors(ws: Path, land: Land) -> None:
    a = land([("x.txt", b"x")])
    with pytest.raises(rollback.RollbackError, match=r"^no checkpoint for call 'nope' in this kernel"):
        rollback.rollback("nope")
    assert rollback.rollback(a[:10]).calls == (a,)  # a unique prefix will do
    with pytest.raises(rollback.RollbackError, match="starts several call ids"):
        land([("y.txt", b"y")])
        land([("z.txt", b"z")])
        rollback.rollback("call_")
    with pytest.raises(rollback.RollbackError, match="not both"):
        rollback.rollback(a, since=a)


def test_a_change_without_a_pre_image_is_kept_and_said(ws: Path) -> None:
    """Without an overlay a full-depth scan sees a file change but not what it held: never truncated."""
    (ws / "seen.txt").write_bytes(b"the model's\n")
    (ws / "new.txt").write_bytes(b"n")
    call = _id()
    checkpoints.record(call_id=call, tool="terminal", workspace=ws, changes=[
        Change(path=str(ws / "seen.txt"), kind="modified", after=b"the model's\n", mode_before=0o644),
        Change(path=str(ws / "gone.txt"), kind="deleted", mode_before=0o644),
        Change(path=str(ws / "new.txt"), kind="created", after=b"n")])
    result = rollback.rollback(call)
    assert result.restored == (str(ws / "new.txt"),)
    assert [p for p, _ in result.kept] == [str(ws / "gone.txt"), str(ws / "seen.txt")]
    assert all("was not kept (the command ran without an overlay" in why for _, why in result.kept)
    assert (ws / "seen.txt").read_bytes() == b"the model's\n" and not (ws / "gone.txt").exists()


def test_undoing_an_approved_change_brings_back_the_earlier_unapproved_one(ws: Path) -> None:
    """The person said yes to call B's version; rolled back, the file is call A's again, which nobody approved."""
    first = _id()
    (ws / "m.py").write_bytes(b"A\n")
    checkpoints.record(call_id=first, tool="write_file", workspace=ws,
                       changes=[Change(path=str(ws / "m.py"), kind="created", after=b"A\n")])
    second = _id()
    (ws / "m.py").write_bytes(b"B\n")
    checkpoints.record(call_id=second, tool="patch", workspace=ws, trusted=["m.py"],
                       changes=[Change(path=str(ws / "m.py"), kind="modified", before=b"A\n", after=b"B\n")])
    assert ledger.model_written(str(ws / "m.py")) is None
    rollback.rollback(second)
    entry = ledger.model_written(str(ws / "m.py"))
    assert (ws / "m.py").read_bytes() == b"A\n" and entry is not None and entry.call_id == first
