"""LMs: DSPy engines (``dspy.LM(engine=...)``) that answer without a network (replay and simulation),
and :mod:`~helmdeck_dspy.engines.lm_spec`, which turns an ``--lm`` spec into a ``dspy.LM``."""
