"""Writing an evaluation's files: report.json, report.md and the plots, each atomically."""

from __future__ import annotations

from pathlib import Path

from helmdeck_dspy.evaluation.markdown import render_markdown
from helmdeck_dspy.evaluation.plots import write_plots
from helmdeck_dspy.evaluation.report import EvalReport
from helmdeck_dspy.io.atomic import atomic_write_text


def write_outputs(report: EvalReport, out_dir: Path) -> list[str]:
    """Write report.json, the PNG plots and report.md (which links them) into ``out_dir``.

    Returns:
        The plot files written, relative to ``out_dir``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "report.json", report.model_dump_json(indent=2) + "\n")
    plots = write_plots(report, out_dir)
    atomic_write_text(out_dir / "report.md", render_markdown(report, plots))
    return plots
