"""Writing an evaluation's files: report.json, report.md and the plots, swapped in as one set."""

from __future__ import annotations

from pathlib import Path

from helmdeck_dspy.evaluation.checkpoint import CHECKPOINT_NAME
from helmdeck_dspy.evaluation.markdown import render_markdown
from helmdeck_dspy.evaluation.plots import write_plots
from helmdeck_dspy.evaluation.report import EvalReport
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.outputs import Output, check_output, staged_directory


def check_out_dir(out_dir: str | Path, *, force: bool = False) -> Output:
    """Check an evaluation's output directory under the output rule (:mod:`helmdeck_dspy.io.outputs`):
    a directory holding anything but this command's checkpoint is replaced only with ``force``.

    Raises:
        OutputRefusedError / OutputUnwritableError: ``out_dir`` may not or cannot be written.
    """
    return check_output(out_dir, directory=True, force=force, ours=(CHECKPOINT_NAME,))


def write_outputs(report: EvalReport, out_dir: Path, *, force: bool = False) -> list[str]:
    """Write report.json, the PNG plots and report.md (which links them) as the new ``out_dir``.

    The files are written into a staging directory beside ``out_dir``, which then replaces it whole:
    a reader (or an interrupted run) sees the old report set or the new one, never a mix.

    Returns:
        The plot files written, relative to ``out_dir``.

    Raises:
        OutputRefusedError / OutputUnwritableError: see :func:`check_out_dir`.
    """
    target = check_out_dir(out_dir, force=force)
    with staged_directory(target.path) as build:
        atomic_write_text(build / "report.json", report.model_dump_json(indent=2) + "\n")
        plots = write_plots(report, build)
        atomic_write_text(build / "report.md", render_markdown(report, plots))
    return plots
