"""Benchmarks as library functions: each runs a public or held-out set and returns a report model.

- :mod:`~helmdeck_dspy.bench.study` — the one study engine (the model alone, planner configurations
  and compiled programs, paired, on BFCL questions or gold tasks): every committed study runs on it;
- :mod:`~helmdeck_dspy.bench.bfcl` — BFCL data as planning tasks: loading, selection recall, call matching;
- :mod:`~helmdeck_dspy.bench.e2e` — plans that run over real MCP servers, checked by what the tools did;
- :mod:`~helmdeck_dspy.bench.plan` — the run order of the studies (``experiments/studies.toml``).
"""
