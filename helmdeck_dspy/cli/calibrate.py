"""``helmdeck-dspy calibrate``: propose budget-table changes from an eval report, and apply them."""

from __future__ import annotations

from typing import Any

import click

from helmdeck_dspy.cli.options import (
    budgets_option,
    emit_json,
    json_option,
    print_table,
)


@click.command("calibrate")
@click.option("--report", "report_path", required=True, type=click.Path(dir_okay=False, exists=True),
              help="report.json written by `eval --out`.")
@click.option("--min-n", type=click.IntRange(1), default=None, help="Records a model needs per variant (default: eval/calibration.toml).")
@click.option("--apply", "do_apply", is_flag=True, help="Rewrite the budget table with the proposals.")
@budgets_option
@json_option('Print {"proposals": [...], "insufficient": [...]}.')
def calibrate_cmd(report_path: str, min_n: int | None, do_apply: bool, budgets_path: str | None, as_json: bool) -> None:
    """Propose budget-table changes from an evaluation report (and --apply them)."""
    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.calibration.calibrate import (
        apply_calibration,
        calibrate,
        load_report,
    )

    report = load_report(report_path)
    table = load_budget_table(budgets_path)
    cal = calibrate(report, table, min_n=min_n)
    if as_json:
        emit_json(cal.model_dump(mode="json"))
    else:
        if cal.proposals:
            print_table(
                ["model", "field", "current", "proposed", "evidence"],
                [[p.model, p.field, p.current if p.current != "" else '""', p.proposed, _evidence_text(p.evidence)]
                 for p in cal.proposals],
            )
        else:
            click.echo("no changes proposed")
        for m in cal.unchanged:
            click.echo(f"unchanged: {m} (enough data, nothing to change)")
        for i in cal.insufficient:
            click.echo(f"insufficient data: {i.model} (full_steps n={i.n_full_steps}, single_pick n={i.n_single_pick}; "
                       f"needs {cal.min_n})")
    if do_apply:
        touched = apply_calibration(cal, budgets_path or table.path)
        click.echo(f"updated {len(touched)} model row(s) in {budgets_path or table.path}", err=as_json)


def _evidence_text(e: dict[str, Any]) -> str:
    """One proposal's evidence as a short ``;``-separated phrase for the table."""
    parts = []
    if "n" in e:
        parts.append(f"n={e['n']}")
    if "strict_rate" in e:
        lo, hi = e["strict_ci"]
        parts.append(f"strict {100 * e['strict_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
    if e.get("plan_score") is not None:
        parts.append(f"plan score {e['plan_score']:.2f}")
    if "length_rate" in e:
        lo, hi = e["length_ci"]
        parts.append(f"cut at {e['cap_seen']}: {100 * e['length_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
    if e.get("clean_p95") is not None:
        parts.append(f"clean p95 {e['clean_p95']:.0f} tok")
    if "method" in e:
        parts.append(e["method"])
    if "diff_single_minus_full" in e:
        lo, hi = e["diff_ci"]
        parts.append(f"single-full {100 * e['diff_single_minus_full']:+.1f} pts [{100 * lo:.1f}, {100 * hi:.1f}]")
    if "share" in e:
        parts.append(f"reasoning in {100 * e['share']:.0f}%")
    if "diff" in e:
        parts.append(f"cut-offs rise with prompt size: {100 * e['diff']:+.1f} pts")
    return "; ".join(parts)
