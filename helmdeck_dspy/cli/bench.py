"""``helmdeck-dspy bench``: external benchmarks (BFCL): selection recall and plan accuracy."""

from __future__ import annotations

from typing import Literal

import click

from helmdeck_dspy.cli.e2e import e2e_cmd
from helmdeck_dspy.cli.study import plan_cmd, study_cmd
from helmdeck_dspy.cli.options import (
    TerminalBars,
    api_base_option,
    budgets_option,
    emit_json,
    force_option,
    json_option,
    lm_option,
    max_tokens_option,
    model_id,
    plan_sampling,
    progress_option,
    to_stderr,
    usage_errors,
    variant_option,
)

LIST_OPTIONS = ("--categories", "--rankers")
"""Options of ``bench bfcl`` that take several values: space-separated, comma-separated or repeated."""


def join_list_values(args: list[str], names: tuple[str, ...] = LIST_OPTIONS) -> list[str]:
    """Rewrite ``--rankers lexical bm25`` as ``--rankers lexical,bm25`` (the values after one of
    ``names`` up to the next option), so click sees one value per occurrence."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out += [arg, *args[i:]]
            break
        name, eq, value = arg.partition("=")
        if name not in names or (not eq and i >= len(args)):
            out.append(arg)
            continue
        values = [value] if eq else [args[i]]
        i += 0 if eq else 1
        while i < len(args) and not args[i].startswith("-"):
            values.append(args[i])
            i += 1
        out += [name, ",".join(values)]
    return out


class ListOptionsCommand(click.Command):
    """A command whose :data:`LIST_OPTIONS` take several space-separated values."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, join_list_values(list(args)))


OLD_COMMAND_NAMES = {"levers": "study"}
"""Subcommand names taken out (issue 51), each with its name now: ``bench levers`` ran studies
before the held-out comparison joined them."""


class BenchGroup(click.Group):
    """The ``bench`` group: an old subcommand name is a usage error naming the new one."""

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in OLD_COMMAND_NAMES:
            raise click.UsageError(f"'bench {args[0]}' is the old name of 'bench {OLD_COMMAND_NAMES[args[0]]}'; "
                                   f"run that", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=BenchGroup)
def bench() -> None:
    """External benchmarks: how selection and planning do on public data sets."""


def _split(values: tuple[str, ...]) -> list[str] | None:
    """Values given repeatedly and/or comma-separated, as one list (``None`` when there are none)."""
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return out or None


@bench.command("bfcl", cls=ListOptionsCommand)
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="A BFCL v4 data folder: BFCL_v4_<category>.json files, possible_answer/ and, for multi_turn, "
                   "multi_turn_func_doc/.")
@click.option("--categories", "categories", multiple=True, metavar="C [C...]",
              help="Categories to load: --categories parallel parallel_multiple, comma-separated or repeated "
                   "(default: every category of the folder; those that cannot be loaded are reported).")
@click.argument("stray", nargs=-1, metavar="")
@click.option("--pool", is_flag=True, help="One catalog of every loaded function instead of each question's own "
              "(first definition of a name wins; the report counts the gold definitions replaced).")
@click.option("--rankers", "rankers", multiple=True, metavar="R [R...]",
              help="lexical, bm25, embedding: space- or comma-separated, or repeated (default: all; embedding only "
                   "when its extra is installed).")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="At most this many BFCL questions per category (a multi_turn question gives one task per turn).")
@lm_option("Also plan each question with this LM (LiteLLM string, replay:PATH or sim:PROFILE) and score it.")
@click.option("--model", "-m", default=None, callback=model_id, help="Budget lookup id for --lm (default: the --lm string).")
@api_base_option("API base URL for an OpenAI-compatible endpoint (with --lm).")
@variant_option(default="full_steps", help="Prompt variant for --lm (BFCL gold has several calls).")
@max_tokens_option("Override the budget's output_tokens (with --lm).")
@plan_sampling
@click.option("--baseline", type=click.Choice(["plain"]), default=None,
              help="With --lm, also score the same LM alone with a plain prompt (the question's functions as JSON, "
                   "the question, a request for a JSON list of {name, arguments}); recorded with --record.")
@click.option("--record", "record_path", type=click.Path(dir_okay=False), default=None,
              help="Keep the --lm exchanges as trace records (task_id = BFCL id) in this file, the model alone's "
                   "beside it (STEM.plain.jsonl); a question already answered there is not asked again.")
@click.option("--traces", "trace_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Score the plan records of a trace file against the gold calls (repeatable).")
@budgets_option
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write report.md and report.json into this folder (replaced whole, as one set).")
@force_option("--out")
@progress_option
@json_option('Print the report as JSON: {"rankers": {NAME: {"tiers": ...}}}.')
def bench_bfcl(
    data_dir: str, categories: tuple[str, ...], stray: tuple[str, ...], pool: bool, rankers: tuple[str, ...],
    limit: int | None, lm_spec: str | None, model: str | None, api_base: str | None, variant: str,
    max_tokens: int | None, temperature: float | None, seed: int | None, baseline: Literal["plain"] | None,
    record_path: str | None, trace_paths: tuple[str, ...], budgets_path: str | None,
    out_dir: str | None, force: bool, progress: bool | None, as_json: bool,
) -> None:
    """Selection recall and plan accuracy on BFCL questions.

    For each question, do its gold tools survive budget-fitted catalog selection at each tier's
    byte cap, per ranker, overall and per category? With --lm, the planner answers every question
    and its plans are scored against the gold calls (a no-call question is right when the plan
    calls nothing); with --traces, recorded plans are scored.
    """
    from helmdeck_dspy.bench.bfcl.flow import choose_rankers, run_bfcl
    from helmdeck_dspy.bench.bfcl.report import category_table, notes_lines, recall_table, write_report
    from helmdeck_dspy.io.outputs import JSONL_FORMATS, check_output, staged_directory

    if stray:
        raise click.UsageError(f"unexpected argument {stray[0]!r} (categories and rankers follow their option)")
    if baseline and not lm_spec:
        raise click.UsageError("--baseline needs --lm (the LM to ask alone)")
    with usage_errors():
        choose_rankers(_split(rankers))
    # the output rule, before any question is planned: a record file is appended to, a report
    # folder holding anything is replaced only with --force, and whole
    out = check_output(out_dir, directory=True, force=force) if out_dir else None
    if record_path:
        check_output(record_path, formats=JSONL_FORMATS, append=True, option="--record")
    report = run_bfcl(
        data_dir, categories=_split(categories), rankers=_split(rankers), pool=pool, limit=limit, lm_spec=lm_spec,
        model=model, api_base=api_base, variant=variant, max_tokens=max_tokens, temperature=temperature, seed=seed,
        baseline=baseline,
        record_path=record_path, trace_paths=trace_paths, budgets=budgets_path, notify=to_stderr,
        bars=TerminalBars(progress),
    )
    if out is not None:
        with staged_directory(out.path) as build:
            names = [p.name for p in write_report(report, build)]
        to_stderr(f"wrote {', '.join(str(out.path / n) for n in names)}")
    if as_json:
        emit_json(report.model_dump(mode="json", exclude={"plan_accuracy": {"__all__": {"scores"}}}))
        return
    scope = f"pooled catalog of {report.catalog_entries} tools" if pool else "each question's own functions"
    click.echo(f"BFCL {', '.join(report.categories)}: {report.n_questions} tasks with gold tools"
               + (f" (+{report.n_without_gold} where no call is right)" if report.n_without_gold else "") + f", {scope}")
    for line in notes_lines(report.notes):
        click.echo(line)
    if pool:
        click.echo(f"pool: {report.pool_conflicts} differing later definitions dropped; "
                   f"{report.pool_gold_replaced} tasks' gold definitions replaced by another task's version")
    for line in [*recall_table(report), "", *category_table(report)]:
        click.echo(line)
    for name, why in report.skipped_rankers.items():
        click.echo(f"{name}: not run ({why})")
    for a in report.plan_accuracy:
        s = a.summary
        irrelevance = (f", called nothing on {s.abstained}/{s.no_call_n} no-call tasks "
                       f"({100 * (s.irrelevance_rate or 0):.1f}%)" if s.no_call_n else "")
        click.echo(f"plans {a.source} ({a.variant}): exact {s.exact}/{s.n} ({100 * s.exact_rate:.1f}%), "
                   f"call recall {100 * s.call_recall:.1f}%, name recall {100 * s.name_recall:.1f}%{irrelevance}")


bench.add_command(study_cmd)
bench.add_command(e2e_cmd)
bench.add_command(plan_cmd)
