"""Property: whatever a model (or a fuzzer) throws at dispatch, it answers with a string and never raises."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_nb.tools.registry import ToolRegistry

REG = ToolRegistry()
REG.register(
    "num",
    "fuzz",
    {
        "description": "One integer, one enum, one nested object.",
        "parameters": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "opts": {"type": "object", "properties": {"x": {"type": "number"}}, "additionalProperties": False},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["n"],
            "additionalProperties": False,
        },
    },
    lambda args, **kw: {"echo": args},
)
REG.register("raiser", "fuzz", {"parameters": {"type": "object"}}, lambda args, **kw: 1 / 0)

junk_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.binary(max_size=20),
)
junk = st.recursive(
    junk_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4),
        st.tuples(inner, inner),
    ),
    max_leaves=20,
)
names = st.one_of(st.sampled_from(["num", "raiser", "missing", ""]), st.text(max_size=20), junk_scalars)


def _json_text(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


args_strategy = st.one_of(
    junk,
    junk.map(_json_text),
    st.text(max_size=60),
    st.fixed_dictionaries({"n": junk}, optional={"mode": junk, "opts": junk, "tags": junk, "zz": junk}),
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, args=args_strategy)
def test_dispatch_never_raises_and_always_answers_a_string(name, args):
    out = REG.dispatch(name, args)  # type: ignore[arg-type]
    assert isinstance(out, str)
    parsed = json.loads(out)  # every answer is JSON here: a result or an error object
    if "error" in parsed:
        assert isinstance(parsed["error"], str) and parsed["error"]
    else:
        echoed = parsed["echo"]
        assert isinstance(echoed["n"], int) and echoed["n"] >= 0
        assert set(echoed) <= {"n", "mode", "opts", "tags"}


@settings(max_examples=300, deadline=None)
@given(x=st.floats())
def test_non_finite_numbers_never_reach_a_handler(x):
    out = json.loads(REG.dispatch("num", {"n": 1, "opts": {"x": x}}))
    if math.isfinite(x):
        assert out == {"echo": {"n": 1, "opts": {"x": x}}}
    else:
        assert "error" in out
