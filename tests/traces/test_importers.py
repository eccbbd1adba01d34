"""Importing OpenAI-shaped chat completions and the llama-stack recordings."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.importers import import_traces


def completion(i, content="hi", finish="stop", reasoning=None):
    msg = {"role": "assistant", "content": content}
    if reasoning:
        msg["reasoning_content"] = reasoning
    return {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1700000000 + i, "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10 + i, "completion_tokens": 5 + i}}


@pytest.mark.parametrize("shape", ["object", "list", "jsonl"])
def test_openai_shapes(tmp_path, shape):
    items = [completion(1), completion(2, "", "length", reasoning="thinking hard")]
    p = tmp_path / "c.json"
    if shape == "object":
        p.write_text(json.dumps(items[0], indent=2))
        items = items[:1]
    elif shape == "list":
        p.write_text(json.dumps(items, indent=2))
    else:
        p.write_text("".join(json.dumps(i) + "\n" for i in items))
    recs = list(import_traces("openai", p))
    assert len(recs) == len(items)
    assert recs[0].id == "chatcmpl-1" and recs[0].source == "import:openai" and recs[0].content == "hi"
    assert recs[0].completion_tokens == 6 and recs[0].prompt_tokens == 11 and recs[0].model == "gpt-4o-2024-08-06"
    if len(recs) > 1:
        assert recs[1].finish_reason == "length" and recs[1].reasoning_content == "thinking hard"


def test_openai_log_line_with_request_wrapper(tmp_path):
    line = {"request": {"model": "openrouter/nvidia/nemotron-3-super-120b-a12b:free", "max_tokens": 600,
                        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "plan this"}]},
            "response": completion(3, "ok", "MAX_TOKENS"), "latency_ms": 1234.5}
    p = tmp_path / "log.jsonl"
    p.write_text(json.dumps(line) + "\n")
    (rec,) = import_traces("openai", p)
    assert rec.model == "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
    assert rec.served_model == "gpt-4o-2024-08-06" and rec.max_tokens == 600 and rec.intent == "plan this"
    assert rec.finish_reason == "MAX_TOKENS"  # the raw spelling is kept
    assert rec.latency_ms == 1234.5


def test_openai_bad_line_is_reported_with_its_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps(completion(1)) + "\n" + json.dumps({"choices": []}) + "\n" + json.dumps(completion(2)) + "\n")
    with pytest.raises(DataFileError) as err:
        list(import_traces("openai", p))
    assert f"{p}:2:" in str(err.value) and "choices" in str(err.value)
    seen = []
    recs = list(import_traces("openai", p, on_error="skip", report=seen.append))
    assert len(recs) == 2 and seen[0].line == 2


def test_llamastack_recordings(shared_dir):
    recs = list(import_traces("llamastack", shared_dir / "data/recorded/llamastack-chat-completions.jsonl"))
    assert len(recs) == 2599
    assert all(r.source == "import:llamastack" for r in recs)
    assert len({r.id for r in recs}) == 2599
    with_tools = [r for r in recs if r.finish_reason == "tool_calls"]
    # issue 16: records keep the calls themselves (streamed fragments joined), not a count
    assert len(with_tools) == 440 and all(r.tool_calls and all(c.name for c in r.tool_calls) for r in with_tools)
    assert sum(1 for r in recs if r.reasoning_content) == 33


def test_unknown_format(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text("{}\n")
    with pytest.raises(DataFileError, match="unknown import format"):
        list(import_traces("cohere", p))
