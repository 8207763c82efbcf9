"""In a real kernel, from inside a sandboxed terminal command (the classifier bypassed): connecting to the
kernel's ports, reading its connection file, reading ``$HERMES_NB_HOME``, writing ``.git/hooks`` and leaving a
process behind (one that left its session) all fail; with the sandbox switched off in the same kernel, each of them works."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.bubblewrap import live_pids, require_bwrap
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.sandbox]

SETUP = """
%load_ext hermes_nb
import json, ipykernel.connect
from hermes_nb.tools.terminal_tool import run_command
from hermes_nb.tools.safety.sandbox.box import status
connection = ipykernel.connect.get_connection_file()
info = json.load(open(connection))
print(status().mechanism)
"""

PROBE = """
token = TOKEN
ports = [info[k] for k in ("shell_port", "control_port", "iopub_port", "stdin_port", "hb_port")]
connect = "; ".join(f"s=socket.socket(); print('port', s.connect_ex(('127.0.0.1', {p})))" for p in ports)
out = {
    "ports": run_command(f"{sys.executable} -c \\"import socket; {connect}\\"")["stdout"],
    "connection": run_command(f"cat {connection}")["stdout"],
    "home": run_command(f"cat {os.environ['HERMES_NB_HOME']}/config.yaml")["stdout"],
    "hook": run_command("echo 'touch hooked' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit; echo done"),
    # the job says when it runs in its own session, so the call cannot end (and kill its group) before
    "left": run_command(f"setsid {sys.executable} -c 'import os, time; open(os.environ[\\"TMPDIR\\"] + \\"/up\\", "
                        f"\\"w\\").close(); time.sleep(120)' {token} >/dev/null 2>&1 & "
                        "while [ ! -e \\"$TMPDIR/up\\" ]; do sleep 0.01; done; echo started"),
    "key": info["key"],
}
print(json.dumps(out))
"""


def _probe(k: KernelSession, token: str) -> dict:
    cell = k.run("import os, sys\n" + PROBE.replace("TOKEN", repr(token)), timeout=120)
    assert cell.status == "ok", cell.stderr
    return json.loads(cell.stdout.strip().splitlines()[-1])


def test_from_inside_a_sandboxed_command_the_kernel_is_out_of_reach(tmp_path: Path) -> None:
    require_bwrap()
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (home / "config.yaml").write_text("# the person's rules: secret-rules\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    with KernelSession(cwd=ws, env={"HERMES_NB_HOME": str(home), "HERMES_NB_WORKSPACE": str(ws)}) as k:
        setup = k.run(SETUP, timeout=120)
        assert setup.status == "ok" and "bubblewrap" in setup.stdout, setup.stderr
        inside = _probe(k, "hermes-nb-kernel-in")
        assert inside["ports"].count("port ") == 5 and "port 0" not in inside["ports"], inside["ports"]
        assert inside["key"] and inside["key"] not in inside["connection"]
        assert "secret-rules" not in inside["home"]
        assert not (ws / ".git/hooks/pre-commit").exists(), inside["hook"]
        assert inside["left"]["stdout"] == "started\n" and live_pids("hermes-nb-kernel-in") == []
        # the same kernel, the sandbox switched off: every one of them gets through
        (home / "config.yaml").write_text("sandbox: {enabled: false}\n# secret-rules\n")
        outside = _probe(k, "hermes-nb-kernel-out")
    try:
        assert outside["ports"].count("port 0") == 5, outside["ports"]
        assert outside["key"] in outside["connection"] and "secret-rules" in outside["home"]
        assert (ws / ".git/hooks/pre-commit").exists()
        assert live_pids("hermes-nb-kernel-out"), "unsandboxed, a job that left the session outlives its call"
    finally:
        for pid in live_pids("hermes-nb-kernel-out"):
            subprocess.run(["kill", "-9", str(pid)], check=False)
