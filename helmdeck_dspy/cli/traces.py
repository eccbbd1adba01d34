"""``helmdeck-dspy traces``: import, convert, simulate and record trace sets."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from helmdeck_dspy.cli.options import (
    BOTH,
    api_base_option,
    budgets_option,
    lm_option,
    max_tokens_option,
    on_error_option,
    progress_bar,
    progress_option,
    report_skipped,
    resume_option,
    seed_option,
    tasks_split_option,
    to_stderr,
    variant_option,
)
from helmdeck_dspy.domain import VARIANTS

if TYPE_CHECKING:
    from helmdeck_dspy.tasks import PlanTask


@click.group()
def traces() -> None:
    """Trace sets: recorded, imported, published or simulated completions."""


@traces.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["openai", "llamastack"]))
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "-o", required=True, type=click.Path(), help="Output: .jsonl, .parquet, or a directory (HF dataset).")
@on_error_option
def traces_import(fmt: str, path: str, out: str, on_error: str) -> None:
    """Convert PATH (FORMAT: openai chat completions or llama-stack recordings) into trace records."""
    from helmdeck_dspy.traces.importers import import_traces
    from helmdeck_dspy.traces.io import save_traces

    n = save_traces(import_traces(fmt, path, on_error=on_error, report=report_skipped), out)  # type: ignore[arg-type]
    click.echo(f"wrote {n} records to {out}")


@traces.command("convert")
@click.argument("src", type=click.Path(exists=True))
@click.argument("dst", type=click.Path())
@on_error_option
def traces_convert(src: str, dst: str, on_error: str) -> None:
    """Copy a trace set between JSONL, Parquet and a saved HF dataset (by the paths' form)."""
    from helmdeck_dspy.traces.io import load_traces, save_traces

    n = save_traces(load_traces(src, on_error=on_error, report=report_skipped), dst)
    click.echo(f"wrote {n} records to {dst}")


@traces.command("simulate")
@click.option("--profile", "-p", "profiles", multiple=True, required=True,
              help="Simulator profile name or .toml path; repeatable; 'all' for every bundled profile.")
@variant_option(default=BOTH, both=True)
@tasks_split_option
@click.option("--n", "n", type=click.IntRange(1), default=None, help="Tasks per profile and variant (cycled if more than the split).")
@max_tokens_option()
@click.option("--model", default=None, help="Budget lookup id (default: the profile's model).")
@seed_option
@budgets_option
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False))
def traces_simulate(
    profiles: tuple[str, ...], variant: str, split: str, n: int | None, max_tokens: int | None,
    model: str | None, seed: int, budgets_path: str | None, out: str,
) -> None:
    """Run the real plan modules against the simulated tier LM and record the traces."""
    from helmdeck_dspy.traces.runs import resolve_profiles, simulate

    chosen = resolve_profiles(profiles)
    tasks = _tasks_for(split)
    variants = _variants(variant)
    with progress_bar(len(chosen) * len(variants) * (n or len(tasks)), "simulate") as bar, _keep_partial(out):
        written = simulate(chosen, tasks, out, variants=variants, n=n, max_tokens=max_tokens, seed=seed, model=model,
                           budgets=budgets_path, progress=bar.update)
    click.echo(f"wrote {written} plan records ({', '.join(p.name for p in chosen)} x {', '.join(variants)}) to {out}")


@traces.command("record")
@click.option("--model", "-m", required=True, help="Model id to plan for (budget, tier, variant).")
@lm_option()
@api_base_option()
@variant_option(default=BOTH, both=True)
@tasks_split_option
@click.option("--n", "n", type=click.IntRange(1), default=None, help="Tasks per variant (cycled if more than the split).")
@max_tokens_option()
@click.option("--temperature", type=click.FloatRange(0), default=None,
              help="Sampling temperature sent with every call and kept on every record (default: the endpoint's).")
@click.option("--seed", type=int, default=None, help="Sampling seed sent with every call and kept on every record.")
@click.option("--concurrency", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Requests in flight at once (for endpoints that serve several); records keep task order.")
@resume_option("Continue from OUT.partial.jsonl, sending only requests not answered yet (default); "
               "--no-resume starts over.")
@progress_option
@budgets_option
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False))
def traces_record(
    model: str, lm_spec: str | None, api_base: str | None, variant: str, split: str, n: int | None,
    max_tokens: int | None, temperature: float | None, seed: int | None, concurrency: int, resume: bool | None,
    progress: bool | None, budgets_path: str | None, out: str,
) -> None:
    """Plan gold tasks with a real (or replayed, or simulated) model and record every exchange.

    A live model is never answered from a cache here: every record is a call made in this run.
    """
    from helmdeck_dspy.traces.runs import record

    tasks = _tasks_for(split)
    variants = _variants(variant)
    with progress_bar(len(variants) * (n or len(tasks)), "record", show=progress) as bar, _keep_partial(out):
        written = record(model, lm_spec, tasks, out, variants=variants, n=n, max_tokens=max_tokens, api_base=api_base,
                         budgets=budgets_path, progress=bar.update, temperature=temperature, seed=seed,
                         concurrency=concurrency, resume=resume is not False, notify=to_stderr)
    click.echo(f"wrote {written} plan records ({model} x {', '.join(variants)}) to {out}")


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
    from helmdeck_dspy.traces.runs import partial_path

    try:
        yield
    except KeyboardInterrupt:
        if partial_path(out).exists():
            to_stderr(f"interrupted: the exchanges recorded so far are in {partial_path(out)}")
        raise
