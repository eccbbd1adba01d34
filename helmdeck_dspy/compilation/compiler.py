"""Per-tier compilation: :func:`compile_program` for one (tier, variant).

The optimizer (``fit``: no LM; ``bootstrap``, ``mipro``, ``gepa``: DSPy's, see
:mod:`helmdeck_dspy.compilation.optimizers`) works on the tier's setup
(:mod:`helmdeck_dspy.compilation.tier_setup`). With an LM, the dev score before and after is
measured on the dev tasks; ``--lm sim:auto`` uses each tier's simulator profile from
``eval/compile.toml``. Results go to ``compiled/tier_T/V.json`` and an entry in
``compiled/manifest.json`` (:mod:`helmdeck_dspy.compilation.manifest`), both written to a temporary
file and renamed into place, so a kill never leaves a half-written program or manifest.

Resuming: each manifest entry records ``inputs_sha256`` (tier, variant, optimizer, LM specs,
seed, train/dev tasks, the tier's budget and settings, the catalog, the uncompiled program's
state, the DSPy and tool versions) and ``program_sha256`` (the saved file). With ``resume``, a
(tier, variant) whose entry matches both is skipped. DSPy's optimizers cannot resume from the
middle of a run, so the unit of resumption is one (tier, variant) program: an interrupted
``compile --all`` redoes at most the program it was working on.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dspy

from helmdeck_dspy.compilation.demos import fit_demos
from helmdeck_dspy.compilation.manifest import (
    CompileResult,
    entry_key,
    file_sha256,
    read_manifest,
    update_manifest,
)
from helmdeck_dspy.compilation.optimizers import (
    Optimizer,
    check_optimizer,
    dev_score,
    lm_usage,
    make_metric,
    optimize,
)
from helmdeck_dspy.compilation.tier_setup import TierSetup
from helmdeck_dspy.errors import HelmdeckError
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.planning.lm import make_lm
from helmdeck_dspy.program.modules import MODULES
from helmdeck_dspy.program.store import load_compiled_state, program_path
from helmdeck_dspy.tasks import PlanTask, load_tasks


def compile_program(
    tier: str,
    variant: str,
    *,
    optimizer: Optimizer = "fit",
    lm_spec: str | None = None,
    train: list[PlanTask] | None = None,
    dev: list[PlanTask] | None = None,
    out_root: Path | None = None,
    reflection_lm_spec: str | None = None,
    seed: int = 0,
    resume: bool = False,
) -> CompileResult:
    """Compile the (tier, variant) program and record it in the manifest.

    Args:
        tier: ``A``, ``B`` or ``C``.
        variant: ``full_steps`` or ``single_pick``.
        optimizer: ``fit`` (no LM), ``bootstrap``, ``mipro`` or ``gepa``.
        lm_spec: The LM that plans during the compile (``sim:auto``: the tier's simulator profile).
        train / dev: The tasks (default: the bundled train and dev splits).
        out_root: Where ``tier_T/V.json`` and ``manifest.json`` go (default: the bundled ``compiled/``).
        reflection_lm_spec: GEPA's reflection LM (default: ``lm_spec``).
        seed: Passed to the LM and the optimizers.
        resume: Skip the compile when the manifest entry was made from the same inputs and the
            program file is unchanged: the entry is returned with ``skipped`` set.

    Raises:
        InputError: an unknown tier, variant or optimizer, or an optimizer that needs an LM without one.
    """
    check_optimizer(optimizer, lm_spec)
    t0 = time.perf_counter()
    train = train if train is not None else load_tasks("train")
    dev = dev if dev is not None else load_tasks("dev")
    setup = TierSetup(tier, variant)
    if lm_spec == "sim:auto":
        lm_spec = f"sim:{setup.config.sim_profile}"
    program = MODULES[variant](setup.render)
    inputs_sha = _inputs_sha(setup, program, optimizer, lm_spec, reflection_lm_spec, seed, train, dev)
    if resume:
        done = _unchanged_entry(tier, variant, inputs_sha, out_root)
        if done is not None:
            return done
    lm = make_lm(lm_spec, seed=seed) if lm_spec else None

    with dspy.track_usage() as tracker:
        before = dev_score(setup, program, lm, dev) if lm is not None else None
        if optimizer == "fit":
            program.plan.demos = fit_demos(setup, program, train)
        else:
            trainset = [setup.example(t) for t in train]
            valset = [setup.example(t) for t in dev]
            metric = make_metric(setup, {t.id: t for t in [*train, *dev]})
            with dspy.context(lm=lm):
                program = optimize(optimizer, program, trainset, valset, metric, setup, lm, reflection_lm_spec, seed)
            program.render = setup.render
        after = dev_score(setup, program, lm, dev) if lm is not None else None
    calls, ptok, ctok = lm_usage(tracker)
    costs = [e.get("cost") for e in (getattr(lm, "history", None) or []) if e.get("cost") is not None and e.get("usage")]

    path = program_path(tier, variant, out_root)
    save_program(program, path)
    result = CompileResult(
        tier=tier, variant=variant, optimizer=optimizer, lm=lm_spec, budget_model=setup.config.budget_model,
        train_sha256=_tasks_sha(train), dev_sha256=_tasks_sha(dev), train_n=len(train), dev_n=len(dev),
        dev_score_before=before, dev_score_after=after, demos=len(program.plan.demos),
        prompt_tokens=setup.prompt_tokens(program), lm_calls=calls, prompt_tokens_used=ptok,
        completion_tokens_used=ctok, cost_usd=round(sum(costs), 6) if costs else None,
        seconds=round(time.perf_counter() - t0, 2), dspy_version=dspy.__version__,
        compiled_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        path=str(path.relative_to(path.parents[1])),
        inputs_sha256=inputs_sha, program_sha256=file_sha256(path),
    )
    update_manifest(result, out_root)
    return result


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


def _tasks_sha(tasks: list[PlanTask]) -> str:
    """A hash of tasks, in order."""
    return hashlib.sha256("\n".join(t.model_dump_json() for t in tasks).encode()).hexdigest()


def _inputs_sha(setup: TierSetup, program: Any, optimizer: str, lm_spec: str | None, reflection: str | None,
                seed: int, train: list[PlanTask], dev: list[PlanTask]) -> str:
    """A hash of everything a compile's result depends on (see the module docstring)."""
    parts = {
        "tier": setup.tier, "variant": setup.variant, "optimizer": optimizer, "lm": lm_spec,
        "reflection_lm": reflection if optimizer == "gepa" else None, "seed": seed,
        "train": _tasks_sha(train), "dev": _tasks_sha(dev), "budget": setup.budget.model_dump(mode="json"),
        "config": setup.config.model_dump(mode="json"), "catalog": setup.catalog.fingerprint,
        "program": program.dump_state(), "dspy": dspy.__version__, "tool": version("helmdeck-dspy"),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _unchanged_entry(tier: str, variant: str, inputs_sha: str, root: Path | None) -> CompileResult | None:
    """The manifest entry for (tier, variant) if it was compiled from ``inputs_sha`` and its file is intact."""
    entry = read_manifest(root)["programs"].get(entry_key(tier, variant))
    if not isinstance(entry, dict) or entry.get("inputs_sha256") != inputs_sha:
        return None
    path = program_path(tier, variant, root)
    if not path.is_file() or entry.get("program_sha256") != file_sha256(path):
        return None
    try:
        load_compiled_state(MODULES[variant](), path)
        result = CompileResult.model_validate(entry)
    except (HelmdeckError, ValueError):
        return None
    return result.mark_skipped()
