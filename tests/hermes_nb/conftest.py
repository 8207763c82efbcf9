"""Shared by the extension's tests: a plain InteractiveShell with hermes_nb loaded (and unloaded after)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def ip() -> Iterator[Any]:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    yield shell
    shell.run_line_magic("unload_ext", "hermes_nb")


@pytest.fixture(scope="session")
def llama_server() -> Iterator[Any]:
    """One real llama.cpp server (its own, from xllamacpp's wheel; SmolLM2) for the whole run, started on first use."""
    from tests.support.llama_server import running_llama_server

    with running_llama_server() as server:
        yield server
