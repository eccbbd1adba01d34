"""``helmdeck-dspy bench levers SPEC``: the model alone against planner configurations, paired (BFCL or gold
tasks); ``bench plan PLAN``: the study steps of a plan file, in order."""

from __future__ import annotations

import click

from helmdeck_dspy.cli.options import TerminalBars, progress_option, to_stderr, usage_errors


@click.command("levers")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False))
@click.option("--only", default=None, help="Run only these configs (comma-separated names).")
@click.option("--score-only", is_flag=True, help="Make no LM call: score the trace files there are.")
@progress_option
def levers_cmd(spec_path: str, only: str | None, score_only: bool, progress: bool | None) -> None:
    """Answer every question of SPEC (a levers.toml) under each config that has no record of it
    yet, then write table.md, table.json and exact.png beside SPEC.

    Resumable: a run stopped at any point goes on from the next unanswered (question, config)
    pair. Each config's exchanges are appended to CONFIG.jsonl beside SPEC.
    """
    from helmdeck_dspy.bench.bfcl.lever_flow import check_configs, run_lever_spec
    from helmdeck_dspy.bench.bfcl.lever_report import table_lines
    from helmdeck_dspy.bench.bfcl.levers import load_lever_spec

    spec = load_lever_spec(spec_path)
    chosen = {n.strip() for n in only.split(",") if n.strip()} if only else None
    with usage_errors():
        check_configs(spec, chosen)
    report = run_lever_spec(spec, only=chosen, score_only=score_only, notify=to_stderr, bars=TerminalBars(progress))
    if report.rows:  # nothing answered yet: nothing to show
        for line in table_lines(report.rows):
            click.echo(line)


@click.command("plan")
@click.argument("plan_path", metavar="PLAN", type=click.Path(exists=True, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Say what each step has left, and run nothing.")
@click.option("--match", "matching", multiple=True, metavar="TEXT",
              help="Only the steps whose spec or script path holds TEXT (repeatable).")
@progress_option
def plan_cmd(plan_path: str, dry_run: bool, matching: tuple[str, ...], progress: bool | None) -> None:
    """Run the study steps PLAN lists (experiments/studies.toml), in order: each a levers.toml or
    heldout.toml with the configs to run, or a benchmark script whose output is kept.

    Every step is checked before the first runs. Resumable: each step goes on where it stopped,
    and a step with nothing left makes no call.
    """
    from helmdeck_dspy.bench.plan import load_plan, run_plan

    plan = load_plan(plan_path)
    done = run_plan(plan, dry_run=dry_run, matching=matching, notify=to_stderr, bars=TerminalBars(progress))
    left = sum(1 for _, n in done if n)
    click.echo(f"{len(done)} steps, {left} with something left" + (" (dry run: nothing ran)" if dry_run else ""))
