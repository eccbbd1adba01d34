"""How long the local models' answers are, per answer strategy, and what stopping at the answer's end
changes: the evidence for the budget rows' ``answer_caps`` (issue 54, item 0).

Reads every live plan record committed under ``experiments/`` (each distinct answer once: the same
prompt answered at temperature 0 recurs across lever files), groups them by model and strategy
(``plain`` and the model alone answer a JSON list of calls; ``schema`` a plan object under a grammar)
and prints, per group:

- the finished answers' lengths in completion tokens (median, p99, max) and the answers that ran to
  their cap (``finish_reason: length``);
- the cap by the rule written before it was applied: **twice the p99 of finished answers, rounded up
  to a multiple of 64**, and how many finished answers it would have cut;
- the replay of :class:`~helmdeck_dspy.decoding.answer_end.AnswerEnd` over each finished answer: the
  answer cut where its list (or object) closes, decoded again, and compared with the full answer's
  plan (same steps, or which way it changed). A replay over recorded text, not a live run.

Run: ``.venv/bin/python measure/answer_lengths.py [experiments]``
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

from helmdeck_dspy.decoding.answer_end import answer_end
from helmdeck_dspy.decoding.call_list import parse_call_list
from helmdeck_dspy.decoding.parsing import parse_completion

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"plain": "list", "alone": "list", "schema": "object"}


def cap_rule(lengths: list[int]) -> int:
    """Twice the p99 of finished answers' lengths, rounded up to a multiple of 64."""
    ordered = sorted(lengths)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return 64 * math.ceil(2 * p99 / 64)


def group_of(record: dict) -> str | None:
    if record.get("prompt_variant") == "plain":
        return "alone"
    strategy = ((record.get("run") or {}).get("prompt") or {}).get("strategy")
    return strategy if strategy in KINDS else None


def steps(content: str, finish: str | None, kind: str) -> tuple | None:
    parse = parse_call_list(content, finish) if kind == "list" else parse_completion(content, finish)
    if parse.plan is None:
        return None
    return tuple((s.tool, json.dumps(s.args, sort_keys=True)) for s in parse.plan.steps)


def main(root: Path) -> None:
    seen: set[tuple] = set()
    finished: dict[tuple, list[int]] = defaultdict(list)
    capped: Counter = Counter()
    changes: dict[tuple, Counter] = defaultdict(Counter)
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("source") != "live" or record.get("call") != "plan" or not isinstance(record, dict):
                continue
            group = group_of(record)
            content = record.get("content")
            if group is None or content is None:
                continue
            key = (record.get("model"), group)
            if (key, content, record.get("finish_reason")) in seen:
                continue
            seen.add((key, content, record.get("finish_reason")))
            if record.get("finish_reason") == "length":
                capped[key] += 1
            if record.get("finish_reason") != "stop" or not record.get("completion_tokens"):
                continue
            finished[key].append(record["completion_tokens"])
            kind = KINDS[group]
            end = answer_end(content, kind)  # type: ignore[arg-type]
            if end is None or not content[end:].strip():
                changes[key]["nothing after the answer"] += 1
                continue
            before, after = steps(content, "stop", kind), steps(content[:end], "stop", kind)
            if before == after:
                changes[key]["cut, same plan"] += 1
            elif before is None:
                changes[key]["cut, now a plan (was none)"] += 1
            elif after is None:
                changes[key]["cut, now no plan (was one)"] += 1
            else:
                changes[key]["cut, other steps"] += 1
    print("Distinct live plan answers under experiments/, per model and strategy (replayed, not live).\n")
    for key in sorted(finished, key=str):
        lengths = sorted(finished[key])
        n = len(lengths)
        cap = cap_rule(lengths)
        over = sum(1 for x in lengths if x > cap)
        p99 = lengths[min(n - 1, math.ceil(0.99 * n) - 1)]
        print(f"{key[0]}  {key[1]}: {n} finished, median {lengths[n // 2]}, p99 {p99}, max {lengths[-1]} tokens; "
              f"{capped[key]} ran to their cap")
        print(f"  cap by the rule (2 x p99, up to a multiple of 64): {cap}; finished answers over it: {over}")
        print("  stopped where the answer closes: " + ", ".join(f"{k} {v}" for k, v in sorted(changes[key].items())))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "experiments")
