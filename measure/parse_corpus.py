"""A labelled, deterministic corpus of planning completions for the parser benchmark.

Each record: ``content``, ``finish_reason``, ``reasoning_content``, the ``kind`` of shape, and the
truth: ``expect_plan`` (the plan dict a correct parser returns) or ``expect_cause`` (why none).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

TOOLS = [
    "helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate", "content.ground",
    "slides.outline", "slides.render", "web.scrape", "research.deep", "podcast.generate", "doc.parse",
]
PIPELINES = ["builtin.brief-rewrite-blog", "builtin.doc-rewrite-blog", "builtin.repo-presentation"]
WORDS = "save the launch notes then draft a post for engineers and render an illustration of it".split()

KINDS = ("clean", "fenced", "think", "prose", "truncated", "reasoning_only", "empty", "no_json", "not_plan")


@dataclass(frozen=True)
class Record:
    kind: str
    content: str
    finish_reason: str | None
    reasoning_content: str | None
    expect_plan: dict[str, Any] | None
    expect_cause: str | None


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _plan(rng: random.Random) -> dict[str, Any]:
    steps = []
    for i in range(rng.randint(1, 4)):
        if rng.random() < 0.25:
            tool, args = "helmdeck__pipeline-run", {"id": rng.choice(PIPELINES), "inputs": {"brief": _sentence(rng, 5)}}
        else:
            tool, args = rng.choice(TOOLS), {"text": _sentence(rng, rng.randint(2, 8))} if rng.random() < 0.6 else {}
        steps.append({"order": i + 1, "tool": tool, "args": args, "rationale": _sentence(rng, 8)})
    complexity = "single-action" if len(steps) == 1 else "pack-chain"
    return {"steps": steps, "complexity": complexity, "reasoning": _sentence(rng, 12)}


def make_record(rng: random.Random, kind: str) -> Record:
    plan = _plan(rng)
    text = json.dumps(plan, indent=rng.choice([None, 2]))
    if kind == "clean":
        return Record(kind, text, "stop", None, plan, None)
    if kind == "fenced":
        return Record(kind, f"```json\n{text}\n```", "stop", None, plan, None)
    if kind == "think":
        decoy = json.dumps({"steps": [{"order": 1, "tool": "draft.only", "args": {}}]})
        thought = f"<think>{_sentence(rng, 30)} Maybe {decoy}? {_sentence(rng, 20)}</think>\n"
        return Record(kind, thought + text, "stop", None, plan, None)
    if kind == "prose":
        return Record(kind, f"Here is the plan you asked for:\n{text}\nLet me know if you want changes.", "stop", None, plan, None)
    if kind == "truncated":
        cut = rng.randint(len(text) // 3, len(text) - 2)
        return Record(kind, text[:cut], "length", None, None, "length_truncated")
    if kind == "reasoning_only":
        return Record(kind, f"<think>{_sentence(rng, 60)} {text[:40]}", "length", None, None, "length_truncated")
    if kind == "empty":
        return Record(kind, "", "stop", _sentence(rng, 40), None, "reasoning_only")
    if kind == "no_json":
        return Record(kind, _sentence(rng, 25), "stop", None, None, "no_json")
    if kind == "not_plan":
        return Record(kind, json.dumps({"answer": _sentence(rng, 6), "tools": TOOLS[:3]}), "stop", None, None, "schema_mismatch")
    raise ValueError(kind)


def make_corpus(n: int = 12_000, seed: int = 7) -> list[Record]:
    """``n`` records, kinds in equal shares, shuffled deterministically."""
    rng = random.Random(seed)
    records = [make_record(rng, KINDS[i % len(KINDS)]) for i in range(n)]
    rng.shuffle(records)
    return records
