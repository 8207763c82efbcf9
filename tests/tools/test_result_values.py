"""Results as Python users return them: the conversion table of ``hermes_nb.tools.calls.result_values``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import pydantic
import pytest

from hermes_nb.tools.calls.result_values import MAX_ITEMS, MAX_ROWS, conversion_note
from hermes_nb.tools.calls.results import serialize_result
from hermes_nb.tools.registry import ToolRegistry


@dataclasses.dataclass
class Point:
    x: int
    when: dt.date


class Colour(enum.Enum):
    RED = "red"


class Person(pydantic.BaseModel):
    name: str
    born: dt.date


@pytest.mark.parametrize(("value", "expected"), [
    (np.float64(1.5), 1.5),  # a numpy number
    (np.int32(7), 7),
    (np.bool_(True), True),
    (np.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]]),
    (np.array([1.0, np.nan]), [1.0, None]),
    (dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC), "2024-05-01T12:00:00+00:00"),
    (dt.date(2024, 5, 1), "2024-05-01"),
    (dt.time(9, 30), "09:30:00"),
    (Decimal("1.10"), "1.10"),  # exact, not a float
    (PurePosixPath("/data/x.csv"), "/data/x.csv"),
    (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    ({3, 1, 2}, [1, 2, 3]),
    (frozenset({"b", "a"}), ["a", "b"]),
    (Colour.RED, "red"),
    (Point(x=1, when=dt.date(2024, 1, 2)), {"x": 1, "when": "2024-01-02"}),
    (Person(name="Ada", born=dt.date(1815, 12, 10)), {"name": "Ada", "born": "1815-12-10"}),
    ({"nested": [np.int64(1), {dt.date(2024, 1, 1)}]}, {"nested": [1, ["2024-01-01"]]}),
    (pd.Timestamp("2024-05-01 12:00"), "2024-05-01T12:00:00"),
])
def test_each_row_of_the_table(value: Any, expected: Any) -> None:
    assert json.loads(serialize_result(value)) == expected


def test_dataframe_becomes_records_with_nulls_and_iso_dates() -> None:
    frame = pd.DataFrame({"city": ["Oslo", "Lima"], "temp": [3.5, None],
                          "day": pd.to_datetime(["2024-01-01", "2024-01-02"])})
    got = json.loads(serialize_result(frame))
    assert got["columns"] == ["city", "temp", "day"] and got["rows"] == 2 and "note" not in got
    assert got["records"][0]["city"] == "Oslo" and got["records"][1]["temp"] is None
    assert got["records"][0]["day"].startswith("2024-01-01T00:00:00")


def test_a_long_dataframe_is_cut_with_a_note() -> None:
    frame = pd.DataFrame({"n": range(1234)})
    got = json.loads(serialize_result(frame))
    assert len(got["records"]) == MAX_ROWS and got["rows"] == 1234
    assert got["note"] == f"first {MAX_ROWS} of 1,234 rows; {1234 - MAX_ROWS:,} rows not sent"
    assert conversion_note(frame) == f"returned a DataFrame: the model got JSON (records, first {MAX_ROWS} of 1,234 rows)"


def test_series_and_big_arrays() -> None:
    series = pd.Series([1, 2, 3], index=["a", "b", "c"], name="score")
    assert json.loads(serialize_result(series)) == {"name": "score", "rows": 3, "values": {"a": 1, "b": 2, "c": 3}}
    big = json.loads(serialize_result(np.zeros((200, 100))))
    assert big["shape"] == [200, 100] and len(big["values"]) == MAX_ITEMS and "not sent" in big["note"]


def test_unknown_types_stay_an_error_naming_the_type() -> None:
    error = json.loads(serialize_result(object()))["error"]
    assert "object" in error and "not JSON-serialisable" in error
    assert conversion_note(object()) == "" and conversion_note({"a": 1}) == ""


def test_dispatch_returns_converted_values() -> None:
    reg = ToolRegistry()
    reg.register("stats", "t", {"parameters": {"type": "object"}},
                 lambda args, **kw: pd.DataFrame({"a": [1, 2]}).describe())
    got = json.loads(reg.dispatch("stats", {}))
    assert got["columns"] == ["a"] and got["rows"] == 8


def test_loading_the_module_imports_neither_pandas_nor_numpy() -> None:
    code = ("import sys, json; from hermes_nb.tools.calls.results import serialize_result; "
            "serialize_result({'a': 1}); import hermes_nb.tools.calls.result_values; "
            "print('pandas' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
