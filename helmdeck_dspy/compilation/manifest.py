"""``compiled/manifest.json``: one entry per compiled program (a tier's, or one model's).

An entry (:class:`CompileResult`) records the target, the optimizer and its settings, the task
and teacher LMs, hashes of the train and valset tasks, the valset score before and after, the
demos, the prompt size, the estimated and actual LM calls (live and cached apart) and tokens,
the time taken, two hashes that make resuming safe: ``inputs_sha256`` (everything the compile
depended on) and ``program_sha256`` (the saved file), and for a model program scored in a
held-out comparison its test scores (:class:`HeldOut`). The manifest is rewritten atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.program.store import (
    manifest_path,
    model_key,
    read_manifest,
    tier_key,
)


class HeldOutScore(BaseModel):
    """One program's scores on the held-out test split (95% intervals)."""

    program: str = Field(description="Which program: a manifest key, or `bare` for the instructions alone.")
    n: int
    strict_rate: float
    strict_ci: tuple[float, float]
    plan_score: float
    plan_score_ci: tuple[float, float]


class HeldOut(BaseModel):
    """A model program's test-split scores: ``before`` is the comparison's baseline (in the bundled
    comparison, the program ``for_model`` uses without it), ``after`` the program's own, both
    measured on the live model; ``diff`` is after − before in plan score, paired by task."""

    split: str
    tasks_sha256: str
    lm: str
    traces: list[str] = Field(description="The scoring runs' trace files, which `eval` re-scores without the model.")
    before: HeldOutScore
    after: HeldOutScore
    diff: float
    diff_ci: tuple[float, float]


class CompileResult(BaseModel):
    """A manifest entry."""

    tier: str
    variant: str
    model: str | None = Field(default=None, description="The model id a model program was compiled for (None: a tier program).")
    optimizer: str
    optimizer_settings: dict[str, Any] = Field(default_factory=dict, description="The optimizer's settings (settings.py).")
    lm: str | None
    teacher_lm: str | None = Field(default=None, description="The teacher / prompt / reflection LM, when not the task LM.")
    temperature: float | None = Field(default=None, description="The task LM's sampling temperature, when one was set.")
    budget_model: str
    train_sha256: str
    dev_sha256: str
    train_n: int
    dev_n: int
    dev_score_before: float | None
    dev_score_after: float | None
    demos: int
    knn_demos: int = Field(default=0, description="Demos drawn per request from the program's demo pool (0: no pool).")
    decline_slot: bool = Field(default=False, description="The pool keeps one demo that declines among each request's.")
    decline_below: float | None = Field(default=None, description="The decline slot's gate (compile --decline-gate): "
                                        "it opens for requests whose best catalog match scores below this.")
    history_demos: int = Field(default=0, description="Pool demos that are accepted plans from plan history "
                               "(compile --history-traces).")
    demo_pool_size: int = Field(default=0, description="Worked examples in the program's demo pool.")
    prompt_tokens: int = Field(description="Tokens of the rendered prompt for the tier's typical intent.")
    estimated_calls: int = Field(default=0, description="The calls estimated before the run (estimate.py).")
    lm_calls: int = Field(description="Calls the models answered in this run (task and teacher).")
    cached_calls: int = Field(default=0, description="Calls answered from DSPy's response cache (a resumed run).")
    teacher_calls: int = Field(default=0, description="Of all calls, the teacher's.")
    prompt_tokens_used: int
    completion_tokens_used: int
    cost_usd: float | None = Field(
        default=None,
        description="Summed from the cost the task LM reports in its history (the teacher's calls and copies an "
        "optimizer makes are not seen); None when it reports none (simulated, replayed, local).",
    )
    seconds: float
    dspy_version: str
    compiled_at: str
    path: str
    inputs_sha256: str | None = Field(default=None, description="Hash of everything the compile depends on.")
    test: HeldOut | None = Field(default=None, description="Held-out test scores, for a model program scored in a held-out comparison.")
    program_sha256: str | None = Field(default=None, description="Hash of the saved program file.")
    _skipped: bool = PrivateAttr(default=False)

    @property
    def skipped(self) -> bool:
        """True when ``compile_program(resume=True)`` found this program already compiled from the same inputs."""
        return self._skipped

    @property
    def key(self) -> str:
        """The manifest key: ``tier_T/V`` or ``models/SLUG/V``."""
        return model_key(self.model, self.variant) if self.model else tier_key(self.tier, self.variant)

    def mark_skipped(self) -> CompileResult:
        """Flag this entry as found already compiled (see :attr:`skipped`); returns it."""
        self._skipped = True
        return self


def update_manifest(result: CompileResult, root: Path | None = None) -> None:
    """Put ``result`` in the manifest (replacing the program's previous entry), entries sorted."""
    path = manifest_path(root)
    data = read_manifest(root)
    data["programs"][result.key] = result.model_dump(exclude_none=False)
    data["programs"] = dict(sorted(data["programs"].items()))
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
