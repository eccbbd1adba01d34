"""The ``decide`` answer strategy: the model makes each decision, the grammar shapes only what it writes.

One conversation in the model-alone framing (the tools as JSON functions, then the question), asked
turn by turn, each answer decoded under a small schema:

1. whether a function should be called at all: ``"yes"`` or ``"no"`` (a two-way choice);
2. which function: its name, one of the offered names;
3. its arguments: one JSON object under that function's argument schema;
4. whether another call is needed, with the question and the calls made restated: ``"yes"`` or
   ``"no"``; on ``"yes"``, back to 2.

The decision to call and the number of calls are the model's own answers to a yes/no question;
nothing constrains them but the two words. This is the order llama-cpp-python's
``chatml-function-calling`` handler decides in (a choice between a message and the tool names,
then the arguments under the chosen tool's grammar, then whether another call follows), over the
planner's catalog and prompt. Each turn extends the same conversation, so a prefix cache
evaluates only the new turn.

The calls made are assembled into a JSON list of calls, the ``plain`` strategy's answer format,
and go through the same checks. Every model turn is logged as a ``decide`` exchange; the
assembled list is the request's ``plan`` exchange (its tokens and latency the turns' sums).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from helmdeck_dspy.program.answer_schema import argument_schema

FIT_ASK = ('Answer with only "yes" if one of the functions should be called to answer the question, '
           'or "no" if none of them fits.')
FIRST_NAME_ASK = "Which function is called first? Answer with only its name."
NEXT_NAME_ASK = "Which function is called next? Answer with only its name."
ARGS_ASK = "Give the arguments of {name} for this call as one JSON object."
MORE_ASK = ('Question: {intent}\nCalls made so far: {calls}\nAnswer with only "yes" if the question asks for '
            'something these calls do not do yet, or "no" if they answer it.')
"""Restates the question beside the calls made, so the check is against what was asked (written
before any live run: a first probe with the 0.5B and a bare "another call?" said yes 8 times in a
row, calling tools in catalog order)."""
MAX_CALLS = 8
"""Most calls one request is asked for (as the schema strategy's step cap)."""
CHOICE_TOKENS = 24
"""The output cap of a yes/no or name turn (a name is a few tokens; the grammar ends it)."""

YES_NO: dict[str, Any] = {"type": "string", "enum": ["yes", "no"]}

Send = Callable[[list[dict[str, str]], dict[str, Any], int | None], str]
"""``send(messages, schema, max_tokens)``: one turn asked of the model, its text back."""


def functions_of(functions_json: str) -> dict[str, dict[str, Any]]:
    """The offered functions by name (the ``plain`` catalog text: a JSON list of functions)."""
    listed = json.loads(functions_json) if functions_json.strip() else []
    return {f["name"]: f.get("parameters") or {} for f in listed if isinstance(f, dict) and f.get("name")}


def arguments_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """A function's arguments as one JSON object under what a grammar can enforce of its schema."""
    schema = argument_schema(parameters)
    return schema if schema.get("type") == "object" else {"type": "object"}


def _value(text: str) -> Any:
    """A turn's answer as JSON (a grammar-decoded answer always is; a bare word is kept as text)."""
    try:
        return json.loads(text)
    except ValueError:
        return text.strip().strip('"')


def decide_calls(send: Send, first_message: str, intent: str, functions: dict[str, dict[str, Any]],
                 max_calls: int = MAX_CALLS) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Ask the turns (see the module docstring) and return the calls made and the whole conversation.

    Args:
        send: Asks one turn of the model.
        first_message: The opening user message: the functions, the question, and :data:`FIT_ASK`.
        intent: The question (restated in :data:`MORE_ASK`).
        functions: The offered functions' argument schemas by name.
        max_calls: Most calls asked for.
    """
    messages = [{"role": "user", "content": first_message}]
    names = list(functions)

    def ask(text: str | None, schema: dict[str, Any], cap: int | None) -> Any:
        if text is not None:
            messages.append({"role": "user", "content": text})
        reply = send(list(messages), schema, cap)
        messages.append({"role": "assistant", "content": reply})
        return _value(reply)

    calls: list[dict[str, Any]] = []
    if not names or ask(None, YES_NO, CHOICE_TOKENS) != "yes":
        return calls, messages
    while len(calls) < max_calls:
        name = ask(FIRST_NAME_ASK if not calls else NEXT_NAME_ASK, {"type": "string", "enum": names}, CHOICE_TOKENS)
        if name not in functions:  # an answer cut short: no call made of it
            break
        args = ask(ARGS_ASK.format(name=name), arguments_schema(functions[name]), None)
        calls.append({"name": name, "arguments": args if isinstance(args, dict) else {}})
        more = MORE_ASK.format(intent=intent.strip(), calls=json.dumps(calls, ensure_ascii=False))
        if len(calls) >= max_calls or ask(more, YES_NO, CHOICE_TOKENS) != "yes":
            break
    return calls, messages
