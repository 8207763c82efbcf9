"""What crosses the dispatch boundary as text: the model's arguments in, a handler's result out.

Every function here returns a value and never raises on junk, so ``dispatch`` can promise a string.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hermes_nb.tools.calls.outcome import says_error, text_says_error

__all__ = [
    "MultimodalResult", "clean_text", "execution_failed", "is_multimodal", "parse_arguments", "serialize_result",
    "settle_result", "tool_error", "tool_result",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` made encodable as UTF-8: surrogate pairs (an emoji split into UTF-16 halves, say by
    stream chunks) become the character they encode; a lone surrogate becomes U+FFFD, visibly."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class MultimodalResult(str):
    """Hermes's multimodal envelope (``{"_multimodal": True, "content": [...]}``) as it crosses dispatch.

    The string is the text view (``text_summary``, else the text parts), so every stage that handles
    results as text (budget, display, batch records) keeps working; ``parts`` holds the OpenAI content
    parts, which the agent sends to the model as the tool message's content.
    """

    parts: tuple[dict[str, Any], ...]

    def __new__(cls, text: str, parts: Any) -> MultimodalResult:
        self = super().__new__(cls, text)
        self.parts = tuple(parts)
        return self

    def envelope(self) -> dict[str, Any]:
        """Hermes's dict again (what ``registry.dispatch`` / ``handle_function_call`` hand a Hermes caller)."""
        return {"_multimodal": True, "content": [dict(p) for p in self.parts], "text_summary": str(self)}

    @classmethod
    def from_envelope(cls, envelope: dict[str, Any]) -> MultimodalResult:
        parts = [p for p in envelope["content"] if isinstance(p, dict) and isinstance(p.get("type"), str)]
        summary = envelope.get("text_summary")
        if not isinstance(summary, str) or not summary:
            summary = "\n".join(str(p.get("text", "")) for p in parts if p["type"] == "text") or "[multimodal tool result]"
        return cls(summary, parts)


def is_multimodal(value: Any) -> bool:
    """Hermes's test for the envelope: a dict with ``_multimodal`` True and a ``content`` list."""
    return isinstance(value, dict) and value.get("_multimodal") is True and isinstance(value.get("content"), list)


def tool_error(message: Any, **extra: Any) -> str:
    """The JSON error result the model receives: ``{"error": message, **extra}`` (Hermes's helper)."""
    return clean_text(json.dumps({"error": message if isinstance(message, str) else _text(message), **extra},
                                 ensure_ascii=False, default=_text))


def tool_result(data: Any = None, **kwargs: Any) -> str:
    """A JSON result from a value or from keyword arguments (Hermes's helper)."""
    return json.dumps(data if data is not None else kwargs, ensure_ascii=False)


def execution_failed(exc: BaseException) -> str:
    """The error result for a handler that raised: ``Tool execution failed: TypeName: message``."""
    return tool_error(f"Tool execution failed: {type(exc).__name__}: {_text(exc)}")


def parse_arguments(args: Any) -> dict[str, Any] | str:
    """The model's arguments as a dict, or a message saying what is wrong with them."""
    if args is None:
        return {}
    if isinstance(args, (str, bytes, bytearray)):
        if not args:
            return {}
        from hermes_nb.tools.budget_config import argument_limit

        if len(args) > (limit := argument_limit()):  # refused before json.loads makes its copies
            return (f"arguments are {len(args):,} chars, over the limit of {limit:,.0f} (budget.argument_chars "
                    f"in config.yaml); send smaller arguments, e.g. write a large file in parts")
        try:
            args = json.loads(args)
        except (ValueError, RecursionError) as exc:
            return f"arguments are not valid JSON ({exc}); send a JSON object"
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {_json_type(args)}"
    return args


def serialize_result(result: Any) -> str:
    """A handler's return value as the string the model receives; a value whose serialisation raises
    anything (a dict subclass whose ``items()`` raises, say) becomes an error result. Hermes's multimodal
    envelope becomes a ``MultimodalResult`` (text view + content parts)."""
    return settle_result(result)[0]


def settle_result(result: Any) -> tuple[str, bool]:
    """``(serialize_result(result), is_error)``: an error when serialising failed or when the value is
    Hermes's error shape (``tools.calls.outcome.says_error``: ``{"error": ...}`` set, not null)."""
    if type(result) is str and result.isascii():  # the usual result: nothing to clean, no copy to make
        return result, result.startswith("{") and text_says_error(result)
    try:
        if type(result) is MultimodalResult:  # made by a stage before (a call hook): keep its parts
            return result, False
        if isinstance(result, str):
            # an exact str: a subclass's overridden methods must not run later, where nothing catches
            text = clean_text(str.__getitem__(result, slice(None)))
            return text, text_says_error(text)
        if is_multimodal(result):
            envelope = MultimodalResult.from_envelope(result)
            return MultimodalResult(clean_text(str(envelope)), envelope.parts), False
        from hermes_nb.tools.calls.result_values import (
            to_json_value,  # DataFrame, numpy, datetime, ... (its table)
        )

        text = clean_text(json.dumps(result, ensure_ascii=False, allow_nan=False, default=to_json_value))
        return text, says_error(result)
    except KeyboardInterrupt:
        raise
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else _text(exc)
        where = _non_finite(result) if isinstance(exc, ValueError) else None
        if where is not None:
            path, number = where
            return tool_error(f"Tool returned a {type(result).__name__} with {number} at {path or 'the top'}, which "
                              f"JSON cannot carry; return None or a string there"), True
    except BaseException as exc:  # the value's own code raised while being serialised
        reason = f"serialising it raised {type(exc).__name__}: {_text(exc)}"
    return tool_error(
        f"Tool returned a {type(result).__name__}, which is not JSON-serialisable ({reason}); "
        f"return a str or JSON data"
    ), True


def _non_finite(value: Any, path: str = "", depth: int = 0) -> tuple[str, str] | None:
    """Where the first NaN or infinity sits in dicts and lists (``['a'][2]``) and how it prints, or None."""
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return path, repr(value)
    if depth > 50:
        return None
    items: Any = ()
    if type(value) is dict:
        items = ((f"[{k!r}]", v) for k, v in value.items())
    elif type(value) in (list, tuple):
        items = ((f"[{i}]", v) for i, v in enumerate(value))
    for key, item in items:
        found = _non_finite(item, path + key, depth + 1)
        if found is not None:
            return found
    return None


def _text(value: Any) -> str:
    """``str(value)``, even when the object's ``__str__`` is broken."""
    try:
        return str.__getitem__(str(value), slice(None))
    except KeyboardInterrupt:
        raise
    except BaseException:  # a user-defined __str__ that raises (anything) must not escape dispatch
        return f"<unprintable {type(value).__name__}>"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    return type(value).__name__
