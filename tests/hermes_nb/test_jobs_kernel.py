"""Background jobs in a real kernel: a job started from a cell is a live card, and every job ends with the kernel.

Run twice: sandboxed (bubblewrap's pid namespace and ``--die-with-parent`` end them too) and with the sandbox
switched off, where only the extension's ``atexit`` ends them (a job in its own session survives a kernel
that forgot it).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.support.bubblewrap import live_pids, require_bwrap
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.slow]


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unsandboxed"])
def test_jobs_end_with_the_kernel(tmp_path: Path, hermes_home: Path, sandboxed: bool) -> None:
    require_bwrap()
    if not sandboxed:
        (hermes_home / "config.yaml").write_text("sandbox: {enabled: false}\n")
    token = f"kernel-job-{os.getpid()}-{sandboxed}"
    sleeper = f"{sys.executable} -c 'import time; time.sleep(300)' {token}"
    env = {"HERMES_NB_WORKSPACE": str(tmp_path), "HERMES_NB_HOME": str(hermes_home)}
    try:
        with KernelSession(cwd=tmp_path, env=env) as kernel:
            kernel.run("%load_ext hermes_nb")
            # approved as a person would in the prompt: the gate asks before a python command runs
            started = kernel.run(
                "from hermes_nb.tools.registry import registry\n"
                "import json\n"
                f"r = json.loads(registry.dispatch('terminal', {{'command': {sleeper!r}, 'background': True}},"
                " approval_callback=lambda *a: 'once'))\n"
                "print(r['session_id'])")
            sid = started.stdout.strip()
            assert sid.startswith("proc_"), started
            assert any(sid in text for text in started.mime("text/plain")), started.outputs  # its live card
            deadline = time.monotonic() + 30
            while not live_pids(token):
                assert time.monotonic() < deadline, "the job did not start"
                time.sleep(0.05)
            listed = kernel.run("%tools processes")
            assert any(sid in text for text in listed.mime("text/plain")), listed.outputs
        deadline = time.monotonic() + 15  # the kernel is gone: its atexit (and the sandbox) ended the job
        while live_pids(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not live_pids(token)
    finally:
        for pid in live_pids(token):
            os.kill(pid, 9)
