"""The llama.cpp engine (engines.streaming): answers streamed and stopped where they close, a timed-out
attempt's stream closed on the server before any retry, and no request the served context must refuse.

Against the loopback fault server, which streams a scripted answer in 4-character pieces and notes
whether the client closed the stream before its end.
"""

from __future__ import annotations

import json
import time

import pytest

from helmdeck_dspy.bench.bfcl.baseline import ask_messages
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.engines.streaming import MIN_ANSWER_TOKENS, StreamingEngine
from helmdeck_dspy.program.calls import ANSWER_CUT_KEY
from helmdeck_dspy.errors import ContextOverflowError
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.planning.resilience.policy import RetryPolicy
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.traces.io import read_jsonl_traces
from tests.fault_server import STREAM_PIECE, FaultServer, Reply, ok

MODEL = "local/qwen2.5-coder-1.5b-instruct"  # its row answers over a tool list with the plain strategy
TOOLS = [{"name": "get_weather", "description": "Current weather for a city.",
          "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
CALLS = json.dumps([{"name": "get_weather", "arguments": {"city": "Oslo"}}])
RUN_ON = "\n```\nThis calls get_weather for Oslo. " + "It then keeps talking. " * 40


def _lm(server):
    return make_lm("llamacpp/m", api_base=server.url, api_key="sk-test", cache=False, num_retries=0)


def _planner(lm, **options):
    return Planner.for_model(MODEL, lm=lm, catalog=read_tools_catalog(TOOLS), history=None, use_filter=False,
                             cache=False, **options)


def test_a_plain_plan_stops_where_its_list_closes_and_the_server_stops_sending(tmp_path):
    answer = "```json\n" + CALLS + RUN_ON
    record = tmp_path / "rec.jsonl"
    with FaultServer([Reply(content=answer, interval_s=0.005)]) as server:
        result = _planner(_lm(server), record_path=record).plan("What is the weather in Oslo?")
        (sent,) = server.requests
        assert sent.ended.wait(5)
    assert sent.body["stream"] is True
    assert [(s.tool, s.args) for s in result.steps] == [("get_weather", {"city": "Oslo"})]
    assert sent.client_closed and sent.pieces_sent < len(answer) // STREAM_PIECE // 2
    (rec,) = read_jsonl_traces(record)
    assert rec.content == "```json\n" + CALLS and rec.finish_reason == "stop" and rec.answer_cut is True
    assert rec.completion_tokens is not None and rec.completion_tokens <= sent.pieces_sent


def test_the_model_alone_request_stops_the_same_way_and_an_unknown_answer_is_never_cut():
    with FaultServer([Reply(content=CALLS + RUN_ON)]) as server:
        lm = _lm(server)
        alone = ask_messages(lm, [{"role": "user", "content": "weather in Oslo?"}], max_tokens=500)
        whole = lm("weather in Oslo?")  # no answer kind: read to the end
    assert alone.content == CALLS and alone.finish_reason == "stop"
    assert whole == [CALLS + RUN_ON]


def test_a_streamed_answer_that_ends_by_itself_keeps_its_finish_reason_and_counts_its_pieces():
    cut = '[{"name": "get_weather", "arguments": {"city": "Os'
    with FaultServer([Reply(content=cut, finish_reason="length")]) as server:
        completion = ask_messages(_lm(server), [{"role": "user", "content": "weather?"}], max_tokens=12)
    assert completion.content == cut and completion.finish_reason == "length"
    assert completion.completion_tokens == -(-len(cut) // STREAM_PIECE)  # the server's own count


def test_a_timed_out_attempt_closes_its_stream_before_the_retry_is_sent():
    endless = '[{"name": "get_weather", "arguments": {"city": "' + "Oslo " * 400  # never closes
    with FaultServer([Reply(content=endless, interval_s=0.05), ok(CALLS)], deadline_s=60) as server:
        planner = _planner(_lm(server), retry=RetryPolicy(max_attempts=2, timeout_s=1.0, base_delay_s=0))
        result = planner.plan("What is the weather in Oslo?")
        first, second = server.requests
    assert result.ok and [a.cause for a in result.attempts] == ["likely_timeout", None]
    assert first.client_closed and first.pieces_sent < len(endless) // STREAM_PIECE // 2
    assert first.closed_at is not None and first.closed_at <= second.at  # the retry did not queue behind it


def test_a_retry_waits_for_the_server_to_drop_a_request_still_in_its_prompt():
    # The server holds its first token back (a long prompt evaluation) past the deadline and its grace:
    # the retry is sent once that stream is closed, never while the server still works on it.
    with FaultServer([Reply(content=CALLS, delay_s=4.5, interval_s=0.05), ok(CALLS)], deadline_s=30) as server:
        planner = _planner(_lm(server), retry=RetryPolicy(max_attempts=3, timeout_s=1.0, base_delay_s=0))
        result = planner.plan("What is the weather in Oslo?")
        first, second = server.requests
    assert result.ok and [a.cause for a in result.attempts] == ["likely_timeout", None]
    assert first.client_closed and first.closed_at is not None and first.closed_at <= second.at
    assert second.at - first.at >= 4.5  # it waited for the server (deadline 1 s, grace 3 s, then up to 1 s more)


def test_no_retry_when_the_server_never_lets_go_of_the_request():
    with FaultServer([Reply(kind="stall_headers", content=CALLS), ok(CALLS)], deadline_s=30, stall_s=20) as server:
        planner = _planner(_lm(server), retry=RetryPolicy(max_attempts=3, timeout_s=1.0, base_delay_s=0))
        started = time.monotonic()
        result = planner.plan("What is the weather in Oslo?")
        elapsed = time.monotonic() - started
        assert len(server.requests) == 1
    assert result.failure_cause == "likely_timeout" and "still working on its request" in (result.error or "")
    assert elapsed < 10.0  # the deadline, its grace and one more deadline's wait for the server


def _engine_for(server, n_ctx):
    return StreamingEngine(server.url, api_key="sk-test", timeout=10, n_ctx=n_ctx)


def _request(text, max_tokens):
    from dspy.lm15 import Config, Message, Request

    return Request(model="llamacpp/m", messages=(Message.user(text),), config=Config(max_tokens=max_tokens))


def test_a_prompt_that_leaves_no_room_for_an_answer_is_refused_before_it_is_sent():
    with FaultServer([ok(CALLS)]) as server:
        engine = _engine_for(server, n_ctx=1000)
        with pytest.raises(ContextOverflowError, match="do not fit the served context of 1000 tokens"):
            engine.complete(_request("x" * 4000, 200))  # at most 2,000 tokens: the server has no tokenizer route
        assert server.requests == []


def test_an_output_cap_that_would_overrun_the_context_is_lowered_to_what_fits():
    with FaultServer([ok(CALLS)]) as server:
        engine = _engine_for(server, n_ctx=1000)
        engine.complete(_request("x" * 1500, 500))  # at most 766 tokens with the template's
        (sent,) = server.requests
    assert MIN_ANSWER_TOKENS <= sent.body["max_tokens"] == 1000 - 750 - 16


def test_a_request_well_inside_the_context_is_sent_unchanged():
    with FaultServer([ok(CALLS)]) as server:
        response = _engine_for(server, n_ctx=8192).complete(_request("weather in Oslo?", 300))
        (sent,) = server.requests
    assert sent.body["max_tokens"] == 300 and not (response.provider_data or {}).get(ANSWER_CUT_KEY)


def test_a_plan_whose_prompt_cannot_fit_fails_without_a_request_and_without_retries():
    from helmdeck_dspy.engines.streaming import StreamingEngine as Engine

    with FaultServer([ok(CALLS)]) as server:
        lm = _lm(server)
        engine = lm._engine_spec
        assert isinstance(engine, Engine)
        engine.n_ctx, engine._probed = 100, True  # a server whose context the tool list alone overruns
        result = _planner(lm, retry=RetryPolicy(max_attempts=3, base_delay_s=0)).plan("What is the weather in Oslo?")
        assert server.requests == []
    assert not result.ok and result.failure_cause == "transport_error" and len(result.attempts) == 1
    assert "do not fit the served context of 100 tokens" in (result.error or "")


def test_no_stream_opens_once_its_attempt_is_cancelled():
    from helmdeck_dspy.engines.call_control import CallControl, controlled
    from helmdeck_dspy.errors import CallCancelled

    control = CallControl()
    control.cancel()
    with FaultServer([ok(CALLS)]) as server, controlled(control):
        with pytest.raises(CallCancelled):
            _engine_for(server, n_ctx=None).complete(_request("weather in Oslo?", 100))
        assert server.requests == []
    assert control.closed.is_set()


def test_a_list_that_repeats_one_call_is_stopped_as_cut_at_its_third_writing_and_the_server_stops():
    order = '{"name": "get_weather", "arguments": {"city": "Oslo"}, "result": "%d degrees"}'
    answer = "[" + ", ".join(order % i for i in range(60))
    with FaultServer([Reply(content=answer, interval_s=0.002)]) as server:
        completion = ask_messages(_lm(server), [{"role": "user", "content": "weather?"}], max_tokens=1500)
        (sent,) = server.requests
        assert sent.ended.wait(5)
    assert completion.content == "[" + ", ".join(order % i for i in range(3))
    assert completion.finish_reason == "length" and completion.answer_cut  # cut, as the cap would have, only sooner
    assert sent.client_closed and sent.pieces_sent < len(answer) // STREAM_PIECE // 4
