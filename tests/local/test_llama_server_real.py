"""llama.cpp's own llama-server as the local engine, on the real 0.5B (issue 54, item 1): started as
``local:NAME`` under HELMDECK_LOCAL_ENGINE, it says its context at /props, streams answers the
planner cuts where they close, gives the decline probability through its public routes, and its
records name it. Skipped unless ``make llama-server`` (or HELMDECK_LLAMA_SERVER) gave a binary."""

from __future__ import annotations

import json
import urllib.request
import warnings

import pytest

from helmdeck_dspy.local.engines import ENGINE_ENV, LlamaServer
from tests.local.conftest import REAL_MODEL, real_model_marks
from tests.local.test_next_token_real import CATALOG  # one weather tool

pytestmark = [*real_model_marks(), pytest.mark.usefixtures("stop_local_servers"), pytest.mark.skipif(
    LlamaServer().program() is None, reason="llama-server is not built here (make llama-server)")]


def test_a_local_model_on_llama_server_plans_with_a_cut_answer_and_a_decline_probability(tmp_path, monkeypatch):
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.local.endpoint import local_run_settings, managed_server
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.traces.io import read_jsonl_traces

    monkeypatch.setenv(ENGINE_ENV, "llama-server")
    lm = make_lm(f"local:{REAL_MODEL}", cache=False, num_retries=0, sampling={"temperature": 0.0, "seed": 7})
    server = managed_server(REAL_MODEL)
    props = json.loads(urllib.request.urlopen(server.api_base.removesuffix("/v1") + "/props", timeout=30).read())
    assert props["default_generation_settings"]["n_ctx"] == server.options.n_ctx and props["total_slots"] == 1
    record = tmp_path / "rec.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(f"local/{REAL_MODEL}-instruct", lm=lm, catalog=CATALOG, history=None,
                                    use_filter=False, cache=False, answer_strategy="plain", probe_decision=True,
                                    record_path=record)
    result = planner.plan("What is the weather in Oslo right now?")
    assert result.ok and result.steps and {s.tool for s in result.steps} == {"weather.current"}
    assert result.steps[0].args == {"city": "Oslo"}  # (it may list more cities than asked: answers differ by engine)
    assert result.p_decline is not None and result.p_decline < 0.5  # it called: the call was the likelier start
    (rec,) = read_jsonl_traces(record)
    assert rec.run["decision"]["covered"] > 0.5 and rec.completion_tokens < 128 and rec.answer_cut
    settings = local_run_settings(REAL_MODEL)
    assert settings["engine"] == "llama-server" and settings["engine_version"] and settings["cache_reuse"] == 32
