"""ReplayEngine: serves recorded completions from a trace file, in file order."""

from __future__ import annotations

import threading
from pathlib import Path

from dspy.lm15 import Request, Response

from helmdeck_dspy.engines.base import make_response
from helmdeck_dspy.errors import HelmdeckError
from helmdeck_dspy.traces.record import TraceRecord, read_traces


class ReplayExhausted(HelmdeckError):
    """A replay engine was asked for more completions than its trace file holds."""


class ReplayEngine:
    """``complete(request)`` returns the next record's content, reasoning, finish_reason and usage.

    Use with ``dspy.LM("replay/<name>", engine=ReplayEngine(path), cache=False)``: a cache would
    answer repeated prompts without consuming records.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.records: list[TraceRecord] = list(read_traces(path))
        self.served = 0
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Response:
        with self._lock:
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
        )

    def close(self) -> None:
        pass
