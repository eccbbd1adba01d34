"""The end-to-end tasks: run over six real MCP servers in a sandbox and scored by what the tools did
(``sandbox``, ``checks``, ``gold``), one task run and checked under the loop (``run``), and the model
alone's loop (``arms``). A study with ``[e2e]`` (:mod:`helmdeck_dspy.bench.study`) runs them per row.

The loop's limits per task are here, so that the study spec and ``bench e2e`` share them without
importing the runner."""

MAX_STEPS = 8
"""Loop steps a task may take."""
TIME_CAP_S = 600.0
"""Seconds a task may take."""
