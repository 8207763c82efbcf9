"""The python tool: namespaces, results, errors, the approval policy, and a real kernel's live namespace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import hermes_nb.tools.code_tool as code_tool
from hermes_nb.tools.approval import reset_session_approvals, set_default_approval_callback
from hermes_nb.tools.config import load_config
from hermes_nb.tools.registry import registry


@pytest.fixture(autouse=True)
def no_shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Outside a kernel (another test may have made an InteractiveShell), and no remembered approval."""
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    reset_session_approvals()
    yield
    reset_session_approvals()


@pytest.fixture
def approval_off(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"code": {"require_approval": False}}))


def py(code: str, **kw: object) -> dict:
    return json.loads(registry.dispatch("python", {"code": code}, **kw))


def test_private_namespace_persists(approval_off: None) -> None:
    assert py("counter_for_test = 41")["stdout"] == ""
    result = py("counter_for_test += 1\nprint('hi')\ncounter_for_test")
    assert result == {"result": "42", "stdout": "hi\n", "stderr": ""}
    assert code_tool._private_ns["counter_for_test"] == 42


def test_last_expression_repr_and_none(approval_off: None) -> None:
    assert py("'a' * 3")["result"] == "'aaa'"
    assert "result" not in py("None")
    assert "result" not in py("x_for_test = 1")
    assert py("import sys\nprint('e', file=sys.stderr)")["stderr"] == "e\n"


def test_exception_is_a_result(approval_off: None) -> None:
    result = py("def f():\n    return 1 / 0\nf()")
    assert result["error"] == "ZeroDivisionError: division by zero"
    assert "return 1 / 0" in result["traceback"] and "code_tool.py" not in result["traceback"]
    assert py("def (:")["error"].startswith("SyntaxError")


def test_denied_by_default_without_a_callback() -> None:
    result = py("blocked_for_test = 1")
    assert result["blocked"] is True and "BLOCKED" in result["error"] and "Do not retry" in result["error"]
    assert "blocked_for_test" not in code_tool._private_ns


def test_default_callback_is_asked_with_the_code() -> None:
    asked: list[tuple[str, str]] = []
    answers = iter(["once", "deny", "session", "deny"])

    def prompt(command: str, key: str, description: str) -> str:
        asked.append((command, key))
        return next(answers)

    undo = set_default_approval_callback(prompt)
    try:
        assert py("1 + 1")["result"] == "2"
        assert py("2 + 2")["blocked"] is True
        assert py("3 + 3")["result"] == "6"
        assert py("3 + 3")["result"] == "6"  # session approval of this exact code: not asked again
        assert py("4 + 4")["blocked"] is True  # other code is asked again (and denied here)
    finally:
        undo()
    assert asked == [("1 + 1", "python-code"), ("2 + 2", "python-code"), ("3 + 3", "python-code"),
                     ("4 + 4", "python-code")]


def test_always_is_remembered_in_its_own_file() -> None:
    from hermes_nb.tools.safety.approvals.remembered import always_path

    result = py("5 + 5", approval_callback=lambda c, k, d: "always")
    assert result["result"] == "10"
    assert "5 + 5" in json.loads(always_path().read_text())["tools"]["python"]
    assert "approval" not in load_config()
    assert py("5 + 5")["result"] == "10"  # no callback now: allowed by the remembered text
    assert py("6 + 6")["blocked"] is True


def test_config_switch_off(approval_off: None) -> None:
    assert py("7 * 6")["result"] == "42"


def test_registration() -> None:
    entry = registry.get_entry("python")
    assert entry.toolset == "code" and entry.emoji and not entry.read_only and not entry.interactive


@pytest.mark.kernel
def test_real_kernel_live_namespace(tmp_path: Path) -> None:
    from tests.support.kernel import KernelSession

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"code": {"require_approval": False}}))
    with KernelSession(env={"HERMES_NB_HOME": str(home), "HERMES_NB_WORKSPACE": str(tmp_path)}) as k:
        k.run("from hermes_nb.tools.registry import registry\nimport hermes_nb.tools.code_tool")
        k.run("x = 41")
        r = k.run("import json\nprint(json.loads(registry.dispatch('python', {'code': 'x + 1'}))['result'])")
        assert r.stdout.strip() == "42"
        k.run("registry.dispatch('python', {'code': 'y = x * 2'})")
        assert k.run("y").text == "82"
