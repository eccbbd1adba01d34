"""A compile run over several programs: :func:`compile_programs`, and its run marker.

A run writes ``ROOT/.compile-run.json`` (its arguments) before the first program and removes it
after the last. Finding the marker with the same arguments means the last such run was cut off,
and by default the new run then resumes: programs already compiled from the same inputs are
skipped (see :mod:`helmdeck_dspy.compilation.compiler`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.compilation.compiler import compile_program
from helmdeck_dspy.compilation.manifest import CompileResult
from helmdeck_dspy.compilation.meter import CallMeter
from helmdeck_dspy.compilation.request import CompileOptions, CompileRequest
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.program.store import manifest_path
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.tracking.mlflow import log_compile_run

RUN_MARKER = ".compile-run.json"
RESUMING = "resuming an interrupted compile: programs already compiled from the same inputs are skipped"


def start_run(args: dict[str, Any], root: Path | None = None) -> bool:
    """Mark a compile run as started; True when an identical run was interrupted before finishing.

    The marker (``ROOT/.compile-run.json``) holds the run's arguments and is removed by
    :func:`finish_run`; finding it with the same arguments means the last such run was cut off.
    """
    path = (root or compiled_dir()) / RUN_MARKER
    text = json.dumps(args, sort_keys=True, default=str)
    interrupted = False
    try:
        interrupted = path.read_text(encoding="utf-8").strip() == text
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write_text(path, text + "\n")
    return interrupted


def finish_run(root: Path | None = None) -> None:
    """Remove the run marker: the run finished."""
    ((root or compiled_dir()) / RUN_MARKER).unlink(missing_ok=True)


def compile_programs(
    targets: Iterable[tuple[str | None, str]],
    options: CompileOptions | None = None,
    *,
    train_path: str | Path | None = None,
    dev_path: str | Path | None = None,
    budgets: str | Path | None = None,
    resume: bool | None = None,
    mlflow: bool = False,
    tracking_uri: str | None = None,
    notify: Callable[[str], None] | None = None,
    on_result: Callable[[CompileResult], None] | None = None,
    on_call: Callable[[CallMeter], None] | None = None,
) -> list[CompileResult]:
    """Compile each (tier, variant) of ``targets`` in order, as one run.

    Args:
        targets: The (tier, variant) programs to compile (tier None with ``options.model``).
        options: How to compile them (optimizer, LMs, seed, output root; see
            :class:`~.request.CompileOptions`); default: ``fit`` into the bundled ``compiled/``.
        train_path / dev_path: Task JSONL files (default: the bundled train and dev splits).
        budgets: The budget table a model's row is read from (default: the bundled one).
        resume: Skip programs already compiled from the same inputs. None does so only when this
            run continues an interrupted one with the same arguments (and says so via ``notify``).
        mlflow: Log each compiled (not skipped) program to MLflow.
        tracking_uri: The MLflow tracking URI (None: the local SQLite store).
        notify: Called with one-line messages about the run.
        on_result: Called with each program's result (skipped ones included) as it is done.
        on_call: Called after every LM call with the compile's :class:`CallMeter`.

    Raises:
        InputError: an unknown tier, variant or optimizer, or an optimizer that needs an LM without one.
        DataFileError: a task file, the manifest or a compiled program is bad.
    """
    options = options or CompileOptions()
    train = load_tasks(path=train_path) if train_path else None
    dev = load_tasks(path=dev_path) if dev_path else None
    table = load_budget_table(budgets) if options.model else None
    requests = [CompileRequest(tier=tier, variant=variant, options=options, train=train, dev=dev, budgets=table)
                for tier, variant in targets]
    for request in requests:
        request.check()
    run_args = {"targets": [(r.tier, r.variant) for r in requests],
                **options.model_dump(mode="json", exclude={"out_root"}), "train": train_path, "dev": dev_path}
    interrupted = start_run(run_args, options.out_root)
    if resume is None:
        resume = interrupted
        if interrupted and notify is not None:
            notify(RESUMING)
    results = []
    for request in requests:
        r = compile_program(request, resume=resume, notify=notify, on_call=on_call)
        results.append(r)
        if mlflow and not r.skipped:
            _log_to_mlflow(r, manifest_path(options.out_root).parent / r.path, tracking_uri)
        if on_result is not None:
            on_result(r)
    finish_run(options.out_root)
    return results


def _log_to_mlflow(result: CompileResult, program_file: Path, tracking_uri: str | None) -> str:
    """Log a compiled program: its numbers (estimated and actual calls, tokens, scores, time) as
    metrics, the rest of its entry as params."""
    entry = result.model_dump(exclude={"test"})
    metrics = {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None}
    params = {k: v for k, v in entry.items() if k not in metrics}
    return log_compile_run(params, metrics, program_file, tracking_uri=tracking_uri)
