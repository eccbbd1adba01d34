"""Trace records: one recorded (or simulated, or published) planning completion per record."""

from helmdeck_dspy.traces.io import load_traces, read_traces, save_traces
from helmdeck_dspy.traces.record import TraceRecord, write_traces

__all__ = ["TraceRecord", "load_traces", "read_traces", "save_traces", "write_traces"]
