"""``helmdeck-dspy catalog``: fit the tool catalog to a model's budget for an intent; import one from MCP
servers and tool lists."""

from __future__ import annotations

from typing import Literal

import click

from helmdeck_dspy.cli.options import (
    FiniteFloat,
    budgets_option,
    check_source_options,
    emit_json,
    env_option,
    force_option,
    header_option,
    json_option,
    model_id,
    pairs,
    rank_source_option,
    ranker_option,
    tool_sources,
)
from helmdeck_dspy.domain import MAX_TIMEOUT_S


@click.group()
def catalog() -> None:
    """The tool catalog and budget-fitted selection from it."""


@catalog.command("select")
@click.argument("catalog_path", required=False, type=click.Path(dir_okay=False, exists=True))
@click.option("--model", "-m", callback=model_id, required=True, help="Model id; its budget decides the cap and the tier.")
@click.option("--intent", "-i", default="", help="The user's request, for ranking.")
@ranker_option
@rank_source_option
@budgets_option
@json_option('Print {"catalog": ..., "trim": ...}.')
def catalog_select(
    catalog_path: str | None, model: str, intent: str, ranker: str, rank_source: Literal["compacted", "full"],
    budgets_path: str | None, as_json: bool,
) -> None:
    """Fit CATALOG (default: the bundled one) to MODEL's budget for an intent."""
    from helmdeck_dspy.budgets import budget_for, load_budget_table
    from helmdeck_dspy.catalog import load_catalog, select_catalog

    budget = budget_for(model, load_budget_table(budgets_path))
    guide = load_catalog(catalog_path)
    selected, trim = select_catalog(guide, budget, intent, ranker=ranker, rank_source=rank_source)
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
    for pipe in selected.pipelines:
        click.echo(f"  pipeline  {pipe.id}")


CATALOG_FORMATS = {".json": "json"}
"""What ``catalog import --out`` writes: a routing-guide JSON file."""


@catalog.command("import")
@click.argument("sources", nargs=-1, required=True, callback=tool_sources)
@click.option("--out", "-o", "out", required=True, type=click.Path(dir_okay=False),
              help="The catalog file to write (a routing guide every --catalog option reads).")
@click.option("--prefix", is_flag=True, help="Prefix every tool name with its source's label (git__git_log), "
                                             "not only the names two sources share.")
@header_option
@env_option
@click.option("--timeout", "timeout_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S), default=60.0,
              show_default=True,
              help="Seconds each server may take to start and list its tools.")
@force_option("FILE")
@json_option('Print {"out": ..., "packs": ..., "bytes": ..., "sources": [...]}.')
def catalog_import(
    sources: tuple[str, ...], out: str, prefix: bool, headers: tuple[str, ...], env: tuple[str, ...],
    timeout_s: float, force: bool, as_json: bool,
) -> None:
    """Write a catalog of the tools that SOURCES list.

    A SOURCE is mcp+stdio:'COMMAND ARGS' (a server started over stdio), mcp+http:URL (streamable
    HTTP), or a JSON file holding an MCP tools/list result, an OpenAI tools array or Anthropic
    tools. LABEL=SOURCE names a source; its label prefixes tool names that clash.
    """
    import json

    from helmdeck_dspy.catalog.importing import import_catalog
    from helmdeck_dspy.io.atomic import atomic_write_text
    from helmdeck_dspy.io.outputs import check_output

    header_values, env_values = pairs(headers, ":", "--header"), pairs(env, "=", "--env")
    check_source_options(sources, headers, env)
    check_output(out, formats=CATALOG_FORMATS, force=force)  # before any server starts
    imported = import_catalog(sources, prefix=prefix, headers=header_values, env=env_values, timeout_s=timeout_s)
    guide = imported.catalog
    atomic_write_text(out, json.dumps(guide.to_wire(), indent=2, ensure_ascii=False) + "\n")
    if as_json:
        emit_json({"out": out, "packs": len(guide.packs), "bytes": guide.size_bytes(), "prefixed": imported.prefixed,
                   "sources": [s.model_dump() for s in imported.sources]})
        return
    for s in imported.sources:
        click.echo(f"{s.label}: {s.tools} tools ({s.kind}{', ' + s.shape if s.shape and s.kind == 'file' else ''})")
    click.echo(f"wrote {out}: {len(guide.packs)} packs, {imported.prefixed} prefixed, "
               f"{guide.size_bytes()} bytes rendered")
