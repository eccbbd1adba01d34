"""Bounded input: a request larger than its model's budget is refused before any LM call.

The budget row's ``input_tokens`` is the context the planner may fill for that model. A request
whose intent and context (and, in a single_pick loop, the steps already run, as the prompt shows
them) alone hold more tokens than that cannot be planned well (the instructions
and the catalog have to fit too) and, sent anyway, would cost the operator a paid call, twice when
the LLM filter runs first. :func:`check_request` is the one place this is decided; the CLI's
``plan`` and the MCP server's ``helmdeck.plan`` call it with the planner's budget before planning.

Tokens are counted as :mod:`helmdeck_dspy.io.tokens` counts them (cl100k_base, or 4 characters a
token offline). A request whose UTF-8 size is within the limit is never counted (a token is at
least one byte), so the check costs nothing for ordinary requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from helmdeck_dspy.errors import InputTooLargeError, UsageValueError
from helmdeck_dspy.signatures.types import ExecutedStep


@dataclass(frozen=True)
class RequestSize:
    """The size of a request's intent, context and prior steps, in tokens (an upper bound when not counted)."""

    intent_tokens: int
    context_tokens: int
    counted: bool
    prior_tokens: int = 0

    @property
    def total(self) -> int:
        return self.intent_tokens + self.context_tokens + self.prior_tokens


def _bytes(text: str | None) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if text else 0


def measure(intent: str, context: str | None, limit: int, prior: str | None = None) -> RequestSize:
    """The request's size, counted only when its bytes could exceed ``limit`` tokens."""
    sizes = [_bytes(intent), _bytes(context), _bytes(prior)]
    if sum(sizes) <= limit:
        return RequestSize(sizes[0], sizes[1], counted=False, prior_tokens=sizes[2])
    from helmdeck_dspy.io.tokens import count_tokens

    def count(text: str | None) -> int:
        return count_tokens(text) if text else 0

    return RequestSize(count(intent), count(context), counted=True, prior_tokens=count(prior))


def check_output_cap(max_tokens: int | None, *, input_tokens: int, model: str) -> None:
    """Refuse an output cap beyond the model's context (``input_tokens``; 0: the row sets no limit):
    no answer can be that long, and the number would be sent as given.

    Raises:
        UsageValueError: ``max_tokens`` exceeds ``input_tokens`` (its ``argument`` is ``max_tokens``).
    """
    if max_tokens is not None and input_tokens and max_tokens > input_tokens:
        raise UsageValueError(f"--max-tokens {max_tokens} exceeds the {input_tokens}-token context of {model}'s "
                              "budget row", argument="max_tokens")


def steps_text(steps: list[ExecutedStep]) -> str | None:
    """Steps already run as the planner's prompt carries them (tool, arguments, output), for a
    request's size; None when there are none."""
    return "\n".join(f"{s.order}. {s.tool} {json.dumps(s.args, ensure_ascii=False, separators=(',', ':'))} -> "
                     f"{s.output}" for s in steps) or None


def check_request(intent: str, context: str | None, *, input_tokens: int, model: str,
                  prior: str | None = None) -> RequestSize:
    """Refuse a request whose intent, context and prior steps hold more tokens than ``input_tokens``.

    Args:
        intent: The user's request.
        context: Material sent with it (None: none).
        input_tokens: The budget row's ``input_tokens`` (0: the row sets no limit).
        model: The model id, for the message.
        prior: The steps a single_pick loop already ran, as text the prompt would carry (None: none).

    Returns:
        The request's size.

    Raises:
        InputTooLargeError: The request is too large; ``argument`` names ``user_intent`` when the
            intent alone is, else ``context`` when the intent and context are, else ``prior_steps``.
    """
    size = measure(intent, context, input_tokens, prior) if input_tokens else RequestSize(0, 0, counted=False)
    if not input_tokens or size.total <= input_tokens:
        return size
    if size.intent_tokens > input_tokens:
        argument = "user_intent"
    elif size.intent_tokens + size.context_tokens > input_tokens or not size.prior_tokens:
        argument = "context"
    else:
        argument = "prior_steps"
    prior_part = f", prior steps {size.prior_tokens}" if size.prior_tokens else ""
    raise InputTooLargeError(
        f"invalid argument {argument}: the request holds about {size.total} tokens (intent {size.intent_tokens}, "
        f"context {size.context_tokens}{prior_part}), more than the {input_tokens} input tokens the budget of "
        f"{model} allows; shorten it or send less", argument)
