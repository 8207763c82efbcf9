"""The display reads a call's error flag from its outcome: ``{"error": null}`` is a result, not a failure."""

from __future__ import annotations

from typing import Any

from hermes_nb.display.cards import render_result

NO_ARGS = {"description": "test tool", "parameters": {"type": "object", "properties": {}}}


def test_display_shows_no_error_for_error_null() -> None:
    view = render_result('{"error": null, "rows": 3}', name="t", is_error=False)
    html = view._repr_mimebundle_()["text/html"]
    assert not view.is_error and "→ result" in view._header() and "#b00020" not in html
    # without an outcome (a string from elsewhere), Hermes's error shape decides, and null is no error
    assert not render_result('{"error": null}').is_error
    assert render_result('{"error": "boom"}').is_error


def test_tool_call_magic_uses_the_outcome(ip: Any) -> None:
    from hermes_nb.tools.registry import registry

    registry.register("nullish", "t", NO_ARGS, lambda args, **kw: {"error": None, "ok": True})
    registry.register("failing", "t", NO_ARGS, lambda args, **kw: {"error": "broke"})
    assert not ip.run_line_magic("tools", "call nullish").is_error
    assert ip.run_line_magic("tools", "call failing").is_error
