"""How many LM calls a compile will make, worked out before it starts from the optimizer's
settings (:mod:`helmdeck_dspy.compilation.settings`) and the data sizes.

The counts follow what DSPy's optimizers do (read in DSPy 3.4):

- scoring the program before and after on the valset: one task-model call per task each (MIPROv2
  and GEPA score the starting program and their best candidate on the same valset, so those two
  passes come back from the response cache there: counted apart, as ``replayed``);
- bootstrap: the teacher answers training tasks in order until enough of its plans score >= 0.8
  to fill the demo cap (:meth:`~.settings.OptimizerSettings.demo_cap`);
- MIPROv2: ``num_candidates - 2`` bootstrapped demo sets (as above), ``num_candidates``
  instruction proposals by the teacher (3 calls each when program-aware: describe the program,
  describe the module, propose), then the default program and ``num_trials`` trials on the valset
  (or on minibatches, with a full pass every ``minibatch_full_eval_steps`` trials);
- GEPA: ``max_metric_calls`` task-model calls in all (it checks the budget before each round, so
  the last round may overrun it by two minibatches and a valset pass); each reflection (a teacher
  call) follows two minibatches of ``reflection_minibatch_size`` tasks.

Bootstrapping stops as soon as it has its demos, so its count is a range: the expected figure
assumes half the attempts succeed (:data:`ASSUMED_KEEP_RATE`), the maximum that none do until
the training set runs out. The counts are of requests, whoever answers them: on a resumed run
some come from the response cache, and the progress bar tells those apart.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from helmdeck_dspy.compilation.settings import OptimizerSettings

ASSUMED_KEEP_RATE = 0.5
"""The share of bootstrap attempts assumed to give a demo, for the expected count."""


class CallEstimate(BaseModel):
    """Expected and maximum LM calls of a compile, by role (the teacher's are the task model's
    own when no separate teacher is given)."""

    task: int = 0
    task_max: int = 0
    teacher: int = 0
    teacher_max: int = 0
    replayed: int = 0
    """Task-model requests answered from the response cache even on a fresh run (repeated passes)."""

    @property
    def total(self) -> int:
        """The calls expected to reach a model on a fresh run."""
        return self.task + self.teacher

    @property
    def requests(self) -> int:
        """Every LM request expected, the replayed ones too: what a progress bar counts."""
        return self.total + self.replayed

    @property
    def total_max(self) -> int:
        return self.task_max + self.teacher_max

    def describe(self, separate_teacher: bool) -> str:
        """One line for the terminal."""
        if not separate_teacher:
            return f"estimated LM calls: ~{self.total} (at most {self.total_max})"
        return (f"estimated LM calls: ~{self.task} task model (at most {self.task_max}) + "
                f"~{self.teacher} teacher (at most {self.teacher_max})")


def _bootstrap_calls(demos: int, train_n: int, rounds: int) -> tuple[int, int]:
    """(expected, maximum) attempts to bootstrap ``demos`` demos from ``train_n`` tasks."""
    if demos <= 0 or train_n <= 0:
        return 0, 0
    return min(train_n, math.ceil(demos / ASSUMED_KEEP_RATE)), train_n * rounds


def estimate_calls(optimizer: str, settings: OptimizerSettings, *, train_n: int, val_n: int, max_demos: int,
                   scored: bool) -> CallEstimate:
    """The calls a compile with ``optimizer`` makes.

    Args:
        optimizer: ``fit``, ``bootstrap``, ``mipro`` or ``gepa``.
        settings: The optimizer settings.
        train_n / val_n: Training tasks and valset tasks.
        max_demos: The tier's demo cap (see :meth:`OptimizerSettings.demo_cap`).
        scored: An LM scores the program before and after (no LM: ``fit`` makes no calls).
    """
    est = CallEstimate()
    demos = settings.demo_cap(optimizer, max_demos)
    if optimizer == "fit":
        est.task = est.task_max = 2 * val_n if scored else 0
        return est
    if optimizer == "bootstrap":
        est.teacher, est.teacher_max = _bootstrap_calls(demos, train_n, settings.bootstrap.max_rounds)
        est.task = est.task_max = 2 * val_n
        return est
    if optimizer == "mipro":
        m = settings.mipro
        shuffled = m.num_candidates - 3
        one, top = _bootstrap_calls(demos, train_n, 1)
        some, _ = _bootstrap_calls(math.ceil((1 + demos) / 2), train_n, 1)
        proposals = m.num_candidates * (3 if m.program_aware else 1)
        est.teacher = one + shuffled * some + proposals
        est.teacher_max = top * (1 + shuffled) + proposals
        if m.minibatch:
            trials = m.num_trials * min(m.minibatch_size, val_n) + (m.num_trials // m.minibatch_full_eval_steps) * val_n
        else:
            trials = m.num_trials * val_n
        est.task = val_n + trials
        est.task_max = est.task + 2 * val_n
        est.replayed = 2 * val_n
        return est
    g = settings.gepa
    r = g.reflection_minibatch_size
    est.task = g.max_metric_calls
    # GEPA checks its budget before a round, and a round may spend 2 minibatches and a valset pass
    est.task_max = g.max_metric_calls + 2 * r + 3 * val_n
    est.teacher = max(1, max(0, g.max_metric_calls - val_n) // (2 * r))
    est.teacher_max = math.ceil(g.max_metric_calls / r)
    est.replayed = 2 * val_n
    return est
