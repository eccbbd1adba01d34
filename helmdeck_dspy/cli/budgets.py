"""``helmdeck-dspy budgets``: show the per-model budget table and look models up in it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from helmdeck_dspy.budgets import Budget, BudgetFields
from helmdeck_dspy.cli.options import (
    budgets_option,
    emit_json,
    json_option,
    model_id,
    print_table,
)


@click.group()
def budgets() -> None:
    """The per-model budget table (compiled/budgets.toml)."""


def _flags(b: BudgetFields) -> str:
    """The FHSP column: one letter per capability the row has, ``.`` where it has not."""
    marks = [
        ("F", b.allows_llm_filter),
        ("H", b.is_hybrid_reasoning),
        ("S", b.wants_strict_json),
        ("P", b.supports_prefix_cache),
    ]
    return "".join(m if on else "." for m, on in marks)


@budgets.command("show")
@budgets_option
@json_option("Print the table as JSON.")
def budgets_show(budgets_path: str | None, as_json: bool) -> None:
    """Print every row of the budget table and the fallback."""
    from helmdeck_dspy.budgets import load_budget_table, resolve_prompt_variant

    table = load_budget_table(budgets_path)
    if as_json:
        emit_json({
            "path": table.path,
            "fallback": table.fallback.model_dump(),
            "rows": [r.model_dump() for r in table.rows],
        })
        return
    rows = []
    for r in [*table.rows, None]:
        b = r if r is not None else table.fallback
        rows.append([
            r.match if r is not None else "(fallback)",
            b.tier,
            resolve_prompt_variant(b.tier, b.prompt_variant) + ("*" if b.prompt_variant else ""),
            b.input_tokens,
            b.output_tokens,
            b.max_catalog_bytes,
            _flags(b),
            f"{b.cached_input_cost_usd_per_mtok:g}",
        ])
    print_table(["match", "tier", "variant", "in_tok", "out_tok", "cat_bytes", "FHSP", "cost/Mtok"], rows)
    click.echo(f"\n{len(table.rows)} rows from {table.path}")
    click.echo("FHSP: llm Filter, Hybrid reasoning, Strict json, Prefix cache; * = explicit variant")


def _lookup_row(b: Budget) -> dict:
    """One model's budget as printed: model, tier and resolved variant first, then every field."""
    data = b.model_dump()
    data["prompt_variant_explicit"] = data.pop("prompt_variant")
    return {"model": b.model, "tier": b.tier, "prompt_variant": b.resolved_prompt_variant, **data}


@budgets.command("lookup")
@click.argument("models", nargs=-1, required=True, callback=model_id)
@budgets_option
@json_option("Print one JSON object (a list for several models).")
def budgets_lookup(models: tuple[str, ...], budgets_path: str | None, as_json: bool) -> None:
    """Resolve each MODEL to its budget (exact id, longest prefix, or fallback)."""
    from helmdeck_dspy.budgets import budget_for, load_budget_table

    table = load_budget_table(budgets_path)
    found = [_lookup_row(budget_for(model, table)) for model in models]
    if as_json:
        emit_json(found[0] if len(found) == 1 else found)
    elif len(found) == 1:
        row = found[0]
        for key, value in row.items():
            if value is not None and key != "decided_by":
                click.echo(f"{key:32} {value}")
        for field, folders in row["decided_by"].items():  # each study-chosen field and its evidence
            click.echo(f"{'decided_by ' + field:32} {', '.join(folders)}")
    else:
        print_table(
            ["model", "tier", "variant", "out_tok", "cat_bytes", "matched"],
            [[d["model"], d["tier"], d["prompt_variant"], d["output_tokens"], d["max_catalog_bytes"], d["matched"]]
             for d in found],
        )
