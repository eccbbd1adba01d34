"""``helmdeck-dspy compile``: compile the plan program for one tier and variant, or all six."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from helmdeck_dspy.cli.options import (
    emit_json,
    json_option,
    lm_option,
    mlflow_options,
    resume_option,
    seed_option,
    tier_option,
    to_stderr,
    variant_option,
)

if TYPE_CHECKING:
    from helmdeck_dspy.compilation.manifest import CompileResult
from helmdeck_dspy.domain import TIERS, VARIANTS


@click.command("compile")
@tier_option()
@variant_option()
@click.option("--all", "compile_all", is_flag=True, help="All six (tier, variant) programs.")
@click.option("--optimizer", type=click.Choice(["fit", "bootstrap", "mipro", "gepa"]), default="fit", show_default=True)
@lm_option("LiteLLM model string, replay:PATH or sim:PROFILE (fit needs none).")
@click.option("--reflection-lm", default=None, help="GEPA's reflection LM (default: --lm).")
@click.option("--train", "train_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Train tasks JSONL (default: the bundled train split).")
@click.option("--dev", "dev_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Dev tasks JSONL (default: the bundled dev split).")
@click.option("--out", "out_root", type=click.Path(file_okay=False), default=None,
              help="Where tier_T/V.json and manifest.json go (default: the bundled compiled/).")
@seed_option
@mlflow_options("Log each compile to MLflow.")
@resume_option("Skip programs whose manifest entry was compiled from the same inputs (default: only when "
               "continuing an interrupted run); --no-resume compiles everything again.")
@json_option("Print the manifest entries as JSON.")
def compile_cmd(
    tier: str | None, variant: str | None, compile_all: bool, optimizer: str, lm_spec: str | None,
    reflection_lm: str | None, train_path: str | None, dev_path: str | None, out_root: str | None, seed: int,
    use_mlflow: bool, tracking_uri: str | None, resume: bool | None, as_json: bool,
) -> None:
    """Compile the plan program for a tier and prompt variant (or --all six).

    Programs are the unit of resumption: DSPy's optimizers cannot continue a half-done run, so an
    interrupted --all redoes at most the program it was compiling.
    """

    if compile_all == bool(tier or variant):
        raise click.UsageError("give --tier and --variant, or --all")
    if not compile_all and not (tier and variant):
        raise click.UsageError("--tier and --variant go together")
    targets = [(t, v) for t in TIERS for v in VARIANTS] if compile_all else [(tier, variant)]
    # deferred: compiling imports dspy, which --help and the other commands must not load
    from helmdeck_dspy.compilation.runs import compile_programs

    def show(r: CompileResult) -> None:
        if r.skipped:
            to_stderr(f"tier {r.tier} {r.variant}: skipped, already compiled from the same inputs ({r.compiled_at}) "
                      f"-> {r.path}")
        elif not as_json:
            before = "-" if r.dev_score_before is None else f"{r.dev_score_before:.3f}"
            after = "-" if r.dev_score_after is None else f"{r.dev_score_after:.3f}"
            click.echo(f"tier {r.tier} {r.variant:11} {optimizer:9} demos {r.demos}  prompt {r.prompt_tokens} tok  "
                       f"dev {before} -> {after}  LM calls {r.lm_calls}  {r.seconds:.1f}s  -> {r.path}")

    results = compile_programs(
        targets, optimizer=optimizer, lm_spec=lm_spec, reflection_lm=reflection_lm, train_path=train_path,
        dev_path=dev_path, out_root=Path(out_root) if out_root else None, seed=seed, resume=resume,
        mlflow=use_mlflow, tracking_uri=tracking_uri, notify=to_stderr, on_result=show,
    )
    if as_json:
        emit_json([r.model_dump() for r in results])
