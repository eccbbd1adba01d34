"""Compilation: :func:`compile_program` for one tier program or one model's own program, in three
stages: :func:`compile_target` resolves a :class:`~.request.CompileRequest` (no LM call),
:func:`run_compile` runs the optimizer (writes nothing), :func:`persist_compile` saves the program
and its manifest entry.

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

from helmdeck_dspy.compilation.demos import fit_demos
from helmdeck_dspy.compilation.estimate import estimate_calls
from helmdeck_dspy.compilation.history_pool import demos_sha256, history_demos
from helmdeck_dspy.compilation.manifest import (
    RECORD_KEY,
    CompileResult,
    entry_of,
    entry_record,
    record_run,
    write_manifest,
)
from helmdeck_dspy.compilation.meter import CallMeter
from helmdeck_dspy.compilation.optimizers import dev_score, make_metric, optimize
from helmdeck_dspy.compilation.request import CompileOptions, CompileRequest
from helmdeck_dspy.compilation.settings import OptimizerSettings, load_optimizer_settings
from helmdeck_dspy.compilation.tier_setup import TierSetup
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.errors import HelmdeckError, InputError
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.program.demo_pool import DemoPool, PoolDemo, fit_decline_gate, pool_from_tasks
from helmdeck_dspy.program.modules import MODULES
from helmdeck_dspy.program.store import (
    ABOUT_KEY,
    load_compiled_state,
    manifest_path,
    model_key,
    model_program_path,
    program_path,
    read_manifest,
    tier_key,
)
from helmdeck_dspy.tasks import PlanTask, load_tasks, tasks_sha256


def compile_program(request: CompileRequest, *, resume: bool = False, notify: Callable[[str], None] | None = None,
                    on_call: Callable[[CallMeter], None] | None = None) -> CompileResult:
    """Compile one program and record it in the manifest: :func:`compile_target`, then
    :func:`run_compile`, then :func:`persist_compile`.

    Args:
        request: What to compile, with what (see :class:`~.request.CompileRequest`).
        resume: Skip the compile when the manifest entry was made from the same inputs and the
            program file is unchanged: the entry is returned with ``skipped`` set. (An interrupted
            compile run again replays the calls it made from DSPy's response cache.)
        notify: Called with one-line messages (the call estimate).
        on_call: Called after every LM call with the :class:`CallMeter`.

    Raises:
        InputError: an unknown tier, variant or optimizer, an optimizer that needs an LM without
            one, or a model program whose folder holds another model's.
    """
    target = compile_target(request)
    if resume and (done := target.done()) is not None:
        return done
    target.check_folder()
    return persist_compile(target, run_compile(target, notify=notify, on_call=on_call))


def compiled_entry(request: CompileRequest) -> CompileResult | None:
    """The manifest entry :func:`compile_program` would skip to for ``request``: made from the same
    inputs, its file intact. None when it would compile."""
    return compile_target(request).done()


@dataclass
class CompileTarget:
    """What a compile is of and from: its setup, LMs, uncompiled program, file, manifest key,
    tasks, settings and the hash of all of it (see the module docstring)."""

    request: CompileRequest
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
    history_demos: tuple[PoolDemo, ...] = ()

    def done(self) -> CompileResult | None:
        """The program file's entry if it was compiled from these inputs and loads (marked skipped)."""
        if not self.path.is_file():
            return None
        try:
            entry = entry_of(self.path, self.request.options.out_root)
            if entry is None or entry.inputs_sha256 != self.inputs_sha:
                return None
            load_compiled_state(MODULES[self.request.variant](), self.path)
        except HelmdeckError:
            return None
        return entry.mark_skipped()

    def check_folder(self) -> None:
        """Raise :class:`InputError` when a model program's folder already holds another model's."""
        model = self.request.options.model
        listed = read_manifest(self.request.options.out_root)["programs"].get(self.key)
        if model is not None and isinstance(listed, dict) and listed.get("model") not in (None, model):
            raise InputError(f"{model} and {listed['model']} share the program folder {self.path.parent}: "
                             "compile one of them into another --out root")


def compile_target(request: CompileRequest) -> CompileTarget:
    """Resolve ``request``: its setup (budget row, render options, catalog), tasks, settings, LM
    specs, uncompiled program, file and manifest key, and the hash of its inputs. No LM call."""
    request.check()
    opts = request.options
    settings = opts.settings or load_optimizer_settings()
    train = request.train if request.train is not None else load_tasks("train")
    dev = request.dev if request.dev is not None else load_tasks("dev")
    valset = dev[: settings.valset] if settings.valset else dev
    if opts.model is not None:
        setup = TierSetup.for_model(opts.model, request.variant, request.budgets)
    elif request.tier is not None:
        setup = TierSetup(request.tier, request.variant)
    else:  # request.check() rules this out
        raise InputError("give a tier or a model to compile for")
    lm_spec = f"sim:{setup.config.sim_profile}" if opts.lm == "sim:auto" else opts.lm
    teacher_spec = opts.teacher_lm if opts.teacher_lm and opts.teacher_lm != lm_spec else None
    program = MODULES[request.variant]()
    if opts.model:
        path, key = model_program_path(opts.model, request.variant, opts.out_root), model_key(opts.model, request.variant)
    else:
        path, key = program_path(setup.tier, request.variant, opts.out_root), tier_key(setup.tier, request.variant)
    learned = _history_demos(opts, setup)
    inputs_sha = _inputs_sha(setup, program, opts.optimizer, lm_spec, teacher_spec, opts.seed, train, valset, opts.model,
                             {**settings.recorded(opts.optimizer), "temperature": opts.temperature,
                              **({"knn_demos": opts.knn_demos} if opts.knn_demos else {}),
                              **({"decline_slot": True} if opts.decline_slot else {}),
                              **({"decline_gate": True} if opts.decline_gate else {}),
                              **({"history_demos": demos_sha256(learned)} if learned else {})})
    return CompileTarget(request, setup, lm_spec, teacher_spec, program, path, key, train, dev, valset, settings, inputs_sha,
                         learned)


def _history_demos(opts: CompileOptions, setup: TierSetup) -> tuple[PoolDemo, ...]:
    """The accepted plans of ``opts.history_traces`` over the setup's catalog (none without traces)."""
    if not opts.history_traces:
        return ()
    return history_demos(opts.history_traces, HistoryStore(opts.history_store), setup.catalog)


@dataclass
class CompileRun:
    """What :func:`run_compile` produced: the compiled program (not yet saved) and what it took."""

    program: Any
    before: float | None
    after: float | None
    meter: CallMeter
    estimated_calls: int
    cost_usd: float | None
    seconds: float


def run_compile(target: CompileTarget, *, notify: Callable[[str], None] | None = None,
                on_call: Callable[[CallMeter], None] | None = None) -> CompileRun:
    """Run the optimizer on ``target`` (and, with an LM, score the valset before and after).
    Writes nothing."""
    t0 = time.perf_counter()
    opts, setup, settings = target.request.options, target.setup, target.settings
    lm_spec, teacher_spec, optimizer, seed = target.lm_spec, target.teacher_spec, opts.optimizer, opts.seed
    train, valset_tasks = target.train, target.valset
    estimate = estimate_calls(optimizer, settings, train_n=len(train), val_n=len(valset_tasks),
                              max_demos=setup.config.max_demos, scored=lm_spec is not None)
    if notify is not None and lm_spec is not None:
        notify(f"{target.key}: {optimizer} on {len(train)} train / {len(valset_tasks)} valset tasks; "
               + estimate.describe(teacher_spec is not None))
    sampling = {"temperature": opts.temperature, "seed": seed} if opts.temperature is not None else None
    timeout = settings.call_timeout_s
    lm = make_lm(lm_spec, seed=seed, sampling=sampling, timeout=timeout, num_retries=1) if lm_spec else None
    teacher = make_lm(teacher_spec, seed=seed, sampling={"seed": seed, "max_tokens": settings.teacher_max_tokens},
                      timeout=timeout, num_retries=1) if teacher_spec else None

    program = target.program
    with dspy.track_usage() as tracker:
        meter = CallMeter(tracker, teacher.model if teacher is not None else None, on_call, estimate.requests)
        with dspy.context(callbacks=[*dspy.settings.get("callbacks", []), meter]), setup.scope():
            before = dev_score(setup, program, lm, valset_tasks) if lm is not None else None
            if optimizer == "fit":
                program.plan.demos = fit_demos(setup, program, train)
            else:
                trainset = [setup.example(t) for t in train]
                valset = [setup.example(t) for t in valset_tasks]
                metric = make_metric(setup, {t.id: t for t in [*train, *target.dev]})
                with dspy.context(lm=lm), contextlib.redirect_stdout(sys.stderr):  # DSPy's own chatter stays off stdout
                    program = optimize(optimizer, program, trainset, valset, metric, setup, teacher, seed, settings)
            if opts.knn_demos:
                pool = pool_from_tasks(train, setup.catalog)
                gate = fit_decline_gate([*train, *target.valset], setup.catalog) if opts.decline_gate else None
                program.demo_pool = DemoPool(demos=(*pool.demos, *target.history_demos), k=opts.knn_demos,
                                             decline_slot=opts.decline_slot, decline_below=gate)
            after = dev_score(setup, program, lm, valset_tasks) if lm is not None else None
    costs = [e.get("cost") for e in (getattr(lm, "history", None) or []) if e.get("cost") is not None and e.get("usage")]
    return CompileRun(program, before, after, meter, estimate.total, round(sum(costs), 6) if costs else None,
                      round(time.perf_counter() - t0, 2))


def persist_compile(target: CompileTarget, run: CompileRun) -> CompileResult:
    """Save ``run``'s program to ``target``'s file with its entry, and derive the manifest again (both atomically)."""
    opts, setup = target.request.options, target.setup
    pool = run.program.demo_pool
    roles = run.meter.roles
    result = CompileResult(
        tier=setup.tier, variant=setup.variant, model=opts.model, optimizer=opts.optimizer, lm=target.lm_spec,
        teacher_lm=target.teacher_spec, temperature=opts.temperature, budget_model=setup.budget.model,
        optimizer_settings=target.settings.recorded(opts.optimizer) if opts.optimizer != "fit" else {},
        train_sha256=tasks_sha256(target.train), dev_sha256=tasks_sha256(target.valset),
        train_n=len(target.train), dev_n=len(target.valset),
        dev_score_before=run.before, dev_score_after=run.after, demos=len(run.program.plan.demos),
        knn_demos=opts.knn_demos, decline_slot=opts.decline_slot, history_demos=len(target.history_demos),
        decline_below=pool.decline_below if pool else None, demo_pool_size=len(pool.demos) if pool else 0,
        prompt_tokens=setup.prompt_tokens(run.program), estimated_calls=run.estimated_calls,
        lm_calls=run.meter.live, cached_calls=run.meter.cached,
        teacher_calls=roles["teacher"].live + roles["teacher"].cached,
        prompt_tokens_used=sum(r.prompt_tokens for r in roles.values()),
        completion_tokens_used=sum(r.completion_tokens for r in roles.values()),
        cost_usd=run.cost_usd, seconds=run.seconds, dspy_version=dspy.__version__,
        compiled_at=datetime.now(UTC).isoformat(timespec="seconds"),
        path=target.path.relative_to(manifest_path(opts.out_root).parent).as_posix(), inputs_sha256=target.inputs_sha,
    )
    save_program(run.program, target.path, about={
        "variant": setup.variant, "tier": setup.tier, "model": opts.model, "optimizer": opts.optimizer,
        "inputs_sha256": target.inputs_sha,
        "pool": {"size": len(pool.demos), "k": pool.k, "decline_slot": pool.decline_slot} if pool else None,
        RECORD_KEY: entry_record(result),
    })
    record_run(result, target.path)
    write_manifest(opts.out_root)
    entry = entry_of(target.path, opts.out_root)
    assert entry is not None  # just written with its record
    return entry


def save_program(program: Any, path: Path, about: dict[str, Any] | None = None) -> None:
    """Save ``program`` to ``path`` atomically (see :func:`~helmdeck_dspy.io.atomic.atomic_writer`),
    with ``about`` (what it was compiled for: variant, tier or model, optimizer, inputs hash, pool)
    as its ``metadata.helmdeck``, which loading checks (:func:`~helmdeck_dspy.program.store.check_variant`).

    DSPy saves only to a named file: the program is saved to a scratch file first, whose bytes
    then replace ``path``, so a failed save leaves the previous program untouched.
    """
    with tempfile.TemporaryDirectory(prefix="helmdeck-program-") as scratch:
        saved = Path(scratch) / path.name
        program.save(str(saved))
        data = saved.read_bytes()
    if about is not None:
        state = json.loads(data)
        state.setdefault("metadata", {})[ABOUT_KEY] = about
        data = (json.dumps(state, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with atomic_writer(path, "wb") as handle:
        handle.write(data)


def _inputs_sha(setup: TierSetup, program: Any, optimizer: str, lm_spec: str | None, teacher: str | None,
                seed: int, train: list[PlanTask], valset: list[PlanTask], model: str | None,
                settings: dict[str, Any]) -> str:
    """A hash of everything a compile's result depends on (see the module docstring)."""
    recorded: dict[str, Any] | None = settings
    if optimizer == "fit":  # fit has no settings, but the temperature changes the scores it measures (and a pool the program)
        recorded = {k: v for k, v in settings.items() if k in ("temperature", "knn_demos", "decline_slot", "decline_gate") and v is not None} or None
    parts = {
        "tier": setup.tier, "variant": setup.variant, "optimizer": optimizer, "lm": lm_spec,
        "teacher_lm": teacher if optimizer != "fit" else None, "seed": seed,
        "train": tasks_sha256(train), "dev": tasks_sha256(valset), "budget": setup.budget.model_dump(mode="json"),
        "config": setup.config.model_dump(mode="json"), "catalog": setup.catalog.fingerprint,
        "program": program.dump_state(), "dspy": dspy.__version__, "tool": version("helmdeck-dspy"),
        "model": model, "settings": recorded,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
