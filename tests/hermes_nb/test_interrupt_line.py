"""■ inside hermes_nb is one line (issue 26, item 6); the kernel runs of %tools call and registry.dispatch are
in test_kernel_extension. Here: which line, and load / unload leave IPython's handler as it was."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from hermes_nb.display import interrupts


def _traceback_from(filename: str) -> Any:
    code = compile("def waits(name):\n    raise KeyboardInterrupt\nwaits('greet')\n", filename, "exec")
    try:
        exec(code, {})
    except KeyboardInterrupt:
        return sys.exc_info()[2]
    raise AssertionError("unreachable")


def test_the_line_says_what_was_interrupted() -> None:
    assert interrupts.interrupt_line(_traceback_from(interrupts._PROMPTS)) == (
        "KeyboardInterrupt: interrupted while an approval prompt waited; the call was not run")
    tool_call = _traceback_from(interrupts.__file__.replace("interrupts.py", "cards.py"))
    assert "the tool call 'greet' ran; it was cancelled" in interrupts.interrupt_line(tool_call)
    assert interrupts.interrupt_line(_traceback_from("/somewhere/else/mine.py")) is None  # the person's own code


def test_load_and_unload_mirror_each_other(ip: Any) -> None:
    assert ip.custom_exceptions == (KeyboardInterrupt,)
    ip.run_line_magic("unload_ext", "hermes_nb")
    assert ip.custom_exceptions == ()
    ip.run_line_magic("load_ext", "hermes_nb")
    assert ip.custom_exceptions == (KeyboardInterrupt,)


def test_someone_elses_handler_is_left_alone(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("unload_ext", "hermes_nb")
    ip.set_custom_exc((ZeroDivisionError,), lambda *a, **k: ["theirs"])
    try:
        ip.run_line_magic("load_ext", "hermes_nb")
        assert ip.custom_exceptions == (ZeroDivisionError,)
    finally:
        ip.set_custom_exc((), None)
