"""The ``hermes`` venv: hermes-agent 0.19.0 from PyPI, then the built hermes-nb wheel and a kernel.

Tests of Hermes's tools in the notebook and of ``%tools export`` run against this real Hermes; the
``nohermes`` venv (the same wheel and kernel, no hermes-agent) is the benchmark's baseline.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.venvs import cached_venv, python_of

HERMES_VERSION = "0.19.0"
_KERNEL = ["{wheel}", "ipykernel", "jupyter_client"]


def hermes_venv() -> Path:
    """``.venv-hermes``: hermes-agent first (its pins win), then hermes-nb's wheel and ipykernel."""
    return cached_venv("hermes", [[f"hermes-agent=={HERMES_VERSION}"], _KERNEL])


def nohermes_venv() -> Path:
    """``.venv-nohermes``: the same wheel and kernel, without hermes-agent."""
    return cached_venv("nohermes", [_KERNEL])


def hermes_python() -> Path:
    return python_of(hermes_venv())
