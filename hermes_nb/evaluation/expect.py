"""What a case may expect besides its tool set: checks on the trajectory, and several acceptable values.

``Expect`` records come from the formats people bring (``hermes_nb.evaluation.formats``): Hermes's
eval-task checks (``tool_called``, ``tool_succeeded``, ``final_response_contains`` /
``final_response_excludes``, ``allowed_tools``) and pydantic_evals' ``Contains`` / ``Equals``. Every one
must hold for ``check_ok``. ``OneOf`` is BFCL's "possible answers" for one argument: any of the values,
and ``optional`` when the argument may be left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Expect", "ExpectKind", "OneOf"]

ExpectKind = Literal["tool_called", "tool_succeeded", "final_response_contains", "final_response_excludes",
                     "final_response_equals", "only_tools"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OneOf:
    """An expected argument that may take any of ``values`` (``optional``: or be absent)."""

    values: tuple[Any, ...]
    optional: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Expect:
    """One condition on a case's run; ``failure`` says why it does not hold (None when it does)."""

    kind: ExpectKind
    value: str | tuple[str, ...]
    case_sensitive: bool = True

    def failure(self, text: str, calls: Sequence[Any]) -> str | None:
        names = [c.name for c in calls]
        if self.kind == "tool_called":
            return None if self.value in names else f"{self.value} was not called"
        if self.kind == "tool_succeeded":
            ok = any(c.name == self.value and not c.is_error for c in calls)
            return None if ok else f"{self.value} did not succeed" + ("" if self.value in names else " (not called)")
        if self.kind == "only_tools":
            others = sorted(set(names) - set(self.value))
            return None if not others else f"called tools not allowed: {', '.join(others)}"
        wanted = str(self.value)
        hay, needle = (text, wanted) if self.case_sensitive else (text.lower(), wanted.lower())
        if self.kind == "final_response_contains":
            return None if needle in hay else f"the answer does not contain {wanted!r}"
        if self.kind == "final_response_excludes":
            return None if needle not in hay else f"the answer contains {wanted!r}"
        return None if hay.strip() == needle.strip() else f"the answer is not {wanted!r}"  # final_response_equals
