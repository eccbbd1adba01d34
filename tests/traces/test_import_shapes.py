"""``traces import`` on the response shapes users actually have (small fixtures written here)."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.cli.app import main
from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.importers import import_traces
from helmdeck_dspy.traces.io import read_jsonl_traces

OPENAI_PARTS = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06", "created": 1700000000,
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": [
        {"type": "text", "text": '{"steps": [{"tool": "blog.publish", '}, {"type": "text", "text": '"args": {}}]}'}]}}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 7},
}
OPENAI_REFUSAL = {
    "id": "chatcmpl-2", "model": "gpt-4o", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": None, "refusal": "I can't help with that."}}],
}
OPENAI_TOOLS = {
    "id": "chatcmpl-3", "model": "gpt-4o", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "blog__publish", "arguments": '{"title": "x"}'}}]}}],
}
RESPONSES_API = {
    "id": "resp_1", "object": "response", "model": "gpt-5", "status": "incomplete", "created_at": 1756781646,
    "incomplete_details": {"reason": "max_output_tokens"},
    "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
               {"type": "message", "content": [{"type": "output_text", "text": '{"steps": ['}]}],
    "usage": {"input_tokens": 30, "output_tokens": 200},
}
ANTHROPIC = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "thinking", "thinking": "which tool?", "signature": "s"},
                {"type": "text", "text": "I'll publish it."},
                {"type": "tool_use", "id": "toolu_1", "name": "blog__publish", "input": {"title": "Launch"}}],
    "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 40, "output_tokens": 25},
}
GEMINI = {
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "planning", "thought": True},
        {"functionCall": {"name": "web__scrape", "args": {"url": "https://x.org"}}},
        {"functionCall": {"name": "blog__publish", "args": {}}}]}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 20, "thoughtsTokenCount": 30},
    "modelVersion": "gemini-2.5-flash", "responseId": "abc",
}
GEMINI_BLOCKED = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                  "usageMetadata": {"promptTokenCount": 9}, "modelVersion": "gemini-2.5-flash"}
LLAMASTACK = {
    "source": "llama-stack:0001", "test_id": "t::x", "model": "llama3.2:3b", "finish_reason": "tool_calls",
    "content": "", "reasoning": "", "completion_tokens": 18, "prompt_tokens": 170, "max_tokens": None, "streamed": True,
    "tool_calls": [
        {"index": 0, "id": "call_a", "function": {"arguments": None, "name": "get_weather"}, "type": "function"},
        {"index": 0, "id": None, "function": {"arguments": '{"city": ', "name": None}, "type": None},
        {"index": 0, "id": None, "function": {"arguments": '"Tokyo"}', "name": None}, "type": None}],
}
CATALOG = frozenset({"blog.publish", "web.scrape"})


def write(tmp_path, rows, how="jsonl"):
    p = tmp_path / ("rows.jsonl" if how == "jsonl" else "rows.json")
    if how == "jsonl":
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        p.write_text(json.dumps(rows, indent=2))
    return p


def parsed(rec):
    return parse_completion(rec.content, rec.finish_reason, rec.reasoning_content, tool_calls=rec.tool_calls,
                            tool_ids=CATALOG, refusal=rec.refusal)


@pytest.mark.parametrize("how", ["jsonl", "array"])
def test_openai_content_parts_refusals_tool_calls_and_responses_objects(tmp_path, how):
    recs = list(import_traces("openai", write(tmp_path, [OPENAI_PARTS, OPENAI_REFUSAL, OPENAI_TOOLS, RESPONSES_API], how)))
    parts, refusal, tools, responses = recs
    assert parts.content == '{"steps": [{"tool": "blog.publish", "args": {}}]}' and parsed(parts).outcome == "strict"
    assert parts.prompt_tokens == 12 and parts.model == "gpt-4o-2024-08-06" and parts.source == "import:openai"
    assert refusal.refusal == "I can't help with that." and parsed(refusal).cause == "safety_filtered"
    assert parsed(tools).outcome == "native" and parsed(tools).plan.steps[0].tool == "blog.publish"
    assert responses.finish_reason == "max_output_tokens" and responses.reasoning_content == "thinking"
    assert responses.completion_tokens == 200 and parsed(responses).cause == "length_truncated"


def test_anthropic_messages(tmp_path):
    (rec,) = import_traces("anthropic", write(tmp_path, [ANTHROPIC]))
    assert rec.source == "import:anthropic" and rec.finish_reason == "tool_use" and rec.id == "msg_1"
    assert rec.content == "I'll publish it." and rec.reasoning_content == "which tool?"
    assert (rec.prompt_tokens, rec.completion_tokens) == (40, 25)
    r = parsed(rec)
    assert r.outcome == "native" and r.plan.steps[0].args == {"title": "Launch"}


def test_gemini_candidates_and_prompt_blocks(tmp_path):
    rec, blocked = import_traces("gemini", write(tmp_path, [GEMINI, GEMINI_BLOCKED], "array"))
    assert rec.source == "import:gemini" and rec.served_model == "gemini-2.5-flash" and rec.id == "abc"
    assert rec.reasoning_content == "planning" and rec.completion_tokens == 50  # candidates + thoughts
    r = parsed(rec)
    assert (r.outcome, r.finish_reason_raw) == ("native", "STOP")
    assert [s.tool for s in r.plan.steps] == ["web.scrape", "blog.publish"]
    assert blocked.content is None and blocked.finish_reason == "blockReason:PROHIBITED_CONTENT"
    assert parsed(blocked).cause == "safety_filtered"


def test_llamastack_joins_streamed_tool_call_fragments(tmp_path):
    (rec,) = import_traces("llamastack", write(tmp_path, [LLAMASTACK]))
    assert rec.id == "ls-0001" and [(c.name, c.arguments) for c in rec.tool_calls] == [("get_weather", {"city": "Tokyo"})]
    assert rec.model_extra["streamed"] is True and rec.reasoning_content is None


def test_auto_tells_the_formats_apart_row_by_row(tmp_path):
    recs = list(import_traces("auto", write(tmp_path, [OPENAI_PARTS, ANTHROPIC, GEMINI, LLAMASTACK, RESPONSES_API])))
    assert [r.source for r in recs] == ["import:openai", "import:anthropic", "import:gemini", "import:llamastack",
                                        "import:openai"]


def test_a_request_wrapper_keeps_the_request_side(tmp_path):
    row = {"request": {"model": "anthropic/claude-sonnet-4-5", "max_tokens": 900, "tools": [{"name": "x"}],
                       "messages": [{"role": "user", "content": [{"type": "text", "text": "publish the post"}]}]},
           "response": ANTHROPIC, "latency_ms": 812.5}
    (rec,) = import_traces("auto", write(tmp_path, [row]))
    assert (rec.model, rec.served_model, rec.max_tokens) == ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", 900)
    assert rec.intent == "publish the post" and rec.native_tools is True and rec.latency_ms == 812.5


def test_repeated_ids_are_made_unique(tmp_path):
    recs = list(import_traces("openai", write(tmp_path, [OPENAI_PARTS, OPENAI_PARTS, OPENAI_PARTS])))
    assert [r.id for r in recs] == ["chatcmpl-1", "chatcmpl-1#2", "chatcmpl-1#3"]


BAD_ROWS = [
    ({**LLAMASTACK, "tool_calls": True}, "llamastack", "tool_calls: expected a list, got a boolean"),
    ({**LLAMASTACK, "completion_tokens": "18"}, "llamastack", "completion_tokens: expected a whole number, got a string"),
    ({**OPENAI_PARTS, "choices": [{"message": "hi"}]}, "openai", "choices[0].message: expected an object, got a string"),
    ({**OPENAI_PARTS, "choices": [{"message": {"content": [1]}}]}, "openai", "content[0]: expected an object, got a number"),
    ({**ANTHROPIC, "content": {"type": "text"}}, "anthropic", "content: expected a list, got an object"),
    ({**GEMINI, "candidates": [{"content": {"parts": "x"}}]}, "gemini", "parts: expected a list, got a string"),
    ({"usageMetadata": {}}, "gemini", "expected a Gemini response with 'candidates' or a promptFeedback.blockReason"),
    ({**OPENAI_TOOLS, "choices": [{"finish_reason": "tool_calls", "message": {"tool_calls": [7]}}]}, "openai",
     "choices[0].message.tool_calls: tool call 1: expected an object, got int"),
    ({"hello": 1}, "auto", "expected an OpenAI, Anthropic, Gemini or llama-stack response"),
]


@pytest.mark.parametrize("row,fmt,expected", BAD_ROWS, ids=[b[2][:40] for b in BAD_ROWS])
def test_an_unreadable_row_is_file_line_what_was_expected(tmp_path, row, fmt, expected):
    good = {"openai": OPENAI_PARTS, "anthropic": ANTHROPIC, "gemini": GEMINI, "llamastack": LLAMASTACK,
            "auto": OPENAI_PARTS}[fmt]
    p = write(tmp_path, [good, row, good])
    with pytest.raises(DataFileError) as err:
        list(import_traces(fmt, p))
    assert str(err.value).startswith(f"{p}:2: ") and expected in str(err.value)
    assert "Traceback" not in str(err.value) and "has no len" not in str(err.value)
    skipped = []
    assert len(list(import_traces(fmt, p, on_error="skip", report=skipped.append))) == 2
    assert [e.line for e in skipped] == [2]


def test_an_array_item_is_reported_at_the_line_it_starts_on(tmp_path):
    p = tmp_path / "rows.json"
    p.write_text("\n\n" + json.dumps([ANTHROPIC, 5, {**ANTHROPIC, "stop_reason": 3}], indent=2))
    seen = []
    recs = list(import_traces("anthropic", p, on_error="skip", report=seen.append))
    lines = p.read_text().splitlines()
    assert len(recs) == 1 and len(seen) == 2
    assert lines[seen[0].line - 1].strip() == "5," and "expected a JSON object, got int" in seen[0].detail
    assert lines[seen[1].line - 1].strip() == "{" and "stop_reason: expected a string" in seen[1].detail
    p.write_text("[" + json.dumps(ANTHROPIC) + ',\n {"b": ]')
    with pytest.raises(DataFileError, match=r"rows\.json:2: not valid JSON"):
        list(import_traces("anthropic", p))


def run_cli(capsys, *args):
    """(exit code, stdout, stderr) of ``helmdeck-dspy ARGS``; main() returns on success."""
    code = 0
    try:
        main(list(args))
    except SystemExit as done:
        code = done.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_import_skips_bad_rows_and_writes_the_rest(tmp_path, capsys):
    src = write(tmp_path, [GEMINI, {**LLAMASTACK, "tool_calls": True}, ANTHROPIC])
    out = tmp_path / "out.jsonl"
    code, stdout, stderr = run_cli(capsys, "traces", "import", "auto", str(src), "--out", str(out), "--on-error", "skip")
    assert code == 0, stderr
    assert f"{src}:2: tool_calls: expected a list, got a boolean" in stderr and "wrote 2 records" in stdout
    assert [r.source for r in read_jsonl_traces(out)] == ["import:gemini", "import:anthropic"]
    code, _, stderr = run_cli(capsys, "traces", "import", "auto", str(src), "--out", str(tmp_path / "o2.jsonl"))
    assert code == 1 and "Traceback" not in stderr
    assert stderr.strip().splitlines() == [f"error: {src}:2: tool_calls: expected a list, got a boolean"]
