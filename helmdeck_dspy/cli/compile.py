"""``helmdeck-dspy compile``: compile the plan program for one tier and variant, or all six."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from helmdeck_dspy.cli.options import (
    CallBar,
    budgets_option,
    emit_json,
    json_option,
    lm_option,
    mlflow_options,
    model_id,
    progress_option,
    resume_option,
    seed_option,
    temperature_option,
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
@click.option("--model", "-m", "model", callback=model_id, default=None,
              help="Compile the program for this model id (under its own budget row), saved as models/SLUG/VARIANT.json; "
                   "--lm is the model that answers. Without --variant: both variants.")
@click.option("--optimizer", type=click.Choice(["fit", "bootstrap", "mipro", "gepa"]), default="fit", show_default=True)
@lm_option("LiteLLM model string, replay:PATH or sim:PROFILE (fit needs none).")
@click.option("--teacher-lm", "--reflection-lm", "teacher_lm", default=None,
              help="A stronger LM that bootstraps demos, proposes MIPROv2's instructions and makes GEPA's reflections "
                   "(default: --lm).")
@temperature_option
@click.option("--settings", "settings_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="TOML with [optimizer...] tables replacing the bundled optimizer settings (eval/compile.toml).")
@click.option("--valset", type=click.IntRange(0), default=None,
              help="Score and validate on the first N dev tasks (default: the settings' valset; 0 = all).")
@click.option("--knn-demos", type=click.IntRange(0), default=0, show_default=True,
              help="Save a demo pool of the train tasks in the program: each request then gets its K nearest "
                   "(BM25) as demos, besides the compiled ones.")
@click.option("--decline-slot", is_flag=True, default=False,
              help="With --knn-demos: when none of a request's K nearest demos declines, the last gives way to the "
                   "nearest that does.")
@click.option("--decline-gate", is_flag=True, default=False,
              help="With --decline-slot: open the slot only for requests the catalog matches (BM25) less closely "
                   "than any train or dev (valset) task a tool serves.")
@click.option("--history-traces", "history_traces", type=click.Path(dir_okay=False, exists=True), multiple=True,
              help="A trace file the planner recorded (plan --record): its plans that plan history lists as accepted "
                   "join the --knn-demos pool (repeatable).")
@click.option("--history-db", "history_db", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The plan-history database for --history-traces (default: this install's).")
@budgets_option
@progress_option
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
    tier: str | None, variant: str | None, compile_all: bool, model: str | None, optimizer: str, lm_spec: str | None,
    teacher_lm: str | None, temperature: float | None, settings_path: str | None, valset: int | None, knn_demos: int,
    decline_slot: bool, decline_gate: bool, history_traces: tuple[str, ...], history_db: str | None, budgets_path: str | None, progress: bool | None, train_path: str | None, dev_path: str | None,
    out_root: str | None, seed: int, use_mlflow: bool, tracking_uri: str | None, resume: bool | None, as_json: bool,
) -> None:
    """Compile the plan program for a tier and prompt variant (or --all six), or for one --model.

    Before an optimizer that calls an LM starts, the calls it will make are estimated from its
    settings and the data sizes; a progress bar then counts them (live and cached apart). An
    interrupted compile run again gets the answers it already had from DSPy's response cache.
    """

    if model is not None:
        if compile_all or tier:
            raise click.UsageError("--model compiles a model's own program: not with --tier or --all")
        if not lm_spec:
            raise click.UsageError("--model needs --lm: the model that answers while compiling")
        targets: list[tuple[str | None, str]] = [(None, v) for v in ([variant] if variant else VARIANTS)]
    elif budgets_path:
        raise click.UsageError("--budgets gives a --model's budget row; tier programs use their tier's budget_model")
    elif compile_all == bool(tier or variant):
        raise click.UsageError("give --tier and --variant, or --all, or --model")
    elif compile_all:
        targets = [(t, v) for t in TIERS for v in VARIANTS]
    elif tier and variant:
        targets = [(tier, variant)]
    else:
        raise click.UsageError("--tier and --variant go together")
    # deferred: compiling imports dspy, which --help and the other commands must not load
    from helmdeck_dspy.compilation.request import CompileOptions
    from helmdeck_dspy.compilation.runs import compile_programs
    from helmdeck_dspy.compilation.settings import load_optimizer_settings

    settings = load_optimizer_settings(settings_path)
    if valset is not None:
        settings = settings.model_copy(update={"valset": valset})

    bar = CallBar(progress)

    def show(r: CompileResult) -> None:
        bar.close()
        name = f"model {r.model}" if r.model else f"tier {r.tier}"
        if r.skipped:
            to_stderr(f"{name} {r.variant}: skipped, already compiled from the same inputs ({r.compiled_at}) -> {r.path}")
        elif not as_json:
            before = "-" if r.dev_score_before is None else f"{r.dev_score_before:.3f}"
            after = "-" if r.dev_score_after is None else f"{r.dev_score_after:.3f}"
            cached = f" (+{r.cached_calls} cached)" if r.cached_calls else ""
            click.echo(f"{name} {r.variant:11} {optimizer:9} demos {r.demos}  prompt {r.prompt_tokens} tok  "
                       f"dev {before} -> {after}  LM calls {r.lm_calls}{cached} of ~{r.estimated_calls} estimated  "
                       f"{r.seconds:.1f}s  -> {r.path}")

    options = CompileOptions(model=model, optimizer=optimizer, lm=lm_spec, teacher_lm=teacher_lm, seed=seed,
                             temperature=temperature, settings=settings, knn_demos=knn_demos, decline_slot=decline_slot,
                             decline_gate=decline_gate, history_traces=tuple(Path(t) for t in history_traces),
                             history_store=Path(history_db) if history_db else None,
                             out_root=Path(out_root) if out_root else None)
    results = compile_programs(
        targets, options, train_path=train_path, dev_path=dev_path, budgets=budgets_path, resume=resume,
        mlflow=use_mlflow, tracking_uri=tracking_uri, notify=to_stderr, on_result=show, on_call=bar,
    )
    if as_json:
        emit_json([r.model_dump() for r in results])
