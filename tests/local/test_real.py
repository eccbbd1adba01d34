"""Real-model tests: Qwen2.5 Coder 0.5B served by llama.cpp on 127.0.0.1.

They need the ``local`` extra (``pip install 'helmdeck-dspy[local]'``) and the installed model
(``helmdeck-dspy models install qwen2.5-coder-0.5b``, in ``$HELMDECK_DSPY_MODELS`` or the user
cache) and skip, saying which is missing, otherwise. CI installs both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from helmdeck_dspy.local.install import require_installed
from helmdeck_dspy.local.registry import get_model
from helmdeck_dspy.local.server import LocalServer, ServerOptions
from tests.local.conftest import REAL_MODEL, real_model_marks

NAME = REAL_MODEL
MODEL = get_model(NAME)

pytestmark = real_model_marks()


@pytest.fixture(autouse=True)
def _stop_servers(stop_local_servers):
    yield


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
    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy
    from helmdeck_dspy.traces.io import read_jsonl_traces

    lm = make_lm(f"local:{NAME}", cache=False)
    assert lm.model == f"llamacpp/{NAME}"
    out = tmp_path / "trace.jsonl"
    planner = Planner.for_model(MODEL.model_id, lm=lm, use_filter=False, record_path=out, history=None,
                                retry=RetryPolicy(max_attempts=1, timeout_s=600))
    result = planner.plan("take a screenshot of https://example.org")
    assert result.tier == load_budget_table().lookup(MODEL.model_id).tier  # the bundled row decides
    assert result.ok or result.failure_cause is not None
    (record,) = list(read_jsonl_traces(out))
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


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux only")
def test_a_server_dies_with_a_parent_killed_mid_answer(tmp_path):
    parent = textwrap.dedent(f"""
        import json, sys, urllib.request
        from helmdeck_dspy.local.install import require_installed
        from helmdeck_dspy.local.registry import get_model
        from helmdeck_dspy.local.server import LocalServer, ServerOptions
        server = LocalServer(require_installed(get_model({NAME!r})), {NAME!r}, options=ServerOptions(n_ctx=2048),
                             log_path=__import__("pathlib").Path({str(tmp_path / "server.log")!r})).start()
        print(server.process.pid, flush=True)
        body = json.dumps({{"model": {NAME!r}, "max_tokens": 1500, "min_tokens": 1000, "temperature": 0,
                           "messages": [{{"role": "user", "content": "Count from 1 to 1000."}}]}}).encode()
        urllib.request.build_opener(urllib.request.ProxyHandler({{}})).open(urllib.request.Request(
            server.api_base + "/chat/completions", data=body, headers={{"Content-Type": "application/json"}}))
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(proc.stdout.readline())
        time.sleep(2)  # the answer is being generated: min_tokens keeps it going for half a minute
        assert _alive(server_pid)
        proc.terminate()  # Python's default SIGTERM: no atexit, no cleanup
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid)
    finally:
        proc.kill()


def test_record_both_variants_resume_after_a_kill_and_evaluate(tmp_path):
    from helmdeck_dspy.evaluation.runner import evaluate
    from helmdeck_dspy.traces.io import read_jsonl_traces

    out = tmp_path / "real.jsonl"
    partial = tmp_path / "real.jsonl.partial.jsonl"
    command = [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", "traces", "record",
               "--model", MODEL.model_id, "--lm", f"local:{NAME}", "--variant", "both", "--n", "2",
               "--max-tokens", "300", "--temperature", "0", "--seed", "7", "--timeout", "600", "--retries", "0",
               "--no-progress", "--out", str(out)]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and first.poll() is None:
            answered = [r for r in read_jsonl_traces(partial, on_error="skip") if r.call == "plan" and r.error is None] \
                if partial.exists() else []
            if answered:
                break
            time.sleep(0.2)
        first.terminate()  # killed after its first answer; its server dies with it
        first.wait(30)
    finally:
        first.kill()
    (kept,) = answered
    assert not out.exists()
    second = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr
    assert "1 request(s) already recorded are not sent again" in second.stderr
    plans = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    assert len(plans) == 4 and sum(r.recorded_at == kept.recorded_at and r.content == kept.content for r in plans) == 1
    assert all(r.source == "live" and r.cache_hit is not True and r.latency_ms > 100 for r in plans)
    assert {r.run["model_sha256"] for r in plans} == {MODEL.sha256}
    report = evaluate([out], progress=False)
    assert sorted((g.prompt_variant, g.kind, g.n) for g in report.groups) == [("full_steps", "live", 2),
                                                                               ("single_pick", "live", 2)]
