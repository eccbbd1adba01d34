"""Recording: running the real planner and writing what the LM said as trace records.

- :mod:`~helmdeck_dspy.recording.exchanges` appends an attempt's exchanges (``Planner(record_path=...)``);
- :mod:`~helmdeck_dspy.recording.trace_sets` plans gold tasks into whole trace sets (``traces simulate``,
  ``traces record``).
"""
