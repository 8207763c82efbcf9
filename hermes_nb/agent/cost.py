"""What a run cost: per run, per model turn and per tool call, from Pydantic's maintained price table.

Prices come from ``genai-prices`` (imported on first use; its bundled table, no network). A model it does
not know, a local server's own model (127.0.0.1, ``model="local"``), usage the server did not report and a
scripted recording's placeholder usage are an "unknown price", never $0. A replay's usage is the recording's:
its price says "recorded usage".

The model is identified by the name the agent asked for (``Agent(model=...)``, a cassette's ``model``); on a
local URL a name the table knows (``gpt-4o-mini`` behind a proxy on 127.0.0.1) is priced at that model's list
price, any other name is "local model". ``priced_as(result, "gpt-4o-mini")`` prices a run (a replay, say) as if
that model had made it. A run's total includes its sub-agents' (``RunCost.children``).

A tool call's share is the tokens its result added to the next request: the next turn's prompt tokens
less this turn's prompt and completion, split over the batch's results by their length, priced as input.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hermes_nb.agent.turns import Turn
from hermes_nb.models import is_local_url

__all__ = ["Price", "RunCost", "model_ref", "priced_as", "run_cost"]

log = logging.getLogger(__name__)
SOURCE = "genai-prices"


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """An amount in US dollars, or None with the reason it is unknown."""

    usd: Decimal | None
    tokens: int = 0
    unknown: str = ""  # why there is no price: "local model", "no price for 'x'", "usage not reported"
    recorded: bool = False  # the usage is a recording's (a replay)

    def __str__(self) -> str:
        if self.usd is None:
            return f"unknown price ({self.unknown})" if self.unknown else "unknown price"
        text = _dollars(self.usd)
        return f"{text} for the recorded usage" if self.recorded else text


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCost:
    """``total`` (the run's own turns and its sub-agents'), one ``Price`` per model turn, each tool call's share
    (by tool call id), and each sub-agent's ``RunCost``."""

    total: Price
    turns: tuple[Price, ...] = ()
    tool_calls: Mapping[str, Price] = field(default_factory=dict)
    source: str = SOURCE
    #: the run's own turns only; ``total`` less the sub-agents
    own: Price | None = None
    children: tuple[RunCost, ...] = ()

    def __str__(self) -> str:
        return str(self.total)


def _dollars(usd: Decimal) -> str:
    if usd == 0:
        return "$0"
    return f"${usd:.2f}" if usd >= Decimal("0.01") else f"${usd:.6f}".rstrip("0")


def model_ref(model: Any) -> tuple[str | None, str | None, bool, str]:
    """(model name to price, provider URL, usage recorded, why unknown) for a ``Model``."""
    inner = getattr(model, "inner", None)  # a RecordingModel prices as what it records
    if inner is not None:
        return model_ref(inner)
    cassette = getattr(model, "cassette", None)
    if isinstance(cassette, Mapping) and getattr(model, "replays_recording", False):
        name = str(cassette.get("model") or "") or None
        if cassette.get("local"):  # a name the table knows is priced (a proxy); _price says "local" otherwise
            return name, None, True, "recorded from a local model"
        return name, cassette.get("provider_url"), True, "no model name recorded"
    name = str(getattr(model, "name", "") or "")
    base_url = getattr(model, "base_url", None)
    if name == "local" or is_local_url(base_url):
        return (name if name != "local" else None), None, False, "local model"
    return name or None, base_url, False, "no model name"


#: Why a turn whose cassette says ``"usage": "placeholder"`` (a scripted server's stand-in counts) has no price.
PLACEHOLDER_WHY = "placeholder usage of a scripted recording"


def _calc(name: str, base_url: str | None, input_tokens: int, output_tokens: int) -> Decimal:
    """The price from the table; LookupError when it knows no such model."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    if base_url:
        try:
            return Decimal(calc_price(usage, name, provider_api_url=base_url).total_price)
        except LookupError:  # a proxy or gateway URL the table does not list: match by model name
            pass
    return Decimal(calc_price(usage, name).total_price)


def _price(ref: tuple[str | None, str | None, bool, str], input_tokens: int, output_tokens: int) -> Price:
    name, base_url, recorded, why = ref
    tokens = input_tokens + output_tokens
    if name is None:
        return Price(usd=None, tokens=tokens, unknown=why, recorded=recorded)
    if tokens == 0:
        return Price(usd=None, tokens=0, unknown="usage not reported", recorded=recorded)
    try:
        return Price(usd=_calc(name, base_url, input_tokens, output_tokens), tokens=tokens, recorded=recorded)
    except LookupError:  # on a local server, a name the table does not know is the server's own model
        unknown = why if why in ("local model", "recorded from a local model") else f"no price for {name!r}"
        return Price(usd=None, tokens=tokens, unknown=unknown, recorded=recorded)
    except ImportError:
        return Price(usd=None, tokens=tokens, unknown="genai-prices is not installed", recorded=recorded)
    except Exception:  # boundary: a price table problem must never fail a finished run
        log.exception("hermes_nb: pricing %r failed", name)
        return Price(usd=None, tokens=tokens, unknown="the price table failed", recorded=recorded)


def run_cost(turns: Sequence[Turn], model: Any, children: Sequence[RunCost] = (),
             ref: tuple[str | None, str | None, bool, str] | None = None) -> RunCost:
    """The cost of a run's turns (``AgentResult.turns``) made by ``model``, with its sub-agents' ``children``."""
    ref = ref if ref is not None else model_ref(model)
    per_turn = tuple(Price(usd=None, unknown=PLACEHOLDER_WHY, recorded=True) if t.placeholder else
                     _price(ref, int(t.usage.get("prompt_tokens", 0)), int(t.usage.get("completion_tokens", 0)))
                     for t in turns)
    known = [p.usd for p in per_turn if p.usd is not None]
    unknown = next((p.unknown for p in per_turn if p.usd is None), "")
    total_tokens = sum(p.tokens for p in per_turn)
    if per_turn and len(known) == len(per_turn):
        total = Price(usd=sum(known, Decimal(0)), tokens=total_tokens, recorded=ref[2])
    else:
        total = Price(usd=None, tokens=total_tokens, unknown=unknown or "no model turn", recorded=ref[2])
    calls: dict[str, Price] = {}
    for before, after in zip(turns, turns[1:], strict=False):
        if not (before.placeholder or after.placeholder):
            calls.update(_result_shares(before, after, ref))
    own = total
    if children:
        total = _sum([own, *(c.total for c in children)])
    return RunCost(total=total, turns=per_turn, tool_calls=calls, own=own, children=tuple(children))


def _sum(prices: Sequence[Price]) -> Price:
    """Prices added: unknown when any is (its reason kept), tokens always."""
    tokens = sum(p.tokens for p in prices)
    recorded = any(p.recorded for p in prices)
    missing = next((p for p in prices if p.usd is None), None)
    if missing is not None:
        return Price(usd=None, tokens=tokens, unknown=missing.unknown, recorded=recorded)
    return Price(usd=sum((p.usd for p in prices if p.usd is not None), Decimal(0)), tokens=tokens, recorded=recorded)


def priced_as(result: Any, model: str) -> RunCost:
    """``result`` (an ``AgentResult``: a replay, a local model's run) priced as if ``model`` had made it, its
    sub-agents too: the same tokens at that model's list price. ``priced_as(result, "gpt-4o-mini").total``."""
    recorded = any(t.recorded for t in result.turns)
    children = [priced_as(child, model) for child in getattr(result, "children", ())]
    return run_cost(result.turns, None, children, ref=(model, None, recorded, "no model name"))


def _result_shares(before: Turn, after: Turn, ref: tuple[str | None, str | None, bool, str]) -> dict[str, Price]:
    """Each tool result's share of the tokens it added to the next request: the tool messages after its last
    assistant message (the one that asked for the calls), wherever the request starts (a tool listing may
    come and go in the system prompt)."""
    sent = after.request.messages
    asked = max((i for i, m in enumerate(sent) if m.get("role") == "assistant"), default=len(sent))
    results = [m for m in sent[asked + 1:] if m.get("role") == "tool"]
    if not results:
        return {}
    added = int(after.usage.get("prompt_tokens", 0)) - int(before.usage.get("prompt_tokens", 0)) \
        - int(before.usage.get("completion_tokens", 0))
    sizes = [len(str(m.get("content") or "")) for m in results]
    out = {}
    for message, size in zip(results, sizes, strict=True):
        call_id = str(message.get("tool_call_id", ""))
        if added <= 0 or not int(after.usage.get("prompt_tokens", 0)):
            out[call_id] = Price(usd=None, unknown="usage not reported", recorded=ref[2])
            continue
        share = round(added * size / max(sum(sizes), 1))
        out[call_id] = _price(ref, share, 0) if share else Price(usd=Decimal(0), recorded=ref[2])
    return out
