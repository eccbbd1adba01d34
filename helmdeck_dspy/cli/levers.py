"""``helmdeck-dspy bench levers SPEC``: the model alone against planner configurations, paired (BFCL or gold tasks)."""

from __future__ import annotations

import click

from helmdeck_dspy.cli.options import progress_bar, progress_option, to_stderr


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
    from helmdeck_dspy.bench.bfcl.lever_report import table_lines, write_levers
    from helmdeck_dspy.bench.bfcl.lever_table import score_levers
    from helmdeck_dspy.bench.bfcl.levers import load_lever_spec, load_questions, pending_pairs, run_levers

    spec = load_lever_spec(spec_path)
    chosen = {n.strip() for n in only.split(",") if n.strip()} if only else None
    unknown = sorted((chosen or set()) - {c.name for c in spec.config})
    if unknown:
        raise click.BadParameter(f"no config {unknown[0]!r} in {spec_path}", param_hint="--only")
    if not score_only:
        todo = pending_pairs(spec, load_questions(spec), chosen)
        to_stderr(f"levers: {len(todo)} calls to make ({spec.lm})")
        with progress_bar(len(todo), "levers", show=progress) as bar:
            made = run_levers(spec, only=chosen, progress=lambda c, q: bar.update(1))
        to_stderr("made " + ", ".join(f"{k} {v}" for k, v in made.items()))
    rows = score_levers(spec)
    if not rows:
        to_stderr(f"levers: no answered question yet in {spec.folder}; nothing written")
        return
    written = write_levers(spec, rows)
    to_stderr(f"wrote {', '.join(str(p) for p in written)}")
    for line in table_lines(rows):
        click.echo(line)
