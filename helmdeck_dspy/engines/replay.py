"""ReplayEngine: serves recorded completions from a trace file, in file order."""

from __future__ import annotations

import threading
from pathlib import Path

from dspy.lm15 import Request, Response

from helmdeck_dspy.engines.base import make_response
from helmdeck_dspy.errors import ReplayExhausted
from helmdeck_dspy.program.sections import call_kind
from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import TraceRecord


class ReplayNoFilterRecord(Exception):
    """The filter call found no filter record next (not an error for the plan call)."""


class ReplayEngine:
    """``complete(request)`` returns the next record's content, reasoning, finish_reason and usage.

    Records marked ``call: filter`` answer the two-pass filter call; plan calls skip them.

    Use with ``dspy.LM("replay/<name>", engine=ReplayEngine(path), cache=False)``: a cache would
    answer repeated prompts without consuming records.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.records: list[TraceRecord] = list(read_jsonl_traces(path))
        self.served = 0
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Response:
        is_filter = call_kind(request.system if isinstance(request.system, str) else "") == "filter"
        with self._lock:
            if is_filter:
                # Serve a filter call only from a filter record; a plan-only file makes the
                # filter fail (the planner then keeps the lexical selection) without losing a record.
                if self.served >= len(self.records) or self.records[self.served].call != "filter":
                    raise ReplayNoFilterRecord(f"{self.path}: no filter record next for the filter call")
            else:
                while self.served < len(self.records) and self.records[self.served].call == "filter":
                    self.served += 1  # recorded with the filter on, replayed with it off
            if self.served >= len(self.records):
                raise ReplayExhausted(
                    f"{self.path}: replay ran out after {len(self.records)} record(s); the program made more LM calls"
                )
            rec = self.records[self.served]
            self.served += 1
            self.requests.append(request)
        return make_response(
            request.model,
            rec.content,
            reasoning=rec.reasoning_content,
            finish_reason=rec.finish_reason,
            prompt_tokens=rec.prompt_tokens,
            completion_tokens=rec.completion_tokens,
            response_id=rec.id,
            tool_calls=rec.tool_calls,
            refusal=rec.refusal,
        )

    def close(self) -> None:
        pass
