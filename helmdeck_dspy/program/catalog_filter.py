"""The two-pass LLM filter: when lexical ranking is not confident, ask a small call which
catalog entries matter, and merge its picks with the lexical survivors.

Fires only for budgets that allow it and a selection marked ``<ranker>.low_confidence``. Any
failure (call error, unparseable answer, no known ids) leaves the lexical selection in place.
Beyond helmdeck, the merged selection is compacted again to the budget's cap, so the filter
cannot push the prompt back over it.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.compact import Trim, compact_catalog, first_sentence
from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.select import FILTERED, LOW_CONFIDENCE, marked, restrict_catalog
from helmdeck_dspy.decoding.reasoning import strip_reasoning
from helmdeck_dspy.program.calls import completion_from_response, log_completion
from helmdeck_dspy.program.sections import (
    FILTER_OPENING,
    FILTER_REQUEST_HEADER,
    FILTER_TOOLS_HEADER,
)

log = logging.getLogger(__name__)

FILTER_MAX_TOKENS = 600
MIN_PICKS, MAX_PICKS = 3, 12

FILTER_SYSTEM = FILTER_OPENING + f""" You get a list of tool ids, each with
a one-line summary, and a user request. Reply with ONLY this JSON object:
{{"ids": ["<id>", "..."]}}
Include every id that could plausibly help with the request and leave out the clearly unrelated
ones. Return between {MIN_PICKS} and {MAX_PICKS} ids: if fewer are relevant, add the closest
helpers; if more, keep the {MAX_PICKS} most useful. Copy ids exactly; never invent one. No prose,
no code fences."""


def filter_user_message(catalog: RoutingGuide, intent: str) -> str:
    """The filter call's user message, built from the full (uncompacted) catalog."""
    lines = [FILTER_TOOLS_HEADER]
    entries: tuple[Pack | Pipeline, ...] = (*catalog.packs, *catalog.pipelines)
    for entry in entries:
        summary = first_sentence(entry.description)
        lines.append(f"- {entry.entry_id} — {summary}" if summary else f"- {entry.entry_id}")
    lines += ["", FILTER_REQUEST_HEADER, intent.strip(), "", "Reply with the JSON object now."]
    return "\n".join(lines)


def parse_filter_ids(text: str | None) -> list[str]:
    """Ids from a filter answer: the first JSON object with an ``ids`` list; [] on any failure."""
    if not text:
        return []
    body = strip_reasoning(text)
    if "```" in body:
        start = body.find("```")
        nl = body.find("\n", start)
        end = body.find("```", nl + 1) if nl != -1 else -1
        if nl != -1:
            body = body[nl + 1 : end if end != -1 else len(body)]
    decoder = json.JSONDecoder()
    pos = body.find("{")
    while pos != -1:
        try:
            value, end = decoder.raw_decode(body, pos)
        except ValueError:
            pos = body.find("{", pos + 1)
            continue
        if isinstance(value, dict) and isinstance(value.get("ids"), list):
            ids = [i.strip() for i in value["ids"] if isinstance(i, str) and i.strip()]
            return list(dict.fromkeys(ids))
        pos = body.find("{", end)
    return []


def merge_keep_order(first: list[str], second: list[str]) -> list[str]:
    """``first`` then the items of ``second`` not already present."""
    return list(dict.fromkeys([*first, *second]))


def should_filter(budget: Budget, trim: Trim) -> bool:
    return budget.allows_llm_filter and marked(trim.dropped, LOW_CONFIDENCE)


def apply_filter(
    lm: Any,
    full: RoutingGuide,
    selected: RoutingGuide,
    trim: Trim,
    budget: Budget,
    intent: str,
    sampling: dict[str, Any] | None = None,
) -> tuple[RoutingGuide, Trim]:
    """Run the filter call with ``lm`` (sending ``sampling``: temperature and seed) and merge; on any
    failure return the lexical selection."""
    from dspy.lm15 import Config, Message, Request

    try:
        user = filter_user_message(full, intent)
        request = Request(
            model=lm.model, system=FILTER_SYSTEM, messages=(Message.user(user),),
            config=Config(max_tokens=FILTER_MAX_TOKENS, **(sampling or {})),
        )
        t0 = time.perf_counter()
        response = lm(request)
        completion = completion_from_response(
            "filter", response, FILTER_SYSTEM, [{"role": "user", "content": user}],
            (time.perf_counter() - t0) * 1000, {"max_tokens": FILTER_MAX_TOKENS, **(sampling or {})},
        )
        log_completion(completion)
        text = completion.content
    except Exception as exc:  # noqa: BLE001 - the filter is best-effort by design
        log.warning("filter call failed, keeping the lexical selection: %s", exc)
        return selected, trim
    known = full.id_set
    picks = [i for i in parse_filter_ids(text) if i in known]
    if not picks:
        log.warning("filter answer had no known ids, keeping the lexical selection")
        return selected, trim
    keep = merge_keep_order(picks, sorted(selected.ids()))
    merged = restrict_catalog(full, [i for i in full.ids() if i in set(keep)])
    compacted, again = compact_catalog(merged, budget)
    dropped = [*trim.dropped, f"{FILTERED}(picks={len(picks)},kept={len(keep)})"]
    dropped += [d for d in again.dropped if d not in dropped]
    return compacted, Trim(before_bytes=trim.before_bytes, after_bytes=compacted.size_bytes(), dropped=dropped)
