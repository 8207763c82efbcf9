"""Scope: inside an agent run, a call runs only if its tool was offered on that turn.

The agent loop sets each turn's ``Offer`` (``set_offer``, a context variable of the run's task, as the tool-search
catalog is): the names of the definitions the model was sent, and the deferred tools behind tool search (the
catalog is the run's toolsets only). A ``Batch`` reads it when it is made (worker threads do not inherit
context variables) and checks every call first, after ``tool_call`` was unwrapped and before lookup,
validation and the approval gate: a call outside the offer gets ``tool 'X' was not offered in this run`` and
nothing of it runs, no prompt either. Outside a run there is no offer and nothing is limited: the person's
own calls (``%tools call``, ``registry.dispatch``, ``handle_function_call``) are theirs to make.

The comparison is exact (a name differing in case or by a look-alike character is another name); the one
mapping is Hermes main's renames (``tools.sources.hermes_names``), which reach the same registered tool.
"""

from __future__ import annotations

import contextlib
from collections.abc import Container, Iterable, Iterator, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools.calls.results import tool_error
from hermes_nb.tools.sources.hermes_names import renamed_target

__all__ = ["NOTHING", "Offer", "current_offer", "not_offered", "offer_of", "reset_offer", "set_offer", "use_offer"]


def not_offered(name: str) -> str:
    """The error result of a call whose tool the run did not offer (the card shows it as any error)."""
    return tool_error(f"tool '{name}' was not offered in this run")


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """The tools one turn of a run offered the model, by exact name."""

    names: frozenset[str]

    def refusal(self, name: str, tools: Container[str]) -> str | None:
        """None when a call of ``name`` may run (``tools``: the registry, for Hermes's renames); else its
        error result."""
        if name in self.names:
            return None
        renamed = renamed_target(name, tools)  # todo_list → todo, ... (only when not registered itself)
        if renamed is not None and renamed in self.names:
            return None
        return not_offered(name)


#: What a run offers before its first turn: nothing.
NOTHING = Offer(names=frozenset())


def offer_of(definitions: Iterable[Mapping[str, Any]], deferred: Iterable[str] = (),
             withheld: Iterable[str] = ()) -> Offer:
    """The offer of a turn: its definitions' names and its deferred tools, less ``withheld`` (what this agent
    may never have, whatever its toolsets say: a child's ``clarify``, ``memory``...)."""
    names = {d.get("function", {}).get("name") for d in definitions}
    names.update(deferred)
    names.difference_update(withheld)
    return Offer(names=frozenset(n for n in names if isinstance(n, str)))


_offer: ContextVar[Offer | None] = ContextVar("hermes_nb_offer", default=None)


def current_offer() -> Offer | None:
    """The offer of the run this code runs in; None outside a run (nothing limited)."""
    return _offer.get()


def set_offer(offer: Offer | None) -> Token[Offer | None]:
    """Make ``offer`` this context's (the loop sets it every turn); ``reset_offer`` undoes it."""
    return _offer.set(offer)


def reset_offer(token: Token[Offer | None]) -> None:
    _offer.reset(token)


@contextlib.contextmanager
def use_offer(offer: Offer | None) -> Iterator[None]:
    """``offer`` for the block (tests, and callers that run a batch for a run of their own)."""
    token = _offer.set(offer)
    try:
        yield
    finally:
        _offer.reset(token)
