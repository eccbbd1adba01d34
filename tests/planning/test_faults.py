"""The fault matrix through the real client stack: Planner.plan → DSPy → LiteLLM (or DSPy's native
lm15 client) → HTTP → a loopback fault server. Every fault must end in a typed failure cause,
retried only when the cause is retryable; a server that stalls ends its attempt by the deadline
(its cause says so: the stalled reply would otherwise have come). No test compares wall-clock
times: how long each fault takes is printed by ``measure/fault_deadlines.py``."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.decoding.causes import FAILURE_CAUSES
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.planning.resilience.policy import (
    FallbackChain,
    FallbackModel,
    RetryPolicy,
)
from tests.fault_server import (
    FaultServer,
    content_filter,
    empty,
    length,
    malformed,
    ok,
    reasoning_only,
    reset,
    slow,
    stall_body,
    stall_headers,
    status,
    think_only,
    trickle,
)

KEY = "sk-helmdeck-FAKE-faults-0123456789"
MODEL = "openai/fault-model"  # not in the budget table: the Tier C fallback row (single_pick)
SONNET = "anthropic/claude-sonnet-4-6"  # tier A: full_steps
INTENT = "rewrite my launch notes as a blog post for developers"
TIMEOUT = 0.6
"""The attempt deadline of the tests whose server stalls."""
SLACK = 30.0
"""The deadline of every other test: a loaded machine never turns its fault into a timeout."""
PLAN = json.dumps({
    "steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {"audience": "developers"}, "rationale": "fits"}],
    "complexity": "single-action", "more_steps_likely": False, "reasoning": "one pack does it",
})
ENGINES = ["litellm", "auto"]  # LiteLLM, and DSPy's default selection (its native lm15 client for openai/)


@pytest.fixture(scope="module", autouse=True)
def _warm_clients():
    """One ordinary call per engine first: the first call in a process imports LiteLLM and the
    OpenAI SDK's resources (seconds), which a 0.6 s deadline would count."""
    with FaultServer([ok(PLAN)]) as server:
        for engine in ENGINES:
            result = make_planner(server.url, engine=engine, timeout_s=60).plan(INTENT)
            assert result.ok, result.error


def make_planner(url: str, *, engine: str = "litellm", model: str = MODEL, lm: str | None = None,
                 max_attempts: int = 2, timeout_s: float = SLACK, base_delay_s: float = 0.05,
                 max_delay_s: float = 0.5, fallback: FallbackChain | None = None, **kw) -> Planner:
    kw.setdefault("use_filter", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Planner.for_model(
            model, lm=lm or MODEL, api_base=url, api_key=KEY, engine=engine, cache=False,
            retry=RetryPolicy(max_attempts=max_attempts, base_delay_s=base_delay_s, max_delay_s=max_delay_s,
                              timeout_s=timeout_s),
            fallback=fallback, **kw,
        )


# fault id → (script, expected cause, retried?)
FAULTS = {
    "empty_200": ([empty()], "likely_timeout", False),
    "content_filter": ([content_filter()], "safety_filtered", False),
    "length_cut_json": ([length(PLAN[: len(PLAN) // 2])], "length_truncated", False),
    "think_only": ([think_only()], "reasoning_only", False),
    "reasoning_content_only": ([reasoning_only()], "reasoning_only", False),
    "malformed_json": ([malformed()], "constrained_deadlock", False),
    "http_401": ([status(401)], "transport_error", False),
    "http_429_retry_after": ([status(429, retry_after=0.1)], "rate_limited", True),
    "http_500": ([status(500)], "transport_error", True),
    "http_502": ([status(502)], "transport_error", True),
    "http_503": ([status(503)], "transport_error", True),
    "connection_reset": ([reset()], "transport_error", True),
    "first_byte_late": ([slow(3.0, ok(PLAN))], "likely_timeout", True),
    "stall_after_headers": ([stall_headers()], "likely_timeout", True),
    "stall_mid_body": ([stall_body()], "likely_timeout", True),
    "trickle_body": ([trickle(0.2, ok(PLAN))], "likely_timeout", True),
}
STALLS = {"first_byte_late", "stall_after_headers", "stall_mid_body", "trickle_body"}
"""The faults whose reply comes too late: their attempts end by the deadline."""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_ends_in_typed_cause_within_deadline(fault, engine):
    script, cause, retried = FAULTS[fault]
    with FaultServer(script, deadline_s=20) as server:
        planner = make_planner(server.url, engine=engine, timeout_s=TIMEOUT if fault in STALLS else SLACK)
        result = planner.plan(INTENT)
        n_requests = len(server.requests)
    assert result.failure_cause == cause
    assert result.failure_cause in FAILURE_CAUSES and not result.ok and result.steps == []
    expected_attempts = 2 if retried else 1
    assert n_requests == expected_attempts, "DSPy/LiteLLM must not retry on their own"
    assert [a.cause for a in result.attempts] == [cause] * expected_attempts
    assert result.answered_by is None
    if fault.startswith("http_"):  # the status the server sent, on every attempt
        assert {a.http_status for a in result.attempts} == {int(fault.split("_")[1])}
    else:  # no HTTP response at all (reset, timeout): no status, not a client-invented one
        assert {a.http_status for a in result.attempts} <= {None, 408}
    json.dumps(result.model_dump(mode="json"))  # attempts stay JSON-serialisable


@pytest.mark.parametrize("engine", ENGINES)
def test_503_then_ok_is_retried_with_the_same_request(engine):
    with FaultServer([status(503), ok(PLAN)]) as server:
        result = make_planner(server.url, engine=engine, max_attempts=3).plan(INTENT)
    assert result.ok and [s.tool for s in result.steps] == ["blog.rewrite_for_audience"]
    assert [a.cause for a in result.attempts] == ["transport_error", None]
    assert result.attempts[0].http_status == 503 and result.attempts[0].retry_in_ms == 50
    assert result.answered_by == MODEL
    first, second = server.requests
    assert first.body == second.body  # a retry re-sends the identical request
    assert first.headers["Authorization"] == second.headers["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("engine", ENGINES)
def test_attempts_stop_at_max_attempts(engine):
    with FaultServer([status(503)]) as server:
        result = make_planner(server.url, engine=engine, max_attempts=3, base_delay_s=0.1).plan(INTENT)
    assert len(server.requests) == 3 and server.over_cap == 0
    assert len(result.attempts) == 3 and result.failure_cause == "transport_error"
    assert [a.retry_in_ms for a in result.attempts] == [100, 200, None]  # exponential
    gaps = server.gaps()
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2


@pytest.mark.parametrize("engine", ENGINES)
def test_retry_after_is_honoured(engine):
    with FaultServer([status(429, retry_after=0.4), ok(PLAN)]) as server:
        result = make_planner(server.url, engine=engine, base_delay_s=0.01, max_delay_s=2.0).plan(INTENT)
    assert result.ok and result.attempts[0].cause == "rate_limited"
    assert result.attempts[0].retry_in_ms == 400
    assert server.gaps()[0] >= 0.38


@pytest.mark.parametrize("engine", ENGINES)
def test_retry_after_is_capped_by_max_delay(engine, monkeypatch):
    import functools

    from helmdeck_dspy.planning import planner as planner_module

    waits: list[float] = []
    monkeypatch.setattr(planner_module, "run_plan", functools.partial(planner_module.run_plan, sleep=waits.append))
    with FaultServer([status(429, retry_after=30), ok(PLAN)]) as server:
        result = make_planner(server.url, engine=engine, base_delay_s=0.01, max_delay_s=0.2).plan(INTENT)
    assert result.ok and result.attempts[0].retry_in_ms == 200
    assert waits == [0.2]  # the 30 s the server asked for, capped


def test_timeout_goes_to_the_next_model_of_the_chain():
    with FaultServer([stall_headers()]) as primary, FaultServer([ok(PLAN)]) as backup:
        chain = FallbackChain(models=[FallbackModel(model="openai/backup-model", api_base=backup.url)])
        planner = make_planner(primary.url, fallback=chain, max_attempts=2, timeout_s=TIMEOUT)
        result = planner.plan(INTENT)
        assert len(primary.requests) == 2 and len(backup.requests) == 1
        assert backup.requests[0].body["model"] == "backup-model"
        assert backup.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert result.ok and result.answered_by == "openai/backup-model" and result.model == "openai/backup-model"
    assert [(a.model, a.cause) for a in result.attempts] == [
        (MODEL, "likely_timeout"), (MODEL, "likely_timeout"), ("openai/backup-model", None)]


def test_rate_limit_after_retries_falls_back_and_all_models_failing_reports_the_last_cause():
    with FaultServer([status(429)]) as a, FaultServer([status(503)]) as b:
        chain = FallbackChain(models=[FallbackModel(model="openai/second", api_base=b.url)])
        result = make_planner(a.url, fallback=chain, base_delay_s=0.01).plan(INTENT)
        assert len(a.requests) == 2 and len(b.requests) == 2
    assert result.failure_cause == "transport_error" and result.answered_by is None
    assert [a.cause for a in result.attempts] == ["rate_limited", "rate_limited", "transport_error", "transport_error"]


def test_safety_filter_is_surfaced_not_sent_to_the_fallback():
    with FaultServer([content_filter()]) as a, FaultServer([ok(PLAN)]) as b:
        chain = FallbackChain(models=[FallbackModel(model="openai/second", api_base=b.url)],
                              on_length="single_pick_then_cap")
        result = make_planner(a.url, fallback=chain, max_attempts=3).plan(INTENT)
        assert len(a.requests) == 1 and len(b.requests) == 0
    assert result.failure_cause == "safety_filtered" and len(result.attempts) == 1


def test_length_on_full_steps_replans_as_single_pick_then_with_a_larger_cap():
    cut = length(PLAN[:40])
    with FaultServer([cut, cut, ok(PLAN)]) as server:
        chain = FallbackChain(on_length="single_pick_then_cap", cap_factor=2.0)
        planner = make_planner(server.url, model=SONNET, lm="openai/sonnet-stub", fallback=chain, max_attempts=3)
        assert planner.variant == "full_steps"
        result = planner.plan(INTENT)
        bodies = [r.body for r in server.requests]
    assert result.ok and result.prompt_variant_used == "single_pick"
    assert [(a.variant, a.cause, a.max_tokens) for a in result.attempts] == [
        ("full_steps", "length_truncated", 8000), ("single_pick", "length_truncated", 8000),
        ("single_pick", None, 16000)]
    assert "more_steps_likely" not in bodies[0]["messages"][0]["content"]  # full_steps answer format
    assert "more_steps_likely" in bodies[1]["messages"][0]["content"]  # single_pick answer format
    assert [b.get("max_tokens") or b.get("max_completion_tokens") for b in bodies] == [8000, 8000, 16000]


def test_length_without_a_length_action_is_returned_after_one_request():
    with FaultServer([length(PLAN[:40]), ok(PLAN)]) as server:
        result = make_planner(server.url, max_attempts=3).plan(INTENT)
        assert len(server.requests) == 1
    assert result.failure_cause == "length_truncated"


def test_cli_plan_with_retries_timeout_and_fallback(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # the fallback model shares --api-base: the same server answers it after the primary's 2 attempts
    with FaultServer([status(503), status(503), ok(PLAN)]) as a:
        args = ["plan", INTENT, "-m", MODEL, "--lm", "openai/cli-primary", "--api-base", a.url,
                "--no-filter", "--no-history", "--retries", "1", "--timeout", "2",
                "--fallback", "openai/cli-backup", "--json"]
        out = CliRunner().invoke(cli, args)
        bodies = [r.body["model"] for r in a.requests]
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["answered_by"] == "openai/cli-backup"
    assert [(x["model"], x["cause"]) for x in data["attempts"]] == [
        (MODEL, "transport_error"), (MODEL, "transport_error"),
        ("openai/cli-backup", None)]
    assert bodies == ["cli-primary", "cli-primary", "cli-backup"]
    assert KEY not in out.output


def test_a_given_lm_keeps_no_hidden_retries():
    """An LM object built with DSPy's default num_retries=3 is used with retries off: one request per attempt."""
    import dspy

    with FaultServer([status(503)]) as server:
        lm = dspy.LM(MODEL, api_base=server.url, api_key=KEY, num_retries=3, cache=False, timeout=TIMEOUT)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model(MODEL, lm=lm, use_filter=False, retry=RetryPolicy(max_attempts=1))
        result = planner.plan(INTENT)
        assert len(server.requests) == 1  # DSPy would have sent 4, sleeping 1+2+4 s between them
    assert result.failure_cause == "transport_error"
    assert lm.num_retries == 3  # the caller's object is left as it was
