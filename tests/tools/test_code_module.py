"""The per-run ``hermes_tools`` module: typed signatures from schemas, names made Python, only passed args sent."""

from __future__ import annotations

import inspect

import pytest

from hermes_nb.tools.code_execution.module import build_module, python_name, signature_line


def _definition(name: str, properties: dict, required: list[str], description: str = "A tool.") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


@pytest.mark.parametrize(("name", "spelled", "why"), [
    ("read_file", "read_file", "already an identifier"),
    ("get-weather", "get_weather", "a dash"),
    ("mcp__time__get.now", "mcp__time__get_now", "a dot"),
    ("from", "from_", "a keyword"),
    ("match", "match_", "a soft keyword"),
    ("3d", "_3d", "a leading digit"),
    ("", "__", "empty: \"_\" is a soft keyword"),
])
def test_python_name(name, spelled, why):
    assert python_name(name) == spelled, why


def test_signature_is_typed_required_first_with_schema_defaults():
    calls = []
    module = build_module([_definition("lookup", {
        "limit": {"type": "integer", "default": 5}, "query": {"type": "string"},
        "tags": {"type": "array"}, "when": {"type": ["string", "null"]}}, ["query"], "Look it up.")],
        lambda name, args: calls.append((name, args)) or {"ok": True})
    fn = module.lookup
    assert signature_line(fn) == "lookup(query: str, limit: int = 5, tags: list = None, when: str | None = None)"
    assert fn.__doc__ == "Look it up." and module.__all__ == ["json_parse", "shell_quote", "retry", "lookup"]
    assert fn("cats", tags=["a"]) == {"ok": True}
    # only what the script passed: the tool's own defaults apply to the rest
    assert calls == [("lookup", {"query": "cats", "tags": ["a"]})]
    with pytest.raises(TypeError, match="query"):
        fn(limit=3)


def test_a_required_argument_with_a_default_is_optional_in_python_and_sent_with_it():
    """``patch``'s ``mode`` (required in Hermes's schema, default ``replace``): ``patch("f", "a", "b")`` works in a
    script as with Hermes's own helper, and the call carries ``mode``."""
    import hermes_nb.tools.file_tools  # noqa: F401  (registers patch)
    from hermes_nb.tools.registry import registry

    calls = []
    module = build_module([registry.get_entry("patch").definition()], lambda name, args: calls.append(args))
    assert signature_line(module.patch).startswith(
        "patch(path: str = None, old_string: str = None, new_string: str = None, replace_all: bool = False, "
        "mode: str = 'replace', patch: str = None")
    module.patch("f.py", "a", "b")
    module.patch(mode="patch", patch="*** Begin Patch")
    module.patch("f.py", "a", "b", mode=None)  # None: the default, as for any optional argument
    assert calls == [{"mode": "replace", "path": "f.py", "old_string": "a", "new_string": "b"},
                     {"mode": "patch", "patch": "*** Begin Patch"},
                     {"mode": "replace", "path": "f.py", "old_string": "a", "new_string": "b"}]


def test_property_names_that_are_not_identifiers_map_back():
    calls = []
    module = build_module([_definition("t", {"from": {"type": "string"}, "user-id": {"type": "integer"}},
                                       ["from"])], lambda name, args: calls.append(args))
    assert list(inspect.signature(module.t).parameters) == ["from_", "user_id"]
    module.t("here", user_id=3)
    assert calls == [{"from": "here", "user-id": 3}]


def test_excluded_and_clashing_names_are_left_out():
    module = build_module([_definition("a-b", {}, []), _definition("a_b", {}, []), _definition("execute_code", {}, [])],
                          lambda name, args: name, exclude={"execute_code"})
    assert module.__all__[3:] == ["a-b".replace("-", "_")]
    assert module.a_b() == "a-b"  # sorted by name: "a-b" comes first and keeps the spelling
    assert not hasattr(module, "execute_code")


def test_hostile_descriptions_and_names_are_data_not_code():
    hostile = '"""\nimport os; os.system("touch /tmp/pwned")\n"""'
    module = build_module([_definition("x", {"a": {"type": "string", "description": hostile}}, [], hostile)],
                          lambda name, args: args)
    assert module.x.__doc__ == hostile and module.x(a="1") == {"a": "1"}


def test_hermes_helpers_json_parse_shell_quote_retry() -> None:
    """Hermes's ``hermes_tools`` gives scripts json_parse, shell_quote and retry (hermes_nb's had none)."""
    module = build_module([], lambda name, args: None)
    assert module.json_parse('{"a": "x\ty"}') == {"a": "x\ty"}  # a raw tab inside a string: strict json refuses
    assert module.shell_quote("it's; rm -rf /") == "'it'\"'\"'s; rm -rf /'"
    tries: list[int] = []

    def flaky() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("transient")
        return "ok"

    assert module.retry(flaky, max_attempts=3, delay=0) == "ok" and len(tries) == 3
    with pytest.raises(ConnectionError):
        module.retry(lambda: (_ for _ in ()).throw(ConnectionError("always")), max_attempts=2, delay=0)


def test_a_tool_spelled_like_a_helper_leaves_the_helper_in_place() -> None:
    defs = [{"type": "function", "function": {"name": "retry", "parameters": {"type": "object"}}}]
    module = build_module(defs, lambda name, args: "tool")
    from hermes_nb.tools.code_execution.helpers import retry

    assert module.retry is retry
