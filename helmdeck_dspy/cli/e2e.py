"""``helmdeck-dspy bench e2e``: an end-to-end study from options, the planner's loop against the
model alone's over six real MCP servers, scored by what the tools did.

The options are written as ``OUT/study.toml`` (an ``[e2e]`` study, :mod:`~helmdeck_dspy.bench.study`)
and run by the one study engine, so ``bench study OUT/study.toml`` resumes and re-scores it."""

from __future__ import annotations

from pathlib import Path

import click

from helmdeck_dspy.cli.options import (FiniteFloat, TerminalBars, api_base_option, lm_option, model_id, not_empty,
                                       progress_option, to_stderr)
from helmdeck_dspy.bench.e2e import MAX_STEPS, TIME_CAP_S
from helmdeck_dspy.domain import MAX_TIMEOUT_S


def e2e_spec_text(model: str, lm: str, api_base: str | None, e2e: dict[str, object]) -> str:
    """The ``study.toml`` of an end-to-end study: the planner as shipped and the model alone, paired.
    The endpoint is written without its credentials (:func:`~helmdeck_dspy.io.redaction.redact_url`):
    the run gets them from the command line, never from the file."""
    from helmdeck_dspy.io.datafiles import toml_value as value
    from helmdeck_dspy.io.redaction import redact_url

    lines = [f"model = {value(model)}", f"lm = {value(lm)}", 'baseline = "alone"', "block = 10"]
    if api_base:
        lines.append(f"api_base = {value(redact_url(api_base))}")
    lines += ["", "[e2e]", *[f"{k} = {value(v)}" for k, v in e2e.items() if v not in (None, ())], "",
              "[[config]]", 'name = "planner"', 'description = "The planner as shipped"', "",
              "[[config]]", 'name = "alone"', 'description = "The model alone"', "plain = true", ""]
    return "\n".join(lines)


@click.command("e2e")
@click.option("--model", "-m", callback=model_id, required=True, help="Model id to run (its budget row decides the planner).")
@lm_option()
@api_base_option("API base URL for an OpenAI-compatible endpoint.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="e2e-study", show_default=True,
              callback=not_empty,
              help="The study's folder: study.toml, a results file per row, traces/ and the table (resumed when it "
                   "holds this study).")
@click.option("--tasks", "tasks_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The tasks (default: the bundled eval/e2e/tasks.jsonl).")
@click.option("--only", default=None, help="Comma-separated task ids or types to run.")
@click.option("--split", type=click.Choice(["all", "dev", "test"]), default="all", show_default=True,
              help="Run the dev or test half only (a fixed half by a hash of the task id).")
@click.option("--max-steps", type=click.IntRange(1, 100), default=MAX_STEPS, show_default=True)
@click.option("--time-cap", "time_cap_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S), default=TIME_CAP_S,
              show_default=True, help="Seconds one task may take.")
@click.option("--npm-dir", type=click.Path(file_okay=False), default=".mcp-servers", show_default=True,
              help="Where the npm servers (filesystem, memory) are installed.")
@click.option("--sqlite-command", type=click.Path(dir_okay=False), default=".mcp-servers/sqlite/bin/mcp-server-sqlite",
              show_default=True, help="mcp-server-sqlite, in an environment of its own (it needs the MCP SDK 1.x).")
@progress_option
def e2e_cmd(model: str, lm_spec: str | None, api_base: str | None, out_dir: str, tasks_path: str | None,
            only: str | None, split: str, max_steps: int, time_cap_s: float, npm_dir: str, sqlite_command: str,
            progress: bool | None) -> None:
    """Run each end-to-end task in a fresh sandbox under the planner and under the model alone for
    MODEL (resumable), then write the paired table into OUT.

    OUT/study.toml records the options; `helmdeck-dspy bench study OUT/study.toml` resumes the
    study and `--score-only` re-scores it."""
    from helmdeck_dspy.bench.study.flow import run_study
    from helmdeck_dspy.bench.study.report import measured, rows_lines
    from helmdeck_dspy.bench.study.spec import load_study_spec
    from helmdeck_dspy.io.atomic import atomic_write_text

    out = Path(out_dir)
    chosen = _chosen_tasks(tasks_path, only, split)
    text = e2e_spec_text(model, lm_spec or model, api_base, {
        "tasks": str(Path(tasks_path).absolute()) if tasks_path else None, "split": split,
        "only": chosen, "max_steps": max_steps,
        "time_cap_s": time_cap_s, "npm_dir": npm_dir, "sqlite_command": sqlite_command})
    path = out / "study.toml"
    if path.exists() and path.read_text(encoding="utf-8") != text:
        raise click.UsageError(f"{path} holds another study: resume it with `helmdeck-dspy bench study {path}`, "
                               "or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    spec = load_study_spec(path)
    if api_base and spec.api_base != api_base:  # the file holds it without its credentials
        spec = spec.model_copy(update={"api_base": api_base})
    report = run_study(spec, notify=to_stderr, bars=TerminalBars(progress))
    click.echo(measured(spec))
    for line in rows_lines(spec, [r for r in report.rows if r.scope == "all"]):
        click.echo(line)


def _chosen_tasks(tasks_path: str | None, only: str | None, split: str) -> list[str] | None:
    """The ``--only`` words (task ids or types), each checked against the tasks: a word that names
    none, or a choice that leaves no task in ``--split``, is a usage error (exit 2)."""
    from helmdeck_dspy.bench.e2e.checks import load_e2e_tasks
    from helmdeck_dspy.io.resources import bundled_dir

    if only is None:
        return None
    words = [w.strip() for w in only.split(",") if w.strip()]
    if not words:
        raise click.BadParameter("names no task id or type", param_hint="--only")
    tasks = load_e2e_tasks(Path(tasks_path) if tasks_path else bundled_dir() / "e2e" / "tasks.jsonl")[0]
    known = {t.id for t in tasks} | {t.type for t in tasks}
    unknown = [w for w in words if w not in known]
    if unknown:
        raise click.BadParameter(f"{', '.join(map(repr, unknown))}: no task has this id or type "
                                 f"(types: {', '.join(sorted({t.type for t in tasks}))})", param_hint="--only")
    if not any((t.id in words or t.type in words) and (split == "all" or t.split == split) for t in tasks):
        raise click.BadParameter(f"selects no task of the {split} half", param_hint="--only")
    return words
