"""The engine for llama.cpp servers: every answer streamed, stopped where it is complete, and
stopped on the server when its caller gives up.

A non-streamed request to llama.cpp runs to its end on the server whatever the client does: a
planner that gave up on it at its deadline left the server generating for nobody, and the retry
queued behind it (issue 54). :class:`StreamingEngine` sends every call with ``stream: true``
through DSPy's own native client for the ``llamacpp`` provider (:mod:`helmdeck_dspy.local.provider`)
and reads it as it arrives:

- **the answer's end**: when the caller says what the answer is
  (:func:`~helmdeck_dspy.engines.call_control.expecting`: a JSON list of calls, a JSON object), the
  stream is closed as soon as that value closes (:class:`~helmdeck_dspy.decoding.answer_end.AnswerEnd`;
  a conversation turn once it is plainly text, :class:`~helmdeck_dspy.decoding.answer_end.TurnEnd`);
  the response is the text up to there, finish_reason ``stop``, marked
  ``program.calls.ANSWER_CUT_KEY`` in its provider data (``answer_cut`` in a trace record); a list
  that runs away by repeating one call is closed at the repeat that makes it certain, finish_reason
  ``length`` (cut, as the cap would have cut it) with the same mark;
- **cancellation**: when the caller's :class:`~helmdeck_dspy.engines.call_control.CallControl` is
  cancelled (the attempt deadline, :mod:`helmdeck_dspy.planning.resilience.deadline`), the stream
  is closed at the next piece that
  arrives and :class:`~helmdeck_dspy.errors.CallCancelled` is raised. llama.cpp servers stop a
  generation whose stream was closed (llama-cpp-python after the token in progress; a prompt still
  being evaluated runs to its end first, so :attr:`CallControl.closed` tells whether the server
  was freed);
- **the served context**: with the server's context size known (``n_ctx``), a request whose
  prompt and output cap cannot fit is never sent (:class:`~helmdeck_dspy.errors.ContextOverflowError`),
  and an output cap that would overrun it is lowered to what fits (the answer keeps
  :data:`MIN_ANSWER_TOKENS` at least). The prompt is counted from its bytes when that bound is
  safely under the context, else exactly by the server's tokenizer route.

Importing this module imports dspy: the LM spec builder imports it when it builds an LM.
"""

from __future__ import annotations

import importlib
import json
import urllib.request
from dataclasses import replace
from typing import Any

from dspy.clients.engines.lm15_engine import LM15Engine
from dspy.lm15 import Request, Response, RouterConfig, Usage, _definitions, registered_providers

from helmdeck_dspy.decoding.answer_end import scanner
from helmdeck_dspy.engines.call_control import current_control, current_kind
from helmdeck_dspy.engines.base import make_response
from helmdeck_dspy.errors import CallCancelled, ContextOverflowError
from helmdeck_dspy.local.provider import PREFIX, declare_llamacpp
from helmdeck_dspy.program.calls import ANSWER_CUT_KEY

# DSPy's vendored lm15 folds stream events into a Response; it is not re-exported by dspy.lm15, and
# importing its typed package by name makes mypy read all of dspy as a partial package.
StreamAccumulator = importlib.import_module("dspy._vendor.lm15.result").StreamAccumulator

COUNTED_KEY = "helmdeck_usage_counted"
"""Provider-data flag of a response whose token counts the engine counted (the stream sent none)."""
MIN_ANSWER_TOKENS = 64
"""The least output room a request is sent with when its cap has to shrink to fit the context."""
BYTES_PER_TOKEN_FLOOR = 2.0
"""Prompt text (JSON, English, code) takes more UTF-8 bytes than this per token in the served models'
tokenizers, so bytes / 2 bounds its tokens and a prompt within that bound is sent uncounted. Denser
text (a long run of digits: a token each) can beat the bound; the server then refuses it as before."""
MESSAGE_OVERHEAD_TOKENS = 8
"""Chat-template tokens around each message (role markers, separators), and once more for the
template's opening: an estimate (Qwen's template, with its default system message, adds about 29 to a
one-message request's text, where this says 16)."""


def request_text(request: Request) -> str:
    """Everything of ``request`` that becomes prompt tokens: system text, each message's parts
    (text, tool calls, tool results) and the tools' JSON."""
    pieces: list[str] = []
    system = request.system
    if isinstance(system, str):
        pieces.append(system)
    elif system:
        pieces.extend(str(getattr(p, "text", "") or "") for p in system)
    for message in request.messages:
        for part in message.parts:
            text = getattr(part, "text", None)
            if isinstance(text, str):
                pieces.append(text)
            elif getattr(part, "input", None) is not None:
                pieces.append(json.dumps(part.input, ensure_ascii=False))
            elif getattr(part, "content", None) is not None:
                pieces.extend(str(getattr(c, "text", "") or "") for c in part.content)
    for tool in request.tools:
        pieces.append(json.dumps({"name": tool.name, "description": getattr(tool, "description", None),
                                  "parameters": getattr(tool, "parameters", None)}, ensure_ascii=False, default=str))
    return "\n".join(pieces)


def _overhead(request: Request) -> int:
    """The chat template's tokens around a request's messages, estimated."""
    return MESSAGE_OVERHEAD_TOKENS * (len(request.messages) + 1)


class StreamingEngine:
    """The sync engine of a ``llamacpp/`` LM (see the module docstring).

    Args:
        api_base: The server's OpenAI-compatible base URL (``http://HOST:PORT/v1``).
        api_key: Sent as the bearer token (llama.cpp servers started without a key ignore it).
        timeout: Seconds any one read may wait (lm15's per-read timeout).
        n_ctx: The served context in tokens, when known (else no request is checked against it).
    """

    def __init__(self, api_base: str, *, api_key: str | None = None, timeout: float | None = None,
                 n_ctx: int | None = None) -> None:
        from dspy.clients.engines.lm15_engine import timeouts_for

        declare_llamacpp()
        providers = _definitions(tuple(p for p in registered_providers() if p.id == PREFIX))
        self.api_base = api_base.rstrip("/")
        self.n_ctx = n_ctx
        self.timeout = timeout
        config = RouterConfig(api_keys={PREFIX: api_key or "none"}, base_urls={PREFIX: self.api_base},
                              timeouts=timeouts_for(timeout), providers=providers)
        self._inner = LM15Engine(config, model_type="chat")
        self._tokenize_route: str | None = None  # found on first use: "" when the server has none
        self._probed = n_ctx is not None

    # ------------------------------------------------------------------ the served context

    def count_tokens(self, text: str) -> int | None:
        """Exact prompt tokens of ``text`` from the server's tokenizer route (llama.cpp's
        ``/tokenize``, llama-cpp-python's ``/extras/tokenize``), or None when it has neither."""
        root = self.api_base.removesuffix("/v1")
        routes = [self._tokenize_route] if self._tokenize_route is not None else ["/tokenize", "/extras/tokenize"]
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for route in routes:
            if not route:
                return None
            body = {"content": text} if route == "/tokenize" else {"input": text}
            req = urllib.request.Request(root + route, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with opener.open(req, timeout=self.timeout or 60) as reply:
                    tokens = json.loads(reply.read()).get("tokens")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(tokens, list):
                self._tokenize_route = route
                return len(tokens)
        self._tokenize_route = ""
        return None

    def served_context(self) -> int | None:
        """The served context in tokens: as given, else what the server's ``/props`` says
        (llama.cpp's ``llama-server``; asked once), else None."""
        if self.n_ctx is None and not self._probed:
            self._probed = True
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            try:
                with opener.open(self.api_base.removesuffix("/v1") + "/props", timeout=10) as reply:
                    props = json.loads(reply.read())
                n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
                self.n_ctx = int(n_ctx) if isinstance(n_ctx, int) and n_ctx > 0 else None
            except (OSError, ValueError, AttributeError, TypeError):
                self.n_ctx = None
        return self.n_ctx

    def fit(self, request: Request) -> tuple[Request, int | None]:
        """``request`` with an output cap that fits the served context, and its prompt tokens when
        they were counted exactly.

        Raises:
            ContextOverflowError: The prompt leaves less than :data:`MIN_ANSWER_TOKENS` of the context.
        """
        n_ctx = self.served_context()
        if not n_ctx:
            return request, None
        text = request_text(request)
        cap = request.config.max_tokens or 0
        bound = int(len(text.encode("utf-8")) / BYTES_PER_TOKEN_FLOOR) + _overhead(request)
        if bound + max(cap, MIN_ANSWER_TOKENS) <= n_ctx:
            return request, None
        counted = self.prompt_tokens(request)
        prompt = counted if counted is not None else bound
        room = n_ctx - prompt
        if room < MIN_ANSWER_TOKENS:
            raise ContextOverflowError(prompt, cap, n_ctx, exact=counted is not None)
        if cap and cap > room:
            request = replace(request, config=replace(request.config, max_tokens=room))
        return request, counted

    def prompt_tokens(self, request: Request) -> int | None:
        """The request's prompt tokens: its text counted by the server's tokenizer, plus
        :data:`MESSAGE_OVERHEAD_TOKENS` per message and one more for the template's opening (None
        when the server has no tokenizer route)."""
        counted = self.count_tokens(request_text(request))
        return None if counted is None else counted + _overhead(request)

    # ------------------------------------------------------------------ the call

    def complete(self, request: Request) -> Response:
        """Stream ``request``; stop at the answer's end or on cancellation (module docstring)."""
        request, prompt_tokens = self.fit(request)
        control = current_control()
        kind = current_kind()
        end = scanner(kind) if kind else None
        if control is not None and not control.opened():
            raise CallCancelled("the attempt was cancelled before its call was sent")
        accumulator = StreamAccumulator(request)
        text: list[str] = []
        pieces = 0
        events = self._inner.stream(request)
        try:
            for event in events:
                if control is not None and control.cancelled.is_set():
                    raise CallCancelled("the attempt's deadline passed; its stream was closed")
                accumulator.push(event)
                if event.type == "end":
                    return self._with_usage(accumulator.response(), request, pieces, prompt_tokens)
                delta = getattr(event, "delta", None)
                if delta is None or delta.type != "text" or not delta.text:
                    continue
                pieces += 1
                if end is None:
                    continue
                text.append(delta.text)
                stop = end.feed(delta.text)
                if stop is not None:
                    content = "".join(text)[:stop]
                    finish = "length" if getattr(end, "runaway", False) else "stop"
                    cut = make_response(request.model, content, finish_reason=finish, extra={ANSWER_CUT_KEY: True})
                    return self._with_usage(cut, request, pieces, prompt_tokens)
            return self._with_usage(accumulator.response(), request, pieces, prompt_tokens)
        finally:
            events.close()  # closes the HTTP response: the server stops generating for it
            if control is not None:
                control.ended()

    def _with_usage(self, response: Response, request: Request, pieces: int, prompt_tokens: int | None) -> Response:
        """``response`` with token counts where the stream sent none (llama-cpp-python's streams carry
        no usage): the text pieces received (one token each on llama.cpp servers) and the prompt's
        tokens (:meth:`prompt_tokens`), marked :data:`COUNTED_KEY`."""
        usage = response.usage
        if usage is not None and usage.output_tokens is not None and usage.input_tokens is not None:
            return response
        if prompt_tokens is None:
            prompt_tokens = self.prompt_tokens(request)
        data = {**(response.provider_data or {}), COUNTED_KEY: True}
        return replace(response, usage=Usage(input_tokens=prompt_tokens, output_tokens=pieces), provider_data=data)

    def stream(self, request: Request) -> Any:
        """The native stream, unchanged (DSPy's streaming path)."""
        return self._inner.stream(self.fit(request)[0])

    def close(self) -> None:
        self._inner.close()


def endpoint_of(lm: Any) -> str | None:
    """The base URL a ``llamacpp/`` LM calls: its streaming engine's, else its ``api_base`` setting."""
    engine = getattr(lm, "_engine_spec", None)
    if isinstance(engine, StreamingEngine):
        return engine.api_base
    return (getattr(lm, "kwargs", None) or {}).get("api_base")
