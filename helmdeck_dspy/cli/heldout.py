"""``helmdeck-dspy bench heldout``: compile per-model programs and compare them on held-out tasks with the live model."""

from __future__ import annotations

import click

from helmdeck_dspy.cli.options import TerminalBars, emit_json, json_option, progress_option, to_stderr, usage_errors
from helmdeck_dspy.domain import VARIANTS


@click.command("heldout")
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False, exists=True))
@click.option("--only", "only", multiple=True, metavar="ID[,ID]", help="Run only these configs (default: all).")
@click.option("--variant", "variants", multiple=True, type=click.Choice(VARIANTS),
              help="Run only this variant's compiles and scoring runs (repeatable; default: the spec's).")
@click.option("--score-only", is_flag=True, help="Run nothing: score the trace files there are and write the table.")
@click.option("--ship", "ship_to", is_flag=True,
              help="Copy every compiled program that beats the baseline beyond its interval into compiled/ "
                   "(the model's own program) with its test scores in the manifest.")
@click.option("--compiled-root", type=click.Path(file_okay=False), default=None,
              help="Where --ship writes (default: the bundled compiled/).")
@progress_option
@json_option("Print table.json.")
def heldout_cmd(spec_path: str, only: tuple[str, ...], variants: tuple[str, ...], score_only: bool, ship_to: bool, compiled_root: str | None,
                progress: bool | None, as_json: bool) -> None:
    """Compile and score the programs SPEC (a heldout.toml) lists, on its model and held-out split.

    Missing compiles and scoring runs are done first, in SPEC's order (each resumes where it was cut
    off; before each compile its LM calls are estimated and a progress bar counts them). Then every
    trace file there is is scored through the evaluator's path, and table.md / table.json are written
    beside SPEC; each compiled program's manifest entry gets its test scores before and after.
    Scoring records are live calls; nothing is answered from a cache.
    """
    from helmdeck_dspy.bench.heldout.flow import check_configs, run_heldout
    from helmdeck_dspy.bench.heldout.spec import load_spec

    spec = load_spec(spec_path)
    chosen = [v.strip() for value in only for v in value.split(",") if v.strip()] or None
    with usage_errors():
        check_configs(spec, chosen)
    report = run_heldout(spec, only=chosen, variants=list(variants) or None, score_only=score_only, ship=ship_to,
                         compiled_root=compiled_root, notify=to_stderr, bars=TerminalBars(progress))
    if as_json:
        emit_json(report.table())
    else:
        click.echo(report.markdown())
