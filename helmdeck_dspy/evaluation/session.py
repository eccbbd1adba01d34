"""One evaluation run as the CLI (and any other front end) asks for it: :func:`run_eval`.

It wraps :func:`~helmdeck_dspy.evaluation.runner.evaluate` with what a run owns beyond the
numbers: the default trace sets, loading the catalog and gold tasks from paths, the checkpoint in
the output directory (created, resumed, removed once the report is written), the report and plot
files, and MLflow logging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.errors import InputError
from helmdeck_dspy.evaluation.checkpoint import checkpoint_path, clear_checkpoint
from helmdeck_dspy.evaluation.output import check_out_dir, write_outputs
from helmdeck_dspy.evaluation.report import EvalReport
from helmdeck_dspy.evaluation.runner import evaluate
from helmdeck_dspy.io.jsonl import OnError
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.tasks import PlanTask, load_tasks
from helmdeck_dspy.tracking.mlflow import log_eval_run


@dataclass
class EvalRun:
    """What :func:`run_eval` did.

    Attributes:
        report: The evaluation report.
        plots: The plot files written into the output directory (names relative to it).
        mlflow_run_id: The MLflow run the evaluation was logged to, when it was.
        checkpoint: Where progress was checkpointed while the run went (removed once the report
            was written); None without an output directory.
    """

    report: EvalReport
    plots: list[str] = field(default_factory=list)
    mlflow_run_id: str | None = None
    checkpoint: Path | None = None


def bundled_trace_paths() -> list[Path]:
    """The trace sets shipped with the package (``eval/traces/*.jsonl``), sorted; a recording still
    in progress (``*.partial.jsonl``, see :func:`~helmdeck_dspy.recording.trace_sets.partial_path`) is not one."""
    return sorted(p for p in (bundled_dir() / "traces").glob("*.jsonl") if not p.name.endswith(".partial.jsonl"))


def run_eval(
    paths: Sequence[str | Path],
    *,
    out_dir: str | Path | None = None,
    catalog: RoutingGuide | str | Path | None = None,
    tasks: list[PlanTask] | str | Path | None = None,
    workers: int = 1,
    on_error: OnError = "fail",
    progress: bool | None = None,
    resume: bool | None = None,
    notify: Callable[[str], None] | None = None,
    mlflow: bool = False,
    tracking_uri: str | None = None,
    force: bool = False,
) -> EvalRun:
    """Evaluate trace sets, write the report and plots, and log the run to MLflow when asked.

    Args:
        paths: Trace sets (JSONL, Parquet or saved datasets); empty means the bundled ones.
        out_dir: Where ``report.json``, ``report.md`` and the plots go, and where the checkpoint
            lives while the run goes (None: nothing is written and there is no checkpoint).
        catalog: A catalog or its path (None: the bundled catalog).
        tasks: Gold tasks or a JSONL path of them (None: the bundled train, dev and test tasks).
        workers: Processes replaying chunks.
        on_error: ``fail`` stops at the first invalid record; ``skip`` counts it and goes on.
        progress: Show a progress bar (None: when stderr is a terminal).
        resume: None resumes when a checkpoint made from the same inputs and options exists;
            True does the same but needs ``out_dir``; False starts over.
        notify: Called with one-line messages: the checkpoint resumed or ignored, and where
            progress is saved when the run is interrupted.
        mlflow: Log the report, its metrics and the plots to MLflow.
        tracking_uri: The MLflow tracking URI (None: the local SQLite store).
        force: Replace an ``out_dir`` that holds anything but this run's checkpoint (checked
            before any record is read; see :func:`~helmdeck_dspy.evaluation.output.check_out_dir`).

    Raises:
        InputError: no paths given and none bundled, or ``resume=True`` without ``out_dir``.
        OutputRefusedError / OutputUnwritableError: ``out_dir`` may not or cannot be written.
        DataFileError: a trace, catalog or task file is bad (see :func:`~helmdeck_dspy.evaluation.runner.evaluate`).
        KeyboardInterrupt: re-raised after saying where progress is saved (when it is).
    """
    files = [Path(p) for p in paths] or bundled_trace_paths()
    if not files:
        raise InputError("no trace files given and none bundled")
    if resume and out_dir is None:
        raise InputError("resuming needs an output directory (the checkpoint lives there)")
    if out_dir is not None:
        check_out_dir(out_dir, force=force)
    tell = notify or (lambda _msg: None)
    guide = catalog if isinstance(catalog, RoutingGuide) else load_catalog(catalog)
    gold = load_tasks(path=tasks) if isinstance(tasks, (str, Path)) else tasks
    ckpt = checkpoint_path(out_dir) if out_dir is not None else None
    try:
        report = evaluate(
            files, catalog=guide, tasks=gold, workers=workers, on_error=on_error, progress=progress,
            checkpoint=ckpt, resume=resume is not False, notify=tell,
        )
    except KeyboardInterrupt:
        if ckpt is not None and ckpt.exists():
            tell(f"interrupted: progress is saved in {ckpt}; run the same command again to resume")
        raise
    run = EvalRun(report=report, checkpoint=ckpt)
    if out_dir is not None:
        run.plots = write_outputs(report, Path(out_dir), force=force)
    if ckpt is not None:  # set exactly when out_dir is
        clear_checkpoint(ckpt)
    if mlflow:
        out = Path(out_dir) if out_dir is not None else None
        run.mlflow_run_id = log_eval_run(report, out, run.plots, tracking_uri=tracking_uri)
    return run
