"""A password in ``--api-base`` appears in no output, file or MCP error (issue 40, item 5).

The endpoint is a loopback port nobody listens on, so every call fails and the failure text (which
quotes the URL it could not reach) goes to stderr, the trace record and the MCP caller.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.io.redaction import redact
from tests.reliability.conftest import clean_env

PASSWORD = "s3cretPassw0rd"
MODEL = "local/qwen2.5-coder-1.5b-instruct"


def _dead_url() -> str:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing answers there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://planner:{PASSWORD}@127.0.0.1:{port}/v1"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, env=clean_env(home), cwd=home.parent)


def test_url_user_info_and_secret_query_values_are_masked():
    text = f"failed to connect to http://planner:{PASSWORD}@host:8080/v1?api_key=abc123def&token=t0k3n99x&q=ok"
    masked = redact(text)
    assert PASSWORD not in masked and "abc123def" not in masked and "t0k3n99x" not in masked
    assert "host:8080/v1" in masked and "q=ok" in masked
    assert PASSWORD not in redact(f"connect to planner:{PASSWORD}@127.0.0.1:9")  # as some clients print it


def test_plan_and_its_record_never_show_the_password(tmp_path):
    record = tmp_path / "rec.jsonl"
    done = _cli(tmp_path / "home", "plan", "publish my notes", "--model", MODEL, "--lm", "llamacpp/m",
                "--api-base", _dead_url(), "--no-history", "--timeout", "5", "--retries", "0", "--record", str(record))
    assert done.returncode == 1
    assert "connect" in (done.stdout + done.stderr).lower()  # the failure is reported, the URL with it
    for text in (done.stdout, done.stderr, record.read_text("utf-8")):
        assert PASSWORD not in text


def test_traces_record_never_writes_the_password(tmp_path):
    out = tmp_path / "t.jsonl"
    done = _cli(tmp_path / "home", "traces", "record", "--model", MODEL, "--lm", "llamacpp/m", "--api-base",
                _dead_url(), "--n", "1", "--timeout", "5", "--retries", "0", "--no-progress", "--out", str(out))
    texts = [done.stdout, done.stderr, *(p.read_text("utf-8") for p in tmp_path.glob("*.jsonl"))]
    assert all(PASSWORD not in t for t in texts)


def test_an_mcp_caller_never_sees_the_password(tmp_path):
    pytest.importorskip("mcp", reason="the 'serve' extra is not installed")
    from helmdeck_dspy.serve.config import ServeConfig
    from helmdeck_dspy.serve.service import PlanService
    from helmdeck_dspy.serve.wire import PlanRequest

    service = PlanService(ServeConfig(lm_spec="llamacpp/m", api_base=_dead_url(), history=False, timeout_s=5, retries=0))
    outcome = service.plan(PlanRequest(user_intent="publish my notes", model=MODEL), "user:test")
    assert PASSWORD not in json.dumps(outcome.result.model_dump(mode="json"))
