# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CLI    := $(VENV)/bin/helmdeck-dspy
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test bench clean-venv

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

test: $(STAMP)
	@$(PY) -m pytest -q

bench: $(STAMP)
	@$(PY) benchmarks/bench_parse.py

clean-venv:
	rm -rf $(VENV)
