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
