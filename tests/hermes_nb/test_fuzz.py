"""``%tools fuzz``: planted problems are found and shrunk; a correct tool passes; approval is opt-in."""

from __future__ import annotations

import time
from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.evaluation.fuzz import FuzzReport, fuzz_tool
from hermes_nb.tools.registry import registry
from hermes_nb.tools.schema.derive import tool


def planted(text: str, n: int = 0) -> str:
    """Has a crash planted for long numbers."""
    if n > 1000:
        raise KeyError(f"no slot {n}")
    return text[:10]


def correct(text: str, times: int = 1, upper: bool = False) -> dict[str, Any]:
    """Handles every input its schema allows."""
    out = text.upper() if upper else text
    return {"text": out * max(0, min(times, 3)), "length": len(out)}


def test_a_planted_crash_is_found_and_shrunk_to_its_minimum() -> None:
    tool(planted, toolset="t13f")
    report = fuzz_tool("planted", n=200, seed=1, display=False)
    assert isinstance(report, FuzzReport) and not report.ok
    [failure] = report.failures
    assert failure.kind == "crash"
    assert failure.args == {"text": "", "n": 1001}  # the smallest input that still crashes
    assert "KeyError" in failure.error and "1001" in failure.error


def test_a_correct_tool_passes_valid_and_invalid_arguments() -> None:
    tool(correct, toolset="t13f")
    report = fuzz_tool("correct", n=100, seed=2, invalid=True, display=False)
    assert report.ok, str(report)
    assert report.calls >= 100 and report.invalid_calls >= 100
    assert "no problems found" in str(report)


def test_results_that_are_not_json_or_over_budget_are_problems() -> None:
    def odd(n: int) -> Any:
        """Returns a set for big n and a huge text for negative n."""
        if n > 10:
            return {n}
        if n < -10:
            return "x" * 500
        return n

    tool(odd, toolset="t13f", max_result_size_chars=100)
    report = fuzz_tool("odd", n=300, seed=3, display=False)
    found = {f.kind: f for f in report.failures}
    assert found.keys() == {"not-json", "over-budget"}
    assert found["not-json"].args == {"n": 11} and "set" in found["not-json"].error
    assert found["over-budget"].args == {"n": -11} and "500" in found["over-budget"].error


@pytest.mark.slow
def test_a_slow_call_is_a_problem() -> None:
    def sleepy(n: int) -> int:
        """Sleeps for big n."""
        if n > 50:
            time.sleep(0.3)
        return n

    tool(sleepy, toolset="t13f")
    report = fuzz_tool("sleepy", n=20, seed=4, slow=0.15, display=False)
    [failure] = report.failures
    assert failure.kind == "slow" and failure.args["n"] > 50 and "s (slow means" in failure.error


def test_tools_that_need_approval_are_fuzzed_only_when_allowed(ip: Any) -> None:
    registry.register("careful", "t13f", {"name": "careful", "description": "d", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
        lambda args, **kw: args["x"], needs_approval=True, source="notebook")
    with pytest.raises(UsageError, match="--allow-approval"):
        ip.run_line_magic("tools", "fuzz careful --n 5")
    with pytest.raises(UsageError, match="not marked read-only"):
        ip.run_line_magic("tools", "fuzz write_file --n 5")
    registry.register("asker", "t13f", {"name": "asker", "description": "d", "parameters": {
        "type": "object", "properties": {}}}, lambda args, **kw: "?", interactive=True, source="notebook")
    with pytest.raises(UsageError, match="asks the person"):
        ip.run_line_magic("tools", "fuzz asker --allow-approval")
    report = ip.run_line_magic("tools", "fuzz careful --n 20 --seed 5 --allow-approval")
    assert report.ok and report.calls >= 20 and "only terminal commands run sandboxed" in str(report)


def test_magic_parses_its_options(ip: Any) -> None:
    tool(planted, toolset="t13f")
    report = ip.run_line_magic("tools", "fuzz planted --n 150 --seed 7 --invalid")
    assert [f.args for f in report.failures] == [{"text": "", "n": 1001}]
    assert report.invalid_calls > 0
    with pytest.raises(UsageError, match="unknown option"):
        ip.run_line_magic("tools", "fuzz planted --bogus")
    with pytest.raises(UsageError, match="no tool named"):
        ip.run_line_magic("tools", "fuzz nope")


def test_load_ext_imports_no_fuzz_or_scale_library() -> None:
    import subprocess
    import sys

    code = ("import sys; from IPython.core.interactiveshell import InteractiveShell; "
            "ip = InteractiveShell.instance(); ip.run_line_magic('load_ext', 'hermes_nb'); "
            "import hermes_nb; hermes_nb.evaluate; "
            "print([m in sys.modules for m in ('hypothesis', 'hermes_nb.evaluation.fuzz', 'pandas', 'distributed', 'dask', "
            "'matplotlib')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == str([False] * 6)


def test_without_hypothesis_the_magic_says_which_extra_to_install(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    tool(correct, toolset="t13f")
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "hermes_nb.tools.schema.strategies", raising=False)
    with pytest.raises(UsageError, match=r"needs hypothesis: pip install 'hermes-nb\[fuzz\]'"):
        ip.run_line_magic("tools", "fuzz correct")


def test_a_tool_the_persons_rules_deny_is_never_run(hermes_home: Any) -> None:
    """Fuzzing passes the approval gate as dispatch does: an ``approvals:`` deny rule holds (the handler was
    called directly before, so a denied tool ran hundreds of times)."""
    import yaml

    ran: list[int] = []

    def denied(n: int) -> int:
        """Records that it ran."""
        ran.append(n)
        return n

    tool(denied, toolset="t13f")
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"approvals": {"tools": {"denied": "deny"}}}))
    report = fuzz_tool("denied", n=20, seed=6, display=False)
    assert ran == [] and report.ok and report.calls >= 20
    assert f"{report.calls} call(s) not run, blocked by the approval gate" in str(report)
