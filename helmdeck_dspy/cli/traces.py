"""``helmdeck-dspy traces``: import, convert, simulate and record trace sets, and fit simulator profiles to them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from helmdeck_dspy.cli.options import (
    BOTH,
    FiniteFloat,
    api_base_option,
    budgets_option,
    force_option,
    lm_option,
    max_tokens_option,
    model_id,
    strategy_option,
    on_error_option,
    program_option,
    progress_bar,
    progress_option,
    report_skipped,
    resume_option,
    retries_option,
    seed_option,
    tasks_split_option,
    plan_sampling,
    timeout_option,
    to_stderr,
    variant_option,
)
from helmdeck_dspy.domain import (
    FIT_CHECK_REPEATS,
    FIT_CHECK_TOLERANCE,
    IMPORT_FORMATS,
    MAX_RECORD_N,
    VARIANTS,
)

if TYPE_CHECKING:
    from helmdeck_dspy.io.jsonl import OnError
    from helmdeck_dspy.tasks import PlanTask


@click.group()
def traces() -> None:
    """Trace sets: recorded, imported, published or simulated completions."""


@traces.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(IMPORT_FORMATS))
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "-o", required=True, type=click.Path(),
              help="Output: .jsonl/.json/.ndjson, .parquet, or a path without a suffix (a saved HF dataset directory).")
@force_option("--out")
@on_error_option
def traces_import(fmt: str, path: str, out: str, on_error: OnError, force: bool) -> None:
    """Convert PATH into trace records. FORMAT: openai (chat completions, Responses API objects),
    anthropic (Messages responses), gemini (generateContent responses), llamastack (recordings), or
    auto (told apart row by row). PATH holds one JSON object, a JSON array or JSON Lines; a row that
    cannot be read is reported as file:line (--on-error skip goes on without it)."""
    from helmdeck_dspy.traces.importers import import_traces
    from helmdeck_dspy.traces.io import save_traces

    n = save_traces(import_traces(fmt, path, on_error=on_error, report=report_skipped), out, force=force)
    click.echo(f"wrote {n} records to {out}")


@traces.command("convert")
@click.argument("src", type=click.Path(exists=True))
@click.argument("dst", type=click.Path())
@force_option("DST")
@on_error_option
def traces_convert(src: str, dst: str, on_error: str, force: bool) -> None:
    """Copy a trace set between JSONL, Parquet and a saved HF dataset (by the paths' suffix: .jsonl,
    .json, .ndjson, .parquet, or none for a dataset directory)."""
    from helmdeck_dspy.io.outputs import TRACE_FORMATS, check_output
    from helmdeck_dspy.traces.io import load_traces, save_traces

    check_output(dst, formats=TRACE_FORMATS, force=force, option="DST")  # before reading anything
    n = save_traces(load_traces(src, on_error=on_error, report=report_skipped), dst, force=force)
    click.echo(f"wrote {n} records to {dst}")


@traces.command("simulate")
@click.option("--profile", "-p", "profiles", multiple=True, required=True,
              help="Simulator profile name or .toml path; repeatable; 'all' for every hand-written bundled profile "
                   "(the profiles fitted to real trace sets are used by name).")
@variant_option(default=BOTH, both=True)
@tasks_split_option
@click.option("--n", "n", type=click.IntRange(1, MAX_RECORD_N), default=None,
              help="Tasks per profile and variant (cycled if more than the split).")
@max_tokens_option()
@click.option("--model", callback=model_id, default=None, help="Budget lookup id (default: the profile's model).")
@seed_option
@budgets_option
@click.option("--out", "-o", required=True, type=click.Path(), help="The trace file to write (.jsonl).")
@force_option("--out")
def traces_simulate(
    profiles: tuple[str, ...], variant: str, split: str, n: int | None, max_tokens: int | None,
    model: str | None, seed: int, budgets_path: str | None, out: str, force: bool,
) -> None:
    """Run the real plan modules against the simulated tier LM and record the traces."""
    from helmdeck_dspy.io.outputs import JSONL_FORMATS, check_output
    from helmdeck_dspy.recording.trace_sets import resolve_profiles, simulate

    check_output(out, formats=JSONL_FORMATS, force=force)

    chosen = resolve_profiles(profiles)
    tasks = _tasks_for(split)
    variants = _variants(variant)
    with progress_bar(len(chosen) * len(variants) * (n or len(tasks)), "simulate") as bar, _keep_partial(out):
        written = simulate(chosen, tasks, out, variants=variants, n=n, max_tokens=max_tokens, seed=seed, model=model,
                           budgets=budgets_path, progress=bar.update)
    click.echo(f"wrote {written} plan records ({', '.join(p.name for p in chosen)} x {', '.join(variants)}) to {out}")


@traces.command("record")
@click.option("--model", "-m", callback=model_id, required=True, help="Model id to plan for (budget, tier, variant).")
@lm_option()
@api_base_option()
@variant_option(default=BOTH, both=True)
@tasks_split_option
@click.option("--n", "n", type=click.IntRange(1, MAX_RECORD_N), default=None,
              help="Tasks per variant (cycled if more than the split).")
@max_tokens_option()
@strategy_option
@plan_sampling
@program_option
@click.option("--concurrency", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Requests in flight at once (for endpoints that serve several); records keep task order.")
@timeout_option
@retries_option
@resume_option("Continue from OUT.partial.jsonl, sending only requests not answered yet (default); "
               "--no-resume starts over.")
@progress_option
@budgets_option
@click.option("--out", "-o", required=True, type=click.Path(), help="The trace file to write (.jsonl).")
@force_option("a finished --out (record every request again)")
def traces_record(
    model: str, lm_spec: str | None, api_base: str | None, variant: str, split: str, n: int | None,
    max_tokens: int | None, strategy: str | None, temperature: float | None, program: str | None,
    seed: int | None, concurrency: int, timeout_s: float | None,
    retries: int | None, resume: bool | None, progress: bool | None, budgets_path: str | None, out: str,
    force: bool,
) -> None:
    """Plan gold tasks with a real (or replayed, or simulated) model and record every exchange.

    A live model is never answered from a cache here: every record is a call made in this run.
    When OUT is already complete (a finished run wrote it with these settings), nothing is sent:
    the command says so and exits 0; a finished OUT of other settings is refused, naming them
    (--force records again and replaces it). A run in which a request failed exits 1 saying how
    many, writes no OUT and keeps OUT.partial.jsonl: the same command asks only those again.
    """
    from helmdeck_dspy.budgets import budget_for, load_budget_table
    from helmdeck_dspy.io.outputs import JSONL_FORMATS, check_output
    from helmdeck_dspy.planning.bounds import check_output_cap
    from helmdeck_dspy.planning.options import PlannerOptions
    from helmdeck_dspy.planning.resilience.policy import resolve_resilience
    from helmdeck_dspy.recording.trace_sets import check_finished, finished_records, partial_path, record

    table = load_budget_table(budgets_path) if budgets_path is not None else None
    budget = budget_for(model, table if table is not None else load_budget_table())
    check_output_cap(max_tokens, input_tokens=budget.input_tokens, model=budget.model)
    retry = resolve_resilience(timeout_s=timeout_s, retries=retries).retry
    options = PlannerOptions(max_tokens=max_tokens, api_base=api_base, retry=retry, answer_strategy=strategy,
                             program=program, budgets=table)
    tasks = _tasks_for(split)
    variants = _variants(variant)
    if not force and finished_records(out):  # a finished recording: the same settings have nothing to send
        done = check_finished(model, lm_spec, tasks, out, options=options, variants=variants, n=n,
                              temperature=temperature, seed=seed)
        click.echo(f"{out} is complete: {done} plan records from a finished run; nothing sent "
                   "(--force records them again)")
        return
    check_output(out, formats=JSONL_FORMATS, force=force)  # anything else already there is kept
    check_output(partial_path(out), formats=JSONL_FORMATS, append=True, option="--out (its partial file)")
    with progress_bar(len(variants) * (n or len(tasks)), "record", show=progress) as bar, _keep_partial(out):
        written = record(model, lm_spec, tasks, out, options=options, variants=variants, n=n, progress=bar.update,
                         temperature=temperature, seed=seed, concurrency=concurrency, resume=resume is not False,
                         notify=to_stderr)
    click.echo(f"wrote {written} plan records ({model} x {', '.join(variants)}) to {out}")


@traces.command("fit")
@click.argument("trace_file", metavar="TRACES", type=click.Path(exists=True))
@click.option("--model", "-m", callback=model_id, default=None, help="The model whose plan records to fit (default: the only one in TRACES).")
@click.option("--name", required=True, help="The profile's name (lowercase letters, digits, dots, dashes).")
@click.option("--out", "-o", default=None, type=click.Path(dir_okay=False),
              help="Where to write the profile TOML (default: NAME.toml in the bundled profiles directory, "
                   "never over a profile already there).")
@force_option("an existing --out (never a bundled profile)")
@click.option("--base", default=None,
              help="Profile name or .toml whose values the fit keeps for what it cannot fit (default: the simulator's defaults).")
@click.option("--description", default=None, help="The profile's description (default: names the trace set).")
@seed_option
@click.option("--check/--no-check", default=False, show_default=True,
              help="Then simulate the fitted profile like TRACES and compare every rate with the real one's 95% interval.")
@click.option("--repeats", type=click.IntRange(1, 50), default=FIT_CHECK_REPEATS, show_default=True,
              help="Simulator seeds the check averages over.")
@click.option("--tolerance", type=FiniteFloat(0, 1), default=FIT_CHECK_TOLERANCE, show_default=True,
              help="How far the check lets a simulated p50 (completion tokens, latency) be from the real one, as a share.")
def traces_fit(
    trace_file: str, model: str | None, name: str, out: str | None, base: str | None, description: str | None,
    seed: int, check: bool, repeats: int, tolerance: float, force: bool,
) -> None:
    """Fit a simulator profile to the real plan records in TRACES and write it as documented TOML.

    The header names the trace set (file, SHA-256, records, date); every value says whether it was
    fitted or assumed. With --check the profile is simulated on the same tasks and variants and
    compared with the real set (exit 1 when a measure falls outside its bounds).
    """
    import re

    from helmdeck_dspy.engines.profile import load_profile, profiles_dir
    from helmdeck_dspy.fitting.check import check_profile
    from helmdeck_dspy.fitting.fit import fit_profile
    from helmdeck_dspy.fitting.render import write_profile
    from helmdeck_dspy.io.outputs import TOML_FORMATS, check_output

    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name):
        raise click.BadParameter(f"{name!r}: use lowercase letters, digits, dots and dashes", param_hint="--name")
    target = check_output(out or profiles_dir() / f"{name}.toml", formats=TOML_FORMATS, force=force).path
    result = fit_profile(trace_file, name=name, model=model, base=load_profile(base) if base else None,
                         description=description, seed=seed)
    source = result.profile.fitted_to
    assert source is not None  # a fitted profile names the traces it was fitted to
    target = write_profile(result, target, force=force, command=f"helmdeck-dspy traces fit {source.traces} --name {name}")
    fitted = sum(v.how == "fitted" for v in result.notes.values())
    click.echo(f"wrote {target}: {fitted} values fitted, {len(result.notes) - fitted} assumed, from "
               f"{len(result.trace_set.answers)} plan records of {result.trace_set.model}")
    if check:
        report = check_profile(result.profile, trace_file, model=result.trace_set.model, seed=seed, repeats=repeats,
                               tolerance=tolerance)
        click.echo()
        click.echo(report.table())
        if not report.ok:
            from helmdeck_dspy.errors import RunError

            raise RunError(f"the fitted profile does not reproduce {trace_file}: "
                           + ", ".join(f"{r.variant} {r.measure}" for r in report.failures))


def _variants(choice: str) -> tuple[str, ...]:
    """The variants ``--variant`` names: all of them for ``both``, else the one given."""
    return tuple(VARIANTS) if choice == BOTH else (choice,)


def _tasks_for(split: str) -> list[PlanTask]:
    """The gold tasks ``--tasks`` names: a JSONL path, a bundled split, or ``all`` of them."""
    from helmdeck_dspy.tasks import load_tasks

    return load_tasks(path=split) if Path(split).suffix == ".jsonl" else load_tasks(None if split == "all" else split)


@contextlib.contextmanager
def _keep_partial(out: str) -> Iterator[None]:
    """On Ctrl-C, say where the exchanges recorded so far are (``OUT.partial.jsonl``)."""
    from helmdeck_dspy.recording.trace_sets import partial_path

    try:
        yield
    except KeyboardInterrupt:
        if partial_path(out).exists():
            to_stderr(f"interrupted: the exchanges recorded so far are in {partial_path(out)}")
        raise
