"""``python -m bench --quick``: a missed target fails the run (``make test`` runs it)."""

from __future__ import annotations

import pytest

from bench import __main__ as bench_main
from bench import common


@pytest.fixture(autouse=True)
def _full_mode_after() -> object:
    yield
    common.QUICK = False


def test_a_met_target_passes_and_a_missed_one_exits_non_zero(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main.main(["--quick", "validation"]) == 0
    monkeypatch.setattr(common, "QUICK_MARGIN", 1e-6)  # every target impossible: a "regression"
    assert bench_main.main(["--quick", "validation"]) == 1
    assert "TARGET MISSED" in capsys.readouterr().out


def test_quick_mode_loosens_targets_and_shortens_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert common.limit(30.0) == 30.0
    monkeypatch.setattr(common, "QUICK", True)
    assert common.limit(30.0) == 60.0
