"""A Python function → a JSON schema and a handler (``derive``), docstring parsing, argument validation.

Names are re-exported lazily, so the registry can import ``schema.validation`` without loading ``derive``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["FunctionSchema", "compile_validator", "function_schema", "make_handler", "tool", "validate_arguments"]

_HOMES = {
    "FunctionSchema": "derive", "function_schema": "derive", "make_handler": "derive", "tool": "derive",
    "compile_validator": "validation", "validate_arguments": "validation",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
