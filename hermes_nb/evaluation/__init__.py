"""Evaluations over a dataset: does the model pick the right tools with the right arguments?

``hermes_nb.evaluate(cases, agent=..., concurrency=8, out_dir=None, executor=None)`` returns an
``EvalResult``. The modules: ``cases`` (normalising and scoring), ``driver`` (evaluate: local or Dask, resume), ``runner`` (local
concurrency, cassettes), ``remote`` (Dask), ``trajectory`` (Hermes's batch_runner format and the checkpoint),
``result`` (rows, summary, table, chart).
"""

from __future__ import annotations

from hermes_nb.evaluation.driver import evaluate
from hermes_nb.evaluation.result import EvalResult, EvalRow

__all__ = ["EvalResult", "EvalRow", "evaluate"]
