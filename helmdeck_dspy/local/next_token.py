"""What the model would write next at one point of its answer: a route added to the local llama.cpp
server (issue 38, item 2), and the request and answer it takes; on llama.cpp's own ``llama-server``,
the same answer from its public routes.

A call-or-not decision is one token: after the ``[`` that opens a list of calls, the model either
closes it (``]``: no call) or opens a call; under the schema strategy, ``false`` or ``true`` after
``"tool_fits": ``. Its probability needs the logits at that one position. llama-cpp-python gives
logprobs only with ``logits_all``, which keeps an ``n_ctx x vocabulary`` array (about 5 GB at 8,192
tokens for Qwen) and copies it into every saved prompt state; but after any evaluation llama.cpp
still holds the last position's logits. ``POST /helmdeck/next-token`` formats the messages with the
model's own chat template as the chat route does, appends the answer so far, reuses what the
context (or the server's prompt cache) already holds, evaluates only the rest, and returns the
probability mass of the next tokens whose text (leading whitespace aside) starts with each of the
given strings. Right after the answer was generated from the same prompt, that is a few tokens.

:func:`install_route` runs inside the server process, before the server module starts
(``local.server``'s launcher); the route holds the server's model lock like the chat route does,
and evaluates in the server's thread pool, never on its event loop. :func:`ask_next_token` is the
client. Where the route is missing it asks llama.cpp's ``llama-server`` (issue 54) through the
routes it documents: ``POST /apply-template`` formats the messages with the model's template,
``POST /completion`` with ``n_predict: 1`` and ``n_probs`` gives the top next tokens' probabilities
(a softmax of the logits, the sampler aside) after that prompt and the prefix, and the cached prompt
is reused (``cache_prompt``). The mass is summed over those :data:`TOP_TOKENS` tokens only, which
the answer's ``covered`` shows. An endpoint with neither raises :class:`RouteMissing`.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ROUTE = "/helmdeck/next-token"
TOP_TOKENS = 40
"""Next tokens llama-server is asked the probabilities of (``n_probs``)."""


class NextTokenRequest(BaseModel):
    """What the route is asked."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(min_length=1, description="The chat request's messages, as sent.")
    prefix: str = Field(description="The answer so far (the assistant's text after the chat template's prompt).")
    starts: list[str] = Field(min_length=1, description="Report the mass of next tokens starting with each.")
    model: str | None = None


class RouteMissing(Exception):
    """The endpoint answered that it has no next-token route (HTTP 404 or 405)."""


class NextTokenAnswer(BaseModel):
    """The route's answer."""

    mass: dict[str, float] = Field(description="Each start → the probability mass of next tokens beginning with it.")
    prompt_tokens: int = Field(description="Tokens of the formatted messages and the prefix.")
    evaluated: int = Field(description="Tokens evaluated for this answer (the rest was reused).")


def _formatter(llama: Any) -> Any:
    """The model's own chat template, built as llama-cpp-python builds its chat handler (kept on the model)."""
    cached = getattr(llama, "_helmdeck_formatter", None)
    if cached is None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        eos, bos = llama.token_eos(), llama.token_bos()
        cached = Jinja2ChatFormatter(
            template=llama.metadata["tokenizer.chat_template"],
            eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llama._model.token_get_text(bos) if bos != -1 else "", stop_token_ids=[eos])
        llama._helmdeck_formatter = cached
    return cached


def _starting_with(llama: Any, start: str) -> Any:
    """The ids of the vocabulary entries whose text, leading whitespace aside, starts with ``start``
    (kept on the model, per start)."""
    import numpy as np

    found: dict[str, Any] = llama.__dict__.setdefault("_helmdeck_starts", {})
    if start not in found:
        texts = llama.__dict__.get("_helmdeck_texts")
        if texts is None:
            texts = llama._helmdeck_texts = [llama.detokenize([i]).decode("utf-8", errors="replace").lstrip()
                                             for i in range(llama.n_vocab())]
        found[start] = np.array([i for i, t in enumerate(texts) if t.startswith(start)], dtype=np.int64)
    return found[start]


def _reuse(llama: Any, tokens: list[int]) -> int:
    """Load the longest cached prefix when it beats the context's, and return how many leading
    tokens need no evaluation (never all: the last one is evaluated for its logits)."""
    from llama_cpp import Llama

    held = Llama.longest_token_prefix(llama._input_ids.tolist(), tokens)
    if llama.cache is not None:
        try:
            state = llama.cache[tokens]
        except KeyError:
            state = None
        if state is not None and Llama.longest_token_prefix(state.input_ids.tolist(), tokens) > held:
            llama.load_state(state)
            held = Llama.longest_token_prefix(llama._input_ids.tolist(), tokens)
    return min(held, len(tokens) - 1)


def next_token_mass(llama: Any, request: NextTokenRequest) -> NextTokenAnswer:
    """The probability mass of each start at the position after ``request.prefix`` (see the module
    docstring)."""
    import numpy as np

    formatted = _formatter(llama)(messages=request.messages)
    tokens = llama.tokenize((formatted.prompt + request.prefix).encode("utf-8"),
                            add_bos=not formatted.added_special, special=True)
    kept = _reuse(llama, tokens)
    llama.n_tokens = kept
    llama.eval(tokens[kept:])
    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    mass = {s: float(probs[_starting_with(llama, s)].sum()) for s in request.starts}
    return NextTokenAnswer(mass=mass, prompt_tokens=len(tokens), evaluated=len(tokens) - kept)


def install_route() -> None:
    """Add the route to llama-cpp-python's server router (in the server process, before it starts)."""
    from fastapi import Depends
    from llama_cpp.server import app as server_app
    from starlette.concurrency import run_in_threadpool

    async def next_token(body: NextTokenRequest, proxy: Any = Depends(server_app.get_llama_proxy)) -> NextTokenAnswer:
        # the model lock is held (the dependency); the evaluation runs off the event loop
        return await run_in_threadpool(lambda: next_token_mass(proxy(body.model), body))

    server_app.router.add_api_route(ROUTE, next_token, methods=["POST"], response_model=NextTokenAnswer)


def ask_next_token(api_base: str, request: NextTokenRequest, timeout_s: float = 60.0) -> NextTokenAnswer | None:
    """Ask the server at ``api_base`` (``http://host:port/v1``): its next-token route, else
    llama-server's public routes (module docstring). None when the server does not answer in time
    or answers something else.

    Raises:
        RouteMissing: The server has neither (not a llama.cpp server this package can ask).
    """
    root = api_base.rstrip("/").removesuffix("/v1")
    try:
        try:
            return NextTokenAnswer.model_validate(_post(root + ROUTE, request.model_dump(exclude_none=True), timeout_s))
        except RouteMissing:
            return _ask_llama_server(root, request, timeout_s)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, _Unanswered):
        return None


def _ask_llama_server(root: str, request: NextTokenRequest, timeout_s: float) -> NextTokenAnswer:
    try:
        prompt = _post(root + "/apply-template", {"messages": request.messages}, timeout_s)["prompt"]
    except RouteMissing:
        raise RouteMissing(f"no {ROUTE} route, and no llama-server /apply-template route") from None
    done = _post(root + "/completion", {"prompt": prompt + request.prefix, "n_predict": 1, "n_probs": TOP_TOKENS,
                                        "temperature": 0, "cache_prompt": True}, timeout_s)
    top = done["completion_probabilities"][0]["top_logprobs"]
    mass = {s: sum(math.exp(t["logprob"]) for t in top if str(t["token"]).lstrip().startswith(s)) for s in request.starts}
    timings = done.get("timings") or {}
    return NextTokenAnswer(mass=mass, prompt_tokens=int(done.get("tokens_evaluated") or 0),
                           evaluated=int(timings.get("prompt_n") or 0))


class _Unanswered(Exception):
    """The server did not answer in time, or answered with another error."""


def _post(url: str, body: dict[str, Any], timeout_s: float) -> Any:
    """POST ``body`` as JSON to a local server and return its JSON answer.

    Raises:
        RouteMissing: HTTP 404 or 405.
        _Unanswered: Any other failure.
    """
    import json
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    call = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                  headers={"Content-Type": "application/json"}, method="POST")
    try:
        with opener.open(call, timeout=timeout_s) as response:  # the planner's own endpoint
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 405):
            raise RouteMissing(f"no {url.rsplit('/', 1)[-1]} route (HTTP {exc.code})") from None
        raise _Unanswered(str(exc)) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise _Unanswered(str(exc)) from None
