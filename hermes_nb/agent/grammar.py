"""A GBNF grammar (llama.cpp's) that lets a model write exactly one well-formed call of an offered tool.

The output it allows is Hermes's tool-call format::

    <tool_call>
    {"name": "add", "arguments": {"a": 2, "b": 3}}
    </tool_call>

with the name one of the offered tools and the arguments an object of that tool's JSON schema: declared
properties in declared order, required ones always, optional ones each maybe, values of the declared type
(enums and consts as their literals). Separators are fixed (``", "`` and ``": "``), so a small model spends no
tokens choosing whitespace. What a grammar cannot say (``pattern``, ``minimum``, ``format``...) is left to
the tool's own validation at dispatch, which answers the model with an error it can read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["tool_call_grammar"]

_BASE = {
    "ws": '[ ]?',
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": r'"\"" char* "\""',
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


def tool_call_grammar(tools: Sequence[Mapping[str, Any]]) -> str:
    """The grammar for one call of one of ``tools`` (chat-completions tool definitions)."""
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
    rules.rules["root"] = f'"<tool_call>\\n" ( {" | ".join(calls)} ) "\\n</tool_call>"'
    return "\n".join(f"{name} ::= {body}" for name, body in rules.rules.items())
