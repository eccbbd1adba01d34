"""The retry policy, error classification, the attempt deadline and the fallback loop, without HTTP."""

from __future__ import annotations

import threading
from datetime import UTC
from types import SimpleNamespace

import pytest
from dspy.utils.exceptions import (
    LMAuthError,
    LMRateLimitError,
    LMServerError,
    LMTimeoutError,
    LMTransportError,
)
from pydantic import ValidationError

from helmdeck_dspy.errors import DataFileError, DeadlineExceeded
from helmdeck_dspy.io.redaction import MASK, redact
from helmdeck_dspy.planning.resilience.classify import (
    ErrorInfo,
    classify_error,
    retry_after_of,
    should_retry,
)
from helmdeck_dspy.planning.resilience.deadline import call_with_deadline
from helmdeck_dspy.planning.resilience.loop import run_plan
from helmdeck_dspy.planning.resilience.policy import (
    FallbackChain,
    FallbackModel,
    RetryPolicy,
    load_resilience,
)
from helmdeck_dspy.planning.result import Attempt, PlanResult

# ------------------------------------------------------------------ policy


def test_backoff_doubles_and_is_capped():
    p = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0)
    assert [p.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_after_raises_the_delay_up_to_the_cap_only():
    p = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0)
    assert p.delay(1, retry_after=4.0) == 4.0
    assert p.delay(1, retry_after=120.0) == 10.0  # a server cannot park us for two minutes
    assert p.delay(3, retry_after=0.5) == 4.0  # a shorter hint does not shorten our backoff
    assert RetryPolicy(honor_retry_after=False).delay(1, retry_after=20.0) == 1.0


def test_policy_rejects_nonsense():
    with pytest.raises(ValidationError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValidationError):
        RetryPolicy(timeout_s=0)
    with pytest.raises(ValidationError):
        RetryPolicy(retry_on={"not_a_cause"})
    with pytest.raises(ValidationError):
        FallbackChain(on_length="sometimes")


@pytest.mark.parametrize("info, retried", [
    (ErrorInfo("rate_limited", 429), True),
    (ErrorInfo("transport_error", 503), True),
    (ErrorInfo("transport_error", 502), True),
    (ErrorInfo("transport_error", None), True),  # connection reset: no status
    (ErrorInfo("likely_timeout", None), True),
    (ErrorInfo("transport_error", 401), False),  # a bad key stays bad
    (ErrorInfo("transport_error", 400), False),
    (ErrorInfo("safety_filtered", None), False),
    (ErrorInfo("length_truncated", None), False),
])
def test_should_retry(info, retried):
    assert should_retry(info, RetryPolicy()) is retried


def test_retry_on_narrows_what_is_retried():
    assert not should_retry(ErrorInfo("likely_timeout", None), RetryPolicy(retry_on={"rate_limited"}))


# ------------------------------------------------------------------ classification


@pytest.mark.parametrize("exc, cause, status", [
    (LMRateLimitError("slow down", status=429, retry_after=2.0), "rate_limited", 429),
    (LMServerError("bad gateway", status=502), "transport_error", 502),
    (LMTimeoutError("Request timed out", status=408), "likely_timeout", 408),
    (LMTransportError("read timed out waiting for headers: no bytes for 1s"), "likely_timeout", None),
    (LMTransportError("read failed: [Errno 104] Connection reset by peer"), "transport_error", None),
    (LMAuthError("invalid key", status=401), "transport_error", 401),
    (DeadlineExceeded(1.0), "likely_timeout", None),
    (ConnectionResetError("reset"), "transport_error", None),
])
def test_classify_error(exc, cause, status):
    info = classify_error(exc)
    assert (info.cause, info.status) == (cause, status)


def test_retry_after_from_dspy_field():
    assert classify_error(LMRateLimitError("x", status=429, retry_after=2.5)).retry_after == 2.5


def test_retry_after_found_in_litellm_response_headers_down_the_chain():
    """DSPy's LiteLLM path drops Retry-After; LiteLLM's own exception still has the headers."""
    inner = Exception("litellm.RateLimitError")
    inner.litellm_response_headers = {"content-type": "application/json", "Retry-After": "7"}
    outer = LMRateLimitError("rate limited", status=429)
    outer.__cause__ = inner
    assert retry_after_of(outer) == 7.0
    inner.litellm_response_headers = {"retry-after-ms": "1500"}
    assert retry_after_of(outer) == 1.5
    inner.litellm_response_headers = {"retry-after": "soon"}
    assert retry_after_of(outer) is None


# ------------------------------------------------------------------ deadline


def test_call_with_deadline_returns_and_raises_like_the_call():
    assert call_with_deadline(lambda: 42, 1.0) == 42
    with pytest.raises(KeyError):
        call_with_deadline(lambda: {}["missing"], 1.0)


def test_call_with_deadline_abandons_a_stuck_call_on_time():
    release, returned = threading.Event(), threading.Event()

    def stuck():
        release.wait(60)
        returned.set()

    with pytest.raises(DeadlineExceeded):
        call_with_deadline(stuck, 0.2)
    assert not returned.is_set()  # the caller was let go while the call was still stuck
    release.set()
    assert returned.wait(5)


def test_call_with_deadline_carries_context_variables():
    import contextvars

    var = contextvars.ContextVar("v", default="unset")
    var.set("caller's")
    assert call_with_deadline(var.get, 1.0) == "caller's"


# ------------------------------------------------------------------ the loop, with a scripted planner


class ScriptedPlanner:
    """Stands in for Planner in run_plan: each attempt() takes the next (cause, status, retry_after)."""

    def __init__(self, model, script, *, variant="single_pick", cap=1500, registry=None):
        self.budget = SimpleNamespace(model=model, output_tokens=cap)
        self.variant = variant
        self.max_tokens = None
        self.script = script
        self.registry = registry if registry is not None else {}
        self.calls = 0

    @property
    def output_cap(self):
        return self.max_tokens or self.budget.output_tokens

    def attempt(self, timeout_s=None, **call):
        cause, status, hint = self.script.pop(0)
        self.calls += 1
        result = PlanResult(prompt_variant_used=self.variant, model=self.budget.model, tier="C", failure_cause=cause)
        attempt = Attempt(model=self.budget.model, variant=self.variant, cause=cause, http_status=status,
                          max_tokens=self.output_cap)
        transport = cause in ("rate_limited", "transport_error") or (cause == "likely_timeout" and status != 200)
        info = ErrorInfo(cause, status, hint) if cause and transport else None
        return result, attempt, info

    def derive(self, *, variant=None, max_tokens=None):
        new = ScriptedPlanner(self.budget.model, self.script, variant=variant or self.variant,
                              cap=self.budget.output_tokens, registry=self.registry)
        new.max_tokens = max_tokens or self.max_tokens
        return new

    def for_fallback(self, target: FallbackModel):
        return self.registry[target.model]


def run(planner, policy=None, chain=None):
    slept: list[float] = []
    result = run_plan(planner, policy=policy or RetryPolicy(base_delay_s=0.1, max_delay_s=1.0), chain=chain,
                      sleep=slept.append, intent="x")
    return result, slept


def test_loop_retries_transport_errors_with_backoff_then_succeeds():
    p = ScriptedPlanner("m", [("transport_error", 503, None), ("rate_limited", 429, 0.7), (None, None, None)])
    result, slept = run(p)
    assert result.ok and result.answered_by == "m"
    assert slept == [0.1, 0.7]  # base, then the server's Retry-After (above the doubled 0.2)
    assert [a.retry_in_ms for a in result.attempts] == [100, 700, None]


def test_loop_gives_up_after_max_attempts():
    p = ScriptedPlanner("m", [("transport_error", 500, None)] * 5)
    result, slept = run(p, policy=RetryPolicy(max_attempts=3, base_delay_s=0.1))
    assert p.calls == 3 and len(slept) == 2 and result.failure_cause == "transport_error"
    assert result.answered_by is None


@pytest.mark.parametrize("cause", ["safety_filtered", "length_truncated", "constrained_deadlock", "no_json",
                                   "schema_mismatch", "reasoning_only"])
def test_loop_never_resends_an_unusable_completion(cause):
    p = ScriptedPlanner("m", [(cause, None, None), (None, None, None)])
    result, slept = run(p, chain=FallbackChain(models=[FallbackModel(model="b")]))
    assert p.calls == 1 and slept == [] and result.failure_cause == cause


def test_loop_does_not_retry_a_401():
    p = ScriptedPlanner("m", [("transport_error", 401, None), (None, None, None)])
    result, _ = run(p)
    assert p.calls == 1 and result.failure_cause == "transport_error"


def test_chain_moves_to_the_next_model_after_retries_and_records_who_answered():
    registry: dict = {}
    p = ScriptedPlanner("a", [("likely_timeout", None, None)] * 2, registry=registry)
    registry["b"] = ScriptedPlanner("b", [("rate_limited", 429, None)] * 2, registry=registry)
    registry["c"] = ScriptedPlanner("c", [(None, None, None)], registry=registry)
    chain = FallbackChain(models=[FallbackModel(model="b"), FallbackModel(model="c")])
    result, _ = run(p, policy=RetryPolicy(max_attempts=2, base_delay_s=0), chain=chain)
    assert result.ok and result.answered_by == "c"
    assert [(a.model, a.cause) for a in result.attempts] == [
        ("a", "likely_timeout"), ("a", "likely_timeout"), ("b", "rate_limited"), ("b", "rate_limited"), ("c", None)]


def test_chain_respects_next_model_on():
    registry: dict = {"b": ScriptedPlanner("b", [(None, None, None)])}
    p = ScriptedPlanner("a", [("transport_error", 503, None)], registry=registry)
    chain = FallbackChain(models=[FallbackModel(model="b")], next_model_on={"likely_timeout"})
    result, _ = run(p, policy=RetryPolicy(max_attempts=1), chain=chain)
    assert not result.ok and registry["b"].calls == 0


def test_length_steps_are_single_pick_then_a_capped_larger_cap_then_stop():
    script = [("length_truncated", None, None)] * 4
    p = ScriptedPlanner("a", script, variant="full_steps", cap=6000)
    chain = FallbackChain(on_length="single_pick_then_cap", cap_factor=2.0, max_output_tokens=10000)
    result, _ = run(p, chain=chain)
    assert [(a.variant, a.max_tokens) for a in result.attempts] == [
        ("full_steps", 6000), ("single_pick", 6000), ("single_pick", 10000)]
    assert result.failure_cause == "length_truncated"


def test_length_action_raise_cap_only():
    p = ScriptedPlanner("a", [("length_truncated", None, None), (None, None, None)], variant="full_steps")
    result, _ = run(p, chain=FallbackChain(on_length="raise_cap"))
    assert [(a.variant, a.max_tokens) for a in result.attempts] == [("full_steps", 1500), ("full_steps", 3000)]
    assert result.ok


def test_default_chain_does_nothing_after_a_failure():
    p = ScriptedPlanner("a", [("length_truncated", None, None), (None, None, None)], variant="full_steps")
    result, _ = run(p)
    assert p.calls == 1 and result.failure_cause == "length_truncated"


# ------------------------------------------------------------------ config


def test_load_resilience_from_toml(tmp_path):
    path = tmp_path / "resilience.toml"
    path.write_text(
        '[retry]\nmax_attempts = 4\nbase_delay_s = 0.5\nmax_delay_s = 8\ntimeout_s = 45\n'
        '[fallback]\non_length = "raise_cap"\nnext_model_on = ["likely_timeout"]\n'
        '[[fallback.models]]\nmodel = "openrouter/deepseek/deepseek-v3.2"\n'
        '[[fallback.models]]\nmodel = "local"\nlm = "openai/qwen3"\napi_base = "http://127.0.0.1:8000/v1"\n'
    )
    cfg = load_resilience(path)
    assert cfg.retry == RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=8, timeout_s=45)
    assert [m.model for m in cfg.fallback.models] == ["openrouter/deepseek/deepseek-v3.2", "local"]
    assert cfg.fallback.models[1].lm == "openai/qwen3" and cfg.fallback.next_model_on == {"likely_timeout"}


@pytest.mark.parametrize("text", ["[retry]\nmax_attempts = 0\n", "[retry\n", "[fallback]\nmodels = [{x = 1}]\n",
                                  "[retries]\nmax_attempts = 2\n"])
def test_load_resilience_rejects_bad_files(tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(DataFileError):
        load_resilience(path)


# ------------------------------------------------------------------ redaction


@pytest.mark.parametrize("text", [
    "401: invalid key Bearer sk-helmdeck-FAKE-abcdef123456",
    '{"headers": {"Authorization": "Bearer abc.def.ghi"}}',
    "api_key=sk-live-0123456789abcdef",
    "x-api-key: 0123456789abcdefXYZ",
])
def test_redact_masks_credential_shapes(text):
    out = redact(text)
    assert MASK in out
    for secret in ("sk-helmdeck-FAKE-abcdef123456", "abc.def.ghi", "sk-live-0123456789abcdef", "0123456789abcdefXYZ"):
        assert secret not in out


def test_redact_masks_known_values_exactly_and_leaves_plain_text():
    assert redact("the key was hunter2-key", ["hunter2-key"]) == f"the key was {MASK}"
    assert redact("a plan with blog.rewrite_for_audience", ["sk-x-123456"]) == "a plan with blog.rewrite_for_audience"
    assert redact("Bearer of bad news", [], patterns=False) == "Bearer of bad news"


def test_a_reset_has_no_http_status_even_when_a_client_invents_one():
    """LiteLLM turns a connection reset into InternalServerError(500); no response ever came."""
    root = ConnectionResetError(104, "Connection reset by peer")
    mid = LMServerError("InternalServerError: Connection error.", status=500)
    mid.__cause__ = root
    info = classify_error(mid)
    assert (info.cause, info.status) == ("transport_error", None)
    assert should_retry(info, RetryPolicy())


def test_retry_after_as_an_http_date():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    inner = Exception("429")
    inner.litellm_response_headers = {"Retry-After": format_datetime(datetime.now(UTC) + timedelta(seconds=30))}
    outer = LMRateLimitError("rate limited", status=429)
    outer.__cause__ = inner
    assert 25 <= retry_after_of(outer) <= 31
