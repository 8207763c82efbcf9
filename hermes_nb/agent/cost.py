"""What a run cost: per run, per model turn and per tool call, from Pydantic's maintained price table.

Prices come from ``genai-prices`` (imported on first use; its bundled table, no network). A model it does
not know, a local server (127.0.0.1, ``model="local"``) and usage the server did not report are an
"unknown price", never $0. A replay's usage is the recording's: its price says "recorded usage".

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

__all__ = ["Price", "RunCost", "model_ref", "run_cost"]

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
    """``total``, one ``Price`` per model turn, and each tool call's share (by tool call id)."""

    total: Price
    turns: tuple[Price, ...] = ()
    tool_calls: Mapping[str, Price] = field(default_factory=dict)
    source: str = SOURCE

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
        if cassette.get("local"):
            return None, None, True, "recorded from a local model"
        return str(cassette.get("model") or "") or None, cassette.get("provider_url"), True, "no model name recorded"
    name = str(getattr(model, "name", "") or "")
    base_url = getattr(model, "base_url", None)
    if name == "local" or is_local_url(base_url):
        return None, None, False, "local model"
    return name or None, base_url, False, "no model name"


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
    except LookupError:
        return Price(usd=None, tokens=tokens, unknown=f"no price for {name!r}", recorded=recorded)
    except ImportError:
        return Price(usd=None, tokens=tokens, unknown="genai-prices is not installed", recorded=recorded)
    except Exception:  # boundary: a price table problem must never fail a finished run
        log.exception("hermes_nb: pricing %r failed", name)
        return Price(usd=None, tokens=tokens, unknown="the price table failed", recorded=recorded)


def run_cost(turns: Sequence[Turn], model: Any) -> RunCost:
    """The cost of a run's turns (``AgentResult.turns``) made by ``model``."""
    ref = model_ref(model)
    per_turn = tuple(_price(ref, int(t.usage.get("prompt_tokens", 0)), int(t.usage.get("completion_tokens", 0)))
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
        calls.update(_result_shares(before, after, ref))
    return RunCost(total=total, turns=per_turn, tool_calls=calls)


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
