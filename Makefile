# One command sets up and runs each job on a fresh machine: `make demo`, `make test`.
# torch is installed first, pinned to the CPU build on this machine's disk; pass another with
#   make setup TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-slow test-all lint format bench bench-quick clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[dev]"
	touch $(STAMP)

demo: setup  ## search demonstration: the speed table against the peers and the reference
	$(BIN)/python -m benchmarks.search_speed --quick --models tabular,table,conv --budget 0.5

test: setup  ## lint + the default (fast) test suite; what CI runs
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

test-slow: setup  ## the tests marked slow
	$(BIN)/python -m pytest -q -m slow

test-all: setup
	$(BIN)/python -m pytest -q -m "slow or not slow"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: setup  ## the full speed grid of issue #2 (long)
	$(BIN)/python -m benchmarks.search_speed

bench-quick: setup
	$(BIN)/python -m benchmarks.search_speed --quick

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
