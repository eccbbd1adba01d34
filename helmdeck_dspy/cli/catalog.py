"""``helmdeck-dspy catalog``: fit the tool catalog to a model's budget for an intent."""

from __future__ import annotations

import click

from helmdeck_dspy.cli.options import (
    budgets_option,
    emit_json,
    json_option,
    rank_source_option,
    ranker_option,
)


@click.group()
def catalog() -> None:
    """The tool catalog and budget-fitted selection from it."""


@catalog.command("select")
@click.argument("catalog_path", required=False, type=click.Path(dir_okay=False, exists=True))
@click.option("--model", "-m", required=True, help="Model id; its budget decides the cap and the tier.")
@click.option("--intent", "-i", default="", help="The user's request, for ranking.")
@ranker_option
@rank_source_option
@budgets_option
@json_option('Print {"catalog": ..., "trim": ...}.')
def catalog_select(
    catalog_path: str | None, model: str, intent: str, ranker: str, rank_source: str,
    budgets_path: str | None, as_json: bool,
) -> None:
    """Fit CATALOG (default: the bundled one) to MODEL's budget for an intent."""
    from helmdeck_dspy.budgets import budget_for, load_budget_table
    from helmdeck_dspy.catalog import load_catalog, select_catalog

    budget = budget_for(model, load_budget_table(budgets_path))
    guide = load_catalog(catalog_path)
    selected, trim = select_catalog(guide, budget, intent, ranker=ranker, rank_source=rank_source)  # type: ignore[arg-type]
    if as_json:
        emit_json({"model": budget.model, "tier": budget.tier, "catalog": selected.to_wire(), "trim": trim.model_dump()})
        return
    click.echo(f"model {budget.model}: tier {budget.tier}, cap {budget.max_catalog_bytes or 'none'} bytes")
    click.echo(f"bytes {trim.before_bytes} -> {trim.after_bytes}")
    click.echo(f"dropped {', '.join(trim.dropped) or '-'}")
    if not trim.dropped:
        click.echo(f"kept the whole catalog: {len(selected.packs)} packs, {len(selected.pipelines)} pipelines")
        return
    click.echo(f"kept {len(selected.packs)} packs, {len(selected.pipelines)} pipelines:")
    for p in selected.packs:
        click.echo(f"  pack      {p.name}")
    for p in selected.pipelines:
        click.echo(f"  pipeline  {p.id}")
