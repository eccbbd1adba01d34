"""Bounds: time and peak memory on oversized and hostile input, one fresh process per case.

Cases: a 10 MB plan and 10 MB of prose or garbage through ``parse_completion``; JSON nested
10,000 levels deep (it must fail with a cause, not raise); a 5,000-tool catalog through
``parse_catalog`` and ``select_catalog`` at a Tier C and a Tier B budget; a 1,000,000-record
trace set through ``evaluate()`` on one and two workers. Inputs are built before the clock
starts; "peak MB" is the case process's peak RSS (ru_maxrss, input included), plus its worker
processes' peak when it has any. ``--quick`` runs the same cases at about a tenth of the size.

    .venv/bin/python measure/bounds.py [--quick] [--json]

Exit status: 1 when a case did not end as expected (a crash, or a success where a failure with
a cause was expected), else 0.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MB = 1024 * 1024
TIER_C = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
TIER_B = "openrouter/deepseek/deepseek-v3.2"

# Each case runs this in a fresh interpreter: build the input, time the operation, report.
CHILD = r'''
import json, random, resource, string, sys, time
sys.path.insert(0, sys.argv[4])
kind, size, workdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
from helmdeck_dspy.io.offline import apply_offline_defaults
apply_offline_defaults()

def plan_text(n_bytes):
    step = {"tool": "blog.write", "args": {"topic": "launch " * 20, "n": 0}, "rationale": "because " * 10}
    per = len(json.dumps(step)) + 2
    steps = [dict(step, args={"topic": "launch " * 20, "n": i}) for i in range(n_bytes // per + 1)]
    return json.dumps({"complexity": "multi", "reasoning": "many steps", "steps": steps})

def parse_case(text, finish="stop"):
    from helmdeck_dspy.decoding.parsing import parse_completion
    t0 = time.perf_counter()
    r = parse_completion(text, finish)
    secs = time.perf_counter() - t0
    what = r.outcome if r.ok else f"failed/{r.cause}"
    extra = [n for n in r.notes if n in ("too_deep", "internal_error", "prose", "fenced")]
    steps = f", {len(r.plan.steps):,} steps" if r.plan else ""
    return secs, what + steps + (f" [{','.join(extra)}]" if extra else ""), r

result = {}
if kind == "parse_plan":
    secs, outcome, r = parse_case(plan_text(size))
    result = {"ok": r.outcome == "strict" and "internal_error" not in r.notes}
elif kind == "parse_prose":
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ".split()
    rng = random.Random(0)
    text = " ".join(rng.choice(words) for _ in range(size // 6))[:size]
    secs, outcome, r = parse_case(text)
    result = {"ok": r.cause == "no_json"}
elif kind == "parse_garbage":
    rng = random.Random(0)
    text = "".join(rng.choices(string.printable, k=size))
    secs, outcome, r = parse_case(text)
    result = {"ok": not r.ok and "internal_error" not in r.notes}
elif kind == "parse_braces":
    text = '{"steps": [{"tool": "a", "args": {"x": "' * (size // 40)
    secs, outcome, r = parse_case(text)
    result = {"ok": not r.ok and "internal_error" not in r.notes}
elif kind in ("parse_deep_array", "parse_deep_object", "parse_deep_in_plan", "parse_deep_broken"):
    opener, closer = ("[", "]") if kind == "parse_deep_array" else ('{"k":', "}")
    deep = opener * size + "1" + closer * size
    if kind == "parse_deep_in_plan":
        deep = '{"steps": [{"tool": "a", "rationale": "", "args": {"x": ' + "[" * size + "]" * size + "}}]}"
    elif kind == "parse_deep_broken":  # the repair route
        deep = '{"steps": [{"tool": "a", "args": {"x": "\\u12", "y": ' + "[" * size + ', "rationale": "'
    try:
        secs, outcome, r = parse_case(deep)
        result = {"ok": r.cause == "constrained_deadlock" and "too_deep" in r.notes}
    except RecursionError as exc:
        secs, outcome, result = 0.0, f"RecursionError: {exc}", {"ok": False}
elif kind == "catalog_parse":
    from tests.strategies import synthetic_catalog
    from helmdeck_dspy.catalog.models import parse_catalog
    data = synthetic_catalog(size, size // 100)
    t0 = time.perf_counter()
    guide = parse_catalog(data)
    n_bytes = guide.size_bytes()
    secs = time.perf_counter() - t0
    outcome = f"{len(guide.ids()):,} entries, {n_bytes / 1e6:.2f} MB rendered"
    result = {"ok": len(guide.packs) == size}
elif kind.startswith("catalog_select"):
    from tests.strategies import synthetic_catalog
    from helmdeck_dspy.budgets import budget_for
    from helmdeck_dspy.catalog.models import parse_catalog
    from helmdeck_dspy.catalog.select import select_catalog
    _, _, tier, ranker = kind.split("_")
    budget = budget_for(sys.argv[5] if tier == "C" else sys.argv[6])
    guide = parse_catalog(synthetic_catalog(size, size // 100))
    guide.size_bytes()  # rendered once at load, as a planner's catalog is
    intent = "write a blog post about the launch, store it in memory and make an image"
    t0 = time.perf_counter()
    selected, trim = select_catalog(guide, budget, intent, ranker=ranker, rank_source="full" if ranker == "bm25" else "compacted")
    after = selected.size_bytes()
    secs = time.perf_counter() - t0
    outcome = f"{len(selected.ids())} kept, {after:,} B <= {budget.max_catalog_bytes:,} B cap"
    result = {"ok": 0 < after <= budget.max_catalog_bytes}
elif kind.startswith("eval"):
    from helmdeck_dspy.evaluation.runner import evaluate
    workers = int(kind[-1])
    t0 = time.perf_counter()
    rep = evaluate([f"{workdir}/traces.jsonl"], workers=workers, progress=False)
    secs = time.perf_counter() - t0
    outcome = f"{rep.n_records:,} records, {rep.n_records / secs:,.0f}/s"
    result = {"ok": rep.n_records == size}
else:
    raise SystemExit(f"unknown case {kind}")

peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
workers_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
result.update(seconds=secs, peak_mb=peak, workers_peak_mb=workers_peak, outcome=outcome)
print(json.dumps(result))
'''

CONTENTS = [
    ('{"steps":[{"tool":"blog.write","args":{"topic":"launch"},"rationale":"write it"}],"complexity":"single-action"}', "stop"),
    ('<think>plan</think>\n```json\n{"steps":[{"tool":"image.generate","args":{},"rationale":"r"}]}\n```', "stop"),
    ('{"steps":[{"tool":"blog.write","args":{"topic":', "length"),
    ("I cannot help with that.", "stop"),
    ("", "stop"),
]
MODELS = [TIER_C, "anthropic/claude-sonnet-4-6", TIER_B]


def write_jsonl_traces(path: Path, n: int) -> None:
    """``n`` small trace records cycling through a few completion shapes (strict, fenced with
    reasoning, truncated, prose, empty) and three models."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            content, finish = CONTENTS[i % len(CONTENTS)]
            out.write(json.dumps({
                "id": f"r{i}", "source": "bench", "model": MODELS[i % 3],
                "prompt_variant": "single_pick" if i % 2 else "full_steps",
                "content": content, "finish_reason": finish, "completion_tokens": 40 + i % 500, "max_tokens": 1500,
            }) + "\n")


def cases(quick: bool) -> list[tuple[str, str, int]]:
    """(case, size label, size argument)."""
    big = 1 * MB if quick else 10 * MB
    tools = 500 if quick else 5_000
    records = 50_000 if quick else 1_000_000
    label = f"{big // MB} MB"
    return [
        ("parse_plan", label, big),
        ("parse_prose", label, big),
        ("parse_garbage", label, big),
        ("parse_braces", label, big),
        ("parse_deep_array", "10,000 deep", 10_000),
        ("parse_deep_object", "10,000 deep", 10_000),
        ("parse_deep_in_plan", "10,000 deep", 10_000),
        ("parse_deep_broken", "10,000 deep", 10_000),
        ("catalog_parse", f"{tools:,} tools", tools),
        ("catalog_select_C_lexical", f"{tools:,} tools", tools),
        ("catalog_select_C_bm25", f"{tools:,} tools", tools),
        ("catalog_select_B_lexical", f"{tools:,} tools", tools),
        ("catalog_select_B_bm25", f"{tools:,} tools", tools),
        ("eval_workers_1", f"{records:,} records", records),
        ("eval_workers_2", f"{records:,} records", records),
    ]


DESCRIPTIONS = {
    "parse_plan": "parse: valid plan JSON",
    "parse_prose": "parse: prose",
    "parse_garbage": "parse: random printable bytes",
    "parse_braces": "parse: unclosed objects and strings",
    "parse_deep_array": "parse: nested arrays",
    "parse_deep_object": "parse: nested objects",
    "parse_deep_in_plan": "parse: plan with nested args",
    "parse_deep_broken": "parse: broken plan, nested (repair route)",
    "catalog_parse": "catalog: parse_catalog + render",
    "catalog_select_C_lexical": "select: Tier C, lexical",
    "catalog_select_C_bm25": "select: Tier C, bm25 (full)",
    "catalog_select_B_lexical": "select: Tier B, lexical",
    "catalog_select_B_bm25": "select: Tier B, bm25 (full)",
    "eval_workers_1": "eval: 1 worker",
    "eval_workers_2": "eval: 2 workers",
}


def run_case(kind: str, size: int, workdir: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(size), str(workdir), str(ROOT), TIER_C, TIER_B],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "seconds": float("nan"), "peak_mb": float("nan"), "workers_peak_mb": 0.0,
                "outcome": f"crashed: {last[:100]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="about a tenth of the sizes (1 MB, 500 tools, 50k records)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="helmdeck-bounds-") as tmp:
        workdir = Path(tmp)
        plan = cases(args.quick)
        n_records = next(size for kind, _, size in plan if kind.startswith("eval"))
        t0 = time.perf_counter()
        write_jsonl_traces(workdir / "traces.jsonl", n_records)
        if not args.json:
            size_mb = (workdir / "traces.jsonl").stat().st_size / MB
            print(f"(wrote {n_records:,} trace records, {size_mb:.0f} MB, in {time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr, flush=True)
        for kind, label, size in plan:
            res = run_case(kind, size, workdir)
            row = {"case": DESCRIPTIONS[kind], "id": kind, "size": label, **res}
            rows.append(row)
            if not args.json:
                print(f"  {row['case']} ({label}): {row['seconds']:.2f} s, {row['outcome']}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'case':<42} {'size':>18} {'seconds':>8} {'peak MB':>8}  outcome")
        for r in rows:
            peak = f"{r['peak_mb']:.0f}" + (f"+{r['workers_peak_mb']:.0f}" if r["workers_peak_mb"] > 1 else "")
            flag = "" if r["ok"] else "  <-- UNEXPECTED"
            print(f"{r['case']:<42} {r['size']:>18} {r['seconds']:>8.2f} {peak:>8}  {r['outcome']}{flag}")
        print("\npeak MB: the case process's peak RSS, input included (+ the largest worker's peak, with workers)")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
