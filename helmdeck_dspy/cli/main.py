"""The ``helmdeck-dspy`` command line: a thin layer over the library.

Heavy libraries (dspy, litellm, mlflow, datasets) are imported inside the commands that need
them, so ``--help`` and ``budgets lookup`` start fast. Exit codes: 0 success, 1 error, 2 usage.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

import click

from helmdeck_dspy.errors import HelmdeckError
from helmdeck_dspy.io.offline import apply_offline_defaults


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False))


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """Print a plain left-aligned text table."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="helmdeck-dspy")
def cli() -> None:
    """Tier-aware planning for MCP tool catalogs, compiled with DSPy.

    Budgets per model, tolerant decoding of completions, budget-fitted catalog selection,
    planning, replay evaluation of trace sets and calibration of the budget table.
    """


# ----------------------------------------------------------------------------- budgets


@cli.group()
def budgets() -> None:
    """The per-model budget table (compiled/budgets.toml)."""


_budgets_option = click.option(
    "--budgets", "budgets_path", type=click.Path(dir_okay=False), default=None,
    help="Budget table to read (default: the bundled compiled/budgets.toml).",
)


def _flags(b: Any) -> str:
    marks = [
        ("F", b.allows_llm_filter),
        ("H", b.is_hybrid_reasoning),
        ("S", b.wants_strict_json),
        ("P", b.supports_prefix_cache),
    ]
    return "".join(m if on else "." for m, on in marks)


@budgets.command("show")
@_budgets_option
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
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


@budgets.command("lookup")
@click.argument("models", nargs=-1, required=True)
@_budgets_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a list for several models).")
def budgets_lookup(models: tuple[str, ...], budgets_path: str | None, as_json: bool) -> None:
    """Resolve each MODEL to its budget (exact id, longest prefix, or fallback)."""
    from helmdeck_dspy.budgets import budget_for, load_budget_table

    table = load_budget_table(budgets_path)
    found = []
    for model in models:
        b = budget_for(model, table)
        data = b.model_dump()
        data["prompt_variant_explicit"] = data.pop("prompt_variant")
        found.append({"model": b.model, "tier": b.tier, "prompt_variant": b.resolved_prompt_variant, **data})
    if as_json:
        emit_json(found[0] if len(found) == 1 else found)
    elif len(found) == 1:
        for key, value in found[0].items():
            if value is not None:
                click.echo(f"{key:32} {value}")
    else:
        print_table(
            ["model", "tier", "variant", "out_tok", "cat_bytes", "matched"],
            [[d["model"], d["tier"], d["prompt_variant"], d["output_tokens"], d["max_catalog_bytes"], d["matched"]]
             for d in found],
        )


# ----------------------------------------------------------------------------- parse


@cli.command("parse")
@click.argument("source", required=False, default="-", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--finish-reason", default=None, help="The provider's finish_reason (any spelling).")
@click.option("--reasoning-content", default=None, help="A separate reasoning field, if the provider sent one.")
@click.option(
    "--batch", is_flag=True,
    help="SOURCE is JSONL: one {content, finish_reason?, reasoning_content?, id?} per line; prints a table.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (outcome, cause, value, ...).")
def parse_cmd(source: str, finish_reason: str | None, reasoning_content: str | None, batch: bool, as_json: bool) -> None:
    """Decode a completion from SOURCE (a file, or - for stdin) the way the planner does.

    Exits 0 whether or not a plan came out; the outcome says which.
    """
    from helmdeck_dspy.decoding.parsing import parse_completion

    if batch:
        _parse_batch(source, as_json)
        return
    with click.open_file(source, encoding="utf-8") as handle:
        text = handle.read()
    result = parse_completion(text, finish_reason, reasoning_content)
    if as_json:
        emit_json(result.to_json_dict())
        return
    click.echo(f"outcome        {result.outcome}")
    click.echo(f"cause          {result.cause or '-'}")
    click.echo(f"finish_reason  {result.finish_reason} (raw: {result.finish_reason_raw!r})")
    click.echo(f"reasoning      {'yes' if result.saw_reasoning else 'no'} ({result.reasoning_chars} chars)")
    click.echo(f"notes          {', '.join(result.notes) or '-'}")
    if result.error:
        click.echo(f"error          {result.error}")
    if result.plan is not None:
        click.echo(f"steps          {len(result.plan.steps)}")
        for i, step in enumerate(result.plan.steps, 1):
            click.echo(f"  {i}. {step.tool or '(no tool)'} {json.dumps(step.args, ensure_ascii=False)}")


def _parse_batch(source: str, as_json: bool) -> None:
    from helmdeck_dspy.decoding.parsing import parse_completion
    from helmdeck_dspy.errors import DataFileError
    from helmdeck_dspy.io.jsonl import iter_jsonl

    if source == "-":
        raise click.UsageError("--batch needs a file path")
    rows, out = [], []
    for line_no, rec in iter_jsonl(source):
        content = rec.get("content")
        if content is not None and not isinstance(content, str):
            raise DataFileError(source, f"'content' must be a string, got {type(content).__name__}", line=line_no)
        r = parse_completion(content, rec.get("finish_reason"), rec.get("reasoning_content"))
        label = str(rec.get("id", line_no))
        out.append({"id": label, **r.to_json_dict()})
        steps = [s.tool for s in r.plan.steps] if r.plan is not None else []
        rows.append([label, r.finish_reason_raw or "-", r.outcome, r.cause or "-", ", ".join(r.notes) or "-",
                     " > ".join(steps) or "-"])
    if as_json:
        emit_json(out)
        return
    print_table(["id", "finish", "outcome", "cause", "notes", "steps"], rows)


# ----------------------------------------------------------------------------- catalog


@cli.group()
def catalog() -> None:
    """The tool catalog and budget-fitted selection from it."""


@catalog.command("select")
@click.argument("catalog_path", required=False, type=click.Path(dir_okay=False, exists=True))
@click.option("--model", "-m", required=True, help="Model id; its budget decides the cap and the tier.")
@click.option("--intent", "-i", default="", help="The user's request, for ranking.")
@click.option("--ranker", type=click.Choice(["lexical", "bm25", "embedding"]), default="bm25", show_default=True,
              help="bm25, lexical (helmdeck's scorer) or embedding (needs the 'embed' extra).")
@click.option(
    "--rank-source", type=click.Choice(["compacted", "full"]), default="full", show_default=True,
    help="Rank the full entries, or the compacted ones (helmdeck).",
)
@_budgets_option
@click.option("--json", "as_json", is_flag=True, help='Print {"catalog": ..., "trim": ...}.')
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


# ----------------------------------------------------------------------------- plan


@cli.command("plan")
@click.argument("intent")
@click.option("--model", "-m", required=True, help="Model id to plan for (decides budget, tier and variant).")
@click.option("--lm", "lm_spec", default=None, help="LiteLLM model string, replay:PATH or sim:PROFILE (default: --model).")
@click.option("--api-base", default=None, help="API base URL for an OpenAI-compatible endpoint (vLLM, llama.cpp...).")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False, exists=True), default=None)
@click.option("--context-file", type=click.File("r", encoding="utf-8"), default=None, help="Pasted material for the request.")
@click.option("--record", "record_path", type=click.Path(dir_okay=False), default=None, help="Append the call as a trace record.")
@click.option("--max-tokens", type=int, default=None, help="Override the budget's output_tokens.")
@click.option("--ranker", type=click.Choice(["lexical", "bm25", "embedding"]), default="bm25", show_default=True,
              help="bm25, lexical (helmdeck's scorer) or embedding (needs the 'embed' extra).")
@click.option("--rank-source", type=click.Choice(["compacted", "full"]), default="full", show_default=True)
@click.option("--no-filter", is_flag=True, help="Skip the two-pass LLM filter.")
@click.option("--history/--no-history", default=True, show_default=True, help="Write a plan_history audit row.")
@click.option("--history-prior", is_flag=True, help="Use plan history as a ranking prior in catalog selection.")
@click.option("--fallback", "fallbacks", multiple=True, metavar="MODEL",
              help="Model to try when the previous one times out, errors or is rate limited (repeatable, in order).")
@click.option("--on-length", type=click.Choice(["none", "single_pick", "raise_cap", "single_pick_then_cap"]),
              default=None, help="What to do when the answer hits the token limit (default: none, or the --resilience file's).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds one attempt may take (default 120).")
@click.option("--retries", type=click.IntRange(0, 19), default=None,
              help="Retries per model after a rate limit, 5xx, reset or timeout (default 2).")
@click.option("--resilience", "resilience_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="TOML file with [retry] and [fallback] tables (options above override it).")
@_budgets_option
@click.option("--json", "as_json", is_flag=True, help="Print the PlanResult as JSON.")
def plan_cmd(
    intent: str, model: str, lm_spec: str | None, api_base: str | None, catalog_path: str | None,
    context_file: Any, record_path: str | None, max_tokens: int | None, ranker: str, rank_source: str, no_filter: bool,
    history: bool, history_prior: bool, fallbacks: tuple[str, ...], on_length: str | None, timeout_s: float | None,
    retries: int | None, resilience_path: str | None, budgets_path: str | None, as_json: bool,
) -> None:
    """Plan INTENT for MODEL: select the catalog, call the compiled module, guard the answer."""
    import warnings

    from helmdeck_dspy.planning.history import HistoryStore
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.loop import (
        FallbackChain,
        FallbackModel,
        ResilienceConfig,
        RetryPolicy,
        load_resilience,
    )

    config = load_resilience(resilience_path) if resilience_path else ResilienceConfig()
    retry_over = {"timeout_s": timeout_s, "max_attempts": None if retries is None else retries + 1}
    retry = RetryPolicy.model_validate({**config.retry.model_dump(), **{k: v for k, v in retry_over.items() if v is not None}})
    chain = FallbackChain.model_validate({
        **config.fallback.model_dump(),
        "models": [*config.fallback.models, *(FallbackModel(model=m) for m in fallbacks)],
        **({"on_length": on_length} if on_length else {}),
    })
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planner = Planner.for_model(
            model, lm=lm_spec, catalog=catalog_path, budgets=budgets_path, api_base=api_base,
            ranker=ranker, rank_source=rank_source, use_filter=not no_filter, max_tokens=max_tokens, record_path=record_path,
            history=HistoryStore() if history or history_prior else None, history_prior=history_prior,
            retry=retry, fallback=chain,
        )
        result = planner.plan(intent, context=context_file.read() if context_file else None)
    for w in caught:
        if issubclass(w.category, UserWarning):
            click.echo(f"warning: {w.message}", err=True)
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    click.echo(f"model {result.model}  tier {result.tier}  variant {result.prompt_variant_used}")
    if result.compaction:
        click.echo(f"catalog {result.compaction.before_bytes} -> {result.compaction.after_bytes} bytes "
                   f"({', '.join(result.compaction.dropped)})")
    if len(result.attempts) > 1:
        for i, a in enumerate(result.attempts, 1):
            click.echo(f"attempt {i}: {a.model} {a.variant} -> {a.cause or 'ok'}"
                       + (f" (HTTP {a.http_status})" if a.http_status else "") + f" in {a.elapsed_ms} ms")
    if not result.ok:
        click.echo(f"no plan: {result.failure_cause} ({result.error})")
        raise SystemExit(1)
    if result.answered_by and len(result.attempts) > 1:
        click.echo(f"answered by {result.answered_by} after {len(result.attempts)} attempts")
    click.echo(f"complexity {result.complexity}  parse {result.parse_outcome}"
               + ("  more steps likely" if result.more_steps_likely else ""))
    click.echo(result.rewritten_prompt or "(no steps: nothing in the catalog fits)")
    if result.dropped_steps:
        click.echo(f"({len(result.dropped_steps)} extra step(s) dropped: single_pick returns one)")


# ----------------------------------------------------------------------------- traces


@cli.group()
def traces() -> None:
    """Trace sets: recorded, imported, published or simulated completions."""


_on_error_option = click.option(
    "--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
    help="An invalid record stops the run (fail) or is reported as file:line and skipped.",
)


def _report_to_stderr(err: Exception) -> None:
    click.echo(f"skipped: {err}", err=True)


@traces.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["openai", "llamastack"]))
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "-o", required=True, type=click.Path(), help="Output: .jsonl, .parquet, or a directory (HF dataset).")
@_on_error_option
def traces_import(fmt: str, path: str, out: str, on_error: str) -> None:
    """Convert PATH (FORMAT: openai chat completions or llama-stack recordings) into trace records."""
    from helmdeck_dspy.traces.importers import import_traces
    from helmdeck_dspy.traces.io import save_traces

    n = save_traces(import_traces(fmt, path, on_error=on_error, report=_report_to_stderr), out)  # type: ignore[arg-type]
    click.echo(f"wrote {n} records to {out}")


@traces.command("convert")
@click.argument("src", type=click.Path(exists=True))
@click.argument("dst", type=click.Path())
@_on_error_option
def traces_convert(src: str, dst: str, on_error: str) -> None:
    """Copy a trace set between JSONL, Parquet and a saved HF dataset (by the paths' form)."""
    from helmdeck_dspy.traces.io import load_traces, save_traces

    n = save_traces(load_traces(src, on_error=on_error, report=_report_to_stderr), dst)
    click.echo(f"wrote {n} records to {dst}")


@traces.command("simulate")
@click.option("--profile", "-p", "profiles", multiple=True, required=True,
              help="Simulator profile name or .toml path; repeatable; 'all' for every bundled profile.")
@click.option("--variant", type=click.Choice(["full_steps", "single_pick", "both"]), default="both", show_default=True)
@click.option("--tasks", "split", default="dev", show_default=True, help="Gold task split (train, dev, test, all) or a JSONL path.")
@click.option("--n", "n", type=click.IntRange(1), default=None, help="Tasks per profile and variant (cycled if more than the split).")
@click.option("--max-tokens", type=click.IntRange(1), default=None, help="Override the budget's output_tokens.")
@click.option("--model", default=None, help="Budget lookup id (default: the profile's model).")
@click.option("--seed", type=int, default=0, show_default=True)
@_budgets_option
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False))
def traces_simulate(
    profiles: tuple[str, ...], variant: str, split: str, n: int | None, max_tokens: int | None,
    model: str | None, seed: int, budgets_path: str | None, out: str,
) -> None:
    """Run the real plan modules against the simulated tier LM and record the traces."""
    from helmdeck_dspy.traces.runs import VARIANTS, resolve_profiles, simulate

    chosen = resolve_profiles(profiles)
    tasks = _tasks_for(split)
    variants = VARIANTS if variant == "both" else (variant,)
    with _bar(len(chosen) * len(variants) * (n or len(tasks)), "simulate") as bar, _keep_partial(out):
        written = simulate(chosen, tasks, out, variants=variants, n=n, max_tokens=max_tokens, seed=seed, model=model,
                           budgets=budgets_path, progress=bar.update)
    click.echo(f"wrote {written} plan records ({', '.join(p.name for p in chosen)} x {', '.join(variants)}) to {out}")


@traces.command("record")
@click.option("--model", "-m", required=True, help="Model id to plan for (budget, tier, variant).")
@click.option("--lm", "lm_spec", default=None, help="LiteLLM model string, replay:PATH or sim:PROFILE (default: --model).")
@click.option("--api-base", default=None, help="API base URL for an OpenAI-compatible endpoint.")
@click.option("--variant", type=click.Choice(["full_steps", "single_pick", "both"]), default="both", show_default=True)
@click.option("--tasks", "split", default="dev", show_default=True, help="Gold task split (train, dev, test, all) or a JSONL path.")
@click.option("--n", "n", type=click.IntRange(1), default=None, help="Tasks per variant (cycled if more than the split).")
@click.option("--max-tokens", type=click.IntRange(1), default=None, help="Override the budget's output_tokens.")
@_budgets_option
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False))
def traces_record(
    model: str, lm_spec: str | None, api_base: str | None, variant: str, split: str, n: int | None,
    max_tokens: int | None, budgets_path: str | None, out: str,
) -> None:
    """Plan gold tasks with a real (or replayed, or simulated) model and record every exchange."""
    from helmdeck_dspy.traces.runs import VARIANTS, record

    tasks = _tasks_for(split)
    variants = VARIANTS if variant == "both" else (variant,)
    with _bar(len(variants) * (n or len(tasks)), "record") as bar, _keep_partial(out):
        written = record(model, lm_spec, tasks, out, variants=variants, n=n, max_tokens=max_tokens, api_base=api_base,
                         budgets=budgets_path, progress=bar.update)
    click.echo(f"wrote {written} plan records ({model} x {', '.join(variants)}) to {out}")


@contextlib.contextmanager
def _keep_partial(out: str):
    """On Ctrl-C, say where the exchanges recorded so far are (``OUT.partial.jsonl``)."""
    from helmdeck_dspy.traces.runs import partial_path

    try:
        yield
    except KeyboardInterrupt:
        if partial_path(out).exists():
            click.echo(f"interrupted: the exchanges recorded so far are in {partial_path(out)}", err=True)
        raise


def _tasks_for(split: str) -> list:
    from pathlib import Path

    from helmdeck_dspy.tasks import load_tasks

    return load_tasks(path=split) if Path(split).suffix == ".jsonl" else load_tasks(None if split == "all" else split)


def _bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, unit=" plan", desc=desc, disable=not sys.stderr.isatty(), file=sys.stderr)


# ----------------------------------------------------------------------------- eval


def _bundled_traces() -> list[str]:
    from helmdeck_dspy.io.resources import bundled_dir

    return sorted(str(p) for p in (bundled_dir() / "traces").glob("*.jsonl"))


@cli.command("eval")
@click.argument("trace_paths", nargs=-1, type=click.Path(exists=True))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write report.json, report.md and PNG plots here.")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False, exists=True), default=None)
@click.option("--tasks", "tasks_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Gold tasks JSONL (default: the bundled train/dev/test).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--mlflow", "use_mlflow", is_flag=True, help="Log the run to MLflow (local sqlite store by default).")
@click.option("--tracking-uri", default=None, help="MLflow tracking URI (with --mlflow).")
@_on_error_option
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--resume/--no-resume", default=None,
              help="With --out: continue an interrupted run from OUT/.eval-checkpoint.json (default: when one "
                   "matches these inputs and options); --no-resume starts over.")
@click.option("--json", "as_json", is_flag=True, help="Print report.json to stdout.")
def eval_cmd(
    trace_paths: tuple[str, ...], out_dir: str | None, catalog_path: str | None, tasks_path: str | None,
    workers: int, use_mlflow: bool, tracking_uri: str | None, on_error: str, progress: bool | None,
    resume: bool | None, as_json: bool,
) -> None:
    """Replay trace sets (default: the bundled ones) through the planner's parse/guard path and report."""
    from pathlib import Path

    from helmdeck_dspy.catalog import load_catalog
    from helmdeck_dspy.evaluation.output import write_outputs
    from helmdeck_dspy.evaluation.report import SUMMARY_HEADERS, summary_rows
    from helmdeck_dspy.evaluation.runner import (
        checkpoint_path,
        clear_checkpoint,
        evaluate,
    )
    from helmdeck_dspy.tasks import load_tasks

    paths = list(trace_paths) or _bundled_traces()
    if not paths:
        raise click.UsageError("no trace files given and none bundled")
    if resume and not out_dir:
        raise click.UsageError("--resume needs --out (the checkpoint lives in the output directory)")
    ckpt = checkpoint_path(out_dir) if out_dir else None
    try:
        report = evaluate(
            paths, catalog=load_catalog(catalog_path), tasks=load_tasks(path=tasks_path) if tasks_path else None,
            workers=workers, on_error=on_error, progress=progress,  # type: ignore[arg-type]
            checkpoint=ckpt, resume=resume is not False, notify=lambda msg: click.echo(msg, err=True),
        )
    except KeyboardInterrupt:
        if ckpt is not None and ckpt.exists():
            click.echo(f"interrupted: progress is saved in {ckpt}; run the same command again to resume", err=True)
        raise
    plots: list[str] = []
    if out_dir:
        plots = write_outputs(report, Path(out_dir))
        if ckpt is not None:
            clear_checkpoint(ckpt)
    if use_mlflow:
        from helmdeck_dspy.tracking.mlflow import log_eval_run

        run_id = log_eval_run(report, Path(out_dir) if out_dir else None, plots, tracking_uri=tracking_uri)
        click.echo(f"mlflow run {run_id}", err=True)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    print_table(SUMMARY_HEADERS, summary_rows(report))
    click.echo(f"\n{report.n_records} records ({report.n_skipped} skipped) in {report.seconds:.2f} s")
    for c in report.comparisons:
        lo, hi = c.strict_diff_ci
        click.echo(f"single_pick - full_steps, {c.model}: {100 * c.strict_diff:+.1f} pts strict "
                   f"[{100 * lo:.1f}, {100 * hi:.1f}]")
    if out_dir:
        click.echo(f"wrote {out_dir}/report.json, report.md" + (f" and {len(plots)} plots" if plots else ""))


# ----------------------------------------------------------------------------- calibrate


def _evidence_text(e: dict) -> str:
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


@cli.command("calibrate")
@click.option("--report", "report_path", required=True, type=click.Path(dir_okay=False, exists=True),
              help="report.json written by `eval --out`.")
@click.option("--min-n", type=click.IntRange(1), default=None, help="Records a model needs per variant (default: eval/calibration.toml).")
@click.option("--apply", "do_apply", is_flag=True, help="Rewrite the budget table with the proposals.")
@_budgets_option
@click.option("--json", "as_json", is_flag=True, help='Print {"proposals": [...], "insufficient": [...]}.')
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


# ----------------------------------------------------------------------------- compile


@cli.command("compile")
@click.option("--tier", type=click.Choice(["A", "B", "C"]), default=None)
@click.option("--variant", type=click.Choice(["full_steps", "single_pick"]), default=None)
@click.option("--all", "compile_all", is_flag=True, help="All six (tier, variant) programs.")
@click.option("--optimizer", type=click.Choice(["fit", "bootstrap", "mipro", "gepa"]), default="fit", show_default=True)
@click.option("--lm", "lm_spec", default=None, help="LiteLLM model string, replay:PATH or sim:PROFILE (fit needs none).")
@click.option("--reflection-lm", default=None, help="GEPA's reflection LM (default: --lm).")
@click.option("--train", "train_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Train tasks JSONL (default: the bundled train split).")
@click.option("--dev", "dev_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Dev tasks JSONL (default: the bundled dev split).")
@click.option("--out", "out_root", type=click.Path(file_okay=False), default=None,
              help="Where tier_T/V.json and manifest.json go (default: the bundled compiled/).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--mlflow", "use_mlflow", is_flag=True, help="Log each compile to MLflow.")
@click.option("--tracking-uri", default=None)
@click.option("--resume/--no-resume", default=None,
              help="Skip programs whose manifest entry was compiled from the same inputs (default: only when "
                   "continuing an interrupted run); --no-resume compiles everything again.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest entries as JSON.")
def compile_cmd(
    tier: str | None, variant: str | None, compile_all: bool, optimizer: str, lm_spec: str | None,
    reflection_lm: str | None, train_path: str | None, dev_path: str | None, out_root: str | None, seed: int,
    use_mlflow: bool, tracking_uri: str | None, resume: bool | None, as_json: bool,
) -> None:
    """Compile the plan program for a tier and prompt variant (or --all six).

    Programs are the unit of resumption: DSPy's optimizers cannot continue a half-done run, so an
    interrupted --all redoes at most the program it was compiling.
    """
    from pathlib import Path

    from helmdeck_dspy.compilation.compiler import (
        TIERS,
        VARIANTS,
        compile_program,
        finish_run,
        start_run,
    )
    from helmdeck_dspy.tasks import load_tasks

    if compile_all == bool(tier or variant):
        raise click.UsageError("give --tier and --variant, or --all")
    if not compile_all and not (tier and variant):
        raise click.UsageError("--tier and --variant go together")
    targets = [(t, v) for t in TIERS for v in VARIANTS] if compile_all else [(tier, variant)]
    train = load_tasks(path=train_path) if train_path else None
    dev = load_tasks(path=dev_path) if dev_path else None
    root = Path(out_root) if out_root else None
    run_args = {"targets": targets, "optimizer": optimizer, "lm": lm_spec, "reflection_lm": reflection_lm,
                "train": train_path, "dev": dev_path, "seed": seed}
    interrupted = start_run(run_args, root)
    if resume is None:
        resume = interrupted
        if interrupted:
            click.echo("resuming an interrupted compile: programs already compiled from the same inputs are skipped",
                       err=True)
    results = []
    for t, v in targets:
        r = compile_program(
            t, v, optimizer=optimizer, lm_spec=lm_spec, train=train, dev=dev, out_root=root,  # type: ignore[arg-type]
            reflection_lm_spec=reflection_lm, seed=seed, resume=resume,
        )
        results.append(r)
        if r.skipped:
            click.echo(f"tier {t} {v}: skipped, already compiled from the same inputs ({r.compiled_at}) -> {r.path}",
                       err=True)
            continue
        if use_mlflow:
            from helmdeck_dspy.program.store import program_path
            from helmdeck_dspy.tracking.mlflow import log_compile_run

            metrics = {k: v for k, v in r.model_dump().items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None}
            params = {k: v for k, v in r.model_dump().items() if k not in metrics}
            log_compile_run(params, metrics, program_path(t, v, root), tracking_uri=tracking_uri)
        if not as_json:
            before = "-" if r.dev_score_before is None else f"{r.dev_score_before:.3f}"
            after = "-" if r.dev_score_after is None else f"{r.dev_score_after:.3f}"
            click.echo(f"tier {t} {v:11} {optimizer:9} demos {r.demos}  prompt {r.prompt_tokens} tok  "
                       f"dev {before} -> {after}  LM calls {r.lm_calls}  {r.seconds:.1f}s  -> {r.path}")
    finish_run(root)
    if as_json:
        emit_json([r.model_dump() for r in results])


def _register_extras() -> None:
    from helmdeck_dspy.cli.bench import bench

    cli.add_command(bench)


_register_extras()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    apply_offline_defaults()
    try:
        cli.main(args=argv, prog_name="helmdeck-dspy", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.UsageError as exc:
        # One line, not click's usage block: the message and where to look for the right form.
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"Error: {exc.format_message()}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except HelmdeckError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
