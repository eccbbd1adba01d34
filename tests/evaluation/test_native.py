"""eval on native tool-call answers: their own outcome, both request modes side by side, unknown finish labels."""

from __future__ import annotations

import json

from helmdeck_dspy.evaluation.markdown import render_markdown
from helmdeck_dspy.evaluation.report import EvalReport
from helmdeck_dspy.evaluation.runner import evaluate

MODEL = "anthropic/claude-sonnet-4-6"
PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}}]})
CALL = [{"type": "tool_use", "id": "t1", "name": "web__scrape", "input": {"url": "https://example.org"}}]
BAD_CALL = [{"type": "tool_use", "id": "t2", "name": "get_weather", "input": {}}]


def write(tmp_path, rows):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"id": f"r{i}", "model": MODEL, "prompt_variant": "full_steps", **r}) + "\n"
                         for i, r in enumerate(rows)))
    return p


def rows():
    text = [{"content": PLAN, "finish_reason": "end_turn"}] * 3 + [{"content": "no idea", "finish_reason": "end_turn"}]
    native = ([{"content": "", "finish_reason": "tool_use", "tool_calls": CALL, "native_tools": True}] * 5
              + [{"content": "", "finish_reason": "tool_use", "tool_calls": BAD_CALL, "native_tools": True}])
    return text + native


def test_native_answers_are_counted_apart_and_the_two_modes_compared(tmp_path):
    report = evaluate([write(tmp_path, rows())], progress=False)
    (g,) = report.groups
    assert (g.n, g.strict, g.tolerant, g.native) == (10, 3, 3, 5)
    assert g.request_modes == {"native": 6, "text": 4}
    assert g.failure_cause_counts == {"unusable_tool_calls": 1, "no_json": 1}
    (m,) = report.modes
    assert (m.model, m.prompt_variant, m.text_n, m.text_plans, m.native_n, m.native_plans) == (
        MODEL, "full_steps", 4, 3, 6, 5)
    assert abs(m.diff - (5 / 6 - 3 / 4)) < 1e-9 and m.diff_ci[0] < m.diff < m.diff_ci[1]
    md = render_markdown(report)
    assert "## JSON text vs native tool calls" in md and "| 3 / 4 (75.0%) | 5 / 6 (83.3%) |" in md
    assert "5 plans as native tool calls" in md
    again = EvalReport.model_validate_json(report.model_dump_json())
    assert again.modes == report.modes


def test_no_mode_table_when_only_one_way_was_recorded(tmp_path):
    report = evaluate([write(tmp_path, rows()[:4])], progress=False)
    assert report.modes == [] and "native tool calls (per model" not in render_markdown(report)


def test_an_unknown_finish_reason_is_labelled_in_the_report(tmp_path):
    report = evaluate([write(tmp_path, [{"content": "", "finish_reason": "WEIRD_GATEWAY_STOP"},
                                        {"content": PLAN, "finish_reason": "end_turn"}])], progress=False)
    (g,) = report.groups
    assert g.failure_cause_counts == {"unknown_finish_reason": 1}
    assert g.finish_reason_counts == {"unknown": 1, "stop": 1}
    assert g.finish_reason_raw_counts == {"WEIRD_GATEWAY_STOP": 1, "end_turn": 1}
    md = render_markdown(report)
    assert "unknown finish reason 'WEIRD_GATEWAY_STOP' 1" in md and "`end_turn` 1" in md


def test_a_report_written_before_native_answers_still_reads(tmp_path):
    report = evaluate([write(tmp_path, rows()[:4])], progress=False)
    old = json.loads(report.model_dump_json())
    old.pop("modes")
    for g in old["groups"] + old["tiers"]:
        for key in ("native", "native_rate", "request_modes"):
            g.pop(key)
    again = EvalReport.model_validate(old)
    assert again.groups[0].native == 0 and again.modes == []
