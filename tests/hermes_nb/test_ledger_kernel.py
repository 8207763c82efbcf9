"""In a real kernel: a write_file and a sandboxed command undone by %rollback, a hand edit kept; and the import
guard refusing a module the model wrote until %trust (and not refusing it once the extension is unloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.slow]

CALLS = """
from hermes_nb.tools.file_tools import write_file
from hermes_nb.tools.terminal_tool import run_command
import hermes_nb, json
write_file("notes.txt", "the model's notes\\n")
print(run_command("printf 'made by a command\\\\n' > cmd.txt; echo 'the model was here' >> data.csv")["exit_code"])
write_file("hand.txt", "the model's line\\n")
print("IDS", json.dumps([[c.call_id, c.tool] for c in hermes_nb.rollback()]))
"""


def _ids(out: str) -> list[list[str]]:
    return json.loads(next(line for line in out.splitlines() if line.startswith("IDS "))[4:])


def test_rollback_in_a_kernel_undoes_write_file_and_a_command_and_keeps_a_hand_edit(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "data.csv").write_text("a,b\n1,2\n")
    with KernelSession(cwd=ws, env={"HERMES_NB_HOME": str(home), "HERMES_NB_WORKSPACE": str(ws)}) as k:
        assert k.run("%load_ext hermes_nb").status == "ok"
        cell = k.run(CALLS, timeout=120)
        assert cell.status == "ok", cell.stderr
        (notes, _), (command, tool), (hand, _) = _ids(cell.stdout)
        assert tool == "terminal"
        assert (ws / "cmd.txt").read_text() == "made by a command\n"
        assert (ws / "data.csv").read_text() == "a,b\n1,2\nthe model was here\n"
        listed = k.run("%rollback")
        assert all(i in listed.text for i in (notes, command, hand)) and "cmd.txt (created)" in listed.text
        (ws / "hand.txt").write_text("the model's line\nand the person's\n")  # a hand edit after the model
        assert k.run(f"%rollback {notes}").status == "ok"
        assert not (ws / "notes.txt").exists()
        assert k.run(f"%rollback {command}").status == "ok"
        assert not (ws / "cmd.txt").exists() and (ws / "data.csv").read_text() == "a,b\n1,2\n"
        kept = k.run(f"%rollback {hand}")
        assert f"kept {ws / 'hand.txt'}: edited by hand after call {hand} wrote it" in kept.stdout, kept.stdout
        assert (ws / "hand.txt").read_text() == "the model's line\nand the person's\n"
        bad = k.run("%rollback call_nope")
        assert "UsageError: %rollback: no checkpoint for call 'call_nope' in this kernel" in bad.stderr, bad


GUARDED = """
import sys
from hermes_nb.tools.file_tools import write_file
# a folder no import could name (not an identifier): the landing policy lets these land without asking
write_file("lib-vendor/helper.py", "open('RAN-helper', 'w').close()\\nVALUE = 1\\n")
write_file("lib-vendor/other.py", "open('RAN-other', 'w').close()\\n")
sys.path.insert(0, "lib-vendor")  # then the person's code puts it on the path
try:
    import helper
except ImportError as exc:
    print("REFUSED", exc)
"""


def test_the_guard_in_a_kernel_refuses_until_trust_and_leaves_with_the_unload(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    with KernelSession(cwd=ws, env={"HERMES_NB_HOME": str(home), "HERMES_NB_WORKSPACE": str(ws)}) as k:
        assert k.run("%load_ext hermes_nb").status == "ok"
        cell = k.run(GUARDED, timeout=120)
        assert cell.status == "ok", cell.stderr
        assert f"REFUSED refusing to import 'helper': {ws / 'lib-vendor/helper.py'} was written by the model" in cell.stdout
        assert f"%trust {ws / 'lib-vendor/helper.py'}" in cell.stdout and not (ws / "RAN-helper").exists()
        trusted = k.run("%trust lib-vendor/helper.py\nimport helper\nprint(helper.VALUE)")
        assert trusted.status == "ok" and trusted.stdout.strip().endswith("1"), trusted.stderr
        assert (ws / "RAN-helper").exists()
        # the guard is the extension's: unloaded, the kernel imports the other file the model wrote
        refused = k.run("try:\n    import other\nexcept ImportError as e:\n    print('REFUSED', e)")
        assert "REFUSED" in refused.stdout and not (ws / "RAN-other").exists()
        assert k.run("%unload_ext hermes_nb\nimport other").status == "ok"
        assert (ws / "RAN-other").exists()


def test_a_storemagic_the_model_wrote_runs_at_the_kernels_start_and_the_load_says_so(tmp_path: Path) -> None:
    """IPython imports its default extension from the working folder before any extension loads: the guard
    cannot stop that import (the landing policy asks before such a file lands), so the load names it."""
    from hermes_nb.tools.config import using_home
    from hermes_nb.tools.safety.writes import checkpoints
    from hermes_nb.tools.safety.writes.changes import Change

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    body = b"open('RAN-storemagic', 'w').close()\nraise ModuleNotFoundError('storemagic')\n"
    (ws / "storemagic.py").write_bytes(body)
    with using_home(home):
        checkpoints.record(call_id="call_store", tool="write_file", workspace=ws,
                           changes=[Change(path=str(ws / "storemagic.py"), kind="created", after=body)])
    with KernelSession(cwd=ws, env={"HERMES_NB_HOME": str(home), "HERMES_NB_WORKSPACE": str(ws)}) as k:
        assert (ws / "RAN-storemagic").exists()  # it ran at the start, before anything of ours
        assert "store" in k.run("print(sorted(get_ipython().magics_manager.magics['line']))").stdout  # IPython's
        loaded = k.run("%load_ext hermes_nb")
    assert (f"hermes_nb: 'storemagic' was imported from {ws / 'storemagic.py'} before hermes_nb loaded, and the "
            "model wrote it (tool call call_store)") in loaded.stderr, loaded.stderr
