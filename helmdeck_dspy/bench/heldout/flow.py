"""A held-out comparison as one call: compile and record what is missing, score every row, write
the table beside the spec, put the test scores in the compiled programs' manifests, ship a winner.

:func:`run_heldout` is what ``helmdeck-dspy bench heldout`` runs; it returns a
:class:`HeldoutReport`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.heldout.spec import HeldOutSpec, load_spec
from helmdeck_dspy.bench.heldout.table import RowScore, render_markdown, table_json
from helmdeck_dspy.bench.progress import Bars, SilentBars
from helmdeck_dspy.errors import UsageValueError


class HeldoutReport(BaseModel):
    """What a held-out comparison ran and the table it scored."""

    spec: HeldOutSpec
    steps: list[tuple[str, str, str]] = Field(default_factory=list,
                                              description="(compile or record, config id, variant or 'both') run now.")
    rows: list[RowScore] = Field(default_factory=list, description="One per config and variant.")
    written: list[Path] = Field(default_factory=list, description="table.md and table.json beside the spec.")
    tested: list[str] = Field(default_factory=list, description="ID/variant of each compiled program whose "
                                                                "manifest entry got its test scores.")
    shipped: list[str] | None = Field(default=None, description="What was shipped (None: shipping not asked).")

    def markdown(self) -> str:
        """The table as Markdown (what ``table.md`` holds)."""
        return render_markdown(self.spec, self.rows)

    def table(self) -> dict[str, Any]:
        """The table as JSON (what ``table.json`` holds)."""
        return table_json(self.spec, self.rows)


def check_configs(spec: HeldOutSpec, only: Collection[str] | None) -> None:
    """Raise :class:`UsageValueError` when ``only`` names a config the spec lacks."""
    unknown = sorted(set(only or ()) - {c.id for c in spec.config})
    if unknown:
        raise UsageValueError(f"--only: no config {', '.join(unknown)} in {spec.path}")


def run_heldout(
    spec: HeldOutSpec | str | Path,
    *,
    only: Collection[str] | None = None,
    variants: Collection[str] | None = None,
    score_only: bool = False,
    ship: bool = False,
    compiled_root: str | Path | None = None,
    notify: Callable[[str], None] | None = None,
    bars: Bars | None = None,
) -> HeldoutReport:
    """Compile and score the programs ``spec`` lists, on its model and held-out split.

    Missing compiles and scoring runs are done first, in the spec's order (each resumes where it
    was cut off). Then every trace file there is is scored, ``table.md`` / ``table.json`` are
    written beside the spec and each compiled program's manifest entry gets its test scores.
    Scoring records are live calls; nothing is answered from a cache.

    Args:
        spec: A held-out spec or its ``heldout.toml``.
        only: Run only these config ids (scoring covers them all).
        variants: Run only these variants' compiles and scoring runs (default: the spec's).
        score_only: Run nothing: score the trace files there are and write the table.
        ship: Copy every compiled program that beats the baseline beyond its interval into
            ``compiled_root`` (the model's own program) with its test scores in the manifest.
        compiled_root: Where ``ship`` writes (None: the bundled ``compiled/``).
        notify: Called with one-line messages: each step, the files written, what was shipped.
        bars: Progress of each compile's LM calls and each scoring run (None: none shown).

    Raises:
        DataFileError: the spec file is unusable.
        UsageValueError: ``only`` names a config the spec lacks.
    """
    from helmdeck_dspy.bench.heldout.runs import compile_config, pending_steps, record_config
    from helmdeck_dspy.bench.heldout.ship import record_test_scores
    from helmdeck_dspy.bench.heldout.ship import ship as ship_winners
    from helmdeck_dspy.bench.heldout.table import score_spec
    from helmdeck_dspy.bench.provenance import note_row
    from helmdeck_dspy.budgets import budget_for
    from helmdeck_dspy.io.atomic import atomic_write_text
    from helmdeck_dspy.tasks import load_tasks

    spec = spec if isinstance(spec, HeldOutSpec) else load_spec(spec)
    check_configs(spec, only)
    tell = notify or (lambda _msg: None)
    show = bars or SilentBars()
    steps = [] if score_only else pending_steps(spec, list(only) if only else None, list(variants) if variants else None)
    if steps:
        note_row(spec.folder, budget_for(spec.model))
    for i, (kind, config_id, variant) in enumerate(steps, 1):
        config = spec.get(config_id)
        tell(f"[{i}/{len(steps)}] {kind} ({config_id}) {config.label}: {variant}")
        if kind == "compile":
            with show.calls() as on_call:
                compile_config(spec, config, variant, notify=tell, on_call=on_call)
        else:
            runs = len(spec.variants) if variant == "both" else 1
            with show.stage("record", runs * len(load_tasks(spec.split))) as step:
                record_config(spec, config, variant, notify=tell, progress=step)
    rows = score_spec(spec)
    report = HeldoutReport(spec=spec, steps=steps, rows=rows)
    md, js = spec.folder / "table.md", spec.folder / "table.json"
    atomic_write_text(md, report.markdown())
    atomic_write_text(js, json.dumps(report.table(), indent=2) + "\n")
    report.written = [md, js]
    tell(f"wrote {md} and table.json")
    report.tested = record_test_scores(spec, rows)
    if report.tested:
        tell("test scores in the compiled programs' manifests: " + ", ".join(report.tested))
    if ship:
        report.shipped = ship_winners(spec, rows, Path(compiled_root) if compiled_root else None)
        tell("shipped: " + (", ".join(report.shipped) if report.shipped else
                            f"nothing: no compiled program beats ({spec.baseline}) beyond its interval"))
    return report
