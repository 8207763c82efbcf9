"""Our validator against the reference: with coercion off, its verdict equals ``jsonschema``'s (2020-12)
on generated schemas and instances, for every keyword it claims to enforce."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_nb.tools.errors import ToolArgumentError
from hermes_nb.tools.schema.validation import ANNOTATIONS, ENFORCED_KEYWORDS, compile_validator

NAMES = ["a", "b", "ab", "x1"]
PATTERNS = ["^a", "b$", "[0-9]", "^.{2,}$"]

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 12), st.sampled_from([0.0, 1.0, 2.5, -3.0, 1e300]),
    st.text(alphabet="ab1 ", max_size=4),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(NAMES + ["zz"]), inner, max_size=4),
    ),
    max_leaves=10,
)
kinds = st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null"])


def _leaf() -> st.SearchStrategy[dict]:
    return st.one_of(
        st.builds(lambda k: {"type": k}, kinds),
        st.builds(lambda ks: {"type": ks}, st.lists(kinds, min_size=1, max_size=3, unique=True)),
        st.builds(lambda vs: {"enum": vs}, st.lists(json_scalars, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, json_values),
        st.fixed_dictionaries({}, optional={
            "minimum": st.integers(-3, 5), "maximum": st.integers(0, 10),
            "exclusiveMinimum": st.integers(-3, 5), "exclusiveMaximum": st.integers(0, 10),
            "multipleOf": st.sampled_from([1, 2, 3, 0.5, 2.5]),
        }),
        st.fixed_dictionaries({}, optional={
            "minLength": st.integers(0, 3), "maxLength": st.integers(0, 4), "pattern": st.sampled_from(PATTERNS),
        }),
        st.fixed_dictionaries({}, optional={
            "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 3),
            "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
            "dependentRequired": st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES), max_size=2, unique=True), max_size=2),
        }),
    )


def _composite(inner: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    branches = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        st.builds(lambda b: {"anyOf": b}, branches),
        st.builds(lambda b: {"oneOf": b}, branches),
        st.builds(lambda b: {"allOf": b}, branches),
        st.builds(lambda s: {"not": s}, inner),
        st.fixed_dictionaries({"if": inner}, optional={"then": inner, "else": inner}),
        st.fixed_dictionaries({}, optional={
            "items": inner, "prefixItems": st.lists(inner, max_size=2), "contains": inner,
            "minContains": st.integers(0, 2), "maxContains": st.integers(0, 3),
            "minItems": st.integers(0, 2), "maxItems": st.integers(0, 4), "uniqueItems": st.booleans(),
        }),
        st.fixed_dictionaries({}, optional={
            "type": st.just("object"),
            "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
            "patternProperties": st.dictionaries(st.sampled_from(PATTERNS), inner, max_size=2),
            "additionalProperties": st.one_of(st.booleans(), inner),
            "propertyNames": inner,
        }),
    )


schemas = st.recursive(_leaf(), _composite, max_leaves=6)


def _reference(schema: dict, instance: object) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def _ours(schema: dict, instance: object) -> bool:
    validate = compile_validator(schema, coerce=False)
    try:
        validate(instance)  # type: ignore[arg-type]
    except ToolArgumentError:
        return False
    return True


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, instance=st.one_of(json_scalars, json_values))
def test_verdict_equals_jsonschema(schema: dict, instance: object) -> None:
    assert _ours(schema, instance) == _reference(schema, instance), (schema, instance)


@pytest.mark.parametrize(("schema", "instance", "valid"), [
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 3, False),  # fits both: not exactly one
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 3, True),
    ({"not": {"type": "string"}}, "x", False),
    ({"multipleOf": 0.5}, 2.5, True),
    ({"multipleOf": 2}, 3, False),
    ({"if": {"type": "integer"}, "then": {"minimum": 5}, "else": {"type": "string"}}, 3, False),
    ({"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": False}, {"ab": 1}, True),
    ({"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": False}, {"b": 1}, False),
    ({"contains": {"type": "string"}, "minContains": 2}, ["a", 1], False),
    ({"minProperties": 2}, {"a": 1}, False),
    ({"uniqueItems": True}, [[1], [1.0]], False),  # JSON equality inside arrays
])
def test_keywords_the_issue_named(schema: dict, instance: object, valid: bool) -> None:
    assert _ours(schema, instance) is valid
    assert _reference(schema, instance) is valid


def test_one_of_with_coercion_takes_the_single_fitting_branch() -> None:
    validate = compile_validator({"type": "object", "properties": {
        "n": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}}})
    assert validate({"n": "7"}) == {"n": 7}
    with pytest.raises(ToolArgumentError, match="exactly one"):
        compile_validator({"type": "object", "properties": {
            "n": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}})({"n": 2})


def test_unenforced_keywords_are_listed_not_silently_ignored() -> None:
    validate = compile_validator({"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time", "description": "d"},
        "x": {"unevaluatedProperties": False}}})
    assert validate.unenforced == ("format", "unevaluatedProperties")  # type: ignore[attr-defined]
    assert "format" not in ENFORCED_KEYWORDS | ANNOTATIONS


def test_registry_reports_unenforced_keywords_once_for_doctor(fresh_registry) -> None:
    from hermes_nb.tools.sources.load_report import clear_failures, failures

    schema = {"name": "when", "description": "d", "parameters": {
        "type": "object", "properties": {"at": {"type": "string", "format": "date"}}}}
    fresh_registry.register("when", "t", schema, lambda args, **kw: "ok")
    reported = [f for f in failures() if (f.source, f.name) == ("schema", "when")]
    assert len(reported) == 1 and "format" in reported[0].message
    schema["parameters"]["properties"]["at"].pop("format")
    fresh_registry.register("when", "t", schema, lambda args, **kw: "ok")
    assert not [f for f in failures() if (f.source, f.name) == ("schema", "when")]
    clear_failures("schema")
