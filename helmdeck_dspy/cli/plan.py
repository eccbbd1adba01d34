"""``helmdeck-dspy plan``: plan one intent for a model and print the guarded plan."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import click

from helmdeck_dspy.cli.options import (
    api_base_option,
    budgets_option,
    catalog_option,
    emit_json,
    json_option,
    lm_option,
    max_tokens_option,
    model_id,
    not_empty,
    plan_sampling,
    strategy_option,
    program_option,
    rank_source_option,
    ranker_option,
    retries_option,
    timeout_option,
    to_stderr,
    variant_option,
)

if TYPE_CHECKING:
    from helmdeck_dspy.planning.result import PlanResult


@click.command("plan")
@click.argument("intent", callback=not_empty)
@click.option("--model", "-m", callback=model_id, required=True, help="Model id to plan for (decides budget, tier and variant).")
@lm_option()
@api_base_option("API base URL for an OpenAI-compatible endpoint (vLLM, llama.cpp...).")
@catalog_option
@click.option("--context-file", type=click.Path(dir_okay=False, allow_dash=True, exists=True), default=None,
              help="Pasted material for the request: UTF-8 text, - for stdin, at most 4 MiB.")
@click.option("--record", "record_path", type=click.Path(), default=None,
              help="Append the call as a trace record to this .jsonl file (checked before the call).")
@max_tokens_option()
@variant_option(help="Plan the whole task at once (full_steps) or one step (single_pick); default: the budget row's.")
@strategy_option
@plan_sampling
@ranker_option
@rank_source_option
@click.option("--no-filter", is_flag=True, help="Skip the two-pass LLM filter.")
@click.option("--history/--no-history", default=True, show_default=True, help="Write a plan_history audit row.")
@click.option("--history-prior", is_flag=True, help="Use plan history as a ranking prior in catalog selection.")
@click.option("--fallback", "fallbacks", multiple=True, metavar="MODEL", callback=model_id,
              help="Model to try when the previous one times out, errors or is rate limited (repeatable, in order).")
@click.option("--on-length", type=click.Choice(["none", "single_pick", "raise_cap", "single_pick_then_cap"]),
              default=None, help="What to do when the answer hits the token limit (default: none, or the --resilience file's).")
@timeout_option
@retries_option
@click.option("--resilience", "resilience_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="TOML file with [retry] and [fallback] tables (options above override it).")
@budgets_option
@program_option
@json_option("Print the PlanResult as JSON.")
def plan_cmd(
    intent: str, model: str, lm_spec: str | None, api_base: str | None, catalog_path: str | None,
    context_file: str | None, record_path: str | None, max_tokens: int | None, variant: str | None, strategy: str | None, temperature: float | None, seed: int | None, ranker: str, rank_source: str, no_filter: bool,
    history: bool, history_prior: bool, fallbacks: tuple[str, ...], on_length: str | None, timeout_s: float | None,
    retries: int | None, resilience_path: str | None, budgets_path: str | None, program: str | None, as_json: bool,
) -> None:
    """Plan INTENT for MODEL: select the catalog, call the compiled module, guard the answer."""
    from helmdeck_dspy.domain import MAX_CONTEXT_FILE_BYTES
    from helmdeck_dspy.errors import RecordWriteError
    from helmdeck_dspy.io.datafiles import read_text_limited
    from helmdeck_dspy.io.outputs import JSONL_FORMATS, check_output
    from helmdeck_dspy.planning.bounds import check_output_cap
    from helmdeck_dspy.planning.history import HistoryStore
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import resolve_resilience
    from helmdeck_dspy.planning.result import PlanResult
    from helmdeck_dspy.serve.auth import process_owner

    if record_path is not None:  # before any paid call: a plan that cannot be recorded is not made
        check_output(record_path, formats=JSONL_FORMATS, append=True, option="--record")
    context = read_text_limited(context_file, MAX_CONTEXT_FILE_BYTES, "--context-file") if context_file else None
    config = resolve_resilience(resilience_path, timeout_s=timeout_s, retries=retries, fallbacks=fallbacks,
                                on_length=on_length)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planner = Planner.for_model(
            model, lm=lm_spec, catalog=catalog_path, budgets=budgets_path, api_base=api_base, variant=variant,
            ranker=ranker, rank_source=rank_source, use_filter=not no_filter, max_tokens=max_tokens, record_path=record_path,
            answer_strategy=strategy, temperature=temperature, seed=seed,
            history=HistoryStore() if history or history_prior else None, history_prior=history_prior,
            caller=process_owner(),
            retry=config.retry, fallback=config.fallback, program=program,
        )
        check_output_cap(max_tokens, input_tokens=planner.budget.input_tokens, model=planner.budget.model)
        unrecorded: RecordWriteError | None = None
        try:
            result = planner.plan(intent, context=context)
        except RecordWriteError as exc:  # the plan was made: show it, then say what was not recorded
            if not isinstance(exc.result, PlanResult):
                raise
            result, unrecorded = exc.result, exc
    for w in caught:
        if issubclass(w.category, UserWarning):
            to_stderr(f"warning: {w.message}")
    if as_json:
        emit_json(result.model_dump(mode="json"))
    else:
        _print_result(result, lm_spec or model, exit_on_failure=unrecorded is None)
    if unrecorded is not None:
        raise unrecorded


def _print_result(result: PlanResult, lm_spec: str, exit_on_failure: bool = True) -> None:
    """Print the plan (or why there is none, then exit 1 unless told not to) as text; a simulated
    LM says so."""
    from helmdeck_dspy.engines.lm_spec import trace_source
    from helmdeck_dspy.traces.record import is_simulated, source_kind

    kind = source_kind(trace_source(lm_spec))
    answered = f"  lm {lm_spec} (SIMULATED: not the model)" if is_simulated(kind) else f"  lm {lm_spec} ({kind})"
    strategy = f"  strategy {result.strategy}" + (" (asked once more)" if result.rechecked else "") \
        + (f"  p_decline {result.p_decline:.3g}" if result.p_decline is not None else "") if result.strategy else ""
    click.echo(f"model {result.model}  tier {result.tier}  variant {result.prompt_variant_used}{strategy}{answered}")
    if result.program is not None:
        ref = result.program
        click.echo(f"program {ref.kind}" + (f" {ref.path}" if ref.path else "") + (f" sha256 {ref.sha256[:12]}" if ref.sha256 else ""))
    if result.compaction:
        click.echo(f"catalog {result.compaction.before_bytes} -> {result.compaction.after_bytes} bytes "
                   f"({', '.join(result.compaction.dropped)})")
    if len(result.attempts) > 1:
        for i, a in enumerate(result.attempts, 1):
            click.echo(f"attempt {i}: {a.model} {a.variant} -> {a.cause or 'ok'}"
                       + (f" (HTTP {a.http_status})" if a.http_status else "") + f" in {a.elapsed_ms} ms")
    if not result.ok:
        click.echo(f"no plan: {result.failure_cause} ({result.error})")
        if exit_on_failure:
            raise SystemExit(1)
        return
    if result.answered_by and len(result.attempts) > 1:
        click.echo(f"answered by {result.answered_by} after {len(result.attempts)} attempts")
    click.echo(f"complexity {result.complexity}  parse {result.parse_outcome}"
               + ("  more steps likely" if result.more_steps_likely else ""))
    click.echo(result.rewritten_prompt or "(no steps: nothing in the catalog fits)")
    if result.dropped_steps:
        click.echo(f"({len(result.dropped_steps)} extra step(s) dropped: single_pick returns one)")
