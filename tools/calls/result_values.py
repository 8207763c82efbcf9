"""Values Python users return from a tool, as JSON for the model: the one conversion table.

``json.dumps(result, default=to_json_value)`` calls ``to_json_value`` for anything JSON does not know:

========================  ===========================================================================
returned value            what the model gets
========================  ===========================================================================
pandas ``DataFrame``      ``{"columns": [...], "rows": N, "records": [{column: value}, ...]}``; at most
                          ``MAX_ROWS`` records, and then ``"note"`` says how many rows were not sent.
                          Missing values are ``null``, timestamps ISO 8601 (pandas' own ``to_json``).
pandas ``Series``         ``{"name": ..., "rows": N, "values": {index: value}}``, the same row cap
numpy scalar              the Python number / bool (``np.float64(1.5)`` → ``1.5``)
numpy ``ndarray``         nested lists (``tolist()``), NaN/inf → ``null``; past ``MAX_ITEMS`` elements
                          ``{"shape", "dtype", "values": first MAX_ITEMS flat, "note"}``
``datetime``/``date``/    ISO 8601 text (``"2024-05-01T12:00:00+00:00"``)
``time``
``Decimal``               its exact text (``"1.10"``): a float could change it
``Path``, ``UUID``        its text
``set``/``frozenset``     a list, sorted when the items sort
``Enum`` member           its value
dataclass instance        an object of its fields (``dataclasses.asdict``)
pydantic model            ``model_dump(mode="json")``
========================  ===========================================================================

Anything else stays an error result naming the type. Only modules the value's type comes from are
consulted (``type(v).__module__``), so pandas and numpy are never imported here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any

__all__ = ["MAX_ITEMS", "MAX_ROWS", "conversion_note", "to_json_value"]

#: Rows of a DataFrame / Series sent to the model; the rest is counted in a note.
MAX_ROWS = 50
#: Elements of a numpy array sent to the model.
MAX_ITEMS = 10_000


def _module(value: Any) -> str:
    return type(value).__module__.partition(".")[0]


def to_json_value(value: Any) -> Any:
    """A JSON-ready stand-in for ``value`` (see the table above); TypeError when there is none."""
    module = _module(value)
    if module == "pandas":
        if hasattr(value, "columns") and hasattr(value, "to_json"):
            return _frame(value)
        if hasattr(value, "to_json") and hasattr(value, "index"):
            return _series(value)
        if hasattr(value, "isoformat"):  # Timestamp
            return value.isoformat()
    if module == "numpy":
        if hasattr(value, "shape") and hasattr(value, "tolist") and getattr(value, "ndim", 0) > 0:
            return _array(value)
        if hasattr(value, "item"):
            item = value.item()
            return None if isinstance(item, float) and not math.isfinite(item) else item
    if hasattr(value, "isoformat") and module == "datetime":
        return value.isoformat()
    if module in ("decimal", "uuid", "pathlib", "_decimal", "_pydecimal"):
        return str(value)
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)) and not isinstance(value, type):
        return value.model_dump(mode="json")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def conversion_note(value: Any) -> str:
    """One line saying what the model got instead of ``value`` ("" when JSON takes it as it is)."""
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return ""
    kind = type(value).__name__
    module = _module(value)
    if module == "pandas" and hasattr(value, "to_json") and hasattr(value, "index"):
        rows = len(value)
        shape = "records" if hasattr(value, "columns") else "index → value"
        cut = f", first {MAX_ROWS} of {rows:,} rows" if rows > MAX_ROWS else f", all {rows:,} rows"
        return f"returned a {kind}: the model got JSON ({shape}{cut})"
    if module == "numpy" and getattr(value, "ndim", 0) > 0:
        size = getattr(value, "size", 0)
        cut = f", first {MAX_ITEMS:,} of {size:,} values" if size > MAX_ITEMS else ""
        return f"returned a numpy array {tuple(value.shape)}: the model got nested lists{cut}"
    try:
        to_json_value(value)
    except (TypeError, ValueError):
        return ""
    return f"returned a {kind}: the model got its JSON form (see hermes_nb.tools.calls.result_values)"


def _frame(frame: Any) -> dict[str, Any]:
    rows = len(frame)
    head = frame.head(MAX_ROWS)
    out: dict[str, Any] = {"columns": [str(c) for c in frame.columns], "rows": rows,
                           "records": json.loads(head.to_json(orient="records", date_format="iso"))}
    if rows > MAX_ROWS:
        out["note"] = f"first {MAX_ROWS} of {rows:,} rows; {rows - MAX_ROWS:,} rows not sent"
    return out


def _series(series: Any) -> dict[str, Any]:
    rows = len(series)
    head = series.head(MAX_ROWS)
    values = json.loads(head.to_json(orient="split", date_format="iso"))
    out: dict[str, Any] = {"name": None if series.name is None else str(series.name), "rows": rows,
                           "values": {str(k): v for k, v in zip(values["index"], values["data"], strict=False)}}
    if rows > MAX_ROWS:
        out["note"] = f"first {MAX_ROWS} of {rows:,} rows; {rows - MAX_ROWS:,} rows not sent"
    return out


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _array(array: Any) -> Any:
    if array.size <= MAX_ITEMS:
        return _finite(array.tolist())
    return {"shape": list(array.shape), "dtype": str(array.dtype),
            "values": _finite(array.reshape(-1)[:MAX_ITEMS].tolist()),
            "note": f"first {MAX_ITEMS:,} of {array.size:,} values (flattened); the rest not sent"}
