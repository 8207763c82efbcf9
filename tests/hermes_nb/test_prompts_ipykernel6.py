"""The prompt kernel tests again on ipykernel 6.29, whose blocked cells get clicks through
``jupyter_ui_poll`` (ipykernel 7 is read through its shell socket instead: see ``hermes_nb.display.prompts``).

A cached venv (``.venv-ipykernel629``: this checkout installed editable, ipykernel 6.29) runs just the
prompt kernel tests; its kernels are that venv's Python, so every click and ■ there meets ipykernel 6.29.
"""

from __future__ import annotations

import pytest

from tests.support.venvs import REPO, cached_venv, run_in

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(900)]

PROMPT_KERNEL_TESTS = ["tests/hermes_nb/test_prompts_kernel.py", "tests/hermes_nb/test_agent_approval_kernel.py"]


def test_prompt_kernel_tests_pass_on_ipykernel_6_29() -> None:
    venv = cached_venv("ipykernel629", [["-e", str(REPO), "ipykernel==6.29.*", "pytest>=8", "pytest-timeout>=2.3",
                                         "jupyter_client>=8", "nbclient>=0.10", "nbformat>=5.10"]])
    version = run_in(venv, ["python", "-c", "import ipykernel; print(ipykernel.__version__)"])
    assert version.stdout.startswith("6.29."), version.stdout + version.stderr
    proc = run_in(venv, ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *PROMPT_KERNEL_TESTS],
                  cwd=REPO, timeout=840, env={"HERMES_NB_EXPECT_IPYKERNEL": "6.29."})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "skipped" not in proc.stdout and " passed" in proc.stdout, proc.stdout[-2000:]
