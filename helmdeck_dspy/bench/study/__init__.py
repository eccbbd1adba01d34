"""The one study engine: a spec of cases x arms, answered resumably, scored and paired.

- :mod:`~helmdeck_dspy.bench.study.spec` — the spec (``study.toml``): the model, the
  questions' source, the sampling and the arms;
- :mod:`~helmdeck_dspy.bench.study.questions` — BFCL categories or gold tasks over a catalog as questions;
- :mod:`~helmdeck_dspy.bench.study.compiled` — compile arms: compiled first, their test scores, shipping;
- :mod:`~helmdeck_dspy.bench.study.runner` — every (question, arm) pair without a record, answered;
- :mod:`~helmdeck_dspy.bench.study.table` / :mod:`~helmdeck_dspy.bench.study.report` — the rows, paired
  with intervals, and ``table.md`` / ``table.json`` / the figures;
- :mod:`~helmdeck_dspy.bench.study.flow` — :func:`~helmdeck_dspy.bench.study.flow.run_study`, all of it;
- :mod:`~helmdeck_dspy.bench.study.decisions` — a row's recorded decline probabilities, for ``calibrate``.
"""
