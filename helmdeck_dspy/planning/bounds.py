"""Bounded input: a request larger than its model's budget is refused before any LM call.

The budget row's ``input_tokens`` is the context the planner may fill for that model. A request
whose intent and context alone hold more tokens than that cannot be planned well (the instructions
and the catalog have to fit too) and, sent anyway, would cost the operator a paid call, twice when
the LLM filter runs first. :func:`check_request` is the one place this is decided; the CLI's
``plan`` and the MCP server's ``helmdeck.plan`` call it with the planner's budget before planning.

Tokens are counted as :mod:`helmdeck_dspy.io.tokens` counts them (cl100k_base, or 4 characters a
token offline). A request whose UTF-8 size is within the limit is never counted (a token is at
least one byte), so the check costs nothing for ordinary requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from helmdeck_dspy.errors import InputTooLargeError


@dataclass(frozen=True)
class RequestSize:
    """The size of a request's intent and context, in tokens (an upper bound when not counted)."""

    intent_tokens: int
    context_tokens: int
    counted: bool

    @property
    def total(self) -> int:
        return self.intent_tokens + self.context_tokens


def measure(intent: str, context: str | None, limit: int) -> RequestSize:
    """The request's size, counted only when its bytes could exceed ``limit`` tokens."""
    intent_bytes = len(intent.encode("utf-8", "surrogatepass"))
    context_bytes = len(context.encode("utf-8", "surrogatepass")) if context else 0
    if intent_bytes + context_bytes <= limit:
        return RequestSize(intent_bytes, context_bytes, counted=False)
    from helmdeck_dspy.io.tokens import count_tokens

    return RequestSize(count_tokens(intent), count_tokens(context) if context else 0, counted=True)


def check_request(intent: str, context: str | None, *, input_tokens: int, model: str) -> RequestSize:
    """Refuse a request whose intent and context hold more tokens than ``input_tokens``.

    Args:
        intent: The user's request.
        context: Material sent with it (None: none).
        input_tokens: The budget row's ``input_tokens`` (0: the row sets no limit).
        model: The model id, for the message.

    Returns:
        The request's size.

    Raises:
        InputTooLargeError: The request is too large; ``argument`` names ``user_intent`` when the
            intent alone is, else ``context``.
    """
    size = measure(intent, context, input_tokens) if input_tokens else RequestSize(0, 0, counted=False)
    if not input_tokens or size.total <= input_tokens:
        return size
    argument = "user_intent" if size.intent_tokens > input_tokens else "context"
    raise InputTooLargeError(
        f"invalid argument {argument}: the request holds about {size.total} tokens (intent {size.intent_tokens}, "
        f"context {size.context_tokens}), more than the {input_tokens} input tokens the budget of {model} allows; "
        "shorten it or send less context", argument)
