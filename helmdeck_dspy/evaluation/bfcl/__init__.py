"""The BFCL benchmark: Berkeley Function Calling Leaderboard questions as planning tasks.

- :mod:`~helmdeck_dspy.evaluation.bfcl.load` — question/answer file pairs -> catalog packs and gold calls;
- :mod:`~helmdeck_dspy.evaluation.bfcl.recall` — do the gold tools survive budget-fitted catalog selection;
- :mod:`~helmdeck_dspy.evaluation.bfcl.score` — plan accuracy against the gold calls;
- :mod:`~helmdeck_dspy.evaluation.bfcl.report` — report.md / report.json.
"""
