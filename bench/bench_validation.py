"""Cost of argument validation: the one-integer hot path against a bare lookup + call + try/except.

Run: ``.venv/bin/python -m bench.bench_validation``. Prints microseconds per call (best of 5).
"""

from __future__ import annotations

import timeit

from hermes_nb.tools.errors import ToolArgumentError
from hermes_nb.tools.schema.validation import compile_validator

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
WIDE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"}, "offset": {"type": "integer", "minimum": 0},
        "limit": {"type": ["integer", "null"]}, "mode": {"enum": ["r", "w"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def _best(fn, number: int = 100_000) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    def handler(args: dict, **kw) -> str:
        return str(args["n"])

    table = {"t": handler}
    args = {"n": 3}

    def baseline() -> str | None:
        try:
            return table["t"](args)
        except Exception:
            return None

    validate = compile_validator(SCHEMA)

    def validated() -> str | None:
        try:
            return table["t"](validate(args))
        except ToolArgumentError:
            return None

    wide = compile_validator(WIDE)
    wide_args = {"path": "a.txt", "offset": 3, "limit": None, "mode": "r", "tags": ["x", "y"]}
    base, full = _best(baseline), _best(validated)
    print(f"baseline lookup+call+try      {base:6.2f} us")
    print(f"validate({{'n': 3}}) alone      {_best(lambda: validate(args)):6.2f} us")
    print(f"validated lookup+call+try     {full:6.2f} us  ({full / base:.1f}x baseline)")
    print(f"validate 5 mixed arguments    {_best(lambda: wide(wide_args)):6.2f} us")
    print(f"validate with coercion        {_best(lambda: validate({'n': '3'})):6.2f} us")


if __name__ == "__main__":
    main()
