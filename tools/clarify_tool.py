"""Built-in toolset ``clarify``: the model asks the person a question and gets the answer back.

In a notebook the extension installs its prompt widget with ``set_clarify_callback``; without one the
question goes to ``input()`` (a terminal). The tool is ``interactive``, so a batch containing it runs
serially and two prompts never compete for the person's attention.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_nb.tools.interaction import CallbackStack, run_on_main
from hermes_nb.tools.registry import registry

__all__ = ["ClarifyCallback", "clarify", "set_clarify_callback"]

ClarifyCallback = Callable[[str, "list[str] | None"], str]
"""``(question, choices) -> answer text``."""

_CARRY_ON = ("Continue with your best judgement and state the assumption you made, or stop and explain "
             "what you need.")
_callbacks: CallbackStack[ClarifyCallback] = CallbackStack()


def set_clarify_callback(fn: ClarifyCallback) -> Callable[[], None]:
    """Ask questions through ``fn`` from now on; returns an idempotent undo."""
    return _callbacks.push(fn)


def _ask_in_terminal(question: str, choices: list[str] | None) -> str:
    lines = [question]
    if choices:
        lines += [f"  {i}. {choice}" for i, choice in enumerate(choices, start=1)]
    print("\n".join(lines), flush=True)
    answer = input("> ").strip()
    if choices and answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]  # the person typed a choice's number
    return answer


#: Hermes offers at most 4 choices (its UI adds a fifth, "Other", for the person's own words).
MAX_CHOICES = 4


def _choice_text(choice: Any) -> str:
    """A choice as the text shown: models sometimes send ``{"label": ...}`` objects instead of strings."""
    if isinstance(choice, dict):
        for key in ("label", "text", "value", "choice", "description", "title"):
            if isinstance(choice.get(key), str) and choice[key].strip():
                return choice[key].strip()
        return ""
    return str(choice).strip()


def clarify(question: str, choices: list[str] | None = None,
            callback: ClarifyCallback | None = None) -> dict[str, Any]:
    """Ask ``question`` (optionally offering up to 4 ``choices``) and return Hermes's
    ``{question, choices_offered, user_response}``. ``callback`` (as Hermes's runner passes it through
    dispatch) answers instead of the installed prompt."""
    if not question.strip():
        raise ValueError("question is empty; ask a complete question")
    question = question.strip()
    if choices is not None:
        choices = [text for text in map(_choice_text, choices) if text][:MAX_CHOICES] or None
    callback = callback or _callbacks.current()
    try:
        if callback is not None:
            answer = callback(question, choices)
        else:  # input() only works on the main thread of a kernel: hand it there if it is waiting for us
            answer = run_on_main(_ask_in_terminal, question, choices)
    except EOFError:
        return {"error": "no one answered the question (no input available). " + _CARRY_ON}
    except Exception as exc:  # the asker broke (a widget, the person's callback): Hermes's answer, not a crash
        return {"error": f"Failed to get user input: {type(exc).__name__}: {exc}. " + _CARRY_ON}
    if answer is None or not str(answer).strip():  # the prompt was dismissed or left empty
        return {"error": "the person gave no answer. " + _CARRY_ON}
    return {"question": question, "choices_offered": choices, "user_response": str(answer).strip()}


registry.register(
    name="clarify",
    toolset="clarify",
    schema={
        "description": (
            "Ask the person a question when you need a decision or information only they have, instead of "
            "guessing. Offer up to 4 choices when there are options (each its own element of choices, never "
            "listed in the question); the person may still answer in their own words. Omit choices for an "
            "open question. Use sparingly."),
        "parameters": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "One clear question, and only the question."},
                "choices": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_CHOICES,
                            "description": "Up to 4 answers to pick from (optional)."},
            },
            "required": ["question"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: clarify(args["question"], args.get("choices"), kw.get("callback")),
    emoji="❓",
    interactive=True,
)
