"""DSPy engines (``dspy.LM(engine=...)``) that answer without a network: replay and simulation."""
