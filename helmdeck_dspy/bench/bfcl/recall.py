"""Catalog-selection recall on BFCL: do the gold tools survive :func:`select_catalog`?

For each question and tier, the catalog (the question's own functions, or with ``pool`` every
function of the loaded categories) is fitted to that tier's byte budget for the question's text,
exactly as the planner does. Two figures per (ranker, tier):

- ``recall_at_n`` — the mean over questions of the share of gold tools kept;
- ``full_plan_recall`` — the share of questions whose gold tools were *all* kept (with a Wilson
  95% interval), since one missing tool already makes the plan impossible.

Both figures are given over all loaded tasks and per category. Tasks without gold tools (the
irrelevance categories, multi_turn turns whose right plan calls nothing) have nothing to recall:
they are counted apart (``n_without_gold``) and left out of the figures.

Each ranker runs on the source it is meant for: ``lexical`` (helmdeck's scorer) on the compacted
entries, as upstream does; ``bm25`` and ``embedding`` on the full entries. Ranking time is
measured per query on a direct ranking call over the full entries (for every ranker, so the
times compare), after one warm-up query so that one-off set-up (loading the embedding model,
embedding a pooled catalog) is reported apart as ``setup_ms``.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, Field

from helmdeck_dspy.budgets import Budget, BudgetTable
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking import RANKERS
from helmdeck_dspy.catalog.select import TOP_N, marked, select_catalog, top_n_for
from helmdeck_dspy.domain import TIERS
from helmdeck_dspy.bench.bfcl.models import BfclQuestion, BfclSet
from helmdeck_dspy.evaluation.stats import wilson

RANK_SOURCE: dict[str, Literal["compacted", "full"]] = {"lexical": "compacted", "bm25": "full", "embedding": "full"}


class TierRecall(BaseModel):
    """Selection recall of one ranker at one tier's budget."""

    recall_at_n: float = Field(description="Mean share of gold tools kept per question.")
    full_plan_recall: float = Field(description="Share of questions with every gold tool kept.")
    full_plan_ci: tuple[float, float] = Field(description="Wilson 95% interval of full_plan_recall.")
    n_questions: int
    top_n: int | None = Field(description="Entries kept by the ranking cut (None: the tier has no byte cap).")
    max_catalog_bytes: int
    budget_row: str = Field(description="The budget row whose cap stands for the tier.")
    mean_kept: float = Field(description="Mean number of catalog entries offered to the model.")
    ranked_share: float = Field(description="Share of questions whose catalog needed the ranking cut.")


class RankerRecall(BaseModel):
    """One ranker's recall per tier, and how long it takes."""

    tiers: dict[str, TierRecall]
    by_category: dict[str, dict[str, TierRecall]] = Field(default_factory=dict, description="category -> tier -> recall.")
    ms_per_query: float = Field(description="Mean milliseconds of one ranking call (after warm-up).")
    ms_per_query_p95: float
    setup_ms: float = Field(description="The warm-up query: model loading and first-time embedding.")
    rank_source: str


class RecallResult(BaseModel):
    """Selection recall of every ranker over the loaded questions."""

    pool: bool
    categories: list[str]
    n_questions: int = Field(description="Tasks with gold tools (the ones recall is measured on).")
    n_without_gold: int = Field(default=0, description="Tasks without gold tools, left out of recall.")
    catalog_entries: int = Field(description="Pooled catalog size (pool), else the mean per question.")
    catalog_bytes: int = Field(description="Pooled catalog bytes (pool), else the mean per question.")
    pool_conflicts: int = Field(default=0, description="Later definitions of a pooled name that differed (dropped).")
    pool_gold_replaced: int = Field(default=0, description="Tasks whose pooled gold definition is another task's version.")
    pool_gold_replaced_by_category: dict[str, int] = Field(default_factory=dict)
    rankers: dict[str, RankerRecall]
    skipped_rankers: dict[str, str] = Field(default_factory=dict)


def tier_budgets(table: BudgetTable) -> dict[str, Budget]:
    """One budget per tier: the tier's most common catalog cap, from the first row that has it."""
    out: dict[str, Budget] = {}
    for tier in TIERS:
        rows = [r for r in table.rows if r.tier == tier]
        if not rows:
            continue
        cap = Counter(r.max_catalog_bytes for r in rows).most_common(1)[0][0]
        row = next(r for r in rows if r.max_catalog_bytes == cap)
        out[tier] = table.lookup(row.match)
    return out


_Row = tuple[float, bool, int, bool]
"""One question at one tier: share of gold tools kept, all kept, entries kept, ranking cut applied."""


def _question_recall(catalog: RoutingGuide, budget: Budget, q: BfclQuestion, ranker: str) -> _Row:
    selected, trim = select_catalog(catalog, budget, q.intent, ranker=ranker, rank_source=RANK_SOURCE.get(ranker, "full"))
    kept = selected.id_set
    gold = q.gold_tools
    hit = sum(1 for t in gold if t in kept)
    return hit / len(gold), hit == len(gold), len(selected.packs) + len(selected.pipelines), marked(trim.dropped, TOP_N)


def _tier_recall(rows: list[_Row], budget: Budget) -> TierRecall:
    n = len(rows)
    fulls = sum(r[1] for r in rows)
    return TierRecall(
        recall_at_n=round(statistics.fmean(r[0] for r in rows), 4) if n else 0.0,
        full_plan_recall=round(fulls / n, 4) if n else 0.0,
        full_plan_ci=tuple(round(x, 4) for x in wilson(fulls, n)),  # type: ignore[arg-type]
        n_questions=n,
        top_n=top_n_for(budget.tier) if budget.max_catalog_bytes > 0 else None,
        max_catalog_bytes=budget.max_catalog_bytes,
        budget_row=budget.matched,
        mean_kept=round(statistics.fmean(r[2] for r in rows), 2) if n else 0.0,
        ranked_share=round(sum(r[3] for r in rows) / n, 4) if n else 0.0,
    )


def _time_ranking(rank: Callable, questions: tuple[BfclQuestion, ...], catalogs: list[RoutingGuide]) -> tuple[list[float], float]:
    """Per-query ranking times (ms) and the warm-up query's time."""
    timings: list[float] = []
    setup_ms = 0.0
    for i, (q, cat) in enumerate(zip(questions, catalogs)):
        t0 = time.perf_counter()
        rank(cat, q.intent)
        elapsed = (time.perf_counter() - t0) * 1000
        if i == 0:
            setup_ms = elapsed
            t0 = time.perf_counter()
            rank(cat, q.intent)
            elapsed = (time.perf_counter() - t0) * 1000
        timings.append(elapsed)
    return timings, setup_ms


def measure_recall(
    data: BfclSet,
    budgets: dict[str, Budget],
    rankers: Iterable[str],
    *,
    pool: bool,
    progress: Callable[[int], None] | None = None,
) -> RecallResult:
    """Selection recall per ranker per tier, overall and per category.

    Args:
        data: The loaded questions.
        budgets: tier -> budget (see :func:`tier_budgets`).
        rankers: Names from :data:`~helmdeck_dspy.catalog.ranking.RANKERS`.
        pool: One catalog of all loaded functions instead of each question's own.
        progress: Called with the number of questions just finished (for progress bars).
    """
    questions = data.questions
    pool_extra: dict = {}
    if pool:
        pooled, stats = data.pooling
        catalogs = [pooled] * len(questions)
        entries, size = len(pooled.packs), pooled.size_bytes()
        pool_extra = {"pool_conflicts": stats.conflicts, "pool_gold_replaced": stats.gold_replaced,
                      "pool_gold_replaced_by_category": stats.gold_replaced_by_category}
    else:
        catalogs = [q.catalog for q in questions]
        entries = round(statistics.fmean(len(c.packs) for c in catalogs)) if catalogs else 0
        size = round(statistics.fmean(c.size_bytes() for c in catalogs)) if catalogs else 0
    scored = [(q, cat) for q, cat in zip(questions, catalogs) if q.gold_tools]
    results: dict[str, RankerRecall] = {}
    for name in rankers:
        timings, setup_ms = _time_ranking(RANKERS[name], questions, catalogs)
        tiers: dict[str, TierRecall] = {}
        by_category: dict[str, dict[str, TierRecall]] = {}
        for tier, budget in budgets.items():
            rows: dict[str, list[_Row]] = {}
            for q, cat in scored:
                rows.setdefault(q.category, []).append(_question_recall(cat, budget, q, name))
                if progress is not None:
                    progress(1)
            if progress is not None and len(questions) > len(scored):
                progress(len(questions) - len(scored))
            tiers[tier] = _tier_recall([r for group in rows.values() for r in group], budget)
            for category, group in rows.items():
                by_category.setdefault(category, {})[tier] = _tier_recall(group, budget)
        results[name] = RankerRecall(
            tiers=tiers,
            by_category=by_category,
            ms_per_query=round(statistics.fmean(timings), 3) if timings else 0.0,
            ms_per_query_p95=round(_p95(timings), 3),
            setup_ms=round(setup_ms, 1),
            rank_source=RANK_SOURCE.get(name, "full"),
        )
    return RecallResult(
        pool=pool, categories=data.categories, n_questions=len(scored), n_without_gold=len(questions) - len(scored),
        catalog_entries=entries, catalog_bytes=size, rankers=results, **pool_extra,
    )


def _p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
