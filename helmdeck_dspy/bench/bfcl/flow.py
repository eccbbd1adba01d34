"""The BFCL benchmark as one call: load a data folder, measure selection recall, score plans.

:func:`run_bfcl` is what ``helmdeck-dspy bench bfcl`` runs; it returns the
:class:`~helmdeck_dspy.bench.bfcl.report.BfclReport` the command prints.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from helmdeck_dspy.bench.bfcl.report import BfclReport
from helmdeck_dspy.bench.progress import Bars, SilentBars
from helmdeck_dspy.errors import InputError, UsageValueError

if TYPE_CHECKING:
    from helmdeck_dspy.bench.bfcl.models import BfclSet
    from helmdeck_dspy.bench.bfcl.plans import PlanAccuracy


def choose_rankers(given: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The rankers to run and those left out with the reason: ``None`` means every ranker, less
    ``embedding`` when its extra is not installed.

    Raises:
        UsageValueError: an unknown ranker (``argument`` is ``--rankers``), or ``embedding`` asked
            for without its extra.
    """
    from helmdeck_dspy.catalog.ranking import RANKERS
    from helmdeck_dspy.catalog.ranking import embedding as embed

    skipped: dict[str, str] = {}
    if not given:
        chosen = list(RANKERS)
        if not embed.available():
            chosen.remove("embedding")
            skipped["embedding"] = f"optional extra not installed: {embed.INSTALL_HINT}"
        return chosen, skipped
    chosen = list(given)
    unknown = [r for r in chosen if r not in RANKERS]
    if unknown:
        raise UsageValueError(f"unknown ranker {unknown[0]!r}; expected one of {', '.join(RANKERS)}", "--rankers")
    if "embedding" in chosen and not embed.available():
        raise UsageValueError(f"--rankers embedding needs the optional extra: {embed.INSTALL_HINT}")
    return chosen, skipped


def run_bfcl(
    data_dir: str | Path,
    *,
    categories: Sequence[str] | None = None,
    rankers: Sequence[str] | None = None,
    pool: bool = False,
    limit: int | None = None,
    lm_spec: str | None = None,
    model: str | None = None,
    api_base: str | None = None,
    variant: str = "full_steps",
    max_tokens: int | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    baseline: Literal["plain"] | None = None,
    record_path: str | Path | None = None,
    trace_paths: Sequence[str | Path] = (),
    budgets: str | Path | None = None,
    out_dir: str | Path | None = None,
    notify: Callable[[str], None] | None = None,
    bars: Bars | None = None,
) -> BfclReport:
    """Selection recall (per ranker and tier) on BFCL questions, and plan accuracy when plans are
    made (``lm_spec``) or read (``trace_paths``).

    Args:
        data_dir: A BFCL v4 data folder.
        categories: Categories to load (None: every category of the folder).
        rankers: Rankers to measure (None: all; ``embedding`` only when its extra is installed).
        pool: One catalog of every loaded function instead of each question's own.
        limit: At most this many questions per category.
        lm_spec: Also plan each question with this LM and score the plans.
        model: Budget lookup id for ``lm_spec`` (default: ``lm_spec``).
        api_base: API base URL for an OpenAI-compatible endpoint.
        variant: Prompt variant for ``lm_spec``.
        max_tokens: Override the budget's output tokens.
        temperature / seed: The sampling of every call, planner and baseline alike (None: the
            budget row's temperature, 0, and seed 7 where the endpoint takes one).
        baseline: ``plain`` also scores the same LM alone with a plain prompt.
        record_path: Keep the planner's exchanges in this trace file (and the model alone's beside it,
            ``STEM.plain.jsonl``); a question already answered there is not asked again.
        trace_paths: Trace files whose plan records are scored against the gold calls.
        budgets: A budget table file (None: the bundled one).
        out_dir: Write ``report.md`` and ``report.json`` here.
        notify: Called with one-line messages: categories not loaded, files written.
        bars: Progress of the recall and planning stages (None: none shown).

    Raises:
        UsageValueError: an unknown ranker, or ``embedding`` without its extra (before any work).
        InputError: ``baseline`` without ``lm_spec``.
        BfclDataError: the data folder or a category file is unusable.
    """
    from helmdeck_dspy.bench.bfcl.load import load_bfcl
    from helmdeck_dspy.bench.bfcl.plans import score_traces
    from helmdeck_dspy.bench.bfcl.recall import measure_recall, tier_budgets
    from helmdeck_dspy.bench.bfcl.report import write_report
    from helmdeck_dspy.budgets import load_budget_table

    chosen, skipped = choose_rankers(rankers)
    if baseline and not lm_spec:
        raise InputError("a baseline needs an LM to ask alone (lm_spec)")
    if record_path and not re.fullmatch(r"[A-Za-z0-9_.-]+", Path(record_path).stem):
        raise UsageValueError(f"{record_path}: a record file's name holds only letters, digits, '.', '_' and '-' (it "
                              "names the study row)", "--record")
    tell = notify or (lambda _msg: None)
    show = bars or SilentBars()

    def note(n) -> None:
        if n.status != "loaded":
            tell(f"bfcl: {n.category} not loaded ({n.status.replace('_', ' ')}): {n.detail}")

    data = load_bfcl(data_dir, list(categories) if categories else None, report=note).limited(limit)
    tiers = tier_budgets(load_budget_table(budgets))
    with show.stage("selection recall", len(data.questions) * len(tiers) * len(chosen), unit=" q") as step:
        recall = measure_recall(data, tiers, chosen, pool=pool, progress=step)

    accuracy = []
    if lm_spec:
        accuracy = plan_study(data, Path(data_dir), lm_spec=lm_spec, model=model or lm_spec, variant=variant, pool=pool,
                              api_base=api_base, max_tokens=max_tokens, budgets=budgets, temperature=temperature,
                              seed=seed, baseline=baseline, record_path=record_path, bars=show)
    accuracy += [score_traces(data, p, pool=pool) for p in trace_paths]

    report = BfclReport(
        **recall.model_dump(exclude={"skipped_rankers"}), skipped_rankers=skipped, data=str(data_dir),
        files=data.files, notes=list(data.notes), plan_accuracy=accuracy,
    )
    if out_dir:
        written = write_report(report, out_dir)
        tell(f"wrote {', '.join(str(p) for p in written)}")
    return report


def plan_study(data: BfclSet, data_dir: Path, *, lm_spec: str, model: str, variant: str, pool: bool,
               api_base: str | None, max_tokens: int | None, budgets: str | Path | None, temperature: float | None,
               seed: int | None, baseline: str | None, record_path: str | Path | None, bars: Bars) -> list[PlanAccuracy]:
    """Plan every question of ``data`` with the planner (and the model alone, with ``baseline``) as
    a study on the one engine (:func:`~helmdeck_dspy.bench.study.runner.run_arms`: resumable, its
    exchanges in a trace file per row), then score each row's trace file with the BFCL call matcher."""
    from helmdeck_dspy.bench.bfcl.plans import score_traces
    from helmdeck_dspy.bench.study.runner import run_arms
    from helmdeck_dspy.bench.study.spec import StudyConfig, StudySpec
    from helmdeck_dspy.planning.request import DEFAULT_SEED, DEFAULT_TEMPERATURE

    with tempfile.TemporaryDirectory(prefix="bench-bfcl-") as scratch:
        record = Path(record_path).resolve() if record_path else Path(scratch) / "planner.jsonl"
        change = {"output_tokens": max_tokens} if max_tokens else {}
        planner = StudyConfig(name=record.stem, variant=variant, pool=pool, budget=change)
        plain = StudyConfig(name=f"{record.stem}.plain", plain=True, pool=pool, budget=change)
        counts = Counter(q.category for q in data.questions)
        spec = StudySpec(
            model=model, lm=lm_spec, data=(str(data_dir.resolve()),), categories=tuple(counts),
            limit=max(counts.values(), default=1), api_base=api_base,
            budgets=None if budgets is None else str(Path(budgets).resolve()),
            temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
            seed=DEFAULT_SEED if seed is None else seed, baseline=planner.name,
            config=(planner, plain) if baseline is not None else (planner,), path=record.parent / "study.toml")
        labels = {planner.name: (f"planning ({lm_spec})", lm_spec),
                  plain.name: (f"the model alone ({lm_spec})", f"{lm_spec} (plain prompt)")}
        with ExitStack() as stack:
            steps = {c.name: stack.enter_context(bars.stage(labels[c.name][0], len(data.questions))) for c in spec.config}
            run_arms(spec, progress=lambda config, _question: steps[config](1))
        return [score_traces(data, spec.trace_path(c), pool=pool).model_copy(
                    update={"source": labels[c.name][1], "model": model}) for c in spec.config]
