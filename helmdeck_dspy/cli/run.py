"""``helmdeck-dspy run``: plan an intent over real MCP servers, execute it, re-plan, print each step."""

from __future__ import annotations

import json
from typing import Any, cast

import click

from helmdeck_dspy.cli.options import (
    FiniteFloat,
    api_base_option,
    budgets_option,
    check_source_options,
    emit_json,
    force_option,
    header_option,
    env_option,
    json_option,
    lm_option,
    model_id,
    not_empty,
    pairs,
    plan_sampling,
    program_option,
    strategy_option,
    timeout_option,
    to_stderr,
    tool_sources,
    variant_option,
)
from helmdeck_dspy.domain import DEFAULT_LOOP, LOOPS, MAX_TIMEOUT_S, Loop

TRACE_FORMATS = {".json": "json"}
FINISHED = ("done", "no_steps", "dry_run")
"""How a run may stop and exit 0; any other stop (a failed plan call, a refused or failed server,
a cap) exits 1."""
SHOWN_CHARS = 300
"""How much of a tool's result is printed per step (the trace keeps it whole)."""


@click.command("run")
@click.argument("intent", callback=not_empty)
@click.option("--tools", "sources", multiple=True, required=True, metavar="SOURCE", callback=tool_sources,
              help="An MCP server to plan over and run tools on: mcp+stdio:'COMMAND ARGS' or mcp+http:URL, "
                   "optionally LABEL=SOURCE (repeatable).")
@click.option("--model", "-m", callback=model_id, required=True, help="Model id to plan for (decides budget, tier and variant).")
@lm_option()
@api_base_option("API base URL for an OpenAI-compatible endpoint (vLLM, llama.cpp...).")
@variant_option(help="Plan the whole task at once (full_steps) or one step at a time (single_pick); default: the budget row's.")
@strategy_option
@plan_sampling
@click.option("--yes", "-y", is_flag=True, help="Run tools that are not read-only without asking.")
@click.option("--trust", "trusted", multiple=True, metavar="LABEL",
              help="Honour this server's read-only annotations: its read-only tools run without asking (repeatable; "
                   "untrusted servers' tools are all asked about).")
@click.option("--dry-run", is_flag=True, help="Print the plan; run nothing.")
@click.option("--loop", "loop", type=click.Choice(LOOPS), default=DEFAULT_LOOP, show_default=True,
              help="fallback: where the first plan has nothing to run, the model's own tool-calling conversation "
                   "(its calls checked by the planner) takes the run over; replan: the planner's re-plan loop only.")
@click.option("--max-steps", type=click.IntRange(1, 100), default=8, show_default=True, help="The most tool calls.")
@click.option("--time-cap", "time_cap_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S), default=600.0,
              show_default=True, help="Seconds the whole run may take.")
@click.option("--call-timeout", "call_timeout_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S),
              default=60.0, show_default=True, help="Seconds one tool call may take before its server is taken as hung.")
@click.option("--start-timeout", "start_timeout_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S),
              default=60.0, show_default=True, help="Seconds each server may take to start and list its tools.")
@header_option
@env_option
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None,
              help="Write the whole run (plans, steps, results) to this .json file.")
@force_option("the --trace file")
@timeout_option
@budgets_option
@program_option
@json_option("Print the run trace as JSON instead of the steps.")
def run_cmd(
    intent: str, sources: tuple[str, ...], model: str, lm_spec: str | None, api_base: str | None,
    variant: str | None, strategy: str | None, temperature: float | None, seed: int | None, yes: bool,
    trusted: tuple[str, ...], dry_run: bool, loop: str,
    max_steps: int, time_cap_s: float, call_timeout_s: float, start_timeout_s: float, headers: tuple[str, ...],
    env: tuple[str, ...], trace_path: str | None, force: bool, timeout_s: float | None, budgets_path: str | None,
    program: str | None, as_json: bool,
) -> None:
    """Plan INTENT over the tools of the --tools servers, run each step on its server and re-plan
    after an error or when a step needs an earlier result, until the model expects no more.

    Tools annotated read-only by a --trust server run freely; any other is asked about on the
    terminal (denied when there is none to ask on) unless --yes.
    """
    from helmdeck_dspy.io.atomic import atomic_write_text
    from helmdeck_dspy.io.outputs import check_output
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import resolve_resilience
    from helmdeck_dspy.run.approval import allow_all, ask_on_terminal
    from helmdeck_dspy.run.executor import McpExecutor
    from helmdeck_dspy.run.sessions import ToolSessions
    from helmdeck_dspy.errors import UsageValueError
    from helmdeck_dspy.run.trace import run_intent

    header_values, env_values = pairs(headers, ":", "--header"), pairs(env, "=", "--env")
    check_source_options(sources, headers, env)
    if trace_path is not None:
        check_output(trace_path, formats=TRACE_FORMATS, force=force, option="--trace")
    config = resolve_resilience(None, timeout_s=timeout_s, retries=None, fallbacks=(), on_length=None)
    with ToolSessions(sources, headers=header_values, env=env_values, timeout_s=start_timeout_s) as sessions:
        catalog = sessions.catalog()
        planner = Planner.for_model(model, lm=lm_spec, catalog=catalog, budgets=budgets_path, api_base=api_base,
                                    variant=variant, answer_strategy=strategy, temperature=temperature, seed=seed,
                                    retry=config.retry, program=program)
        unknown = sorted(set(trusted) - {s.label for s in sessions.sources})
        if unknown:
            raise UsageValueError(f"--trust {unknown[0]!r} names no --tools source; labels: "
                                  f"{sorted(s.label for s in sessions.sources)}", argument="trust")
        executor = McpExecutor(sessions, catalog, approve=allow_all if yes else ask_on_terminal,
                               call_timeout_s=call_timeout_s, trusted=frozenset(trusted))
        if not as_json:
            _print_header(planner, sessions, lm_spec or model)
        trace = run_intent(planner, intent, executor, max_steps=max_steps, time_cap_s=time_cap_s, dry_run=dry_run,
                           on_plan=None if as_json else _print_plan, on_step=None if as_json else _print_step,
                           loop=cast(Loop, loop))
    if trace_path is not None:
        atomic_write_text(trace_path, json.dumps(trace.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n")
    if as_json:
        emit_json(trace.model_dump(mode="json"))
    else:
        _print_end(trace)
    if trace.loop.stopped_because not in FINISHED:
        if trace.loop.error and as_json:
            to_stderr(f"error: {trace.loop.error}")
        raise SystemExit(1)


def _print_header(planner: Any, sessions: Any, lm: str) -> None:
    from helmdeck_dspy.engines.lm_spec import trace_source
    from helmdeck_dspy.traces.record import is_simulated, source_kind

    kind = source_kind(trace_source(lm))
    said = f"{lm} (SIMULATED: not the model)" if is_simulated(kind) else f"{lm} ({kind})"
    click.echo(f"model {planner.budget.model}  tier {planner.budget.tier}  variant {planner.variant}  lm {said}")
    click.echo("servers " + ", ".join(f"{s.label} ({len(s.tools.tools)} tools)" for s in sessions.sources))


def _print_plan(result: Any) -> None:
    if not result.ok:
        click.echo(f"no plan: {result.failure_cause} ({result.error})")
        return
    steps = result.steps
    more = ", more steps likely" if result.more_steps_likely else ""
    click.echo(f"plan: {len(steps)} step(s){more}" if steps else "plan: no steps (no tool fits, or nothing is left to do)")
    for step in steps:
        click.echo(f"  {step.tool} {json.dumps(step.args, ensure_ascii=False)}")


def _print_step(step: Any, outcome: Any) -> None:
    status = "refused" if outcome.denied else "error" if outcome.error else "ok"
    click.echo(f"{step.order}. {step.tool} {json.dumps(step.args, ensure_ascii=False)} -> {status} "
               f"({outcome.seconds:.2f} s)")
    text = " ".join(outcome.text.split())
    if text:
        click.echo(f"   {text[:SHOWN_CHARS]}{'...' if len(text) > SHOWN_CHARS else ''}")


def _print_end(trace: Any) -> None:
    loop = trace.loop
    if loop.error:
        click.echo(f"error: {loop.error}")
    click.echo(f"stopped: {loop.stopped_because} after {len(loop.executed)} step(s), {len(loop.plans)} plan call(s), "
               f"{loop.tool_errors} tool error(s), {loop.seconds:.1f} s")
