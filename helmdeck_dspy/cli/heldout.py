"""``helmdeck-dspy bench heldout``: compile per-model programs and compare them on held-out tasks with the live model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from helmdeck_dspy.cli.options import (
    CallBar,
    emit_json,
    json_option,
    progress_bar,
    progress_option,
    to_stderr,
)
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
    from helmdeck_dspy.bench.heldout.runs import pending_steps, record_config
    from helmdeck_dspy.bench.heldout.spec import load_spec
    from helmdeck_dspy.bench.heldout.table import render_markdown, score_spec, table_json
    from helmdeck_dspy.io.atomic import atomic_write_text

    spec = load_spec(spec_path)
    chosen = [v.strip() for value in only for v in value.split(",") if v.strip()] or None
    unknown = sorted(set(chosen or []) - {c.id for c in spec.config})
    if unknown:
        raise click.UsageError(f"--only: no config {', '.join(unknown)} in {spec_path}")
    steps = [] if score_only else pending_steps(spec, chosen, list(variants) or None)
    for i, (kind, config_id, variant) in enumerate(steps, 1):
        config = spec.get(config_id)
        to_stderr(f"[{i}/{len(steps)}] {kind} ({config_id}) {config.label}: {variant}")
        if kind == "compile":
            _compile(spec, config, variant, progress)
        else:
            n = len(spec.variants) if variant == "both" else 1
            with progress_bar(n * _split_size(spec.split), "record", show=progress) as bar:
                record_config(spec, config, variant, notify=to_stderr, progress=bar.update)
    rows = score_spec(spec)
    folder = Path(spec_path).parent
    atomic_write_text(folder / "table.md", render_markdown(spec, rows))
    atomic_write_text(folder / "table.json", json.dumps(table_json(spec, rows), indent=2) + "\n")
    to_stderr(f"wrote {folder / 'table.md'} and table.json")
    from helmdeck_dspy.bench.heldout.ship import record_test_scores, ship

    recorded = record_test_scores(spec, rows)
    if recorded:
        to_stderr("test scores in the compiled programs' manifests: " + ", ".join(recorded))
    if ship_to:
        written = ship(spec, rows, Path(compiled_root) if compiled_root else None)
        to_stderr("shipped: " + (", ".join(written) if written else
                                 f"nothing: no compiled program beats ({spec.baseline}) beyond its interval"))
    if as_json:
        emit_json(table_json(spec, rows))
    else:
        click.echo(render_markdown(spec, rows))


def _split_size(split: str) -> int:
    from helmdeck_dspy.tasks import load_tasks

    return len(load_tasks(split))


def _compile(spec: Any, config: Any, variant: str, progress: bool | None) -> None:
    from helmdeck_dspy.bench.heldout.runs import compile_config

    bar = CallBar(progress)
    try:
        compile_config(spec, config, variant, notify=to_stderr, on_call=bar)
    finally:
        bar.close()
