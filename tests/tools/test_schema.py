"""Schema derivation: snapshot tests per annotation kind and docstring style, errors, handler, decorator."""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import enum
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict

import pydantic
import pytest

from hermes_nb.tools.errors import ToolArgumentError, ToolSchemaError
from hermes_nb.tools.schema import FunctionSchema, compile_validator, function_schema, make_handler, tool

SNAPSHOTS = Path(__file__).parent / "snapshots"


def assert_snapshot(name: str, fs: FunctionSchema) -> None:
    """Compare with snapshots/<name>.json; UPDATE_SNAPSHOTS=1 writes missing or changed ones."""
    data = {"schema": fs.to_tool_schema(), "strict_compatible": fs.strict_compatible, "is_async": fs.is_async}
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"snapshot {path.name} is missing; run with UPDATE_SNAPSHOTS=1 to write it")
    assert json.loads(path.read_text()) == data
    compile_validator(fs.parameters)  # every derived schema must compile


# -- the annotation kinds ------------------------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Options(TypedDict, total=False):
    verbose: bool
    depth: int


class Box(TypedDict):
    width: float
    height: float


@dataclasses.dataclass
class Point:
    """A point on the page.

    Attributes:
        x: horizontal position
        y: vertical position
    """

    x: float
    y: float = 0.0
    tags: list[str] = dataclasses.field(default_factory=list)


UserId = NewType("UserId", int)


def scalars(text: str, count: int, ratio: float, flag: bool, nothing: None) -> str:
    """Scalars, all required."""
    return text


def optionals(a: int | None, b: Optional[str] = None, c: int = 3, d: float = 0.5, e: bool = False,  # noqa: UP045
              f: str = "x", g: object = None, h: list[int] | None = None) -> None:
    """Optionals and defaults (`g`'s default is JSON, its type is not checked here)."""


def containers(xs: list[int], tags: set[str], frozen: frozenset[int], pair: tuple[int, str],
               many: tuple[float, ...], mapping: dict[str, float], bare_list: list, bare_dict: dict,
               seq: collections.abc.Sequence[str], nested: list[dict[str, list[int]]]) -> None:
    """Containers."""


def choices(mode: Literal["fast", "slow"], n: Literal[1, 2, 3], color: Color, level: Level,
            maybe_mode: Literal["a", None] = None, default_color: Color = Color.RED) -> None:
    """Literal and Enum."""


def structured(box: Box, options: Options, point: Point, user: UserId) -> None:
    """TypedDict, dataclass, NewType."""


def untyped(a, b=1, *args, c: Any, **kwargs) -> None:
    """No annotations, Any, *args and **kwargs (skipped)."""


def annotated(count: Annotated[int, "how many to fetch"], name: Annotated[str, "ignored by docstring"]) -> None:
    """Annotated descriptions.

    Args:
        count: loses to the Annotated text
        name: also loses
    """


def args_param(args: dict, n: int) -> None:
    """A parameter named args is just a parameter."""


@pytest.mark.parametrize("fn", [scalars, optionals, containers, choices, structured, untyped, annotated,
                                args_param], ids=lambda f: f.__name__)
def test_annotation_kinds(fn):
    assert_snapshot(fn.__name__, function_schema(fn))


class Address(pydantic.BaseModel):
    street: str
    number: int = pydantic.Field(ge=1, description="house number")


class Person(pydantic.BaseModel):
    """A person."""

    name: str
    home: Address
    previous: list[Address] = []


def register_person(person: Person, note: Annotated[str, pydantic.Field(description="free text")]):
    """Register someone.

    Args:
        person: who to register
    """


def test_pydantic_model():
    fs = function_schema(register_person)
    assert_snapshot("pydantic", fs)
    validate = compile_validator(fs.parameters)
    assert validate({"person": {"name": "a", "home": {"street": "s", "number": "2"}}, "note": ""}) == {
        "person": {"name": "a", "home": {"street": "s", "number": 2}}, "note": ""}
    with pytest.raises(ToolArgumentError, match=r"argument 'person.home.number' must be >= 1, got 0"):
        validate({"person": {"name": "a", "home": {"street": "s", "number": 0}}, "note": ""})


# -- docstring styles -----------------------------------------------------------------------------------

def google(path: str, limit: int = 10) -> str:
    """Read a file.

    Reads the whole file unless a limit is given.

    Args:
        path: Where the file is,
            relative to the workspace.
        limit (int): At most this many lines.

    Returns:
        The text.
    """
    return path


def numpy_style(path: str, limit: int = 10) -> str:
    """Read a file.

    Reads the whole file unless a limit is given.

    Parameters
    ----------
    path : str
        Where the file is,
        relative to the workspace.
    limit : int, optional
        At most this many lines.

    Returns
    -------
    str
        The text.
    """
    return path


def rest(path: str, limit: int = 10) -> str:
    """Read a file.

    Reads the whole file unless a limit is given.

    :param path: Where the file is,
        relative to the workspace.
    :param int limit: At most this many lines.
    :returns: The text.
    """
    return path


@pytest.mark.parametrize("fn", [google, numpy_style, rest], ids=lambda f: f.__name__)
def test_docstring_styles(fn):
    fs = function_schema(fn)
    assert fs.description == "Read a file.\n\nReads the whole file unless a limit is given."
    assert fs.parameters["properties"]["path"]["description"] == "Where the file is, relative to the workspace."
    assert fs.parameters["properties"]["limit"]["description"] == "At most this many lines."
    assert_snapshot(f"docstring_{fn.__name__}", fs)


def test_a_nameless_callable_needs_a_name():
    import functools

    def power(base: int, exp: int) -> int:
        return int(base**exp)

    square = functools.partial(power, exp=2)
    with pytest.raises(ToolSchemaError, match="pass name="):
        function_schema(square)
    fs = function_schema(square, name="square")
    assert fs.parameters["required"] == ["base"] and fs.parameters["properties"]["exp"]["default"] == 2


def test_no_docstring_and_overrides():
    def bare(x: int):
        pass

    fs = function_schema(bare, name="renamed", description="Given text.")
    assert (fs.name, fs.description) == ("renamed", "Given text.")
    assert function_schema(bare).description == ""


# -- errors, strictness, async ------------------------------------------------------------------------

class Opaque:
    pass


@pytest.mark.parametrize(("annotation", "message"), [
    (Opaque, "parameter 'x': cannot express type Opaque as JSON schema"),
    (collections.abc.Callable[[int], int], "parameter 'x': cannot express type collections.abc.Callable[[int], int] as JSON schema"),
    (dict[int, str], "parameter 'x': cannot express type dict[int, str] as JSON schema (keys must be str)"),
    (list[Opaque], "parameter 'x': cannot express type Opaque as JSON schema"),
])
def test_inexpressible_type(annotation, message):
    def fn(x):
        pass

    fn.__annotations__ = {"x": annotation}
    with pytest.raises(ToolSchemaError) as info:
        function_schema(fn)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


def test_unresolvable_annotation_names_the_parameter():
    def fn(ok: int, bad: Missing):  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(ToolSchemaError, match=r"^parameter 'bad': cannot resolve annotation 'Missing'"):
        function_schema(fn)


@dataclasses.dataclass
class Node:
    children: list[Node]


def test_recursive_dataclass_is_an_error():
    def fn(node: Node):
        pass

    with pytest.raises(ToolSchemaError, match=r"^parameter 'node': field Node.children: cannot express recursive type Node"):
        function_schema(fn)


@pytest.mark.parametrize(("fn", "strict"), [
    (scalars, True), (optionals, False), (containers, False), (choices, False), (annotated, True),
    (untyped, False), (args_param, False),
])
def test_strict_compatible(fn, strict):
    assert function_schema(fn).strict_compatible is strict


def test_async_detection():
    async def fetch(url: str) -> str:
        return url

    assert function_schema(fetch).is_async is True
    assert function_schema(scalars).is_async is False


# -- make_handler ---------------------------------------------------------------------------------------

def test_handler_passes_only_accepted_kwargs():
    def plain(a: int, b: int = 2):
        return (a, b)

    def named(a: int, task_id: str | None = None):
        return (a, task_id)

    def catch_all(a: int, **kw):
        return (a, kw)

    assert make_handler(plain)({"a": 1}, task_id="t1") == (1, 2)
    assert make_handler(named)({"a": 1}, task_id="t1", user="u") == (1, "t1")
    assert make_handler(catch_all)({"a": 1}, task_id="t1") == (1, {"task_id": "t1"})
    assert make_handler(plain)({"a": 1, "b": 5}) == (1, 5)


def test_handler_positional_only():
    def pos(a: int, /, b: int):
        return a - b

    assert make_handler(pos)({"a": 5, "b": 2}) == 3


def test_handler_keeps_async():
    async def slow(x: int, task_id: str = ""):
        return (x, task_id)

    handler = make_handler(slow)
    assert asyncio.iscoroutinefunction(handler)
    assert asyncio.run(handler({"x": 1}, task_id="t")) == (1, "t")


# -- the decorator --------------------------------------------------------------------------------------

def test_tool_decorator_registers():
    import hermes_nb.tools.registry as registry_mod
    reg = registry_mod.ToolRegistry()

    @tool(registry=reg, toolset="maths", emoji="+", read_only=True)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    async def greet(name: str) -> str:
        """Say hello."""
        return f"hi {name}"

    decorated = tool(name="hello", registry=reg)(greet)
    assert add(1, 2) == 3 and decorated is greet
    assert add.__hermes_tool__ == "add" and greet.__hermes_tool__ == "hello"
    entry = reg.get_entry("add")
    assert (entry.toolset, entry.source, entry.read_only, entry.emoji) == ("maths", "notebook", True, "+")
    assert entry.schema["description"] == "Add two numbers."
    assert entry.handler({"a": 2, "b": 3}) == 5
    hello = reg.get_entry("hello")
    assert hello.is_async and hello.toolset == "notebook"


def test_tool_decorator_bare_uses_default_registry(monkeypatch):
    import hermes_nb.tools.registry as registry_mod
    reg = registry_mod.ToolRegistry()
    monkeypatch.setattr(registry_mod, "registry", reg)

    @tool
    def shout(text: str) -> str:
        return text.upper()

    assert shout("a") == "A"
    assert reg.get_all_tool_names() == ["shout"]
    assert reg.dispatch("shout", {"text": "x"}) == "X"



@dataclasses.dataclass
class _Box:
    w: float
    h: float


class _Point(pydantic.BaseModel):
    x: int
    y: int


class _Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


def test_make_handler_builds_dataclass_pydantic_and_enum_arguments():
    seen = {}

    def place(box: _Box, at: _Point, mode: _Mode, note: _Box | None = None) -> str:
        seen.update(box=box, at=at, mode=mode, note=note)
        return "ok"

    handler = make_handler(place)
    assert handler({"box": {"w": 1.0, "h": 2.0}, "at": {"x": 1, "y": 2}, "mode": "slow"}) == "ok"
    assert seen == {"box": _Box(1.0, 2.0), "at": _Point(x=1, y=2), "mode": _Mode.SLOW, "note": None}
