# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
# Both create .venv (with uv, from the package registry) on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-all bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -e '.[zoo,dev,onnx]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bgbench demo

test: $(STAMP)
	$(PY) -m pytest -q

test-all: $(STAMP)
	$(PY) -m pytest -q --runslow

bench: $(STAMP)
	$(PY) benchmarks/eval_throughput.py

clean:
	rm -rf $(VENV) bgbench-demo .pytest_cache
