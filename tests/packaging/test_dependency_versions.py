"""The MCP tests on the newest mcp 1.x, and the agent tests on openai 2.24 (hermes-agent's pins), each in a
cached venv with an editable install of this repository: the main venv covers mcp 2.x and openai 3.x."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from tests.support.venvs import REPO, cached_venv, run_in

pytestmark = [pytest.mark.packaging, pytest.mark.slow, pytest.mark.timeout(1800)]


@dataclass(frozen=True, slots=True, kw_only=True)
class OtherVersion:
    venv: str
    pin: str  # what differs from the main venv
    dist: str
    major: str  # the major version the venv must end up with
    files: tuple[str, ...]  # the test files that run on it


MCP_TESTS = (
    "tests/tools/test_mcp_tool.py",
    "tests/tools/test_mcp_faults.py",
    "tests/tools/test_mcp_config.py",
    "tests/tools/test_mcp_sdk.py",
    "tests/hermes_nb/test_mcp_kernel.py",
)
AGENT_TESTS = (
    "tests/hermes_nb/test_agent.py",
    "tests/hermes_nb/test_agent_kernel.py",
    "tests/hermes_nb/test_agent_approval_kernel.py",
    "tests/hermes_nb/test_agent_magics.py",
    "tests/hermes_nb/test_models.py",
    "tests/hermes_nb/test_replay.py",
)
VERSIONS = [
    OtherVersion(venv="mcp1", pin="mcp<2", dist="mcp", major="1", files=MCP_TESTS),
    OtherVersion(venv="openai224", pin="openai==2.24.0", dist="openai", major="2", files=AGENT_TESTS),
]


@pytest.mark.parametrize("other", VERSIONS, ids=lambda v: v.venv)
def test_suite_passes_on_another_dependency_version(other: OtherVersion):
    # editable: the source is live, so only a change of the requirements rebuilds the venv
    requirements = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    venv = cached_venv(other.venv, [["-e", f"{REPO}[dev]", other.pin]], extra_digest=requirements)
    got = run_in(venv, ["python", "-c", f"import importlib.metadata as m; print(m.version({other.dist!r}))"])
    assert got.stdout.strip().split(".")[0] == other.major, got.stdout + got.stderr
    proc = run_in(
        venv, ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *other.files], cwd=REPO, timeout=1700
    )
    assert proc.returncode == 0, f"{other.pin}: {proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
