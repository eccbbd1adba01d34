"""The settings of the optimizers that call an LM: ``[optimizer]`` in ``eval/compile.toml``.

They decide how many LM calls a compile makes (:mod:`helmdeck_dspy.compilation.estimate`), so
they are data, recorded whole in each manifest entry, and ``compile --settings FILE`` can replace
any of them (a TOML file with the same ``[optimizer...]`` tables; what it leaves out keeps the
bundled value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_toml
from helmdeck_dspy.io.resources import bundled_dir


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BootstrapSettings(_Strict):
    max_rounds: int = Field(default=1, ge=1)


class MiproSettings(_Strict):
    num_candidates: int = Field(default=3, ge=3, description="DSPy counts the zero-shot and labelled-only sets among them.")
    num_trials: int = Field(default=4, ge=1)
    minibatch: bool = False
    minibatch_size: int = Field(default=8, ge=1)
    minibatch_full_eval_steps: int = Field(default=5, ge=1)
    max_demos: int = Field(default=2, ge=1)
    program_aware: bool = True
    data_aware: bool = False
    fewshot_aware: bool = False
    tip_aware: bool = True


class GepaSettings(_Strict):
    max_metric_calls: int = Field(default=60, ge=1)
    reflection_minibatch_size: int = Field(default=2, ge=1)


class OptimizerSettings(_Strict):
    """Every optimizer's settings, and the dev tasks a compile validates on."""

    valset: int = Field(default=0, ge=0, description="The first N dev tasks (0: all).")
    call_timeout_s: float = Field(default=600.0, gt=0, description="Seconds one live call may take.")
    teacher_max_tokens: int = Field(default=1024, ge=1, description="Output cap of the teacher's own calls (proposals, reflections).")
    bootstrap: BootstrapSettings = Field(default_factory=BootstrapSettings)
    mipro: MiproSettings = Field(default_factory=MiproSettings)
    gepa: GepaSettings = Field(default_factory=GepaSettings)

    def demo_cap(self, optimizer: str, tier_max_demos: int) -> int:
        """The demos ``optimizer`` bootstraps at most: the tier's cap (at least 1), for MIPROv2 no
        more than its own ``max_demos``."""
        cap = max(1, tier_max_demos)
        return min(cap, self.mipro.max_demos) if optimizer == "mipro" else cap

    def recorded(self, optimizer: str) -> dict[str, Any]:
        """What a manifest entry records: the valset size, the teacher's output cap and the
        optimizer's own table."""
        table = getattr(self, optimizer, None)
        own = table.model_dump() if isinstance(table, BaseModel) else {}
        return {"valset": self.valset, "teacher_max_tokens": self.teacher_max_tokens, **own}


def load_optimizer_settings(path: str | Path | None = None) -> OptimizerSettings:
    """The bundled ``[optimizer]`` settings, with ``path``'s tables over them when given.

    Raises:
        DataFileError: a file is unreadable, or a setting is unknown or out of range (named).
    """
    bundled = bundled_dir() / "compile.toml"
    merged = dict(read_toml(bundled).get("optimizer", {}))
    source = bundled
    if path is not None:
        source = Path(path)
        for key, value in read_toml(source).get("optimizer", {}).items():
            merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    try:
        return OptimizerSettings.model_validate(merged)
    except ValidationError as exc:
        raise DataFileError(str(source), f"[optimizer] {validation_message(exc, subject='optimizer')}") from None
