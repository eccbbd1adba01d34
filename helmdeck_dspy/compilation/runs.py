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
from helmdeck_dspy.compilation.optimizers import Optimizer, check_optimizer
from helmdeck_dspy.compilation.settings import OptimizerSettings
from helmdeck_dspy.domain import TIERS, VARIANTS
from helmdeck_dspy.errors import InputError
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
    *,
    model: str | None = None,
    optimizer: Optimizer = "fit",
    lm_spec: str | None = None,
    teacher_lm: str | None = None,
    train_path: str | Path | None = None,
    dev_path: str | Path | None = None,
    out_root: str | Path | None = None,
    seed: int = 0,
    temperature: float | None = None,
    settings: OptimizerSettings | None = None,
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
        targets: The (tier, variant) programs to compile (tier None with ``model``).
        model: Compile these variants as ``model``'s own programs, under its budget row.
        optimizer: ``fit`` (no LM), ``bootstrap``, ``mipro`` or ``gepa``.
        lm_spec: The task LM (``sim:auto``: each tier's simulator profile).
        teacher_lm: The teacher / prompt / reflection LM (default: ``lm_spec``).
        train_path / dev_path: Task JSONL files (default: the bundled train and dev splits).
        out_root: Where the programs, the manifest and the run marker go (default: the bundled ``compiled/``).
        seed: Passed to the LM and the optimizers.
        temperature: The task LM's sampling temperature (None: the endpoint's).
        settings: Optimizer settings (default: ``eval/compile.toml``'s).
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
    targets = list(targets)
    for tier, variant in targets:
        if (tier not in TIERS and not (model and tier is None)) or variant not in VARIANTS:
            raise InputError(f"unknown tier/variant {tier}/{variant}")
    check_optimizer(optimizer, lm_spec)
    train = load_tasks(path=train_path) if train_path else None
    dev = load_tasks(path=dev_path) if dev_path else None
    root = Path(out_root) if out_root else None
    table = load_budget_table(budgets) if model else None
    run_args = {"targets": targets, "model": model, "optimizer": optimizer, "lm": lm_spec, "teacher_lm": teacher_lm,
                "train": train_path, "dev": dev_path, "seed": seed, "temperature": temperature,
                "settings": settings.model_dump() if settings else None}
    interrupted = start_run(run_args, root)
    if resume is None:
        resume = interrupted
        if interrupted and notify is not None:
            notify(RESUMING)
    results = []
    for tier, variant in targets:
        r = compile_program(tier, variant, model=model, optimizer=optimizer, lm_spec=lm_spec, train=train, dev=dev,
                            out_root=root, teacher_lm_spec=teacher_lm, seed=seed, temperature=temperature, resume=resume,
                            settings=settings, budgets=table, notify=notify, on_call=on_call)
        results.append(r)
        if mlflow and not r.skipped:
            _log_to_mlflow(r, manifest_path(root).parent / r.path, tracking_uri)
        if on_result is not None:
            on_result(r)
    finish_run(root)
    return results


def _log_to_mlflow(result: CompileResult, program_file: Path, tracking_uri: str | None) -> str:
    """Log a compiled program: its numbers (estimated and actual calls, tokens, scores, time) as
    metrics, the rest of its entry as params."""
    entry = result.model_dump(exclude={"test"})
    metrics = {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None}
    params = {k: v for k, v in entry.items() if k not in metrics}
    return log_compile_run(params, metrics, program_file, tracking_uri=tracking_uri)
