"""Every documented finish reason of OpenAI, Anthropic and Gemini / Vertex AI, and what it becomes.

The expected values are written out here, apart from the table, so a row that goes missing or
changes class fails a test.
"""

from __future__ import annotations

import pytest

from helmdeck_dspy.decoding.causes import normalize_finish_reason, unknown_finish_label
from helmdeck_dspy.decoding.finish_table import finish_table, parse_finish_table
from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.errors import DataFileError

PLAN = '{"steps": [{"order": 1, "tool": "blog.publish", "args": {}, "rationale": "r"}]}'

OPENAI_CHAT = {"stop": "stop", "length": "length", "content_filter": "safety", "tool_calls": "tool_calls",
               "function_call": "tool_calls"}
OPENAI_RESPONSES = {"completed": "stop", "incomplete": "interrupted", "failed": "interrupted",
                    "cancelled": "interrupted", "in_progress": "interrupted", "queued": "interrupted",
                    "max_output_tokens": "length", "content_filter": "safety"}
ANTHROPIC = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
             "pause_turn": "interrupted", "refusal": "safety", "model_context_window_exceeded": "length"}
GEMINI = {"FINISH_REASON_UNSPECIFIED": "interrupted", "STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "safety",
          "RECITATION": "safety", "LANGUAGE": "interrupted", "OTHER": "interrupted", "BLOCKLIST": "safety",
          "PROHIBITED_CONTENT": "safety", "SPII": "safety", "MALFORMED_FUNCTION_CALL": "tool_error",
          "IMAGE_SAFETY": "safety", "IMAGE_PROHIBITED_CONTENT": "safety", "IMAGE_OTHER": "interrupted",
          "NO_IMAGE": "interrupted", "IMAGE_RECITATION": "safety", "UNEXPECTED_TOOL_CALL": "tool_error",
          "TOO_MANY_TOOL_CALLS": "tool_error", "MISSING_THOUGHT_SIGNATURE": "interrupted",
          "MALFORMED_RESPONSE": "interrupted"}
VERTEX = {"FINISH_REASON_UNSPECIFIED": "interrupted", "STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "safety",
          "RECITATION": "safety", "OTHER": "interrupted", "BLOCKLIST": "safety", "PROHIBITED_CONTENT": "safety",
          "SPII": "safety", "MALFORMED_FUNCTION_CALL": "tool_error", "MODEL_ARMOR": "safety",
          "IMAGE_PROHIBITED_CONTENT": "safety", "IMAGE_RECITATION": "safety", "IMAGE_OTHER": "interrupted",
          "UNEXPECTED_TOOL_CALL": "tool_error", "NO_IMAGE": "interrupted"}
GEMINI_BLOCKS = ["BLOCK_REASON_UNSPECIFIED", "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY"]
VERTEX_BLOCKS = ["BLOCKED_REASON_UNSPECIFIED", "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "MODEL_ARMOR",
                 "JAILBREAK", "IMAGE_SAFETY"]
LITELLM_OUTPUTS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "function_call": "tool_calls",
                   "content_filter": "safety"}

EMPTY_CAUSE = {"length": "length_truncated", "safety": "safety_filtered", "tool_calls": "unusable_tool_calls",
               "tool_error": "unusable_tool_calls", "interrupted": "interrupted", "stop": "likely_timeout"}

ALL = [(f"{name}:{raw}", raw, kind) for name, table in (
    ("openai", OPENAI_CHAT), ("openai-responses", OPENAI_RESPONSES), ("anthropic", ANTHROPIC), ("gemini", GEMINI),
    ("vertex", VERTEX), ("litellm", LITELLM_OUTPUTS)) for raw, kind in table.items()]


@pytest.mark.parametrize("label,raw,kind", ALL, ids=[a[0] for a in ALL])
def test_every_documented_finish_reason_has_its_class_and_empty_cause(label, raw, kind):
    assert normalize_finish_reason(raw) == kind
    r = parse_completion("", raw)
    assert r.cause == EMPTY_CAUSE[kind]
    assert r.finish_reason_raw == raw  # the raw spelling is kept for reports
    assert "unknown_finish" not in r.notes


@pytest.mark.parametrize("raw", [f"blockReason:{b}" for b in sorted(set(GEMINI_BLOCKS + VERTEX_BLOCKS))])
def test_every_prompt_level_block_is_safety_filtered(raw):
    assert normalize_finish_reason(raw) == "safety"
    r = parse_completion(None, raw)
    assert (r.outcome, r.cause) == ("failed", "safety_filtered")
    assert r.finish_reason_raw == raw


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "vertex"])
def test_every_safety_type_reason_of_a_provider_filters_even_a_valid_plan(provider):
    rows = [r for r in finish_table().rows() if provider in r.providers and r.kind == "safety" and not r.block]
    assert rows, provider
    for row in rows:
        r = parse_completion(PLAN, row.spelling.upper())
        assert (r.outcome, r.cause) == ("failed", "safety_filtered"), row.spelling


def test_table_rows_name_known_providers_and_say_what_they_mean():
    providers = {"openai", "openai-responses", "anthropic", "gemini", "vertex", "litellm", "other"}
    for row in finish_table().rows():
        assert set(row.providers) <= providers, row
        assert len(row.meaning) > 15 and row.meaning.endswith("."), row


@pytest.mark.parametrize("spelling", ["FinishReason.MAX_TOKENS", "FINISH_REASON_MAX_TOKENS", " max_tokens ", "Max_Tokens"])
def test_spelling_variants_of_sdks_match(spelling):
    assert normalize_finish_reason(spelling) == "length"


@pytest.mark.parametrize("raw", ["weird_aggregator_marker", "MAX_TOKENS_REACHED", "stopped"])
def test_an_unknown_spelling_is_labelled_never_guessed(raw):
    r = parse_completion("", raw)
    assert r.finish_reason == "unknown" and r.cause == "unknown_finish_reason"
    assert unknown_finish_label(raw) in r.error and "unknown_finish" in r.notes
    # with reasoning it is still the unknown reason, not a guess that the model only reasoned
    assert parse_completion("<think>hmm</think>", raw).cause == "unknown_finish_reason"
    # and a plan that decodes is still a plan
    ok = parse_completion(PLAN, raw)
    assert ok.outcome == "strict" and "unknown_finish" in ok.notes


def test_documented_non_specific_stops_explain_themselves():
    r = parse_completion("", "pause_turn")
    assert r.cause == "interrupted" and "paused" in r.error
    r = parse_completion("", "MALFORMED_FUNCTION_CALL")
    assert r.cause == "unusable_tool_calls" and "could not parse" in r.error


def test_a_bad_table_is_reported_with_its_row():
    good = {"spelling": "stop", "kind": "stop", "providers": ["openai"], "meaning": "Ends."}
    with pytest.raises(DataFileError, match=r"\[\[finish\]\] #2 \('STOP'\): spelling repeats"):
        parse_finish_table({"finish": [good, {**good, "spelling": "STOP"}]}, "t.toml")
    with pytest.raises(DataFileError, match=r"#1 \('x'\): kind"):
        parse_finish_table({"finish": [{**good, "spelling": "x", "kind": "halted"}]}, "t.toml")
    with pytest.raises(DataFileError, match="unknown top-level"):
        parse_finish_table({"finishes": []}, "t.toml")
