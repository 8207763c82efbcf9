"""What ``Agent(...)`` and ``agent.run(...)`` are given, checked where it is given: one line that says what to do
instead of a traceback from inside the first turn."""

from __future__ import annotations

from typing import Any

from hermes_nb.tools.errors import OneLineError

__all__ = ["AgentArgumentError", "check_prompt", "toolset_list"]


class AgentArgumentError(OneLineError, TypeError):
    """An argument of ``Agent`` or ``run`` of the wrong kind; the message shows the right call."""


def toolset_list(value: Any, keyword: str) -> list[str] | None:
    """``enabled_toolsets`` / ``disabled_toolsets`` as a list of known toolset names (a lone string is one
    name, not its letters); an unknown name is an ``UnknownToolsetError`` here, at construction."""
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple, set, frozenset)) or not all(isinstance(n, str) for n in names):
        raise AgentArgumentError(f"Agent({keyword}=...) takes a list of toolset names, e.g. "
                                 f"Agent({keyword}=['file']); got {type(value).__name__}")
    from hermes_nb.tools.errors import UnknownToolsetError
    from hermes_nb.tools.schema.lint import did_you_mean
    from hermes_nb.tools.toolsets import get_toolset_names, validate_toolset

    for name in names:
        if not validate_toolset(name):
            known = get_toolset_names()
            raise UnknownToolsetError(f"Agent({keyword}=...): unknown toolset {name!r}{did_you_mean(name, known)}; "
                                      f"known toolsets: {', '.join(known)}, all")
    return list(names)


def check_prompt(prompt: Any) -> None:
    """A prompt is text: ``agent.run(123)`` says so instead of failing inside the model's request."""
    if not isinstance(prompt, str):
        raise AgentArgumentError(f"agent.run() takes the prompt as text, e.g. agent.run({str(prompt)!r}); "
                                 f"got {type(prompt).__name__}")
