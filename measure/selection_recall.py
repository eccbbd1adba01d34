"""Catalog selection on the gold tasks: does the selected catalog still contain the tools the
gold plan needs? Compares helmdeck's baseline (lexical ranking of the compacted catalog) with
ranking the full entries, BM25, plan history as a ranking prior and, when the ``embed`` extra is
installed, sentence embeddings.

History is built from the train split's gold plans (as if those requests had been planned
before); selection is measured on dev + test. Gap tasks (no gold tools) are left out.

    .venv/bin/python measure/selection_recall.py [--splits dev,test] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from helmdeck_dspy.budgets import budget_for
from helmdeck_dspy.catalog.ranking import embedding as embed
from helmdeck_dspy.catalog.ranking import load_catalog, select_catalog
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.tasks import load_tasks

MODELS = {"C": "openrouter/nvidia/nemotron-3-super-120b-a12b:free", "B": "openrouter/deepseek/deepseek-v3.2"}
CONFIGS = [
    ("lexical", "compacted", False),  # helmdeck's behaviour: the baseline
    ("lexical", "full", False),
    ("bm25", "compacted", False),
    ("bm25", "full", False),
    ("lexical", "compacted", True),
    ("lexical", "full", True),
    ("bm25", "full", True),
]
if embed.available():  # the optional 'embed' extra
    CONFIGS.append(("embedding", "full", False))


def gold_ids(task) -> set[str]:
    return {s.args["id"] if s.tool == PIPELINE_RUN_TOOL else s.tool for s in task.steps}


def build_history(train, root: Path) -> HistoryStore:
    store = HistoryStore(root / "history.sqlite")
    for t in train:
        steps = [GuardedStep(order=i, tool=s.tool, args=s.args) for i, s in enumerate(t.steps, 1)]
        store.record(intent=t.intent, complexity=t.complexity, steps=steps, model="gold", caller="bench")
    return store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", default="dev,test")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    catalog = load_catalog()
    train = load_tasks("train")
    tasks = [t for s in args.splits.split(",") for t in load_tasks(s) if t.steps]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        history = build_history(train, Path(tmp))
        priors = {t.id: history.prior(t.intent, "bench") for t in tasks}
        if embed.available():  # load the model and embed the catalog once, outside the timings
            select_catalog(catalog, budget_for(MODELS["C"]), "warm up", ranker="embedding", rank_source="full")
        for tier, model in MODELS.items():
            budget = budget_for(model)
            for ranker, source, use_prior in CONFIGS:
                recalls, full, sizes, times = [], 0, [], []
                for t in tasks:
                    want = gold_ids(t)
                    t0 = time.perf_counter()
                    selected, trim = select_catalog(
                        catalog, budget, t.intent, ranker=ranker, rank_source=source,
                        prior=priors[t.id] if use_prior else None,
                    )
                    times.append(time.perf_counter() - t0)
                    got = want & selected.id_set
                    recalls.append(len(got) / len(want))
                    full += got == want
                    sizes.append(trim.after_bytes)
                rows.append({
                    "tier": tier, "ranker": ranker, "rank_source": source, "history_prior": use_prior,
                    "n": len(tasks), "mean_recall": statistics.mean(recalls), "all_gold_kept": full / len(tasks),
                    "mean_bytes": statistics.mean(sizes), "median_ms": statistics.median(times) * 1000,
                })
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        return
    print(f"gold tasks with tools: {len(tasks)} ({args.splits}); history from {len(train)} train plans\n")
    print(f"{'tier':4} {'ranker':9} {'ranks':9} {'prior':5} {'recall':>7} {'all kept':>9} {'bytes':>7} {'ms':>6}  vs baseline")
    for tier in MODELS:
        base = next(r for r in rows if r["tier"] == tier and (r["ranker"], r["rank_source"], r["history_prior"]) == CONFIGS[0])
        for r in (r for r in rows if r["tier"] == tier):
            print(
                f"{r['tier']:4} {r['ranker']:9} {r['rank_source']:9} {'yes' if r['history_prior'] else 'no':5} "
                f"{r['mean_recall']:7.3f} {r['all_gold_kept']:9.3f} {r['mean_bytes']:7.0f} {r['median_ms']:6.2f}  "
                f"recall x{r['mean_recall'] / base['mean_recall']:.2f}"
            )


if __name__ == "__main__":
    main()
