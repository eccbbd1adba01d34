"""The ``local:NAME`` LM spec: make_lm starts one managed server per model and calls it live."""

from __future__ import annotations

import functools

import pytest

from helmdeck_dspy.engines.lm_spec import make_lm, trace_source
from helmdeck_dspy.errors import (
    MissingExtraError,
    ModelNotInstalledError,
    UnknownModelError,
)
from helmdeck_dspy.local import endpoint
from helmdeck_dspy.local import server as server_module
from helmdeck_dspy.local import engines as engines_module
from helmdeck_dspy.local.endpoint import LOCAL_API_KEY, local_lm_args, managed_server
from helmdeck_dspy.local.server import LocalServer
from tests.local.conftest import fake_server_command


@pytest.fixture
def fake_engine(monkeypatch, tmp_path):
    """Managed servers run the stand-in server for an 'installed' file; all stopped afterwards."""
    monkeypatch.setattr(endpoint, "require_engine", lambda engine: None)
    monkeypatch.setattr(endpoint, "require_installed", lambda model: tmp_path / f"{model.name}.gguf")
    monkeypatch.setattr(endpoint, "LocalServer", functools.partial(LocalServer, command=fake_server_command()))
    monkeypatch.setenv("HELMDECK_DSPY_MODELS", str(tmp_path / "models"))
    yield
    server_module.stop_all()
    endpoint._SERVERS.clear()


def test_one_server_per_model_per_process_is_reused(fake_engine):
    first = managed_server("qwen2.5-coder-0.5b")
    assert managed_server("qwen2.5-coder-0.5b") is first
    other = managed_server("gemma-3-270m")
    assert other is not first and other.port != first.port
    assert first.log_path.name == f"qwen2.5-coder-0.5b-{first.port}.log"
    first.stop()
    again = managed_server("qwen2.5-coder-0.5b")
    assert again is not first and again.running


def test_a_context_window_is_set_on_first_start_and_a_clash_is_an_error(fake_engine):
    from helmdeck_dspy.bench.study.runner import start_local
    from helmdeck_dspy.bench.study.spec import StudySpec
    from helmdeck_dspy.errors import LocalModelError
    from helmdeck_dspy.local.server import ServerOptions

    spec = StudySpec(model="m", lm="local:qwen2.5-coder-0.5b", data=("d",), categories=("simple_python",), limit=1,
                     context=16384, config=({"name": "plain", "plain": True},))
    start_local(spec)
    server = managed_server("qwen2.5-coder-0.5b")
    assert server.options.n_ctx == 16384 and server.settings()["n_ctx"] == 16384
    assert managed_server("qwen2.5-coder-0.5b", ServerOptions(n_ctx=16384)) is server
    with pytest.raises(LocalModelError, match="16384-token context.*8192 was asked for"):
        managed_server("qwen2.5-coder-0.5b", ServerOptions(n_ctx=8192))
    with pytest.raises(LocalModelError, match="runs already on llama-cpp-python.*llama-server with 16384 was asked for"):
        managed_server("qwen2.5-coder-0.5b", ServerOptions(n_ctx=16384, engine="llama-server"))


def test_local_lm_args_point_the_openai_path_at_the_server(fake_engine):
    model, api_base, api_key, n_ctx = local_lm_args("qwen2.5-coder-0.5b")
    assert model == "llamacpp/qwen2.5-coder-0.5b"
    assert api_base == managed_server("qwen2.5-coder-0.5b").api_base
    assert api_key == LOCAL_API_KEY
    assert n_ctx == managed_server("qwen2.5-coder-0.5b").options.n_ctx


def test_make_lm_builds_the_ordinary_live_lm_and_it_answers(fake_engine):
    from helmdeck_dspy.engines.streaming import StreamingEngine, endpoint_of

    lm = make_lm("local:qwen2.5-coder-0.5b", cache=False, num_retries=0)
    server = managed_server("qwen2.5-coder-0.5b")
    assert lm.model == "llamacpp/qwen2.5-coder-0.5b"
    assert endpoint_of(lm) == server.api_base
    assert isinstance(lm._engine_spec, StreamingEngine) and lm._engine_spec.n_ctx == server.options.n_ctx
    assert lm("plan") == ['{"steps": []}']  # assembled from the streamed pieces
    assert trace_source("local:qwen2.5-coder-0.5b") == "live"


def test_make_lm_names_the_problem_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HELMDECK_DSPY_MODELS", str(tmp_path))
    with pytest.raises(UnknownModelError, match="unknown local model 'nope'; known: qwen2.5-coder-0.5b"):
        make_lm("local:nope")
    monkeypatch.setattr(endpoint, "require_engine", lambda engine: None)
    with pytest.raises(ModelNotInstalledError, match="run helmdeck-dspy models install qwen2.5-coder-0.5b$"):
        make_lm("local:qwen2.5-coder-0.5b")


def test_make_lm_without_the_extra_says_how_to_install_it(monkeypatch):
    real = engines_module.importlib.util.find_spec
    monkeypatch.setattr(engines_module.importlib.util, "find_spec", lambda m: None if m == "llama_cpp" else real(m))
    with pytest.raises(MissingExtraError) as exc:
        make_lm("local:qwen2.5-coder-0.5b")
    assert "\n" not in str(exc.value) and "pip install 'helmdeck-dspy[local]'" in str(exc.value)


def test_the_planner_plans_through_a_local_spec_and_records_it_as_live(fake_engine, tmp_path):
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.traces.io import read_jsonl_traces

    out = tmp_path / "trace.jsonl"
    planner = Planner.for_model("local/qwen2.5-coder-0.5b-instruct", lm="local:qwen2.5-coder-0.5b",
                                use_filter=False, cache=False, record_path=out, history=None)
    result = planner.plan("scrape https://example.org and summarise it")
    assert result.tier == planner.budget.tier and result.model == "local/qwen2.5-coder-0.5b-instruct"
    assert result.ok or result.failure_cause is not None
    (record,) = list(read_jsonl_traces(out))
    assert record.source == "live" and record.model == "local/qwen2.5-coder-0.5b-instruct"


def test_a_server_that_dies_mid_run_ends_the_exchange_as_a_transport_error(fake_engine, tmp_path):
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy
    from helmdeck_dspy.traces.io import read_jsonl_traces

    out = tmp_path / "trace.jsonl"
    planner = Planner.for_model("local/qwen2.5-coder-0.5b-instruct", lm="local:qwen2.5-coder-0.5b", use_filter=False,
                                cache=False, record_path=out, history=None, retry=RetryPolicy(max_attempts=1))
    assert planner.plan("take a screenshot of https://example.org").failure_cause is None
    managed_server("qwen2.5-coder-0.5b").process.kill()
    result = planner.plan("take a screenshot of https://example.com")
    assert result.failure_cause == "transport_error" and not result.ok
    first, second = list(read_jsonl_traces(out))
    assert first.error is None and second.error
