"""Real-model tests: Qwen2.5 Coder 0.5B served by llama.cpp on 127.0.0.1.

They need the ``local`` extra (``pip install 'helmdeck-dspy[local]'``) and the installed model
(``helmdeck-dspy models install qwen2.5-coder-0.5b``, in ``$HELMDECK_DSPY_MODELS`` or the user
cache) and skip, saying which is missing, otherwise. CI installs both.
"""

from __future__ import annotations

import importlib.util
import json
import urllib.request

import pytest

from helmdeck_dspy.local import endpoint
from helmdeck_dspy.local.install import require_installed, state_of
from helmdeck_dspy.local.registry import get_model
from helmdeck_dspy.local.server import LocalServer, ServerOptions, stop_all

NAME = "qwen2.5-coder-0.5b"
MODEL = get_model(NAME)


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "the 'local' extra is not installed: pip install 'helmdeck-dspy[local]'"
    if state_of(MODEL) != "installed":
        return f"{NAME} is not installed: helmdeck-dspy models install {NAME}"
    return None


pytestmark = [pytest.mark.local_model, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


@pytest.fixture(autouse=True)
def _stop_servers():
    yield
    stop_all()
    endpoint._SERVERS.clear()


def test_serve_answers_one_chat_completion_and_stops(tmp_path):
    server = LocalServer(require_installed(MODEL), NAME, options=ServerOptions(n_ctx=2048),
                         log_path=tmp_path / "server.log")
    with server:
        body = json.dumps({"model": NAME, "max_tokens": 8, "temperature": 0,
                           "messages": [{"role": "user", "content": "Say OK."}]}).encode()
        request = urllib.request.Request(f"{server.api_base}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=300) as response:
            answer = json.loads(response.read())
        assert answer["choices"][0]["message"]["content"].strip()
        assert answer["usage"]["completion_tokens"] >= 1
    assert not server.running and server.process.returncode != -9  # SIGTERM was enough: no SIGKILL
    assert "Application shutdown complete" in (tmp_path / "server.log").read_text()  # uvicorn shut down cleanly


def test_make_lm_local_plans_one_intent_through_the_live_path(tmp_path):
    from helmdeck_dspy.planning.lm import make_lm
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy
    from helmdeck_dspy.traces.io import read_traces

    lm = make_lm(f"local:{NAME}", cache=False)
    assert lm.model == f"llamacpp/{NAME}"
    out = tmp_path / "trace.jsonl"
    planner = Planner.for_model(MODEL.model_id, lm=lm, use_filter=False, record_path=out, history=None,
                                retry=RetryPolicy(max_attempts=1, timeout_s=600))
    result = planner.plan("take a screenshot of https://example.org")
    assert result.tier == "C"
    assert result.ok or result.failure_cause is not None
    (record,) = list(read_traces(out))
    assert record.source == "live" and record.model == MODEL.model_id
    assert record.error or record.completion_tokens


def test_the_budget_cap_stops_a_real_plan_at_its_length():
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy

    planner = Planner.for_model(MODEL.model_id, lm=f"local:{NAME}", use_filter=False, history=None, cache=False,
                                max_tokens=12, retry=RetryPolicy(max_attempts=1, timeout_s=600))
    result = planner.plan("take a screenshot of https://example.org")
    assert result.finish_reason == "length" and result.failure_cause == "length_truncated"
    assert result.usage["completion_tokens"] == 12  # llama.cpp stopped at the cap, not at the context's end
