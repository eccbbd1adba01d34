"""Did an engine change answers? Compares two trace files of the same requests, answer by answer.

Each record is keyed by its task (its id, else its request) and its place among that task's plan calls (a first answer, then a
recheck). An answer of the second file is counted as:

- **same**: the same content;
- **same up to its end**: the second was stopped where its JSON closed, and the first has exactly that
  text followed by more (a closing fence, prose): the streaming engine's cut, nothing else changed;
- **shorter cap**: the first ran on past the second's output cap, which cut it (both end ``length``
  or the second does);
- **different**: anything else, printed with both answers' openings.

Run: ``.venv/bin/python measure/engine_answers.py BEFORE.jsonl AFTER.jsonl``
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path


def plan_answers(path: Path) -> dict[tuple[str, int], dict]:
    """Live plan records with an answer, keyed by (task id, its plan call's place in the task)."""
    seen: dict[str, int] = defaultdict(int)
    out: dict[tuple[str, int], dict] = {}
    for line in path.open(encoding="utf-8"):
        record = json.loads(line)
        task = record.get("task_id") or record.get("intent")  # end-to-end traces name the request only
        if record.get("call", "plan") != "plan" or record.get("content") is None or not task:
            continue
        out[(task, seen[task])] = record
        seen[task] += 1
    return out


def verdict(before: dict, after: dict) -> str:
    old, new = before["content"], after["content"]
    if old == new:
        return "same"
    if after.get("answer_cut") and old.startswith(new) and before.get("finish_reason") == "stop":
        return "same up to its end"
    if after.get("finish_reason") == "length" and old.startswith(new):
        return "shorter cap"
    return "different"


def main(before_path: Path, after_path: Path) -> None:
    before, after = plan_answers(before_path), plan_answers(after_path)
    counts: dict[str, Counter] = {"first answers": Counter(), "later answers": Counter()}
    for key in sorted(set(before) & set(after), key=str):
        v = verdict(before[key], after[key])
        counts["first answers" if key[1] == 0 else "later answers"][v] += 1
        if v == "different":
            print(f"  {key[0][:70]} #{key[1]}:\n    before {before[key]['content'][:100]!r}\n"
                  f"    after  {after[key]['content'][:100]!r}")
    print(f"{before_path} -> {after_path}")
    for group, c in counts.items():  # a later answer's prompt holds earlier results, which may differ
        print(f"  {group}: {sum(c.values())} compared" + "".join(f"; {k} {v}" for k, v in sorted(c.items())))
    only = len(set(before) ^ set(after))
    if only:
        print(f"  {only} answers in one file only")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
