"""``helmdeck-dspy bench study SPEC``: one study, its arms paired (the model alone, planner configurations,
compiled programs; BFCL or gold tasks); ``bench plan PLAN``: the study steps of a plan file, in order."""

from __future__ import annotations

import click

from helmdeck_dspy.cli.options import (
    TerminalBars,
    api_base_option,
    emit_json,
    json_option,
    progress_option,
    to_stderr,
    usage_errors,
)


@click.command("study")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False))
@click.option("--only", default=None, help="Run only these configs (comma-separated names).")
@click.option("--score-only", is_flag=True, help="Make no LM call and compile nothing: score the trace files there are.")
@click.option("--dry-run", is_flag=True, help="Say what is left (compiles, and calls per config) and run nothing.")
@click.option("--ship", "ship_to", is_flag=True,
              help="Copy every compile arm that beats its paired row beyond its interval into compiled/ (the model's "
                   "own program) with its test scores in the manifest.")
@click.option("--compiled-root", type=click.Path(file_okay=False), default=None,
              help="Where --ship writes (default: the bundled compiled/).")
@api_base_option("The endpoint's URL with its credentials, for a spec that holds it without them (bench e2e writes "
                 "the URL's user info masked); default: the spec's api_base.")
@progress_option
@json_option("Print table.json's rows.")
def study_cmd(spec_path: str, only: str | None, score_only: bool, dry_run: bool, ship_to: bool,
              compiled_root: str | None, api_base: str | None, progress: bool | None, as_json: bool) -> None:
    """Run the study SPEC (a study.toml): compile each compile arm's program that is
    missing, answer every question (or run every end-to-end task) under each config that has no
    record of it yet, then write table.md, table.json and exact.png beside SPEC.

    Resumable: a run stopped at any point goes on from the next unanswered (question, config)
    pair. Each config's exchanges are appended to CONFIG.jsonl beside SPEC; a compile arm's program
    and its test scores go under programs/CONFIG/.
    """
    from helmdeck_dspy.bench.study.flow import check_configs, left, run_study
    from helmdeck_dspy.bench.study.report import measured, rows_lines
    from helmdeck_dspy.bench.study.spec import load_study_spec

    from helmdeck_dspy.io.redaction import MASK

    if compiled_root is not None and not ship_to:
        raise click.BadParameter("is where --ship writes; it does nothing without --ship", param_hint="--compiled-root")
    chosen = {n.strip() for n in only.split(",") if n.strip()} if only is not None else None
    if chosen is not None and not chosen:
        raise click.BadParameter("names no config", param_hint="--only")
    spec = load_study_spec(spec_path)
    if api_base is not None:
        spec = spec.model_copy(update={"api_base": api_base})
    elif spec.api_base and MASK in spec.api_base and not (score_only or dry_run):
        raise click.UsageError(f"{spec_path}: its api_base has its credentials masked ({spec.api_base}); give the "
                               "endpoint with them: --api-base URL")
    with usage_errors():
        check_configs(spec, chosen)
    if dry_run:
        compiles, calls = left(spec, chosen)
        if as_json:
            emit_json({"compiles": compiles, "calls": calls})
            return
        click.echo(f"{len(compiles)} compiles" + (f" ({', '.join(compiles)})" if compiles else "") + ", "
                   f"{sum(calls.values())} calls" + (f" ({', '.join(f'{k} {v}' for k, v in calls.items())})" if calls else "")
                   + " left (dry run: nothing ran)")
        return
    report = run_study(spec, only=chosen, score_only=score_only, ship=ship_to, compiled_root=compiled_root,
                       notify=to_stderr, bars=TerminalBars(progress))
    if as_json:
        emit_json({"rows": [r.model_dump(mode="json") for r in report.rows], "shipped": report.shipped})
    elif report.rows:  # nothing answered yet: nothing to show
        click.echo(measured(spec))
        for line in rows_lines(spec, report.rows):
            click.echo(line)


@click.command("plan")
@click.argument("plan_path", metavar="PLAN", type=click.Path(exists=True, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Say what each step has left, and run nothing.")
@click.option("--match", "matching", multiple=True, metavar="TEXT",
              help="Only the steps whose spec or script path holds TEXT (repeatable).")
@progress_option
def plan_cmd(plan_path: str, dry_run: bool, matching: tuple[str, ...], progress: bool | None) -> None:
    """Run the study steps PLAN lists (experiments/studies.toml), in order: each a study spec
    (a study.toml) with the configs to run, or a benchmark script whose
    output is kept.

    Every step is checked before the first runs. Resumable: each step goes on where it stopped,
    and a step with nothing left makes no call.
    """
    from helmdeck_dspy.bench.plan import load_plan, run_plan

    plan = load_plan(plan_path)
    done = run_plan(plan, dry_run=dry_run, matching=matching, notify=to_stderr, bars=TerminalBars(progress))
    left = sum(1 for _, n in done if n)
    click.echo(f"{len(done)} steps, {left} with something left" + (" (dry run: nothing ran)" if dry_run else ""))
