"""Values and exit codes (issue 40, item 7), through the entry point a user runs: an empty id is a
usage error (exit 2) everywhere, a number is bounded before any call, and trace fields hold only
values a call can have (a bad trace file is bad data: exit 1, one line naming the file and line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helmdeck_dspy.cli.app import main
from tests.fault_server import FaultServer, ok

MODEL = "local/qwen2.5-coder-1.5b-instruct"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err



@pytest.mark.parametrize("args", [
    ("budgets", "lookup", ""),
    ("budgets", "lookup", "   "),
    ("plan", "", "--model", MODEL, "--lm", "sim:mid-tier", "--no-history"),
    ("plan", "hello", "--model", MODEL, "--lm", "", "--no-history"),
    ("bench", "bfcl", "--data", ".", "-m", "", "--lm", "sim:mid-tier"),
], ids=["lookup-empty", "lookup-blank", "plan-empty-intent", "plan-empty-lm", "bench-empty-model"])
def test_an_empty_id_is_a_usage_error(args, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(tmp_path))
    code, output = run(capsys, *args)
    assert code == 2, output
    assert "empty" in output



def test_max_tokens_beyond_the_models_context_is_refused_before_any_call(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(tmp_path))
    with FaultServer([ok("{}")]) as server:
        code, output = run(capsys, "plan", "hello", "--model", MODEL, "--lm", "llamacpp/m", "--api-base", server.url,
                           "--no-history", "--max-tokens", "99999999999999999999")
        assert code == 2, output
        assert "--max-tokens" in output and not server.requests



@pytest.mark.parametrize(("field", "value"), [("latency_ms", -100), ("completion_tokens", True),
                                               ("prompt_tokens", False), ("latency_ms", True)])
def test_eval_refuses_a_trace_value_no_call_has(field, value, tmp_path, capsys):
    record = {"id": "r1", "source": "live", "model": MODEL, "tier": "C", "prompt_variant": "full_steps",
              "content": '{"steps": []}', "finish_reason": "stop", field: value}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, output = run(capsys, "eval", str(path), "--out", str(tmp_path / "report"))
    assert code == 1, output
    assert field in output and f"{Path(path).name}:1" in output
