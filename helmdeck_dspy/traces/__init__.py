"""Trace records: one recorded (or simulated, or published) planning completion per record."""

from helmdeck_dspy.traces.record import TraceRecord, read_traces, write_traces

__all__ = ["TraceRecord", "read_traces", "write_traces"]
