# One entry point for a fresh machine: every target creates or refreshes .venv itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml tests/fixtures/entry_point_plugin/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m pip install -q -e tests/fixtures/entry_point_plugin
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check tools hermes_nb tests bench scripts

typecheck: venv
	$(BIN)/mypy

test: venv lint typecheck
	$(BIN)/python -m pytest

demo: venv
	$(BIN)/python -m hermes_nb.demo

bench: venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts
