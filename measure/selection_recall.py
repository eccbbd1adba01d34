"""Catalog selection on the gold tasks: does the selected catalog still contain the tools the
gold plan needs? No LM is called.

Two tables:

1. **Per tier and cut** (the numbers in docs/results/selection.md), on both gold sets: the bundled
   helmdeck catalog with its gold tasks (every split), and the catalog imported from four real MCP
   servers with its gold tasks (eval/catalog/mcp-servers.json, eval/tasks/mcp-servers.jsonl). Each
   tier's budget is the tier's most common budget row (as ``bench bfcl`` picks it). Cuts:
   ``top-N`` is helmdeck's fixed cut (25 on tier B, 12 otherwise, argument schemas as JSON Schema
   without descriptions); ``fill`` keeps every further entry that fits the byte cap, still with
   JSON Schema; ``fill+sig`` (the default) also shows argument schemas as signature lines.
   ``bm25-nosyn`` is BM25 without query expansion.
2. **Ranker configurations** on the helmdeck dev+test tasks at the default cut: helmdeck's
   baseline (lexical ranking of the compacted catalog), the full entries, BM25, plan history as a
   ranking prior (built from the train split's gold plans) and, with the ``embed`` extra, sentence
   embeddings.

With ``--bfcl DIR``, BFCL pooled recall (every function of the folder's categories in one catalog)
per tier for the same cuts. Gap tasks (no gold tools) are left out everywhere.

    .venv/bin/python measure/selection_recall.py [--bfcl ../shared/data/bfcl] [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from helmdeck_dspy.bench.bfcl.recall import tier_budgets
from helmdeck_dspy.budgets import Budget, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.catalog.ranking import RANKERS, rank_bm25
from helmdeck_dspy.catalog.ranking import embedding as embed
from helmdeck_dspy.catalog.select import select_catalog, top_n_for
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.tasks import load_tasks

RANKERS.setdefault("bm25-nosyn", functools.partial(rank_bm25, synonyms=False))
RANK_SOURCE = {"lexical": "compacted"}  # helmdeck's scorer ranks the compacted entries; the others the full ones
CUTS = ("top-N", "fill", "fill+sig")
TIER_RANKERS = ("bm25", "bm25-nosyn", "lexical")
CONFIGS = [
    ("lexical", "compacted", False),  # helmdeck's behaviour: the baseline
    ("lexical", "full", False),
    ("bm25", "compacted", False),
    ("bm25", "full", False),
    ("lexical", "compacted", True),
    ("bm25", "full", True),
]
if embed.available():  # the optional 'embed' extra
    CONFIGS.append(("embedding", "full", False))


def gold_ids(steps) -> set[str]:
    return {s.args["id"] if s.tool == PIPELINE_RUN_TOOL else s.tool for s in steps}


def with_cut(budget: Budget, cut: str) -> Budget:
    """The budget as a cut asks: helmdeck's fixed top N, or filling the cap (signatures: :func:`recall`)."""
    fixed = top_n_for(budget.tier) if cut == "top-N" else 0
    return budget.model_copy(update={"max_catalog_entries": fixed})


def recall(catalog: RoutingGuide, cases: list[tuple[str, set[str]]], budget: Budget, ranker: str,
           source: str | None = None, priors: list | None = None, signatures: bool = True) -> dict:
    """Full-plan recall (every gold tool kept), mean share kept, entries and bytes offered."""
    full, shares, kept, sizes, times = 0, [], [], [], []
    for i, (intent, want) in enumerate(cases):
        t0 = time.perf_counter()
        selected, trim = select_catalog(catalog, budget, intent, ranker=ranker,
                                        rank_source=source or RANK_SOURCE.get(ranker, "full"),  # type: ignore[arg-type]
                                        prior=priors[i] if priors else None, signatures=signatures)
        times.append(time.perf_counter() - t0)
        got = want & selected.id_set
        full += got == want
        shares.append(len(got) / len(want))
        kept.append(len(selected.ids()))
        sizes.append(trim.after_bytes)
    n = len(cases)
    return {"n": n, "all_gold_kept": full, "full_plan_recall": round(full / n, 4), "mean_recall": round(statistics.mean(shares), 4),
            "mean_kept": round(statistics.mean(kept), 1), "mean_bytes": round(statistics.mean(sizes)),
            "median_ms": round(statistics.median(times) * 1000, 2)}


def gold_sets() -> dict[str, tuple[RoutingGuide, list[tuple[str, set[str]]]]]:
    helmdeck = [t for s in ("train", "dev", "test") for t in load_tasks(s) if t.steps]
    mcp = [t for t in load_tasks(path=bundled_dir() / "tasks" / "mcp-servers.jsonl") if t.steps]
    return {
        "helmdeck": (load_catalog(), [(t.intent, gold_ids(t.steps)) for t in helmdeck]),
        "mcp-servers": (load_catalog(bundled_dir() / "catalog" / "mcp-servers.json"),
                        [(t.intent, gold_ids(t.steps)) for t in mcp]),
    }


def bfcl_set(folder: str) -> tuple[RoutingGuide, list[tuple[str, set[str]]]]:
    from helmdeck_dspy.bench.bfcl.load import load_bfcl

    data = load_bfcl(folder)
    pooled, _ = data.pooling
    return pooled, [(q.intent, set(q.gold_tools)) for q in data.questions if q.gold_tools]


def tier_rows(sets: dict, budgets: dict[str, Budget]) -> list[dict]:
    rows = []
    for name, (catalog, cases) in sets.items():
        for tier, budget in budgets.items():
            for cut in CUTS if budget.max_catalog_bytes > 0 else ("none",):
                for ranker in TIER_RANKERS:
                    b = with_cut(budget, cut) if cut != "none" else budget
                    rows.append({"set": name, "tier": tier, "cap": budget.max_catalog_bytes, "cut": cut,
                                 "ranker": ranker, **recall(catalog, cases, b, ranker, signatures=cut in ("fill+sig", "none"))})
    return rows


def config_rows(budgets: dict[str, Budget]) -> list[dict]:
    catalog = load_catalog()
    train = load_tasks("train")
    tasks = [t for s in ("dev", "test") for t in load_tasks(s) if t.steps]
    cases = [(t.intent, gold_ids(t.steps)) for t in tasks]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        history = HistoryStore(Path(tmp) / "history.sqlite")
        for t in train:
            steps = [GuardedStep(order=i, tool=s.tool, args=s.args) for i, s in enumerate(t.steps, 1)]
            history.record(intent=t.intent, complexity=t.complexity, steps=steps, model="gold", caller="bench")
        priors = [history.prior(t.intent, "bench") for t in tasks]
        if embed.available():  # load the model and embed the catalog once, outside the timings
            select_catalog(catalog, budgets["C"], "warm up", ranker="embedding", rank_source="full")
        for tier in ("B", "C"):
            for ranker, source, use_prior in CONFIGS:
                r = recall(catalog, cases, budgets[tier], ranker, source, priors if use_prior else None)
                rows.append({"tier": tier, "ranker": ranker, "rank_source": source, "history_prior": use_prior, **r})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfcl", metavar="DIR", help="Also measure BFCL pooled recall over this BFCL v4 data folder.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    budgets = tier_budgets(load_budget_table())
    sets = gold_sets()
    if args.bfcl:
        sets["bfcl-pooled"] = bfcl_set(args.bfcl)
    tiers, configs = tier_rows(sets, budgets), config_rows(budgets)
    if args.json:
        json.dump({"tiers": tiers, "configs": configs}, sys.stdout, indent=2)
        return
    print(f"{'set':12} {'tier':4} {'cap':>6} {'cut':8} {'ranker':10} {'all kept':>9} {'recall':>7} {'kept':>6} {'bytes':>7}")
    for r in tiers:
        print(f"{r['set']:12} {r['tier']:4} {r['cap']:6} {r['cut']:8} {r['ranker']:10} "
              f"{r['all_gold_kept']:4}/{r['n']:<4} {r['mean_recall']:7.3f} {r['mean_kept']:6.1f} {r['mean_bytes']:7}")
    print(f"\nhelmdeck dev+test ({configs[0]['n']} tasks with tools), default cut; history from the train split\n")
    print(f"{'tier':4} {'ranker':9} {'ranks':9} {'prior':5} {'all kept':>9} {'recall':>7} {'kept':>6} {'ms':>6}")
    for r in configs:
        print(f"{r['tier']:4} {r['ranker']:9} {r['rank_source']:9} {'yes' if r['history_prior'] else 'no':5} "
              f"{r['full_plan_recall']:9.3f} {r['mean_recall']:7.3f} {r['mean_kept']:6.1f} {r['median_ms']:6.2f}")


if __name__ == "__main__":
    main()
