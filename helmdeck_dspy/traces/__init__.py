"""Trace records: one recorded (or simulated, or published) planning completion per record.

:func:`load_traces` and :func:`save_traces` read and write a trace set in any supported format;
``read_jsonl_traces`` / ``write_jsonl_traces`` are the JSONL plumbing under them (a file whatever its
name, no output rule), for the flows that append to and rewrite their own files.
"""

from helmdeck_dspy.traces.io import load_traces, save_traces
from helmdeck_dspy.traces.record import TraceRecord

__all__ = ["TraceRecord", "load_traces", "save_traces"]
