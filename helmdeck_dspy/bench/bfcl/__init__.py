"""The BFCL benchmark: Berkeley Function Calling Leaderboard questions as planning tasks.

- :mod:`~helmdeck_dspy.bench.bfcl.spec` — the reading rules of ``eval/bfcl.toml`` (types, classes, categories);
- :mod:`~helmdeck_dspy.bench.bfcl.models` — tasks, gold calls, the loaded set, its pool and category notes;
- :mod:`~helmdeck_dspy.bench.bfcl.fields` / :mod:`~helmdeck_dspy.bench.bfcl.schema` — question lines and
  function documents -> intents and catalog packs;
- :mod:`~helmdeck_dspy.bench.bfcl.multi_turn` — multi_turn questions: one task per turn, call strings -> gold;
- :mod:`~helmdeck_dspy.bench.bfcl.load` — a data folder -> tasks, every category noted;
- :mod:`~helmdeck_dspy.bench.bfcl.recall` — do the gold tools survive budget-fitted catalog selection;
- :mod:`~helmdeck_dspy.bench.bfcl.score` / :mod:`~helmdeck_dspy.bench.bfcl.plans` — plan accuracy
  against the gold calls (and the no-call rate where nothing fits);
- :mod:`~helmdeck_dspy.bench.bfcl.report` — report.md / report.json.
"""
