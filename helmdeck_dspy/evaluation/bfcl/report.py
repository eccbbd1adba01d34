"""The ``bench bfcl`` report: one JSON document and its Markdown rendering."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from helmdeck_dspy.domain import TIERS
from helmdeck_dspy.evaluation.bfcl.plans import PlanAccuracy
from helmdeck_dspy.evaluation.bfcl.recall import RecallResult
from helmdeck_dspy.io.atomic import atomic_write_text


class BfclReport(RecallResult):
    """Selection recall per ranker and tier, plus plan accuracy when plans were made or scored."""

    data: str = Field(description="The BFCL data directory.")
    files: dict[str, tuple[str, str]] = Field(default_factory=dict, description="category -> (questions, answers)")
    plan_accuracy: list[PlanAccuracy] = Field(default_factory=list)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def recall_table(report: RecallResult) -> list[str]:
    """Markdown rows: one per ranker, recall@N and full-plan recall per tier, ms per query."""
    tiers = [t for t in TIERS if any(t in r.tiers for r in report.rankers.values())]
    head = ["ranker", "source"] + [f"{t}: recall@N / full" for t in tiers] + ["ms/query", "set-up ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in report.rankers.items():
        cells = [name, r.rank_source]
        for t in tiers:
            tr = r.tiers.get(t)
            cells.append("-" if tr is None else f"{_pct(tr.recall_at_n)} / {_pct(tr.full_plan_recall)}")
        cells += [f"{r.ms_per_query:.2f}", f"{r.setup_ms:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_markdown(report: BfclReport) -> str:
    """The report as Markdown: scope, recall per ranker and tier, and plan accuracy when measured."""
    out = ["# BFCL benchmark", ""]
    scope = "one pooled catalog" if report.pool else "each question's own functions"
    out.append(
        f"{report.n_questions} questions from {', '.join(report.categories)}; catalog: {scope} "
        f"({report.catalog_entries} tools, {report.catalog_bytes:,} bytes"
        + (" on average" if not report.pool else "") + ")."
    )
    if report.pool_conflicts:
        out.append(f"{report.pool_conflicts} later definitions of an already pooled function name differed and were dropped.")
    out += ["", "## Catalog-selection recall", ""]
    if report.rankers:
        first = next(iter(report.rankers.values()))
        caps = ", ".join(
            f"{t}: {tr.max_catalog_bytes:,} bytes" + (f", top {tr.top_n}" if tr.top_n else " (no cap)")
            + f" ({tr.budget_row})"
            for t, tr in first.tiers.items()
        )
        out += [
            f"Budgets: {caps}. recall@N is the mean share of a question's gold tools that survive selection; "
            "full is the share of questions whose gold tools all survive.",
            "",
            *recall_table(report),
            "",
            "Wilson 95% intervals of full-plan recall:",
            "",
        ]
        for name, r in report.rankers.items():
            spans = ", ".join(f"{t} [{tr.full_plan_ci[0]:.3f}, {tr.full_plan_ci[1]:.3f}]" for t, tr in r.tiers.items())
            out.append(f"- {name}: {spans}; ranked (cut) on {_pct(max(tr.ranked_share for tr in r.tiers.values()))} of questions")
    for name, why in report.skipped_rankers.items():
        out.append(f"- {name}: not run ({why})")
    if report.plan_accuracy:
        out += ["", "## Plan accuracy", "",
                "| source | model | variant | n | exact | call recall | call precision | name recall | failures |",
                "|---|---|---|---|---|---|---|---|---|"]
        for a in report.plan_accuracy:
            s = a.summary
            fails = ", ".join(f"{k} {v}" for k, v in sorted(a.failures.items())) or "-"
            out.append(
                f"| {a.source} | {a.model or '-'} | {a.variant} | {s.n} | {_pct(s.exact_rate)} | {_pct(s.call_recall)} "
                f"| {_pct(s.call_precision)} | {_pct(s.name_recall)} | {fails} |"
            )
    return "\n".join(out) + "\n"


def write_report(report: BfclReport, out_dir: str | Path) -> list[Path]:
    """Write report.json and report.md into ``out_dir`` (each atomically)."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / "report.json", d / "report.md"]
    atomic_write_text(paths[0], report.model_dump_json(indent=2) + "\n")
    atomic_write_text(paths[1], render_markdown(report))
    return paths
