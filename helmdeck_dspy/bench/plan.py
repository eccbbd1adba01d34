"""The order the live studies run in: a plan file of steps, each one study spec and the arms to run.

A plan (``experiments/studies.toml``) lists ``[[step]]`` tables in the order they run::

    [[step]]
    spec = "bfcl/qwen2.5-coder-1.5b/study.toml"    # a study spec (a study.toml), beside the plan
    only = ["default-answer"]                      # its configs to run (omitted: all of them)

    [[step]]
    script = "../measure/constrained_cost.py"     # a benchmark script, run once: its output is kept
    args = ["--n", "8"]
    out = "constrained-cost.txt"

:func:`load_plan` checks every step before anything runs (the spec loads, ``only`` names its
configs, the script exists). :func:`run_plan` runs the steps in order through the study's own
runner; each resumes where it stopped, so the plan resumes too, and a step with nothing left to do
makes no call. A script step runs when its ``out`` file is missing or empty, its output written
whole or not at all.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from helmdeck_dspy.bench.progress import Bars
from helmdeck_dspy.bench.study.spec import SPEC_NAME, OldSpellingError, StudySpec, check_spec_name
from helmdeck_dspy.errors import BenchDependencyError, DataFileError, validation_message
from helmdeck_dspy.io.datafiles import parse_toml, read_text


class PlanStep(BaseModel):
    """One step: a study spec and which of its configs, or a benchmark script and where its output goes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: Path | None = Field(default=None, description="A study.toml, relative to the plan.")
    only: tuple[str, ...] | None = Field(default=None, description="The spec's configs to run (None: all).")
    script: Path | None = Field(default=None, description="A Python benchmark script (relative to the plan).")
    args: tuple[str, ...] = ()
    out: Path | None = Field(default=None, description="Where the script's output is kept (relative to the plan).")

    @model_validator(mode="after")
    def _one_kind(self) -> PlanStep:
        if (self.spec is None) == (self.script is None):
            raise ValueError("a step has either spec or script")
        if self.script is not None and (self.out is None or self.only is not None):
            raise ValueError("a script step needs out, and takes no only")
        if self.spec is not None and (self.out is not None or self.args):
            raise ValueError("a spec step takes no args or out")
        return self

    @property
    def label(self) -> str:
        if self.spec is None:
            return f"script {self.script} > {self.out}"
        return f"study {self.spec}" + (f" --only {','.join(self.only)}" if self.only else "")


class StudyPlan(BaseModel):
    """A plan file's steps, paths resolved against its folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: tuple[PlanStep, ...] = Field(min_length=1)
    path: Path = Path()


def _load_spec(spec_path: Path, only: tuple[str, ...] | None) -> StudySpec:
    """The step's spec, with ``only`` checked against its configs."""
    from helmdeck_dspy.bench.study.flow import check_configs
    from helmdeck_dspy.bench.study.spec import load_study_spec

    study = load_study_spec(spec_path)
    check_configs(study, only)
    return study


def load_plan(path: str | Path) -> StudyPlan:
    """Read and check a plan: every step's spec loads and names the configs it runs, every script exists.

    Raises:
        OldSpellingError: A step names a spec by its old name, or its spec is in an old spelling.
        DataFileError: The plan, or a step of it, is unusable (the message names the step).
    """
    path = Path(path)
    try:
        plan = StudyPlan.model_validate({**parse_toml(read_text(path), str(path)), "path": path})
    except ValidationError as exc:
        raise DataFileError(str(path), validation_message(exc)) from None
    steps = []
    for i, step in enumerate(plan.step, 1):
        where = f"step {i}"
        if step.spec is not None and step.spec.name != SPEC_NAME:
            try:
                check_spec_name(step.spec)
            except OldSpellingError as exc:
                raise OldSpellingError(str(path), f"{where}: {step.spec}: {exc.detail}") from None
            raise DataFileError(str(path), f"{where}: {step.spec} is not a {SPEC_NAME}")
        resolved = step.model_copy(update={k: path.parent / v for k in ("spec", "script", "out")
                                           if (v := getattr(step, k)) is not None})
        if resolved.script is not None and not resolved.script.is_file():
            raise DataFileError(str(path), f"{where}: no script {resolved.script}")
        if resolved.spec is not None:
            try:
                _load_spec(resolved.spec, resolved.only)
            except OldSpellingError as exc:  # still the old spelling's error (exit 2), named from the plan
                raise OldSpellingError(str(path), f"{where} ({step.spec}): {exc}") from None
            except Exception as exc:  # noqa: BLE001 - any unusable spec is this step's problem
                raise DataFileError(str(path), f"{where} ({step.spec}): {exc}") from None
        steps.append(resolved)
    return plan.model_copy(update={"step": tuple(steps)})


def pending(step: PlanStep) -> int:
    """What a step has left: compiles and LM calls (end-to-end tasks: runs) for a study, 1 or 0 for
    a script."""
    if step.spec is None:
        return 0 if step.out is not None and step.out.exists() and step.out.stat().st_size else 1
    spec = _load_spec(step.spec, step.only)
    from helmdeck_dspy.bench.study.flow import pending as study_pending

    return study_pending(spec, step.only)


def run_script(step: PlanStep) -> None:
    """Run a script step with this interpreter; its standard output replaces ``out`` only when it succeeds."""
    from helmdeck_dspy.io.atomic import atomic_write_text

    if step.script is None or step.out is None:
        raise ValueError("not a script step")
    done = subprocess.run([sys.executable, str(step.script), *step.args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DataFileError(str(step.script), f"exited {done.returncode}: {done.stderr.strip()[-500:]}")
    atomic_write_text(step.out, done.stdout)


def run_plan(plan: StudyPlan, *, dry_run: bool = False, matching: tuple[str, ...] = (),
             notify: Callable[[str], None] | None = None, bars: Bars | None = None) -> list[tuple[PlanStep, int]]:
    """Run each step that has something left, in order (``dry_run``: only say what is left;
    ``matching``: only the steps whose spec or script path holds one of these texts).

    Returns:
        Each step with what it had left before this run; a step whose pinned benchmark package is not
        installed (``make bench-deps``) is skipped with a message, and left out.
    """
    from helmdeck_dspy.bench.study.flow import run_study

    tell = notify or (lambda _msg: None)
    done = []
    for i, step in enumerate(plan.step, 1):
        if matching and not any(text in str(step.spec or step.script) for text in matching):
            continue
        try:
            left = pending(step)
        except BenchDependencyError as exc:  # a pinned benchmark package not installed: this step only waits
            tell(f"[{i}/{len(plan.step)}] {step.label}: skipped: {exc}")
            continue
        done.append((step, left))
        tell(f"[{i}/{len(plan.step)}] {step.label}: {left} left" + ("" if left or dry_run else ", nothing to do"))
        if dry_run or not left:
            continue
        if step.spec is None:
            run_script(step)
        else:
            run_study(step.spec, only=step.only, notify=tell, bars=bars)
    return done
