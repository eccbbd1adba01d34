"""``serve --openai``: the official ``openai`` SDK against the endpoint, with the planner's model
scripted on a loopback endpoint (``tests.fault_server``): every ``tool_choice``, tool results in
the history, streaming on and off, and bad input, each with the documented answer."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from helmdeck_dspy.serve.auth import CallerTokens
from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.openai_http import MAX_BODY_BYTES, openai_app
from helmdeck_dspy.serve.server import listen_socket
from helmdeck_dspy.serve.service import PlanService
from tests.fault_server import FaultServer, ok

openai = pytest.importorskip("openai", reason="the openai SDK is not installed")

MODEL = "local/qwen2.5-coder-1.5b-instruct"  # its row answers a tool list with the plain strategy: a JSON list
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "send_fax", "description": "Send a fax to a number.",
        "parameters": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]}}}]
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]


@pytest.fixture(autouse=True)
def _own_question(request, monkeypatch):
    """Each test asks its own question: DSPy's response cache keys on the request, not the endpoint."""
    monkeypatch.setitem(ASK[0], "content", f"What is the weather in Oslo? ({request.node.name})")
OSLO = json.dumps([{"name": "get_weather", "arguments": {"city": "Oslo"}}])


@pytest.fixture(autouse=True)
def _lm_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")  # the scripted endpoint takes any key


@contextmanager
def endpoint(answers: list[str], tmp_path: Any, tokens: CallerTokens | None = None) -> Iterator[tuple[Any, FaultServer]]:
    """The endpoint on 127.0.0.1 and a free port, its planner's model answering ``answers`` in turn,
    and an ``openai`` client pointed at it."""
    import uvicorn

    with FaultServer([ok(a) for a in answers]) as lm_server:
        config = ServeConfig(transport="openai", lm_spec="openai/m", api_base=lm_server.url,
                             history_path=tmp_path / "history.sqlite", retries=0)
        sock = listen_socket("127.0.0.1", 0)
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(openai_app(PlanService(config), tokens or CallerTokens()),
                                               log_level="warning", access_log=False))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0), lm_server
        finally:
            server.should_exit = True
            thread.join(15)
            sock.close()


def test_auto_plans_the_call_and_answers_in_the_openai_shape(tmp_path):
    with endpoint([OSLO], tmp_path) as (client, _):
        answer = client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.id.startswith("call_") and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_the_planner_repairs_what_the_model_got_wrong(tmp_path):
    wrong = json.dumps([{"name": "getWeather", "arguments": {"city": "Oslo", "units": "c"}},
                        {"name": "book_flight", "arguments": {}}])  # a near-miss name, an argument and a tool no one offered
    with endpoint([wrong], tmp_path) as (client, _):
        answer = client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
    calls = answer.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]


def test_tool_results_in_the_history_reach_the_planner_and_a_done_plan_answers_in_text(tmp_path):
    history = [*ASK, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "12 C and raining"}]
    with endpoint(["[]", "It is 12 C and raining in Oslo."], tmp_path) as (client, lm):
        answer = client.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)
        plan_prompt = json.dumps(lm.requests[0].body["messages"])
        text_prompt = json.dumps(lm.requests[1].body)
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content == "It is 12 C and raining in Oslo."
    assert "12 C and raining" in plan_prompt and "get_weather" in plan_prompt  # the call and its result
    assert "12 C and raining" in text_prompt and '"tools"' not in text_prompt


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_weather"}}])
def test_required_and_named_ask_a_decline_again_for_a_call(tmp_path, choice):
    with endpoint(["[]", OSLO], tmp_path) as (client, lm):
        answer = client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS, tool_choice=choice)
        asks = [r.body for r in lm.requests]
    assert [c.function.name for c in answer.choices[0].message.tool_calls] == ["get_weather"]
    assert len(asks) == 2 and asks[1]["messages"][-2]["content"] == "[]"  # asked again in the same conversation
    if isinstance(choice, dict):  # a named function: the planner sees that one tool only
        assert "send_fax" not in json.dumps(asks[0]["messages"])


def test_none_and_no_tools_pass_the_conversation_through_for_text(tmp_path):
    with endpoint(["Hello!", "Hi again."], tmp_path) as (client, lm):
        plain = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello"}])
        none = client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS, tool_choice="none")
        bodies = [r.body for r in lm.requests]
    assert plain.choices[0].message.content == "Hello!" and none.choices[0].message.content == "Hi again."
    assert [b["messages"][-1]["content"] for b in bodies] == ["Say hello", ASK[0]["content"]]


def test_an_answer_that_is_no_plan_is_answered_in_text_under_auto_and_refused_under_required(tmp_path):
    broken = '["get_weather" "Oslo"'  # JSON-shaped, and no repair makes it a call list
    with endpoint([broken, "I could not check the weather.", broken, broken], tmp_path) as (client, _):
        auto = client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
        with pytest.raises(openai.APIStatusError) as required:
            client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS, tool_choice="required")
    assert auto.choices[0].finish_reason == "stop" and auto.choices[0].message.content == "I could not check the weather."
    assert required.value.status_code == 502 and "constrained_deadlock" in str(required.value)


def test_parallel_tool_calls_off_sends_the_first_call_only(tmp_path):
    full_steps = "openrouter/mistralai/mistral-large"  # tier B plans every step at once (tier C one at a time)
    two = json.dumps({"steps": [{"order": 1, "tool": "get_weather", "args": {"city": "Oslo"}, "rationale": ""},
                                {"order": 2, "tool": "send_fax", "args": {"number": "555"}, "rationale": ""}]})
    with endpoint([two, two], tmp_path) as (client, _):
        both = client.chat.completions.create(model=full_steps, messages=ASK, tools=TOOLS)
        one = client.chat.completions.create(model=full_steps, messages=ASK, tools=TOOLS, parallel_tool_calls=False)
    assert len(both.choices[0].message.tool_calls) == 2 and len(one.choices[0].message.tool_calls) == 1


def test_stream_sends_the_final_answer_as_standard_chunks(tmp_path):
    with endpoint([OSLO], tmp_path) as (client, _):
        chunks = list(client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS, stream=True))
    calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert [(tc.index, tc.function.name) for tc in calls] == [(0, "get_weather")]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_bad_input_gets_an_openai_error_and_no_traceback(tmp_path):
    import httpx

    with endpoint(["[]"], tmp_path) as (client, _):
        url = str(client.base_url).rstrip("/") + "/chat/completions"
        with pytest.raises(openai.BadRequestError) as unknown:
            client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS,
                                           tool_choice={"type": "function", "function": {"name": "launch"}})
        with pytest.raises(openai.BadRequestError) as orphan:
            client.chat.completions.create(model=MODEL, tools=TOOLS, messages=[
                *ASK, {"role": "tool", "tool_call_id": "call_9", "content": "12 C"}])
        big = httpx.post(url, content=b"{" + b" " * (MAX_BODY_BYTES + 1) + b"}",
                         headers={"Content-Type": "application/json"})
        not_json = httpx.post(url, content=b"model=x", headers={"Content-Type": "application/json"})
        deep = httpx.post(url, content=("[" * 5000 + "]" * 5000).encode(), headers={"Content-Type": "application/json"})
        no_route = httpx.get(url.replace("chat/completions", "embeddings"))
        models = client.models.list()
    assert "launch" in str(unknown.value) and "call_9" in str(orphan.value)
    for response, status in ((big, 413), (not_json, 400), (deep, 400), (no_route, 404)):
        assert response.status_code == status and set(response.json()["error"]) == {"message", "type", "param", "code"}
        assert "Traceback" not in response.text
    assert MODEL in {m.id for m in models.data}


def test_with_tokens_a_request_without_one_is_refused(tmp_path):
    tokens = CallerTokens({"alice": "a" * 32})
    with endpoint([OSLO], tmp_path, tokens) as (client, _):
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
        authed = openai.OpenAI(base_url=str(client.base_url), api_key="a" * 32, max_retries=0)
        answer = authed.chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
    assert answer.choices[0].finish_reason == "tool_calls"
