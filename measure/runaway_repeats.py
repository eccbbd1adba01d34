"""What the repeat stop (``decoding.answer_end.REPEAT_STOP``) does to the answers already recorded:
the evidence for stopping a list answer that writes the same call a third time (issue 54, item 0).

Reads every answer committed under ``experiments/`` (any JSON line, or any object inside one, that
holds ``content`` and ``finish_reason``: plan trace records, and the answers kept in end-to-end and
multi-turn study results; the model and task the line names), each distinct (content, finish reason) once, and feeds each one to
:class:`~helmdeck_dspy.decoding.answer_end.AnswerEnd` as a list answer. Per model it prints:

- answers that ran to their cap (``length``) that the stop would have ended sooner, and how much of
  each was written before the stop (their outcome is the same: a cut answer either way);
- answers that finished by themselves on which the stop fires (these would become cut answers),
  each named with its file, task and calls, so that the change is seen one by one.

A replay over recorded text, not a live run: at temperature 0 the tokens before the stop are the
ones the model wrote, so the stopped answer is the recorded one up to there.

Run: ``.venv/bin/python measure/runaway_repeats.py [experiments] > experiments/runaway-repeats.txt``
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median

from helmdeck_dspy.bench.study.report import answers_in
from helmdeck_dspy.decoding.answer_end import REPEAT_STOP, AnswerEnd
from helmdeck_dspy.decoding.call_list import decode_calls

ROOT = Path(__file__).resolve().parents[1]


def main(root: Path) -> None:
    seen: set[tuple[str, str | None]] = set()
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"finished": 0, "capped": 0})
    stopped_capped: dict[str, list[tuple[float, int | None]]] = defaultdict(list)
    stopped_finished: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if not isinstance(value, dict):
                continue
            model, task = str(value.get("model") or "?"), str(value.get("task_id") or "?")
            for answer in answers_in(value):
                content, finish = answer["content"], answer["finish_reason"]
                if (content, finish) in seen or finish not in ("stop", "length"):
                    continue
                seen.add((content, finish))
                totals[model]["capped" if finish == "length" else "finished"] += 1
                scan = AnswerEnd("list")
                end = scan.feed(content)
                if not scan.runaway or end is None:
                    continue
                if finish == "length":
                    tokens = answer.get("completion_tokens")
                    stopped_capped[model].append((end / len(content), tokens if isinstance(tokens, int) else None))
                else:
                    calls, _ = decode_calls(content)
                    names = [name for name, _ in calls or []]
                    stopped_finished[model].append(f"{path.relative_to(root)} {task}: {len(names)} calls {names[:8]}")
    print(f"The repeat stop (the {REPEAT_STOP}rd writing of one call ends a list answer as cut), replayed over "
          f"{len(seen)} distinct answers under experiments/ (recorded text, not a live run).\n")
    for model in sorted(totals):
        t, capped, finished = totals[model], stopped_capped[model], stopped_finished[model]
        print(f"{model}: {t['finished']} finished, {t['capped']} ran to the cap")
        if capped:
            shares = [s for s, _ in capped]
            saved = [round(n * (1 - s)) for s, n in capped if n]
            print(f"  ran to the cap, stopped sooner: {len(capped)} of {t['capped']}; share written before the stop: "
                  f"median {median(shares):.2f}, range {min(shares):.2f}-{max(shares):.2f}"
                  + (f"; about {sum(saved)} tokens not generated over the {len(saved)} with a token count" if saved else ""))
        print(f"  finished, now cut: {len(finished)} of {t['finished']}")
        for line in finished:
            print(f"    {line}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "experiments")
