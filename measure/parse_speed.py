"""Parser benchmark: helmdeck_dspy.parse_completion vs dspy.JSONAdapter().parse vs json.loads.

Runs the three on the same labelled corpus (measure/parse_corpus.py) in one process and prints
throughput, ratios and how many records each classifies correctly. A record is classified
correctly when the parser returns exactly the expected plan for a record that holds one, and
returns no plan for a record that holds none (truncated, reasoning only, empty, prose, not a plan).

    .venv/bin/python measure/parse_speed.py [--n 12000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helmdeck_dspy.signatures.types import PlanStep  # noqa: E402
from parse_corpus import KINDS, make_corpus  # noqa: E402

from helmdeck_dspy.decoding.parsing import parse_completion  # noqa: E402
from helmdeck_dspy.io.offline import apply_offline_defaults  # noqa: E402


def norm_steps(steps) -> list[dict] | None:
    try:
        return [PlanStep.model_validate(s if isinstance(s, dict) else s.model_dump()).model_dump() for s in steps]
    except Exception:  # noqa: BLE001 - a wrong shape is simply a wrong answer
        return None


# Each runner returns the parser's raw answer; `steps_of` turns it into comparable steps after
# the timed loop, so every parser is timed on its own work only.


def run_ours(rec):
    return parse_completion(rec.content, rec.finish_reason, rec.reasoning_content)


def steps_ours(result):
    return ([s.model_dump() for s in result.plan.steps] if result.ok else None), result.cause


def make_dspy():
    import dspy

    class Plan(dspy.Signature):
        """Plan tool calls."""

        user_intent: str = dspy.InputField()
        steps: list[PlanStep] = dspy.OutputField()

    adapter = dspy.JSONAdapter()

    def run(rec):
        # The adapter sees only the text: it has no finish_reason and no reasoning field.
        try:
            return adapter.parse(Plan, rec.content)
        except Exception:  # noqa: BLE001 - AdapterParseError and anything json_repair raises
            return None

    return run


def steps_dspy(fields):
    return (norm_steps(fields["steps"]) if fields is not None else None), None


def run_json_loads(rec):
    try:
        return json.loads(rec.content)
    except ValueError:
        return None


def steps_json_loads(value):
    if isinstance(value, dict) and isinstance(value.get("steps"), list):
        return norm_steps(value["steps"]), None
    return None, None


def measure(fn, corpus, repeat):
    """Best wall time of ``repeat`` passes. Results are not kept during the timed pass (as in a
    streaming evaluation), so a parser that allocates more is not also charged for the garbage
    collector walking every earlier result."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for r in corpus:
            fn(r)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=12_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    apply_offline_defaults()

    corpus = make_corpus(args.n)
    clean = [r for r in corpus if r.kind == "clean"]
    expected = [norm_steps(r.expect_plan["steps"]) if r.expect_plan else None for r in corpus]
    parsers = {
        "helmdeck_dspy": (run_ours, steps_ours),
        "dspy.JSONAdapter": (make_dspy(), steps_dspy),
        "json.loads": (run_json_loads, steps_json_loads),
    }

    print(f"corpus: {len(corpus)} records, kinds: {dict(Counter(r.kind for r in corpus))}")
    results = {}
    for name, (fn, to_steps) in parsers.items():
        secs = measure(fn, corpus, args.repeat if name != "dspy.JSONAdapter" else 1)
        clean_secs = measure(fn, clean, args.repeat)
        outs = [to_steps(fn(r)) for r in corpus]
        correct = Counter()
        for rec, exp, (got, _cause) in zip(corpus, expected, outs):
            correct[rec.kind] += got == exp
        results[name] = (secs, clean_secs, correct, outs)

    base = results["helmdeck_dspy"]
    per_kind = Counter(r.kind for r in corpus)
    print(f"\n{'parser':18} {'us/record':>10} {'records/s':>10} {'clean us':>9} {'correct':>15}")
    for name, (secs, clean_secs, correct, _) in results.items():
        total = sum(correct.values())
        print(
            f"{name:18} {secs / len(corpus) * 1e6:10.1f} {len(corpus) / secs:10.0f} "
            f"{clean_secs / len(clean) * 1e6:9.2f} {total:7d}/{len(corpus)} ({total / len(corpus):.1%})"
        )
    print("\nratios (measured in this run):")
    for name in ("dspy.JSONAdapter", "json.loads"):
        secs, clean_secs, *_ = results[name]
        print(f"  helmdeck_dspy vs {name:16}: {secs / base[0]:6.2f}x throughput on the mixed corpus, "
              f"clean records take {base[1] / clean_secs:5.2f}x its time")

    print("\ncorrect per kind:")
    print(f"  {'kind':15}" + "".join(f"{n:>18}" for n in results))
    for kind in KINDS:
        print(f"  {kind:15}" + "".join(f"{results[n][2][kind]:>11}/{per_kind[kind]:<6}" for n in results))

    causes = Counter()
    for rec, (_got, cause) in zip(corpus, base[3]):
        if rec.expect_cause is not None:
            causes["right" if cause == rec.expect_cause else f"wrong:{rec.kind}->{cause}"] += 1
    print(f"\nhelmdeck_dspy failure causes on records with no plan: {dict(causes)}")

    plan = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {}, "rationale": "r"}],
                       "complexity": "single-action", "more_steps_likely": False, "reasoning": "r"})
    filler = "lorem ipsum dolor sit amet " * 40000
    for label, text in (("a plan inside 2 MB of prose", filler + plan + filler), ("1 MB of '{'", "{" * 1_000_000)):
        t0 = time.perf_counter()
        parse_completion(text, "stop")
        big = time.perf_counter() - t0
        t0 = time.perf_counter()
        json.loads(plan)
        print(f"{label}: {big * 1000:.0f} ms (json.loads of the bare plan: {(time.perf_counter() - t0) * 1e6:.0f} us)")


if __name__ == "__main__":
    main()
