"""Earlier tool calls reach a chat template with their arguments as objects (the OpenAI wire sends
them as JSON strings; Qwen's template writes them with ``tojson``)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.local.tool_arguments import decoded_arguments, install

# The tool-call part of Qwen2.5's template, as its GGUF carries it.
TEMPLATE = (
    "{%- for message in messages %}{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    '<tool_call>{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}</tool_call>'
    "{%- endfor %}{%- else %}{{ message.content }}{%- endif %}{%- endfor %}"
)
CALL = {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": '{"tz": "Asia/Tokyo"}'}}


def test_string_arguments_are_decoded_and_anything_else_passes_unchanged():
    messages = [{"role": "user", "content": "time?"}, {"role": "assistant", "content": "", "tool_calls": [
        CALL, {"id": "c2", "type": "function", "function": {"name": "x", "arguments": "not json"}},
        {"id": "c3", "type": "function", "function": {"name": "y", "arguments": "[1]"}}]}]
    out = decoded_arguments(messages)
    calls = out[1]["tool_calls"]
    assert calls[0]["function"]["arguments"] == {"tz": "Asia/Tokyo"}
    assert calls[1] == messages[1]["tool_calls"][1] and calls[2] == messages[1]["tool_calls"][2]  # no object: as sent
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"tz": "Asia/Tokyo"}'  # the caller's, untouched
    assert decoded_arguments("not a list") == "not a list"


def test_the_installed_formatter_shows_the_model_its_call_as_an_object(monkeypatch):
    chat_format = pytest.importorskip("llama_cpp.llama_chat_format", reason="llama-cpp-python is not installed "
                                      "(pip install 'helmdeck-dspy[local]')")
    messages = [{"role": "assistant", "content": "", "tool_calls": [CALL]}]
    before = chat_format.Jinja2ChatFormatter(TEMPLATE, eos_token="", bos_token="")(messages=messages).prompt
    assert '"arguments": "{\\"tz\\"' in before  # what llama-cpp-python renders by itself: a quoted string
    formatter = chat_format.Jinja2ChatFormatter
    monkeypatch.setattr(formatter, "__call__", formatter.__call__)  # restored after the test
    install()
    install()  # once only
    after = chat_format.Jinja2ChatFormatter(TEMPLATE, eos_token="", bos_token="")(messages=messages).prompt
    assert after == '<tool_call>{"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}</tool_call>'
