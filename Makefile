# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CLI    := $(VENV)/bin/helmdeck-dspy
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo demo-live llama-server test measure bench-live heldout bench-deps clean-venv

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "creating $(VENV) (first run: installs dspy, mlflow, datasets; a few minutes)"; $(PYTHON) -m venv $(VENV); }
	@echo "installing helmdeck-dspy into $(VENV) (log: $(VENV)/install.log)"
	@{ $(PY) -m pip install --disable-pip-version-check --upgrade pip \
	   && $(PY) -m pip install --disable-pip-version-check --no-compile -e '.[dev]'; } > $(VENV)/install.log 2>&1 \
	   || { tail -n 40 $(VENV)/install.log; echo "install failed: see $(VENV)/install.log"; exit 1; }
	@touch $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

demo-live: $(STAMP)
	@bash scripts/demo_live.sh

# llama.cpp's own llama-server, built from the llama.cpp tree the pinned llama-cpp-python vendors
# (about 10 minutes on 2 cores): models serve --engine llama-server, HELMDECK_LOCAL_ENGINE=llama-server.
llama-server: $(STAMP)
	@bash scripts/build_llama_server.sh

# The tests (in 2 worker processes, each test file in one), and mypy under its ratchet
# (scripts/type_ratchet.py) alongside them: either failing fails.
test: $(STAMP)
	@$(PY) scripts/type_ratchet.py > $(VENV)/type-ratchet.log 2>&1 & ratchet=$$!; \
	 $(PY) -m pytest -q -n 2 --dist loadfile; tests=$$?; \
	 wait $$ratchet; types=$$?; cat $(VENV)/type-ratchet.log; \
	 test $$tests -eq 0 -a $$types -eq 0

# Parser speed against dspy's JSON adapter and json.loads; the other measurement scripts are in measure/.
measure: $(STAMP)
	@$(PY) measure/parse_speed.py

# The held-out table (a)-(e) for Qwen2.5 Coder 0.5B on the live model (issue 14): compiles and
# records what is missing (hours on 2 cores; resumable), then writes table.md beside the spec.
# Needs the local extra and both Qwen models: helmdeck-dspy models install qwen2.5-coder-0.5b qwen2.5-coder-1.5b
heldout: $(STAMP)
	@$(CLI) bench study experiments/heldout/qwen2.5-coder-0.5b/study.toml

# The BFCL lever tables (issue 22): the model alone against the planner, paired, live on the local
# Qwen models, the steps of experiments/studies.toml in order (helmdeck-dspy bench plan). Hours on 2
# cores: runs in the background (log: experiments/bench-live.log) and
# resumes where it stopped. Needs the local extra and the models (see docs/local-models.md).
bench-live: $(STAMP)
	@echo "running in the background; follow experiments/bench-live.log"
	@nohup $(CLI) bench plan --no-progress experiments/studies.toml >> experiments/bench-live.log 2>&1 &

# The pinned BFCL package (bfcl-eval, and the mpmath its math API imports) for the executed
# multi-turn benchmark (helmdeck_dspy.bench.multi_turn), installed outside .venv without its declared
# dependencies, which conflict with it (numpy==1.26.4, model runtimes): bench-deps.txt pins both by hash.
BENCH_DEPS := .bench-deps/bfcl-eval/.installed-stamp

$(BENCH_DEPS): bench-deps.txt $(STAMP)
	@rm -rf .bench-deps/bfcl-eval
	@$(PY) -m pip install --disable-pip-version-check -q --no-deps --require-hashes --target .bench-deps/bfcl-eval \
	   -r bench-deps.txt
	@touch $(BENCH_DEPS)

bench-deps: $(BENCH_DEPS)

clean-venv:
	rm -rf $(VENV)
