"""LMs: DSPy engines (``dspy.LM(engine=...)``) that answer without a network (replay and simulation),
the streaming engine of every llama.cpp endpoint (:mod:`~helmdeck_dspy.engines.streaming`, with what
callers tell it in :mod:`~helmdeck_dspy.engines.call_control`), and :mod:`~helmdeck_dspy.engines.lm_spec`,
which turns an ``--lm`` spec into a ``dspy.LM``."""
