"""Tool-call arguments rendered as objects in llama-cpp-python's chat templates.

On the OpenAI wire an assistant message's ``tool_calls[].function.arguments`` is a JSON *string*.
Chat templates written for Hugging Face's tokenizers (Qwen2.5's among them) expect a mapping and
write it with ``tojson``, so llama-cpp-python 0.3.x, which hands the wire's messages to the
template as they came, shows the model its own earlier call as ``"arguments": "{\\"tz\\": ...}"``:
a quoted string, never the object the model wrote. llama.cpp's ``llama-server --jinja`` and vLLM
decode the string first; :func:`install` makes llama-cpp-python's server do the same, in the
server process, before it starts (the launcher of :mod:`helmdeck_dspy.local.engines` calls it).

An ``arguments`` string that is not a JSON object is left as it is (the template shows what the
caller sent).
"""

from __future__ import annotations

import json
from typing import Any


def decoded_arguments(messages: Any) -> Any:
    """``messages`` with every assistant tool call's JSON-string arguments decoded to an object (a
    new list; the caller's messages are not changed). Anything else is passed through."""
    if not isinstance(messages, list):
        return messages
    out = []
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if isinstance(calls, list) and calls:
            message = {**message, "tool_calls": [_decoded(call) for call in calls]}
        out.append(message)
    return out


def _decoded(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    raw = function["arguments"]
    try:
        value = json.loads(raw)
    except ValueError:
        return call
    if not isinstance(value, dict):
        return call
    return {**call, "function": {**function, "arguments": value}}


def install() -> None:
    """Decode tool-call arguments before llama-cpp-python's Jinja chat templates render them."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    if getattr(Jinja2ChatFormatter.__call__, "_helmdeck_decodes_arguments", False):
        return
    render = Jinja2ChatFormatter.__call__

    def call(self: Any, *, messages: Any, **kwargs: Any) -> Any:
        return render(self, messages=decoded_arguments(messages), **kwargs)

    setattr(call, "_helmdeck_decodes_arguments", True)  # noqa: B010 - a mark on a plain function
    setattr(Jinja2ChatFormatter, "__call__", call)  # noqa: B010 - a method replaced on the class
