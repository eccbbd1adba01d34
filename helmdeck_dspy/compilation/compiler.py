"""Compilation: :func:`compile_program` for one tier program or one model's own program.

The optimizer (``fit``: no LM; ``bootstrap``, ``mipro``, ``gepa``: DSPy's, see
:mod:`helmdeck_dspy.compilation.optimizers`) works on a setup
(:mod:`helmdeck_dspy.compilation.tier_setup`): the tier's ``budget_model`` row for a tier program,
the model's own row for a model's program, so every compile-time call runs under the budget the
program will run under. The task LM answers with the program being compiled; a teacher LM, when
given, bootstraps demos and proposes or reflects. With an LM, the score before and after is
measured on the valset (the first ``valset`` dev tasks, :mod:`.settings`); ``--lm sim:auto``
uses each tier's simulator profile from ``eval/compile.toml``. Before an optimizer starts, its
calls are estimated (:mod:`.estimate`); while it runs, :class:`~.meter.CallMeter` counts them
(live and cached apart). Results go to ``tier_T/V.json`` or ``models/SLUG/V.json`` and an entry
in ``manifest.json`` (:mod:`helmdeck_dspy.compilation.manifest`), both written to a temporary file
and renamed into place, so a kill never leaves a half-written program or manifest.

Resuming: each manifest entry records ``inputs_sha256`` (target, variant, optimizer and its
settings, LM specs, seed, train/valset tasks, the budget row and tier settings, the catalog, the
uncompiled program's state, the DSPy and tool versions) and ``program_sha256`` (the saved file).
With ``resume``, a program whose entry matches both is skipped. DSPy's optimizers cannot resume
from the middle of a run, but every answer they got is in DSPy's response cache (on disk, under
the project's ``.helmdeck/dspy-cache``) and the optimizers are seeded: an interrupted compile run
again sends the same requests, gets the answers it already paid for from the cache (counted as
``cached_calls``, never as calls made) and goes on live from where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dspy

from helmdeck_dspy.budgets import BudgetTable
from helmdeck_dspy.compilation.demos import fit_demos
from helmdeck_dspy.compilation.estimate import estimate_calls
from helmdeck_dspy.compilation.manifest import CompileResult, update_manifest
from helmdeck_dspy.compilation.meter import CallMeter
from helmdeck_dspy.compilation.optimizers import (
    Optimizer,
    check_optimizer,
    dev_score,
    make_metric,
    optimize,
)
from helmdeck_dspy.compilation.settings import (
    OptimizerSettings,
    load_optimizer_settings,
)
from helmdeck_dspy.compilation.tier_setup import TierSetup
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.errors import HelmdeckError, InputError
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.io.datafiles import file_sha256
from helmdeck_dspy.program.modules import MODULES
from helmdeck_dspy.program.store import (
    load_compiled_state,
    manifest_path,
    model_key,
    model_program_path,
    program_path,
    read_manifest,
    tier_key,
)
from helmdeck_dspy.tasks import PlanTask, load_tasks, tasks_sha256


def compile_program(
    tier: str | None,
    variant: str,
    *,
    model: str | None = None,
    optimizer: Optimizer = "fit",
    lm_spec: str | None = None,
    train: list[PlanTask] | None = None,
    dev: list[PlanTask] | None = None,
    out_root: Path | None = None,
    teacher_lm_spec: str | None = None,
    seed: int = 0,
    temperature: float | None = None,
    resume: bool = False,
    settings: OptimizerSettings | None = None,
    budgets: BudgetTable | None = None,
    notify: Callable[[str], None] | None = None,
    on_call: Callable[[CallMeter], None] | None = None,
) -> CompileResult:
    """Compile the (tier, variant) program, or ``model``'s own program, and record it in the manifest.

    Args:
        tier: ``A``, ``B`` or ``C`` (None with ``model``: the model's tier).
        variant: ``full_steps`` or ``single_pick``.
        model: Compile a program for this model id: under its budget row, saved as
            ``models/SLUG/V.json`` (see :mod:`helmdeck_dspy.program.store`).
        optimizer: ``fit`` (no LM), ``bootstrap``, ``mipro`` or ``gepa``.
        lm_spec: The task LM: the model the program is compiled for (``sim:auto``: the tier's simulator profile).
        train / dev: The tasks (default: the bundled train and dev splits); the first
            ``settings.valset`` dev tasks are the valset.
        out_root: Where programs and ``manifest.json`` go (default: the bundled ``compiled/``).
        teacher_lm_spec: The stronger LM that bootstraps demos, proposes MIPROv2's instructions
            and makes GEPA's reflections (default: ``lm_spec``).
        seed: Passed to the LM and the optimizers (and sent with every call when ``temperature`` is set).
        temperature: The task LM's sampling temperature (None: the endpoint's); use the one the
            model will run at.
        resume: Skip the compile when the manifest entry was made from the same inputs and the
            program file is unchanged: the entry is returned with ``skipped`` set. (An interrupted
            compile run again replays the calls it made from DSPy's response cache.)
        settings: The optimizer settings (default: ``eval/compile.toml``'s).
        budgets: The budget table a model's row is read from (default: the bundled one).
        notify: Called with one-line messages (the call estimate).
        on_call: Called after every LM call with the :class:`CallMeter`.

    Raises:
        InputError: an unknown tier, variant or optimizer, or an optimizer that needs an LM without one.
    """
    check_optimizer(optimizer, lm_spec)
    t0 = time.perf_counter()
    target = _target(tier, variant, model=model, optimizer=optimizer, lm_spec=lm_spec, train=train, dev=dev,
                     out_root=out_root, teacher_lm_spec=teacher_lm_spec, seed=seed, temperature=temperature,
                     settings=settings, budgets=budgets)
    if resume:
        done = _unchanged_entry(target.key, target.path, variant, target.inputs_sha, out_root)
        if done is not None:
            return done
    listed = read_manifest(out_root)["programs"].get(target.key)
    if model is not None and isinstance(listed, dict) and listed.get("model") not in (None, model):
        raise InputError(f"{model} and {listed['model']} share the program folder {target.path.parent}: "
                         "compile one of them into another --out root")
    setup, program, path, key, settings = target.setup, target.program, target.path, target.key, target.settings
    tier, lm_spec, teacher_spec = setup.tier, target.lm_spec, target.teacher_spec
    train, dev, valset_tasks = target.train, target.dev, target.valset
    estimate = estimate_calls(optimizer, settings, train_n=len(train), val_n=len(valset_tasks),
                              max_demos=setup.config.max_demos, scored=lm_spec is not None)
    if notify is not None and lm_spec is not None:
        notify(f"{key}: {optimizer} on {len(train)} train / {len(valset_tasks)} valset tasks; "
               + estimate.describe(teacher_spec is not None))
    sampling = {"temperature": temperature, "seed": seed} if temperature is not None else None
    timeout = settings.call_timeout_s
    lm = make_lm(lm_spec, seed=seed, sampling=sampling, timeout=timeout, num_retries=1) if lm_spec else None
    teacher = make_lm(teacher_spec, seed=seed, sampling={"seed": seed, "max_tokens": settings.teacher_max_tokens},
                      timeout=timeout, num_retries=1) if teacher_spec else None

    with dspy.track_usage() as tracker:
        meter = CallMeter(tracker, teacher.model if teacher is not None else None, on_call, estimate.requests)
        with dspy.context(callbacks=[*dspy.settings.get("callbacks", []), meter]):
            before = dev_score(setup, program, lm, valset_tasks) if lm is not None else None
            if optimizer == "fit":
                program.plan.demos = fit_demos(setup, program, train)
            else:
                trainset = [setup.example(t) for t in train]
                valset = [setup.example(t) for t in valset_tasks]
                metric = make_metric(setup, {t.id: t for t in [*train, *dev]})
                with dspy.context(lm=lm), contextlib.redirect_stdout(sys.stderr):  # DSPy's own chatter stays off stdout
                    program = optimize(optimizer, program, trainset, valset, metric, setup, teacher, seed, settings)
                program.render = setup.render
            after = dev_score(setup, program, lm, valset_tasks) if lm is not None else None
    costs = [e.get("cost") for e in (getattr(lm, "history", None) or []) if e.get("cost") is not None and e.get("usage")]

    save_program(program, path)
    roles = meter.roles
    result = CompileResult(
        tier=tier, variant=variant, model=model, optimizer=optimizer, lm=lm_spec, teacher_lm=teacher_spec, temperature=temperature,
        budget_model=setup.budget.model, optimizer_settings=settings.recorded(optimizer) if optimizer != "fit" else {},
        train_sha256=tasks_sha256(train), dev_sha256=tasks_sha256(valset_tasks), train_n=len(train), dev_n=len(valset_tasks),
        dev_score_before=before, dev_score_after=after, demos=len(program.plan.demos),
        prompt_tokens=setup.prompt_tokens(program), estimated_calls=estimate.total,
        lm_calls=meter.live, cached_calls=meter.cached,
        teacher_calls=roles["teacher"].live + roles["teacher"].cached,
        prompt_tokens_used=sum(r.prompt_tokens for r in roles.values()),
        completion_tokens_used=sum(r.completion_tokens for r in roles.values()),
        cost_usd=round(sum(costs), 6) if costs else None,
        seconds=round(time.perf_counter() - t0, 2), dspy_version=dspy.__version__,
        compiled_at=datetime.now(UTC).isoformat(timespec="seconds"),
        path=str(path.relative_to(manifest_path(out_root).parent)),
        inputs_sha256=target.inputs_sha, program_sha256=file_sha256(path),
    )
    update_manifest(result, out_root)
    return result


@dataclass
class _Target:
    """What a compile is of and from: its setup, LMs, uncompiled program, file, manifest key,
    tasks, settings and the hash of all of it."""

    setup: TierSetup
    lm_spec: str | None
    teacher_spec: str | None
    program: Any
    path: Path
    key: str
    train: list[PlanTask]
    dev: list[PlanTask]
    valset: list[PlanTask]
    settings: OptimizerSettings
    inputs_sha: str


def _target(tier: str | None, variant: str, *, model: str | None = None, optimizer: Optimizer = "fit",
            lm_spec: str | None = None, train: list[PlanTask] | None = None, dev: list[PlanTask] | None = None,
            out_root: Path | None = None, teacher_lm_spec: str | None = None, seed: int = 0,
            temperature: float | None = None, settings: OptimizerSettings | None = None,
            budgets: BudgetTable | None = None) -> _Target:
    settings = settings or load_optimizer_settings()
    train = train if train is not None else load_tasks("train")
    dev = dev if dev is not None else load_tasks("dev")
    valset = dev[: settings.valset] if settings.valset else dev
    if model is not None:
        setup = TierSetup.for_model(model, variant, budgets)
    elif tier is None:
        raise InputError("give a tier or a model to compile for")
    else:
        setup = TierSetup(tier, variant)
    if lm_spec == "sim:auto":
        lm_spec = f"sim:{setup.config.sim_profile}"
    teacher_spec = teacher_lm_spec if teacher_lm_spec and teacher_lm_spec != lm_spec else None
    program = MODULES[variant](setup.render)
    path = model_program_path(model, variant, out_root) if model else program_path(setup.tier, variant, out_root)
    key = model_key(model, variant) if model else tier_key(setup.tier, variant)
    inputs_sha = _inputs_sha(setup, program, optimizer, lm_spec, teacher_spec, seed, train, valset, model,
                             {**settings.recorded(optimizer), "temperature": temperature})
    return _Target(setup, lm_spec, teacher_spec, program, path, key, train, dev, valset, settings, inputs_sha)


def compiled_entry(tier: str | None, variant: str, **inputs: Any) -> CompileResult | None:
    """The manifest entry of the compile :func:`compile_program` would do with these arguments (all
    but ``resume``, ``notify`` and ``on_call``) when it is done: made from the same inputs, its
    file intact. None when it would compile."""
    check_optimizer(inputs.get("optimizer", "fit"), inputs.get("lm_spec"))
    target = _target(tier, variant, **inputs)
    return _unchanged_entry(target.key, target.path, variant, target.inputs_sha, inputs.get("out_root"))


def save_program(program: Any, path: Path) -> None:
    """Save ``program`` to ``path`` atomically (see :func:`~helmdeck_dspy.io.atomic.atomic_writer`).

    DSPy saves only to a named file: the program is saved to a scratch file first, whose bytes
    then replace ``path``, so a failed save leaves the previous program untouched.
    """
    with tempfile.TemporaryDirectory(prefix="helmdeck-program-") as scratch:
        saved = Path(scratch) / path.name
        program.save(str(saved))
        data = saved.read_bytes()
    with atomic_writer(path, "wb") as handle:
        handle.write(data)


def _inputs_sha(setup: TierSetup, program: Any, optimizer: str, lm_spec: str | None, teacher: str | None,
                seed: int, train: list[PlanTask], valset: list[PlanTask], model: str | None,
                settings: dict[str, Any]) -> str:
    """A hash of everything a compile's result depends on (see the module docstring)."""
    if optimizer == "fit":  # fit has no settings, but the temperature changes the scores it measures
        settings = {"temperature": settings["temperature"]} if settings.get("temperature") is not None else None
    parts = {
        "tier": setup.tier, "variant": setup.variant, "optimizer": optimizer, "lm": lm_spec,
        "teacher_lm": teacher if optimizer != "fit" else None, "seed": seed,
        "train": tasks_sha256(train), "dev": tasks_sha256(valset), "budget": setup.budget.model_dump(mode="json"),
        "config": setup.config.model_dump(mode="json"), "catalog": setup.catalog.fingerprint,
        "program": program.dump_state(), "dspy": dspy.__version__, "tool": version("helmdeck-dspy"),
        "model": model, "settings": settings,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _unchanged_entry(key: str, path: Path, variant: str, inputs_sha: str, root: Path | None) -> CompileResult | None:
    """The manifest entry ``key`` if it was compiled from ``inputs_sha`` and its file is intact."""
    entry = read_manifest(root)["programs"].get(key)
    if not isinstance(entry, dict) or entry.get("inputs_sha256") != inputs_sha:
        return None
    if not path.is_file() or entry.get("program_sha256") != file_sha256(path):
        return None
    try:
        load_compiled_state(MODULES[variant](), path)
        result = CompileResult.model_validate(entry)
    except (HelmdeckError, ValueError):
        return None
    return result.mark_skipped()
