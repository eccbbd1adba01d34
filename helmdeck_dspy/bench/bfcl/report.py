"""The ``bench bfcl`` report: one JSON document and its Markdown rendering."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from helmdeck_dspy.domain import TIERS
from helmdeck_dspy.bench.bfcl.models import CategoryNote
from helmdeck_dspy.bench.bfcl.plans import PlanAccuracy
from helmdeck_dspy.bench.bfcl.recall import RecallResult, TierRecall
from helmdeck_dspy.bench.bfcl.score import AccuracySummary
from helmdeck_dspy.io.atomic import atomic_write_text


class BfclReport(RecallResult):
    """Selection recall per ranker and tier, plus plan accuracy when plans were made or scored."""

    data: str = Field(description="The BFCL data directory.")
    files: dict[str, tuple[str, str]] = Field(default_factory=dict, description="category -> (questions, answers or '')")
    notes: list[CategoryNote] = Field(default_factory=list, description="Every category seen and how it went.")
    plan_accuracy: list[PlanAccuracy] = Field(default_factory=list)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _tiers(report: RecallResult) -> list[str]:
    return [t for t in TIERS if any(t in r.tiers for r in report.rankers.values())]


def _cell(tr: TierRecall | None) -> str:
    return "-" if tr is None or not tr.n_questions else f"{_pct(tr.recall_at_n)} / {_pct(tr.full_plan_recall)}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def recall_table(report: RecallResult) -> list[str]:
    """Markdown rows: one per ranker, recall@N and full-plan recall per tier, ms per query."""
    tiers = _tiers(report)
    head = ["ranker", "source"] + [f"{t}: recall@N / full" for t in tiers] + ["ms/query", "set-up ms"]
    lines = [_row(head), "|" + "---|" * len(head)]
    for name, r in report.rankers.items():
        cells = [name, r.rank_source, *(_cell(r.tiers.get(t)) for t in tiers), f"{r.ms_per_query:.2f}", f"{r.setup_ms:.0f}"]
        lines.append(_row(cells))
    return lines


def category_table(report: RecallResult) -> list[str]:
    """Markdown rows: one per category and ranker, recall@N / full per tier."""
    tiers = _tiers(report)
    head = ["category", "tasks", "ranker"] + [f"{t}: recall@N / full" for t in tiers]
    lines = [_row(head), "|" + "---|" * len(head)]
    categories = list(dict.fromkeys(c for r in report.rankers.values() for c in r.by_category))
    for category in categories:
        for name, r in report.rankers.items():
            by_tier = r.by_category.get(category, {})
            n = max((tr.n_questions for tr in by_tier.values()), default=0)
            lines.append(_row([category, str(n), name, *(_cell(by_tier.get(t)) for t in tiers)]))
    return lines


def notes_lines(notes: list[CategoryNote]) -> list[str]:
    """One line per category: what was loaded, or why not."""
    out = []
    for n in notes:
        if n.status == "loaded":
            turns = f" ({n.tasks} turn tasks)" if n.kind == "multi_turn" else ""
            out.append(f"- {n.category}: {n.questions} questions{turns}, {n.kind}")
        else:
            out.append(f"- {n.category}: not loaded ({n.status.replace('_', ' ')}): {n.detail}")
    return out


def _accuracy_row(source: str, a: PlanAccuracy, s: AccuracySummary, fails: str) -> str:
    irrelevance = f"{s.abstained}/{s.no_call_n} ({_pct(s.irrelevance_rate)})" if s.no_call_n else "-"
    relevance = f"{s.any_called}/{s.any_call_n}" if s.any_call_n else "-"
    n_gold = s.n - s.no_call_n - s.any_call_n
    silent = f"{s.abstained_with_gold}/{n_gold}" if n_gold else "-"
    return _row([source, a.model or "-", a.variant, str(s.n), _pct(s.exact_rate), _pct(s.call_recall),
                 _pct(s.call_precision), _pct(s.name_recall), irrelevance, silent, relevance, fails])


def accuracy_lines(accuracy: list[PlanAccuracy]) -> list[str]:
    """The plan-accuracy table: one row per run or trace file, then one per category of each."""
    head = ["source", "model", "variant", "n", "exact", "call recall", "call precision", "name recall",
            "called nothing (no-call tasks)", "called nothing (gold-call tasks)", "called (any-call tasks)", "failures"]
    out = [_row(head), "|" + "---|" * len(head)]
    for a in accuracy:
        fails = ", ".join(f"{k} {v}" for k, v in sorted(a.failures.items())) or "-"
        out.append(_accuracy_row(a.source, a, a.summary, fails))
        if len(a.by_category) > 1:
            out += [_accuracy_row(f"  {c}", a, s, "") for c, s in a.by_category.items()]
    return out


def render_markdown(report: BfclReport) -> str:
    """The report as Markdown: scope, recall per ranker and tier (overall and per category), plans."""
    out = ["# BFCL benchmark", ""]
    scope = "one pooled catalog" if report.pool else "each task's own functions"
    out.append(
        f"{report.n_questions} tasks with gold tools from {', '.join(report.categories)}"
        + (f" ({report.n_without_gold} more without: no call is right)" if report.n_without_gold else "")
        + f"; catalog: {scope} ({report.catalog_entries} tools, {report.catalog_bytes:,} bytes"
        + (" on average" if not report.pool else "") + ")."
    )
    if report.pool:
        out.append(
            f"Pooling keeps the first definition of each name: {report.pool_conflicts} later definitions differed and "
            f"were dropped; {report.pool_gold_replaced} tasks' gold functions are another task's version"
            + (" (" + ", ".join(f"{c} {n}" for c, n in report.pool_gold_replaced_by_category.items()) + ")."
               if report.pool_gold_replaced else ".")
        )
    if report.notes:
        out += ["", "## Categories", "", *notes_lines(report.notes)]
    out += ["", "## Catalog-selection recall", ""]
    if report.rankers:
        first = next(iter(report.rankers.values()))
        caps = ", ".join(
            f"{t}: {tr.max_catalog_bytes:,} bytes" + (f", top {tr.top_n}" if tr.top_n else " (no cap)")
            + f" ({tr.budget_row})"
            for t, tr in first.tiers.items()
        )
        out += [
            (f"Budgets: {caps}. recall@N is the mean share of a task's gold tools that survive selection; "
             "full is the share of tasks whose gold tools all survive."),
            "",
            *recall_table(report),
            "",
            "Per category:",
            "",
            *category_table(report),
            "",
            "Wilson 95% intervals of full-plan recall:",
            "",
        ]
        for name, r in report.rankers.items():
            spans = ", ".join(f"{t} [{tr.full_plan_ci[0]:.3f}, {tr.full_plan_ci[1]:.3f}]" for t, tr in r.tiers.items())
            out.append(f"- {name}: {spans}; ranked (cut) on {_pct(max(tr.ranked_share for tr in r.tiers.values()))} of tasks")
    for name, why in report.skipped_rankers.items():
        out.append(f"- {name}: not run ({why})")
    if report.plan_accuracy:
        out += ["", "## Plan accuracy", "", *accuracy_lines(report.plan_accuracy)]
    return "\n".join(out) + "\n"


def write_report(report: BfclReport, out_dir: str | Path) -> list[Path]:
    """Write report.json and report.md into ``out_dir`` (each atomically)."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / "report.json", d / "report.md"]
    atomic_write_text(paths[0], report.model_dump_json(indent=2) + "\n")
    atomic_write_text(paths[1], render_markdown(report))
    return paths
