# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
# Both create .venv (with uv, from the package registry) on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

# Python caches the bytecode of what it imports inside the venv, even where the environment says
# not to (PYTHONDONTWRITEBYTECODE=1, set in CI and many images; an empty value means unset): the
# first `make demo` or `make test` compiles only the modules bgbench imports, and later commands
# read them. Compiling all of site-packages at install instead (`uv pip install --compile-bytecode`)
# cost more CPU than the whole first test run's compiling (benchmarks/README.md, "Start-up").
export PYTHONDONTWRITEBYTECODE :=

.PHONY: demo test test-all bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[zoo,dev,onnx,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bgbench demo

# The suite runs in one worker process per core (pytest-xdist), each with one torch thread: its
# models are tiny, so a second thread per forward buys wake-ups, not speed (measured on 2 cores:
# 194 s this way, 289 s in one process with torch's default threads, 330 s in one with one thread).
# Each test file goes to one worker whole (`--dist loadscope`), so a module's fixtures (a store with
# every measure, a browser) are built once, not once per worker: 550 s against 593 s with the default
# `load` on the same idle machine, 2026-11-28.
TEST := OMP_NUM_THREADS=1 $(PY) -m pytest -q -n auto --dist loadscope

test: $(STAMP)
	$(TEST)

test-all: $(STAMP)
	$(TEST) --runslow

# The manual: docs/ built into site/ with MkDocs; strict, so a broken link or a missing page fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs build --strict --clean --quiet

bench: $(STAMP)
	$(PY) benchmarks/eval_throughput.py

clean:
	rm -rf $(VENV) bgbench-demo .pytest_cache site
