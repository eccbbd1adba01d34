"""Every LM call the planner makes carries an explicit temperature, and a seed where the endpoint
takes one: checked in the request bodies a loopback endpoint receives, for ``plan``, ``bench bfcl``
(the planner and the model alone) and ``serve``. Without them llama.cpp's server samples at 0.8,
unseeded, so every plan would be a random draw."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli as main
from tests.bench.conftest import write_bfcl
from tests.fault_server import FaultServer, ok

MODEL = "local/qwen2.5-coder-1.5b-instruct"
ANSWER = json.dumps({"steps": [{"tool": "web.scrape", "args": {"url": "https://example.org"}}]})


def _sampling(server: FaultServer) -> list[tuple[object, object]]:
    return [(r.body.get("temperature"), r.body.get("seed")) for r in server.requests]


@pytest.mark.parametrize(("args", "sent"), [((), (0.0, 7)), (("--temperature", "0.4", "--seed", "11"), (0.4, 11))])
def test_plan_sends_the_temperature_and_the_seed(tmp_path, monkeypatch, args, sent):
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(tmp_path / "home"))
    with FaultServer([ok(ANSWER)]) as server:
        result = CliRunner().invoke(main, ["plan", "publish my notes as a blog post", "--model", MODEL, "--lm",
                                           "llamacpp/m", "--api-base", server.url, "--no-history", "--no-filter",
                                           "--json", *args])
        assert result.exit_code == 0, result.output
        assert _sampling(server) == [sent]


def test_an_endpoint_without_seeds_gets_the_temperature_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MISTRAL_API_KEY", "sk-test")  # Mistral's seed is called random_seed: no seed is sent
    with FaultServer([ok(ANSWER)]) as server:
        result = CliRunner().invoke(main, ["plan", "publish my notes as a blog post", "--model", MODEL, "--lm",
                                           "mistral/m", "--api-base", server.url, "--no-history",
                                           "--no-filter", "--json"])
        bodies = [r.body for r in server.requests]
    assert bodies, result.output
    assert all(b.get("temperature") == 0.0 and "seed" not in b for b in bodies)


def test_bench_bfcl_sends_them_for_the_planner_and_the_model_alone(tmp_path):
    data = write_bfcl(tmp_path / "bfcl")
    with FaultServer([ok("[]")]) as server:
        result = CliRunner().invoke(main, ["bench", "bfcl", "--data", str(data), "--lm", "openai/m", "--model", MODEL,
                                           "--api-base", server.url, "--baseline", "plain", "--seed", "5",
                                           "--json", "--no-progress"], env={"OPENAI_API_KEY": "sk-test"})
        assert result.exit_code == 0, result.output
        sampling = _sampling(server)
    assert len(sampling) >= 2 and set(sampling) == {(0.0, 5)}


def test_serve_sends_its_configured_sampling(tmp_path):
    from helmdeck_dspy.serve.config import ServeConfig
    from helmdeck_dspy.serve.service import PlanService
    from helmdeck_dspy.serve.wire import PlanRequest

    with FaultServer([ok(ANSWER)]) as server:
        config = ServeConfig(lm_spec="llamacpp/m", api_base=server.url, history=False, temperature=0.2, seed=3)
        service = PlanService(config)
        service.plan(PlanRequest(user_intent="publish my notes as a blog post", model=MODEL), "user:test")
        default = PlanService(ServeConfig(lm_spec="llamacpp/m", api_base=server.url, history=False))
        default.plan(PlanRequest(user_intent="publish my notes as a blog post, now", model=MODEL), "user:test")
        assert _sampling(server) == [(0.2, 3), (0.0, 7)]
