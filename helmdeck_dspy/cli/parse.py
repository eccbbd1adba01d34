"""``helmdeck-dspy parse``: decode one completion, or a JSONL batch of them, the way the planner does."""

from __future__ import annotations

import json

import click

from helmdeck_dspy.cli.options import emit_json, json_option, print_table
from helmdeck_dspy.errors import DataFileError


@click.command("parse")
@click.argument("source", required=False, default="-", type=click.Path(allow_dash=True, dir_okay=False, exists=True))
@click.option("--finish-reason", default=None, help="The provider's finish_reason (any spelling).")
@click.option("--reasoning-content", default=None, help="A separate reasoning field, if the provider sent one.")
@click.option(
    "--batch", is_flag=True,
    help="SOURCE is JSONL: one {content, finish_reason?, reasoning_content?, tool_calls?, id?} per line "
         "(tool_calls in any provider's shape); prints a table.",
)
@json_option("Print one JSON object (outcome, cause, value, ...).")
def parse_cmd(source: str, finish_reason: str | None, reasoning_content: str | None, batch: bool, as_json: bool) -> None:
    """Decode a completion from SOURCE (a file, or - for stdin) the way the planner does.

    Exits 0 whether or not a plan came out; the outcome says which.
    """
    from helmdeck_dspy.decoding.parsing import parse_completion
    from helmdeck_dspy.domain import MAX_CONTEXT_FILE_BYTES
    from helmdeck_dspy.io.datafiles import read_text_limited

    if batch:
        _parse_batch(source, as_json)
        return
    text = read_text_limited(source, MAX_CONTEXT_FILE_BYTES, "SOURCE")
    result = parse_completion(text, finish_reason, reasoning_content)
    if as_json:
        emit_json(result.to_json_dict())
        return
    click.echo(f"outcome        {result.outcome}")
    click.echo(f"cause          {result.cause or '-'}")
    click.echo(f"finish_reason  {result.finish_reason} (raw: {result.finish_reason_raw!r})")
    click.echo(f"reasoning      {'yes' if result.saw_reasoning else 'no'} ({result.reasoning_chars} chars)")
    click.echo(f"notes          {', '.join(result.notes) or '-'}")
    if result.error:
        click.echo(f"error          {result.error}")
    if result.plan is not None:
        click.echo(f"steps          {len(result.plan.steps)}")
        for i, step in enumerate(result.plan.steps, 1):
            click.echo(f"  {i}. {step.tool or '(no tool)'} {json.dumps(step.args, ensure_ascii=False)}")


def _parse_batch(source: str, as_json: bool) -> None:
    """Decode every line of the JSONL file ``source``; print a table, or a JSON list with ``as_json``."""
    from helmdeck_dspy.decoding.parsing import parse_completion
    from helmdeck_dspy.io.jsonl import iter_jsonl

    if source == "-":
        raise click.UsageError("--batch needs a file path")
    rows, out = [], []
    for line_no, rec in iter_jsonl(source):
        content = rec.get("content")
        if content is not None and not isinstance(content, str):
            raise DataFileError(source, f"'content' must be a string, got {type(content).__name__}", line=line_no)
        r = parse_completion(content, rec.get("finish_reason"), rec.get("reasoning_content"), tool_calls=rec.get("tool_calls"))
        label = str(rec.get("id", line_no))
        out.append({"id": label, **r.to_json_dict()})
        steps = [s.tool for s in r.plan.steps] if r.plan is not None else []
        rows.append([label, r.finish_reason_raw or "-", r.outcome, r.cause or "-", ", ".join(r.notes) or "-",
                     " > ".join(steps) or "-"])
    if as_json:
        emit_json(out)
        return
    print_table(["id", "finish", "outcome", "cause", "notes", "steps"], rows)
