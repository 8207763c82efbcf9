"""The clarify tool: an installed prompt, the input() fallback, and no one answering."""

from __future__ import annotations

import builtins
import json
from typing import Any

import pytest

from hermes_nb.tools.clarify_tool import set_clarify_callback
from hermes_nb.tools.registry import registry


def ask(**args: object) -> dict:
    return json.loads(registry.dispatch("clarify", args))


def test_installed_callback_answers() -> None:
    seen: list[tuple[str, list[str] | None]] = []

    def prompt(question: str, choices: list[str] | None) -> str:
        seen.append((question, choices))
        return "blue"

    undo = set_clarify_callback(prompt)
    try:
        assert ask(question="Which colour?", choices=["red", "blue"]) == {
            "question": "Which colour?", "choices_offered": ["red", "blue"], "user_response": "blue"}
    finally:
        undo()
        undo()  # idempotent
    assert seen == [("Which colour?", ["red", "blue"])]


def test_undo_restores_the_previous_callback() -> None:
    undo_outer = set_clarify_callback(lambda q, c: "outer")
    undo_inner = set_clarify_callback(lambda q, c: "inner")
    try:
        assert ask(question="q?")["user_response"] == "inner"
        undo_inner()
        assert ask(question="q?")["user_response"] == "outer"
    finally:
        undo_inner()
        undo_outer()


def test_input_fallback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    answers = iter(["  2 ", "something else"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(answers))
    assert ask(question="Pick one", choices=["a", "b"])["user_response"] == "b"  # a number picks the choice
    assert "Pick one\n  1. a\n  2. b" in capsys.readouterr().out
    assert ask(question="Free text?")["user_response"] == "something else"


def test_eof_means_no_one_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    def eof(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr(builtins, "input", eof)
    assert ask(question="Anyone?")["error"].startswith("no one answered")


def test_empty_answer_is_no_answer() -> None:
    undo = set_clarify_callback(lambda q, c: "  ")
    try:
        assert ask(question="Anything?")["error"].startswith("the person gave no answer")
    finally:
        undo()


def test_registration() -> None:
    entry = registry.get_entry("clarify")
    assert entry.interactive and entry.toolset == "clarify" and entry.emoji and not entry.read_only


def test_hermes_result_shape_and_at_most_four_choices() -> None:
    """Hermes's ``{question, choices_offered, user_response}`` (it was ``{question, answer}``), and at most 4
    choices: a fifth is refused by the schema (it allowed 6)."""
    undo = set_clarify_callback(lambda q, c: " b ")
    try:
        out = ask(question=" Pick? ", choices=["a", "b", "c", "d"])
        assert out == {"question": "Pick?", "choices_offered": ["a", "b", "c", "d"], "user_response": "b"}
        assert ask(question="Open?")["choices_offered"] is None
        assert "error" in ask(question="Pick?", choices=["a", "b", "c", "d", "e"])
    finally:
        undo()


def test_a_callback_passed_through_dispatch_answers() -> None:
    """Hermes's runner passes ``callback=`` through dispatch; it answers instead of the installed prompt."""
    undo = set_clarify_callback(lambda q, c: "installed")
    seen: list[tuple[str, object]] = []

    def passed(question: str, choices: list[str] | None) -> str:
        seen.append((question, choices))
        return "passed"

    try:
        out = json.loads(registry.dispatch("clarify", {"question": "Which?", "choices": ["x"]}, callback=passed))
        assert out["user_response"] == "passed" and seen == [("Which?", ["x"])]
    finally:
        undo()


@pytest.mark.parametrize("error", [RuntimeError("widget closed"), TimeoutError(), ValueError("bad choice")],
                         ids=["runtime", "timeout", "value"])
def test_an_asker_that_raises_is_an_answer_not_a_crash(error: Exception) -> None:
    """Hermes 0.19.0 answers ``{"error": "Failed to get user input: ..."}`` when its callback raises; passed through
    dispatch or installed, ours says the same (it let the exception escape to the dispatcher)."""
    def broken(question: str, choices: Any) -> str:
        raise error

    passed = json.loads(registry.dispatch("clarify", {"question": "Which?"}, callback=broken))
    assert passed["error"].startswith(f"Failed to get user input: {type(error).__name__}")
    undo = set_clarify_callback(broken)
    try:
        assert ask(question="Which?")["error"].startswith("Failed to get user input")
    finally:
        undo()
