"""``helmdeck-dspy eval``: replay trace sets through the planner's parse/guard path and report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from helmdeck_dspy.cli.options import (
    catalog_option,
    force_option,
    json_option,
    mlflow_options,
    on_error_option,
    print_table,
    progress_option,
    resume_option,
    to_stderr,
)

if TYPE_CHECKING:
    from helmdeck_dspy.evaluation.report import EvalReport
    from helmdeck_dspy.io.jsonl import OnError


@click.command("eval")
@click.argument("trace_paths", nargs=-1, type=click.Path(exists=True))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write report.json, report.md and PNG plots here (swapped in as one set).")
@force_option("the --out directory")
@catalog_option
@click.option("--tasks", "tasks_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Gold tasks JSONL (default: the bundled train/dev/test).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True)
@mlflow_options("Log the run to MLflow (local sqlite store by default).")
@on_error_option
@progress_option
@resume_option("With --out: continue an interrupted run from OUT/.eval-checkpoint.json (default: when one "
               "matches these inputs and options); --no-resume starts over.")
@json_option("Print report.json to stdout.")
def eval_cmd(
    trace_paths: tuple[str, ...], out_dir: str | None, catalog_path: str | None, tasks_path: str | None,
    workers: int, use_mlflow: bool, tracking_uri: str | None, on_error: OnError, progress: bool | None,
    resume: bool | None, as_json: bool, force: bool,
) -> None:
    """Replay trace sets (default: the bundled ones) through the planner's parse/guard path and report."""
    from helmdeck_dspy.evaluation.session import run_eval

    if resume and not out_dir:
        raise click.UsageError("--resume needs --out (the checkpoint lives in the output directory)")
    run = run_eval(
        list(trace_paths), out_dir=Path(out_dir) if out_dir else None, catalog=catalog_path, tasks=tasks_path,
        workers=workers, on_error=on_error, progress=progress, resume=resume, notify=to_stderr,
        mlflow=use_mlflow, tracking_uri=tracking_uri, force=force,
    )
    if use_mlflow:
        to_stderr(f"mlflow run {run.mlflow_run_id}")
    if as_json:
        click.echo(run.report.model_dump_json(indent=2))
        return
    _print_summary(run.report)
    if out_dir:
        click.echo(f"wrote {out_dir}/report.json, report.md" + (f" and {len(run.plots)} plots" if run.plots else ""))


def _print_summary(report: EvalReport) -> None:
    """The per-group table (each group named ``model · kind``), the record counts per kind, a line
    saying which kinds are simulated, and the single_pick - full_steps comparisons."""
    from helmdeck_dspy.evaluation.markdown import SUMMARY_HEADERS, summary_rows
    from helmdeck_dspy.traces.record import is_simulated

    print_table(SUMMARY_HEADERS, summary_rows(report))
    kinds = ", ".join(f"{k} {n}" for k, n in report.kinds.items())
    click.echo(f"\n{report.n_records} records ({report.n_skipped} skipped) in {report.seconds:.2f} s; by kind: {kinds or 'none'}")
    simulated = [k for k in report.kinds if is_simulated(k)]
    if simulated:
        click.echo(f"simulated ({', '.join(simulated)}): the simulator's output under a real model's name, "
                   "not a measurement of that model")
    for c in report.comparisons:
        lo, hi = c.strict_diff_ci
        paired = ""
        if c.paired_strict_diff is not None and c.paired_strict_diff_ci is not None:
            plo, phi = c.paired_strict_diff_ci
            paired = (f"; paired over {c.paired_n} requests: {100 * c.paired_strict_diff:+.1f} pts "
                      f"[{100 * plo:.1f}, {100 * phi:.1f}]")
        click.echo(f"single_pick - full_steps, {c.label}: {100 * c.strict_diff:+.1f} pts strict "
                   f"[{100 * lo:.1f}, {100 * hi:.1f}]{paired}")
