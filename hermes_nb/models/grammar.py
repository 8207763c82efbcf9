"""A GBNF grammar (llama.cpp's) that lets a model write exactly one well-formed call of an offered tool.

The output it allows is Hermes's tool-call format::

    <tool_call>
    {"name": "add", "arguments": {"a": 2, "b": 3}}
    </tool_call>

with the name one of the offered tools and the arguments an object of that tool's JSON schema: declared
properties in declared order, required ones always, optional ones each maybe, values of the declared type
(enums and consts as their literals). Separators are fixed (``", "`` and ``": "``), so a small model spends no
tokens choosing whitespace. Strings are bounded: by the schema's ``maxLength``, else by ``STRING_CAP``
characters, so a small model's runaway string (``"c_populati_c_populati..."``) ends early instead of at
``max_tokens``; ``runaway_argument`` then says which argument ran to the cap, and the call is reported as a
runaway, not dispatched. With ``answer=True`` (``tool_choice="auto"``) the grammar also allows an answer in
prose, one that does not begin like a call: the model chooses. What a grammar cannot say (``pattern``, ``minimum``, ``format``...) is left to
the tool's own validation at dispatch, which answers the model with an error it can read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["STRING_CAP", "runaway_argument", "tool_call_grammar"]

#: The longest string argument a grammar-led call may write when its schema sets no ``maxLength``.
STRING_CAP = 160

_BASE = {
    "ws": '[ ]?',
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": r'"\"" char{0,' + str(STRING_CAP) + r'} "\""',
    "integer": r'"-"? ([0-9] | [1-9] [0-9]{0,15})',
    "number": r'integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "value": "object | array | string | number | boolean | null",
    "object": r'"{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? ws "}"',
    "array": r'"[" ws ( value ( "," ws value )* )? ws "]"',
}
_SCALARS = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean", "null": "null"}


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Rules:
    def __init__(self) -> None:
        self.rules: dict[str, str] = dict(_BASE)

    def add(self, hint: str, body: str) -> str:
        name = re.sub(r"[^a-zA-Z0-9]+", "-", hint).strip("-").lower() or "rule"
        base, n = name, 1
        while name in self.rules:
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        return name

    def string(self, schema: Mapping[str, Any], hint: str) -> str:
        """A string of the schema's length bounds (``maxLength``, else the cap)."""
        low = schema.get("minLength")
        high = schema.get("maxLength")
        low = low if isinstance(low, int) and low >= 0 else 0
        high = high if isinstance(high, int) and high >= low else max(STRING_CAP, low)
        if (low, high) == (0, STRING_CAP):
            return "string"
        return self.add(hint, f'"\\"" char{{{low},{high}}} "\\""')

    def schema(self, schema: Any, hint: str) -> str:
        """The rule for values of ``schema`` (a rule name)."""
        if not isinstance(schema, Mapping) or not schema:
            return "value"
        if "const" in schema:
            return self.add(hint, _literal(json.dumps(schema["const"])))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.add(hint, " | ".join(_literal(json.dumps(v)) for v in schema["enum"]))
        options = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(options, list) and options:
            return self.add(hint, " | ".join(self.schema(o, f"{hint}-{i}") for i, o in enumerate(options)))
        kind = schema.get("type")
        if isinstance(kind, list) and kind:
            return self.add(hint, " | ".join(self.schema({**schema, "type": k}, f"{hint}-{k}") for k in kind))
        if kind == "object" or (kind is None and "properties" in schema):
            return self.object(schema, hint)
        if kind == "array":
            item = self.schema(schema.get("items"), f"{hint}-item")
            return self.add(hint, f'"[" ws ( {item} ( "," ws {item} )* )? ws "]"')
        if kind == "string":
            return self.string(schema, hint)
        return _SCALARS.get(kind, "value") if isinstance(kind, str) else "value"

    def object(self, schema: Mapping[str, Any], hint: str) -> str:
        """Declared properties in order: each required one always, each optional one maybe."""
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return "object"
        required = set(schema.get("required") or ())
        keys = list(properties)
        pairs = [self.add(f"{hint}-{key}-kv", f"{_literal(json.dumps(key))} \": \" {self.schema(properties[key], f'{hint}-{key}')}")
                 for key in keys]
        # after[i]: what may follow once a pair is written and properties before i are decided;
        # start[i]: the same when no pair is written yet (no comma before the first)
        after, start = ['"}"'] * (len(keys) + 1), ['"}"'] * (len(keys) + 1)
        for i in range(len(keys) - 1, -1, -1):
            then = f'", " {pairs[i]} {after[i + 1]}'
            after[i] = self.add(f"{hint}-after-{keys[i]}", then if keys[i] in required else f"{then} | {after[i + 1]}")
            first = f"{pairs[i]} {after[i + 1]}"
            start[i] = self.add(f"{hint}-from-{keys[i]}", first if keys[i] in required else f"{first} | {start[i + 1]}")
        return self.add(hint, f'"{{" {start[0]}')


def tool_call_grammar(tools: Sequence[Mapping[str, Any]], *, answer: bool = False) -> str:
    """The grammar for one call of one of ``tools`` (chat-completions tool definitions); with ``answer``,
    a call or an answer in prose (whose first character is neither ``<`` nor white space, so it cannot
    turn into an unconstrained call)."""
    rules = _Rules()
    calls = []
    for tool in tools:
        function = tool.get("function") or {}
        name = str(function.get("name") or "")
        if not name:
            continue
        arguments = rules.schema(function.get("parameters") or {"type": "object"}, f"args-{name}")
        head = _literal('{"name": ' + json.dumps(name) + ', "arguments": ')
        calls.append(rules.add(f"call-{name}", f'{head} {arguments} "}}"'))
    if not calls:
        raise ValueError("a tool call grammar needs at least one tool")
    call = f'"<tool_call>\\n" ( {" | ".join(calls)} ) "\\n</tool_call>"'
    if answer:
        rules.rules["call"] = call
        rules.rules["answer"] = r'[^<\x00-\x20] [^\x00]*'
        call = "call | answer"
    rules.rules["root"] = call
    return "\n".join(f"{name} ::= {body}" for name, body in rules.rules.items())


def runaway_argument(calls: Sequence[Any], tools: Sequence[Mapping[str, Any]]) -> str:
    """Which argument of ``calls`` ran to the grammar's string cap ("" when none did): a runaway, not a value.
    A schema's own ``maxLength`` is a limit the tool asked for, not a runaway."""
    schemas = {str((t.get("function") or {}).get("name")): (t.get("function") or {}).get("parameters") or {}
               for t in tools}
    for call in calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            continue
        found = _long_string(arguments, schemas.get(call.name) or {}, call.name)
        if found:
            return found
    return ""


def _long_string(value: Any, schema: Any, where: str) -> str:
    schema = schema if isinstance(schema, Mapping) else {}
    if isinstance(value, str):
        bounded = isinstance(schema.get("maxLength"), int)
        return "" if bounded or len(value) < STRING_CAP else \
            f"{where} ran to the {STRING_CAP}-character cap of a string argument"
    if isinstance(value, dict):
        properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
        for key, item in value.items():
            found = _long_string(item, properties.get(key, {}), f"{where}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _long_string(item, schema.get("items", {}), f"{where}[{i}]")
            if found:
                return found
    return ""
