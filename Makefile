# Two entry points: `make demo` (the main job, offline, no API key) and
# `make test` (the whole suite). Both create .venv and install what they need.
# `make screenshots` refreshes the README's images in docs/screenshots (tests
# never write there).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint install clean screenshots

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,ui,notify,mcp,retrieval,postgres]'
	touch $(STAMP)

# `aah` is installed in .venv/bin, not on the shell's PATH: say how to reach it.
NEXT := @echo "next: source $(VENV)/bin/activate, then try 'aah --help' or 'aah demo --plain'"

install: $(STAMP)
	$(NEXT)

demo: $(STAMP)
	$(BIN)/aah demo
	$(NEXT)

lint: $(STAMP)
	$(BIN)/ruff check aah tests perf scripts
	$(BIN)/ruff format --check aah tests perf scripts
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) tool_registry/registry.db
