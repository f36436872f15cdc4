# One command sets up and runs each job on a fresh machine: `make demo`, `make test`.
# torch is installed first, pinned to the CPU build on this machine's disk; pass another with
#   make setup TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: stockfish setup demo search-demo test test-slow test-all lint format bench bench-quick bench-mctx bench-lightzero bench-learning bench-cartpole bench-atari bench-llm clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[dev,llm,distributed,export]"
	touch $(STAMP)

stockfish:  ## Stockfish 15.1 from Debian: chess opponents (stockfish:<elo>) and, later, labels
	command -v stockfish >/dev/null || test -x /usr/games/stockfish || \
		{ $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq stockfish; }

SEED ?= 0
demo: setup  ## Gumbel AlphaZero learns tic-tac-toe to perfect play (checked against every line), then is evaluated
	$(BIN)/mbrl-train experiment=tictactoe seed=$(SEED) run_dir=runs/demo overwrite=true
	$(BIN)/mbrl-eval checkpoint=runs/demo exhaustive=true "opponents=[minimax,mcts:100,lookahead,random]" games=200

search-demo: setup  ## the search speed table against the peers and the pure-Python reference
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

bench-mctx: setup  ## our search against mctx in the same process (installs jax + mctx, a few hundred MB)
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[dev,llm,peers]"
	$(BIN)/python -m benchmarks.search_vs_mctx

bench-lightzero: setup  ## our search against LightZero's C++ tree, one core each (its tree only: --no-deps)
	$(BIN)/python -m pip install --quiet --no-deps lightzero==0.2.0
	$(BIN)/python -m benchmarks.search_vs_lightzero

bench-learning: setup  ## tic-tac-toe time to perfect play (3 seeds), then selfplay throughput
	$(BIN)/python -m benchmarks.tictactoe
	$(BIN)/python -m benchmarks.selfplay_throughput

bench-cartpole: setup  ## MuZero, Gumbel MuZero, EfficientZero on CartPole to 475 (3 seeds each)
	$(BIN)/python -m benchmarks.cartpole

bench-atari: setup  ## the atari100k_ez preset briefly: throughput, time split, projected 100k run
	$(BIN)/python -m benchmarks.atari_throughput

bench-llm: setup  ## Countdown-24: decoding methods at matched passes, distillation vs SFT vs GRPO, KV caches
	$(BIN)/python -m benchmarks.countdown_decoding
	$(BIN)/python -m benchmarks.countdown_distill
	$(BIN)/python -m benchmarks.llm_kv_reuse --threads 1
	$(BIN)/python -m benchmarks.tiny_lm_cache

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis outputs
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
