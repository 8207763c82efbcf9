"""%rollback and %trust in a shell, and hermes_nb.rollback: thin over tools.safety.writes.rollback and the ledger."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.tools.safety.writes import checkpoints, ledger
from hermes_nb.tools.safety.writes.changes import Change


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(root))
    monkeypatch.chdir(root)
    return root


def _write(ws: Path, rel: str, data: bytes) -> str:
    call = f"call_{uuid.uuid4().hex[:10]}"
    (ws / rel).write_bytes(data)
    checkpoints.record(call_id=call, tool="write_file", workspace=ws,
                       changes=[Change(path=str(ws / rel), kind="created", after=data, mode_after=0o644)])
    return call


def test_rollback_lists_then_undoes_a_call(ip: Any, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    call = _write(ws, "notes.py", b"x = 1\n")
    table = ip.run_line_magic("rollback", "")
    text = repr(table)
    assert "checkpoints of this kernel" in text and call in text and "notes.py (created)" in text
    assert "<table" in table._repr_html_() and "write_file" in table._repr_html_()
    assert ip.run_line_magic("rollback", call) is None
    assert f"rolled back {call}: 1 path restored" in capsys.readouterr().out
    assert not (ws / "notes.py").exists()
    assert "undone" in repr(ip.run_line_magic("rollback", ""))


def test_rollback_since_and_its_usage_errors_are_one_line(ip: Any, ws: Path) -> None:
    first = _write(ws, "a.py", b"a")
    _write(ws, "b.py", b"b")
    ip.run_line_magic("rollback", f"--since {first}")
    assert not (ws / "a.py").exists() and not (ws / "b.py").exists()
    for line, message in [("call_nope", "%rollback: no checkpoint for call 'call_nope' in this kernel"),
                          (f"{first} --since {first}", "%rollback: give CALL_ID or --since CALL_ID, not both"),
                          (first, f"%rollback: call {first} was rolled back already"),
                          ("--bogus", "%rollback:")]:
        with pytest.raises(UsageError) as err:
            ip.run_line_magic("rollback", line)
        assert str(err.value).startswith(message) and "\n" not in str(err.value), (line, str(err.value))


def test_trust_lets_one_file_import_and_lists_the_rest(ip: Any, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    call = _write(ws, "helpers.py", b"VALUE = 1\n")
    _write(ws, "other.py", b"VALUE = 2\n")
    _write(ws, "data.csv", b"a,b\n")
    ip.run_line_magic("trust", "")
    listed = capsys.readouterr().out
    assert "data.csv" not in listed  # data: no import opens it
    assert f"{ws / 'helpers.py'}  (call {call}, write_file)" in listed and str(ws / "other.py") in listed
    ip.run_line_magic("trust", "helpers.py")
    assert f"trusted {ws / 'helpers.py'} (written by call {call}, write_file)" in capsys.readouterr().out
    assert ledger.lookup(str(ws / "helpers.py")) is None and ledger.lookup(str(ws / "other.py")) is not None
    with pytest.raises(UsageError, match=r"^%trust: nothing\.py is not a file the model wrote"):
        ip.run_line_magic("trust", "nothing.py")


@pytest.mark.parametrize(("magic", "example"), [("rollback", "%rollback --since call_"), ("trust", "%trust helpers.py")])
def test_help_shows_usage_and_an_example(ip: Any, magic: str, example: str) -> None:
    doc = ip.find_line_magic(magic).__doc__
    assert "Example::" in doc and example in doc and f"%{magic} [" in doc  # the usage line, then the example


def test_the_magics_leave_with_the_unload(ip: Any) -> None:
    assert {"rollback", "trust"} <= set(ip.magics_manager.magics["line"])
    ip.run_line_magic("unload_ext", "hermes_nb")
    assert not {"rollback", "trust"} & set(ip.magics_manager.magics["line"])
    ip.run_line_magic("load_ext", "hermes_nb")
    assert {"rollback", "trust"} <= set(ip.magics_manager.magics["line"])


def test_hermes_nb_rollback_is_exported_lazily() -> None:
    code = ("import sys, hermes_nb\nassert 'hermes_nb.magics.rollback' not in sys.modules\n"
            "assert 'rollback' in hermes_nb.__all__ and 'rollback' in dir(hermes_nb)\n"
            "assert hermes_nb.rollback().items == ()\nprint('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_hermes_nb_rollback_is_the_magics_core(ws: Path) -> None:
    import hermes_nb

    call = _write(ws, "p.py", b"p")
    assert call in repr(hermes_nb.rollback())
    result = hermes_nb.rollback(call[:12])
    assert result.restored == (str(ws / "p.py"),) and repr(result).startswith(f"rolled back {call}: 1 path")
