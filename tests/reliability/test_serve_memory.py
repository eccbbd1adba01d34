"""Memory that stays flat (issue 40, item 3): after warm-up, a serving process's RSS does not grow
with the requests it answers (no per-request history, trace or unbounded cache kept). The soak
benchmark over HTTP is measure/soak_serve.py; this is the small, in-process check."""

from __future__ import annotations

import os

import pytest

from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.service import PlanService
from helmdeck_dspy.serve.wire import PlanRequest

MODELS = ["openai/gpt-4o", "anthropic/claude-sonnet-4-6", "local/qwen2.5-coder-1.5b-instruct", "groq/llama-3.1-8b-instant"]
WARM_UP, MEASURED, BOUND_MB = 1500, 1500, 8.0


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _request(i: int) -> PlanRequest:
    """Distinct intents, 50 tool lists in turn (half the requests plan over the server's catalog), four models."""
    tools = [{"name": f"tool_{i % 50}_{k}", "description": f"Does thing {k} of set {i % 50}.",
              "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}} for k in range(3)]
    return PlanRequest(user_intent=f"please do thing {i} for me now", model=MODELS[i % 4], tools=tools if i % 2 else None)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc (Linux)")
def test_rss_after_warm_up_stays_within_a_bound(tmp_path, monkeypatch):
    import dspy
    from dspy.clients.cache import Cache

    # A response cache of the test's own (memory and disk), as a fresh server process has: the
    # session's shared one holds whatever earlier tests left in it.
    monkeypatch.setattr(dspy, "cache", Cache(True, True, str(tmp_path / "dspy-cache"), 10**9, 1_000_000))
    service = PlanService(ServeConfig(lm_spec="sim:mid-tier", history=False))
    for i in range(WARM_UP):
        outcome = service.plan(_request(i), "user:soak")
        assert outcome.result.failure_cause != "transport_error", outcome.result.error  # the LM call itself went through
    warm = _rss_mb()
    for i in range(WARM_UP, WARM_UP + MEASURED):
        service.plan(_request(i), "user:soak")
    grown = _rss_mb() - warm
    assert grown < BOUND_MB, f"RSS grew {grown:.1f} MB over {MEASURED} requests after warm-up"
