"""Opt-in live-model tests. Skipped unless HELMDECK_LIVE_MODEL names a LiteLLM model string
(e.g. ``openrouter/nvidia/nemotron-3-super-120b-a12b:free`` with OPENROUTER_API_KEY set, or
``ollama_chat/qwen2.5:7b`` with HELMDECK_LIVE_API_BASE=http://localhost:11434)."""

from __future__ import annotations

import os
import warnings

import pytest

LIVE_MODEL = os.environ.get("HELMDECK_LIVE_MODEL")
pytestmark = pytest.mark.skipif(not LIVE_MODEL, reason="set HELMDECK_LIVE_MODEL to run live-model tests")


def test_live_plan_returns_a_classified_result_and_records_it(tmp_path):
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.traces.io import read_jsonl_traces

    out = tmp_path / "live.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(
            LIVE_MODEL, api_base=os.environ.get("HELMDECK_LIVE_API_BASE"), record_path=out, use_filter=False
        )
    result = planner.plan("scrape https://example.org and turn it into a slide deck")
    assert result.ok or result.failure_cause is not None
    records = list(read_jsonl_traces(out))
    assert records and records[-1].source == "live"


def test_live_bfcl_plans_are_scored_and_recorded(tmp_path, shared_dir):
    from helmdeck_dspy.bench.bfcl.flow import run_bfcl
    from helmdeck_dspy.bench.bfcl.load import load_bfcl
    from helmdeck_dspy.bench.bfcl.plans import score_traces

    data = load_bfcl(shared_dir / "data" / "bfcl", ["parallel"]).limited(3)
    out = tmp_path / "bfcl.jsonl"
    live = run_bfcl(shared_dir / "data" / "bfcl", categories=["parallel"], limit=3, rankers=["bm25"], lm_spec=LIVE_MODEL,
                    model=LIVE_MODEL, api_base=os.environ.get("HELMDECK_LIVE_API_BASE"), record_path=out).plan_accuracy[0]
    assert live.summary.n == 3
    assert [s.model_dump() for s in score_traces(data, out).scores] == [s.model_dump() for s in live.scores]
