"""The optimizers a compile can use, the plan metric they optimise, and the dev score.

- ``fit`` (default, no LM): :func:`~helmdeck_dspy.compilation.demos.fit_demos`;
- ``bootstrap`` (BootstrapFewShot), ``mipro`` (MIPROv2), ``gepa`` (GEPA): DSPy's optimizers with
  the plan metric (:func:`make_metric`), which scores a prediction through the one scoring path
  (:func:`~helmdeck_dspy.evaluation.scoring.score_prediction`); a parse failure scores 0.
"""

from __future__ import annotations

from typing import Any

import dspy

from helmdeck_dspy.compilation.settings import OptimizerSettings
from helmdeck_dspy.compilation.tier_setup import TierSetup
from helmdeck_dspy.evaluation.scoring import score_prediction
from helmdeck_dspy.program.adapter import PlanParseError
from helmdeck_dspy.tasks import PlanTask

BOOTSTRAP_KEEP = 0.8
"""While bootstrapping, a demo is kept only when its plan scores at least this."""


def make_metric(setup: TierSetup, tasks: dict[str, PlanTask]) -> Any:
    """The DSPy metric: the plan score of a prediction against its example's gold task.

    Called with a ``trace`` (bootstrapping), it answers whether the plan is nearly right
    (score >= :data:`BOOTSTRAP_KEEP`) instead.
    """
    ids, pipes, chains = setup.catalog.id_set, setup.catalog.pipeline_ids, setup.catalog.pipeline_chains

    def metric(example: Any, pred: Any, trace: Any = None, *rest: Any) -> float:
        task = tasks[example.task_id]
        steps = getattr(pred, "steps", None)
        score = score_prediction(task, steps, variant=setup.variant, catalog_ids=ids, pipeline_ids=pipes, chains=chains).score
        if trace is not None and not rest:  # bootstrapping: keep only demos that are nearly right
            return float(score >= BOOTSTRAP_KEEP)
        return score

    return metric


def dev_score(setup: TierSetup, program: Any, lm: Any, dev: list[PlanTask]) -> float:
    """The program's mean plan score on the dev tasks with ``lm`` (an unparseable answer scores 0)."""
    metric = make_metric(setup, {t.id: t for t in dev})
    total = 0.0
    with dspy.context(lm=lm):
        for task in dev:
            ex = setup.example(task, with_labels=False)
            try:
                pred = program(**ex.inputs())
            except PlanParseError:
                continue
            total += metric(ex, pred)
    return total / len(dev) if dev else 0.0


def optimize(optimizer: str, program: Any, trainset: list, valset: list, metric: Any, setup: TierSetup,
             teacher: Any, seed: int, settings: OptimizerSettings) -> Any:
    """Run DSPy's ``bootstrap``, ``mipro`` or ``gepa`` optimizer on ``program`` with the task LM of
    the current DSPy context; returns the optimised program.

    ``teacher`` (a ``dspy.LM``, or None for the task LM itself) answers the bootstrapping tasks,
    proposes MIPROv2's instructions and makes GEPA's reflections.
    """
    k = settings.demo_cap(optimizer, setup.config.max_demos)
    teach = {"lm": teacher} if teacher is not None else {}
    if optimizer == "bootstrap":
        opt = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=k, max_labeled_demos=k, max_errors=len(trainset),
                                    max_rounds=settings.bootstrap.max_rounds, teacher_settings=teach)
        return opt.compile(program, trainset=trainset)
    if optimizer == "mipro":
        m = settings.mipro
        opt = dspy.MIPROv2(metric=metric, prompt_model=teacher, teacher_settings=teach, auto=None,
                           num_candidates=m.num_candidates, max_bootstrapped_demos=k, max_labeled_demos=k,
                           num_threads=1, seed=seed, max_errors=len(trainset), verbose=False)
        return opt.compile(program, trainset=trainset, valset=valset, num_trials=m.num_trials, minibatch=m.minibatch,
                           minibatch_size=min(m.minibatch_size, len(valset)),
                           minibatch_full_eval_steps=m.minibatch_full_eval_steps, program_aware_proposer=m.program_aware,
                           data_aware_proposer=m.data_aware, fewshot_aware_proposer=m.fewshot_aware,
                           tip_aware_proposer=m.tip_aware)
    g = settings.gepa

    def gepa_metric(gold: Any, pred: Any, trace: Any = None, pred_name: Any = None, pred_trace: Any = None) -> Any:
        score = metric(gold, pred, None, "gepa")
        return dspy.Prediction(score=score, feedback=f"plan score {score:.2f}; use exact catalog ids and prefer pipelines")

    opt = dspy.GEPA(metric=gepa_metric, max_metric_calls=g.max_metric_calls, reflection_lm=teacher or dspy.settings.lm,
                    reflection_minibatch_size=g.reflection_minibatch_size, num_threads=1, seed=seed)
    return opt.compile(program, trainset=trainset, valset=valset)
