"""The embedded model's pieces that need no runtime: the prompt, reading calls back, choosing the model,
and what it says when the runtime is missing. (The runtime itself: ``test_local_model``.)"""

from __future__ import annotations

import json

import pytest

from hermes_nb.models.grammar import tool_call_grammar
from hermes_nb.models.local_prompt import parse_calls, render_prompt
from hermes_nb.models.model_choice import resolve_model

ADD = {"type": "function", "function": {"name": "add", "description": "Add two integers.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}


def test_the_prompt_describes_the_tools_and_carries_calls_and_results_back():
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "5"},
    ]
    prompt = render_prompt(history, [ADD])
    system = prompt.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nBe brief.") and '"name": "add"' in system and "<tools>" in system
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>' \
        in prompt
    assert "<|im_start|>tool\n<tool_response>\n5\n</tool_response><|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "<tools>" not in render_prompt(history, [])  # tool_choice none: no tools described


def test_calls_are_read_back_only_when_well_formed_and_offered():
    text = 'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    content, calls = parse_calls(text, ["add"], 3)
    assert content == "Let me add."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [("call_3", "add", {"a": 1, "b": 2})]
    for broken in ('<tool_call>{"name": "add", "arguments": {"a": 1,</tool_call>',
                   '<tool_call>{"name": "rm", "arguments": {}}</tool_call>', "plain prose"):
        assert parse_calls(broken, ["add"], 0) == (broken, ())


def test_the_grammar_names_only_offered_tools_with_their_required_arguments():
    mul = {"type": "function", "function": {"name": "mul", "parameters": {"type": "object", "properties": {
        "x": {"type": "number"}, "unit": {"enum": ["cm", "m"]}, "tags": {"type": "array", "items": {"type": "string"}},
        "exact": {"type": "boolean"}}, "required": ["x"]}}}
    grammar = tool_call_grammar([ADD, mul])
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    assert rules["root"] == '"<tool_call>\\n" ( call-add | call-mul ) "\\n</tool_call>"'
    assert rules["call-add"] == '"{\\"name\\": \\"add\\", \\"arguments\\": " args-add "}"'
    assert rules["args-mul-unit"] == '"\\"cm\\"" | "\\"m\\""'
    # a required property has no way round it; an optional one has
    assert rules["args-add-from-a"] == "args-add-a-kv args-add-after-b"
    assert rules["args-mul-after-unit"].endswith("| args-mul-after-tags")
    with pytest.raises(ValueError):
        tool_call_grammar([])


def test_local_is_chosen_by_name_or_environment_and_says_what_to_install(monkeypatch):
    import importlib.util

    from hermes_nb.models import ModelConfigError
    from hermes_nb.models.local import LocalModel

    monkeypatch.setenv("HERMES_NB_MODEL", "local")
    model = resolve_model(None, None, None, tool_choice="required", max_tokens=64, timeout=3)
    assert isinstance(model, LocalModel) and model.max_tokens == 64 and model.tool_choice == "required"
    assert isinstance(resolve_model("local:/tmp/other.gguf", None, None), LocalModel)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real(name, *a))
    with pytest.raises(ModelConfigError, match=r"pip install 'hermes-nb\[local\]'"):
        model.check_config()
