"""Benchmarks as library functions: each runs a public or held-out set and returns a report model.

- :mod:`~helmdeck_dspy.bench.bfcl` — BFCL questions as planning tasks: selection recall, plan
  accuracy, and the lever runs (the model alone against planner configurations, paired);
- :mod:`~helmdeck_dspy.bench.heldout` — per-model compiled programs compared on a held-out split.
"""
