"""The sandbox behind the classifier: commands of every adversarial class, run with the classifier
bypassed (``run_command`` directly), cannot write outside the workspace, and leave no process behind."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from hermes_nb.tools.safety import sandbox
from hermes_nb.tools.terminal_tool import run_command
from tests.tools.approval_cases import ADVERSARIAL

pytestmark = pytest.mark.skipif(not sandbox.status().available, reason="no Landlock here: not sandboxed")

# One or more commands per adversarial class that really try to write to OUT (outside the workspace).
CONTAINED: dict[str, list[str]] = {
    "builtin-evaluates": [
        "printf -v 'a[$(touch OUT/b1)]' %s x",
        "test -v 'a[$(touch OUT/b2)]'",
        "declare 'a[$(echo x > OUT/b3)]=1'",
        "let 'x=a[$(touch OUT/b4)]'",
    ],
    "heredoc-body": [
        "cat <<EOF\n$(touch OUT/h1)\nEOF\n",
        "cat <<EOF\n$((a[$(touch OUT/h2)]))\nEOF\n",
        "x='$(touch OUT/h3)'; cat <<EOF\n${x@P}\nEOF\n",
    ],
    "environment-assignment": [
        "HOME=OUT git config --global a.b c",
        "for HOME in OUT; do git config --global a.b c; done",
        "read HOME <<< OUT; git config --global a.b c",
    ],
    "abbreviation-or-cluster": [
        "sort --ou=OUT/a1 /etc/hostname",
        "sort -ro OUT/a2 /etc/hostname",
        "sed --i s/keep/gone/ OUT/victim.txt",
        "sed -ni s/keep/gone/ OUT/victim.txt",
    ],
    "runs-a-written-file": ["bash evil.sh", "./evil.sh", ". ./evil.sh", "python3 evil.py"],
    "glob-in-option-position": ["cd planted && find OUT *"],  # planted/ holds a file named -delete
    "awk-literal-hides-redirect": [
        "awk 'BEGIN{print \"}\" > \"OUT/k1\"}'",
        "awk 'BEGIN{printf \"%s;\", \"x\" > \"OUT/k2\"}'",
    ],
    "option-value-misread": ["xxd -C -r /etc/hostname OUT/v1", "sort -f -o OUT/v2 /etc/hostname"],
    "background-job": ["(sleep 0.2; touch OUT/bg1) & wait", "nohup sh -c 'touch OUT/bg2' & wait"],
}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    ws, out = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "victim.txt").write_text("keep\n")
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(ws))
    script = f"touch {out}/w-$$\nrm -f {out}/victim.txt\n"
    (ws / "evil.sh").write_text("#!/bin/sh\n" + script)
    (ws / "evil.sh").chmod(0o755)
    (ws / "evil.py").write_text(f"open({str(out / 'w-py')!r}, 'w').write('x')\n")
    (ws / "planted").mkdir()
    (ws / "planted" / "-delete").write_text("")
    return ws, out


def test_every_adversarial_class_is_contained(places: tuple[Path, Path]) -> None:
    ws, out = places
    assert set(CONTAINED) == set(ADVERSARIAL)
    for cls, commands in CONTAINED.items():
        for command in commands:
            result = run_command(command.replace("OUT", str(out)), timeout=30)
            assert sorted(p.name for p in out.iterdir()) == ["victim.txt"], (cls, command, result)
            assert (out / "victim.txt").read_text() == "keep\n", (cls, command)


def test_without_the_sandbox_every_contained_command_does_write_outside(
        places: tuple[Path, Path], hermes_home: Path) -> None:
    """The table is honest: switched off, each command changes the folder outside the workspace."""
    _, out = places
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"enabled": False}}))
    for cls, commands in CONTAINED.items():
        for command in commands:
            run_command(command.replace("OUT", str(out)), timeout=30)
            changed = not out.exists() or sorted(p.name for p in out.iterdir()) != ["victim.txt"] or (
                out / "victim.txt").read_text() != "keep\n"
            assert changed, (cls, command)
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            (out / "victim.txt").write_text("keep\n")


def test_the_workspace_the_spill_folder_and_tmpdir_stay_writable(places: tuple[Path, Path]) -> None:
    from hermes_nb.tools.budget import spill_dir

    ws, _ = places
    spill_dir().mkdir(parents=True, exist_ok=True)
    result = run_command(f"echo a > made.txt && mkdir -p sub && mv made.txt sub/ && touch {spill_dir()}/s "
                         "&& touch $TMPDIR/t && ls $TMPDIR && echo hi > /dev/null", timeout=30)
    assert result["exit_code"] == 0, result
    assert (ws / "sub" / "made.txt").read_text() == "a\n" and (spill_dir() / "s").exists()
    assert result["stdout"] == "t\n"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize("command", [
    "sleep 600 & echo $!",
    "nohup sleep 600 >/dev/null 2>&1 & echo $!",
    "(sleep 600 &) ; sleep 0; pgrep -n -f 'sleep 600'",
    "setsid sleep 600 >/dev/null 2>&1 & echo $!",  # a new session leaves the process group
    "python3 -c \"import os,sys,time\nif os.fork()==0:\n  try: os.setsid()\n  except OSError: pass\n"
    "  print(os.getpid(), flush=True); time.sleep(600)\n\" & wait",
])
def test_background_jobs_die_with_the_call(places: tuple[Path, Path], command: str) -> None:
    result = run_command(command, timeout=30)
    pid = int(result["stdout"].split()[-1])
    deadline = time.monotonic() + 30  # SIGKILL was sent when the call ended; dying takes a moment
    while _alive(pid) and time.monotonic() < deadline:
        threading.Event().wait(0.02)
    assert not _alive(pid), result


def test_the_kernel_cannot_be_signalled(places: tuple[Path, Path]) -> None:
    if sandbox.landlock_abi() < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    result = run_command(f"kill -0 {os.getpid()}; echo rc=$?", timeout=30)
    assert "rc=1" in result["stdout"]


def test_network_off_refuses_tcp(places: tuple[Path, Path], hermes_home: Path) -> None:
    if sandbox.landlock_abi() < 4:
        pytest.skip("TCP rules need Landlock ABI 4")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = (f"{sys.executable} -c \"import socket; s=socket.socket(); "
             f"print(s.connect_ex(('127.0.0.1', {port})))\"")
    try:
        assert run_command(probe, timeout=30)["stdout"].strip() == "0"  # default: network on
        (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"network": False}}))
        assert run_command(probe, timeout=30)["stdout"].strip() != "0"
    finally:
        server.close()


def test_status_says_not_sandboxed_when_switched_off(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"enabled": False}}))
    state = sandbox.status()
    assert not state.available and state.detail.startswith("not sandboxed")
    from hermes_nb.tools.approval import command_ask

    ask = command_ask("rm -rf build")
    assert ask is not None and "Not sandboxed" in ask.description


def test_status_names_the_mechanism() -> None:
    state = sandbox.status()
    assert state.mechanism.startswith("landlock ABI") and state.detail.startswith("sandboxed:")


def test_tools_doctor_names_the_sandbox() -> None:
    from hermes_nb.magics.tools import _doctor

    rows = [r for r in _doctor().rows if r[1] == "sandbox"]
    assert rows and rows[0][3] == sandbox.status().detail


def test_a_command_cannot_rewrite_the_rules_or_the_always_file(places: tuple[Path, Path], hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("# mine\n")
    result = run_command(f"echo 'approvals: {{tools: {{terminal: allow}}}}' > {hermes_home}/config.yaml; "
                         f"echo '{{}}' > {hermes_home}/always_approved.json", timeout=30)
    assert "Permission denied" in result["stderr"]
    assert (hermes_home / "config.yaml").read_text() == "# mine\n"
    assert not (hermes_home / "always_approved.json").exists()
