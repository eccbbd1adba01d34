"""``helmdeck-dspy bench e2e``: the end-to-end study, the planner's loop against the model alone's
over six real MCP servers, scored by what the tools did."""

from __future__ import annotations

from pathlib import Path

import click

from helmdeck_dspy.cli.options import FiniteFloat, api_base_option, lm_option, model_id
from helmdeck_dspy.domain import MAX_TIMEOUT_S


@click.command("e2e")
@click.option("--model", "-m", callback=model_id, default=None, help="Model id to run (its budget row decides the planner).")
@lm_option()
@api_base_option("API base URL for an OpenAI-compatible endpoint.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="experiments/e2e/study", show_default=True,
              help="Where results.jsonl, traces/ and the table go (resumed when it exists).")
@click.option("--tasks", "tasks_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The tasks (default: the bundled eval/e2e/tasks.jsonl).")
@click.option("--only", default=None, help="Comma-separated task ids or types to run.")
@click.option("--split", type=click.Choice(["all", "dev", "test"]), default="all", show_default=True,
              help="Run the dev or test half only (a fixed half by a hash of the task id).")
@click.option("--arms", default="planner,alone", show_default=True,
              help="Which arms, in order: planner, alone, or a lever's arm (planner-fill: placeholder paths filled, "
                   "and planner-recheck: a declined first plan asked again over the top 10 tools; both now the planner's "
                   "defaults too).")
@click.option("--max-steps", type=click.IntRange(1, 100), default=8, show_default=True)
@click.option("--time-cap", "time_cap_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S), default=600.0,
              show_default=True, help="Seconds one task may take.")
@click.option("--npm-dir", type=click.Path(file_okay=False), default=".mcp-servers", show_default=True,
              help="Where the npm servers (filesystem, memory) are installed.")
@click.option("--sqlite-command", type=click.Path(dir_okay=False), default=".mcp-servers/sqlite/bin/mcp-server-sqlite",
              show_default=True, help="mcp-server-sqlite, in an environment of its own (it needs the MCP SDK 1.x).")
@click.option("--table-only", is_flag=True, help="Only write the table from the results there are.")
def e2e_cmd(model: str | None, lm_spec: str | None, api_base: str | None, out_dir: str, tasks_path: str | None,
            only: str | None, split: str, arms: str, max_steps: int, time_cap_s: float, npm_dir: str, sqlite_command: str,
            table_only: bool) -> None:
    """Run each task in a fresh sandbox under each arm for MODEL (resumable), then write the table.

    The options make the same run spec a study plan's ``*.e2e.toml`` step holds (bench.e2e.spec)."""
    from helmdeck_dspy.bench.e2e.report import write_table
    from helmdeck_dspy.bench.e2e.spec import E2ESpec, run_e2e_spec
    from pydantic import ValidationError

    from helmdeck_dspy.errors import validation_message

    out = Path(out_dir)
    if table_only:
        results = out / "results.jsonl"
        if not results.exists():
            raise click.UsageError(f"no results in {out}")
        table = write_table(results, out)
    else:
        if model is None:
            raise click.UsageError("--model is required unless --table-only")
        fields = {"model": model, "lm": lm_spec or model, "api_base": api_base, "out": str(out.absolute()),
                  "tasks": str(Path(tasks_path).absolute()) if tasks_path else None, "split": split,
                  "only": [w.strip() for w in (only or "").split(",") if w.strip()],
                  "arms": [a.strip() for a in arms.split(",") if a.strip()], "max_steps": max_steps,
                  "time_cap_s": time_cap_s, "npm_dir": npm_dir, "sqlite_command": sqlite_command}
        try:
            spec = E2ESpec.model_validate(fields)
        except ValidationError as exc:
            raise click.UsageError(validation_message(exc)) from None
        tasks, digest = spec.selected()
        click.echo(f"{len(tasks)} tasks (sha256 {digest[:12]}), arms {','.join(spec.arms)}, model {model}, lm {spec.lm}")

        def progress(r, i, n):
            mark = "ok  " if r.success else "FAIL"
            click.echo(f"[{i}/{n}] {mark} {r.arm:7} {r.task_id:16} {len(r.steps)} call(s), {r.tool_errors} error(s), "
                       f"{r.stopped_because}, {r.seconds:.1f} s", err=True)

        table = run_e2e_spec(spec, progress)
    for name, m in table["models"].items():
        for arm, c in m["comparisons"].items():  # every planner arm the results hold, paired with the model alone
            p = c["paired"]
            if p["n"]:
                click.echo(f"{name}: {arm} {p['planner']}/{p['n']}, alone {p['alone']}/{p['n']}, difference "
                           f"{100 * p['diff']:+.1f} points [{100 * p['ci'][0]:+.1f}, {100 * p['ci'][1]:+.1f}]")
    click.echo(f"wrote {out / 'table.md'}, {out / 'table.json'}, {out / 'success-by-type.png'}")
