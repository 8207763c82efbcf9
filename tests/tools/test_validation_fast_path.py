"""The generated validators (``tools.schema.fast_path``) accept exactly what the compiled checks accept, unchanged,
and leave everything else (errors, coercion) to them: same result, same message, for any input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_nb.tools.errors import ToolArgumentError
from hermes_nb.tools.schema.fast_path import fast_validator
from hermes_nb.tools.schema.validation import compile_validator

FLAT = [
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": ["string", "null"]},
                                      "b": {"type": "boolean", "description": "flag"}}, "required": ["s"]},
    {"type": "object", "properties": {"x": {"type": "number"}, "xs": {"type": "array"}, "o": {"type": "object"}},
     "additionalProperties": False},
    {"type": "object", "properties": {"odd name \"'\\n": {"type": "string"}}, "required": ["odd name \"'\\n"]},
    {"type": "object", "properties": {}},
    {"type": "object", "properties": {}, "additionalProperties": False},
    {"properties": {"a": {"type": "string"}}},
]
NOT_FLAT = [  # (schema, why the generated path must not take it)
    ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}, "a value keyword"),
    ({"type": "object", "properties": {"n": {"enum": [1, 2]}}}, "no type"),
    ({"type": "object", "properties": {"n": {"type": "integer"}}, "minProperties": 1}, "an object keyword"),
    ({"type": "object", "properties": {"n": {"type": "string"}}, "additionalProperties": {"type": "string"}},
     "a schema for extra names"),
    ({"type": "object", "properties": {"n": {"type": "string"}}, "required": ["m"]}, "required without property"),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def _verdict(validate: Any, args: Any) -> tuple[str, Any]:
    try:
        return "ok", validate(args)
    except ToolArgumentError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("schema", FLAT)
def test_flat_schemas_get_generated_code(schema: dict[str, Any]) -> None:
    assert fast_validator(schema, lambda args: args) is not None


@pytest.mark.parametrize(("schema", "why"), NOT_FLAT)
def test_other_schemas_keep_the_compiled_checks(schema: dict[str, Any], why: str) -> None:
    assert fast_validator(schema, lambda args: args) is None, why


@settings(max_examples=300, deadline=None)
@given(schema=st.sampled_from(FLAT), data=st.data())
def test_generated_and_compiled_agree(schema: dict[str, Any], data: st.DataObject) -> None:
    names = list(schema.get("properties", {})) + ["other"]
    args = data.draw(st.one_of(
        st.dictionaries(st.sampled_from(names), json_values, max_size=4), json_values))
    fast = compile_validator(schema)
    slow = compile_validator(schema, generated=False)
    assert fast is not slow
    assert _verdict(fast, args) == _verdict(slow, args)


def test_valid_arguments_come_back_as_they_are() -> None:
    fast = compile_validator(FLAT[1])
    args = {"s": None, "n": 3, "b": True}
    assert fast(args) is args


def test_bool_is_not_an_integer_and_strings_are_still_coerced() -> None:
    fast = compile_validator(FLAT[0])
    with pytest.raises(ToolArgumentError, match="must be an integer"):
        fast({"n": True})
    assert fast({"n": "3"}) == {"n": 3}
