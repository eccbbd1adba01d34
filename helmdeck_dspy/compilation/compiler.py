"""Per-tier compilation: ``compile --tier T --variant V [--optimizer O] [--lm LM]``.

Optimizers:

- ``fit`` (default, no LM): choose demos from the train tasks so the rendered prompt —
  instructions, demos, the tier's selected catalog, a typical intent and the output reserve —
  fits the tier's input budget (and its prompt-token target), covering the complexity classes,
  shortest first.
- ``bootstrap`` (BootstrapFewShot), ``mipro`` (MIPROv2), ``gepa`` (GEPA): DSPy's optimizers
  with the plan metric; a parse failure scores 0.

With an LM, the dev score before and after is measured on the dev tasks. ``--lm sim:auto`` uses
each tier's simulator profile from ``eval/compile.toml``.

Every compile-time call runs under the tier's budget (output cap, catalog cap, strict JSON,
catalog placement) exactly as at runtime. Results go to ``compiled/tier_T/V.json`` and an entry
in ``compiled/manifest.json``, both written to a temporary file and renamed into place, so a kill
never leaves a half-written program or manifest.

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
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from helmdeck_dspy.budgets import Budget, budget_for
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.catalog.select import select_catalog
from helmdeck_dspy.errors import CompiledProgramError, DataFileError, HelmdeckError
from helmdeck_dspy.evaluation.metric import score_plan
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.datafiles import read_json, read_toml
from helmdeck_dspy.io.resources import bundled_dir, compiled_dir
from helmdeck_dspy.io.tokens import count_message_tokens
from helmdeck_dspy.planning.result import guarded_from_prediction
from helmdeck_dspy.program.adapter import PlanAdapter, PlanParseError, RenderOptions
from helmdeck_dspy.program.store import load_compiled_state, program_path
from helmdeck_dspy.signatures.types import PIPELINE_RUN_TOOL, PlanStep
from helmdeck_dspy.tasks import PlanTask, load_tasks

Optimizer = Literal["fit", "bootstrap", "mipro", "gepa"]
OPTIMIZERS: tuple[str, ...] = ("fit", "bootstrap", "mipro", "gepa")
TIERS = ("A", "B", "C")
VARIANTS = ("full_steps", "single_pick")


class TierConfig(BaseModel):
    budget_model: str
    max_demos: int = Field(ge=0)
    prompt_token_target: int = Field(ge=0)
    typical_intent: str
    sim_profile: str = Field(description="The simulator profile `sim:auto` means for this tier.")


def load_tier_config(tier: str) -> TierConfig:
    path = bundled_dir() / "compile.toml"
    data = read_toml(path)
    try:
        return TierConfig.model_validate(data["tier"][tier])
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFileError(str(path), f"no valid [tier.{tier}] settings: {exc}") from None


class CompileResult(BaseModel):
    """A manifest entry."""

    tier: str
    variant: str
    optimizer: str
    lm: str | None
    budget_model: str
    train_sha256: str
    dev_sha256: str
    train_n: int
    dev_n: int
    dev_score_before: float | None
    dev_score_after: float | None
    demos: int
    prompt_tokens: int = Field(description="Tokens of the rendered prompt for the tier's typical intent.")
    lm_calls: int
    prompt_tokens_used: int
    completion_tokens_used: int
    cost_usd: float | None = Field(
        default=None,
        description="Summed from the cost the LM reports in its history (copies an optimizer makes are not seen); "
        "None when it reports none (simulated, replayed).",
    )
    seconds: float
    dspy_version: str
    compiled_at: str
    path: str
    inputs_sha256: str | None = Field(default=None, description="Hash of everything the compile depends on.")
    program_sha256: str | None = Field(default=None, description="Hash of the saved program file.")
    _skipped: bool = PrivateAttr(default=False)

    @property
    def skipped(self) -> bool:
        """True when ``compile_program(resume=True)`` found this program already compiled from the same inputs."""
        return self._skipped


def _sha(tasks: list[PlanTask]) -> str:
    return hashlib.sha256("\n".join(t.model_dump_json() for t in tasks).encode()).hexdigest()


def demo_steps(task: PlanTask, variant: str) -> tuple[list[PlanStep], bool]:
    """The gold plan as demo output steps (one for single_pick) and more_steps_likely."""
    gold = task.steps[:1] if variant == "single_pick" else task.steps
    steps = []
    for i, g in enumerate(gold, 1):
        target = g.args.get("id") if g.tool == PIPELINE_RUN_TOOL else g.tool
        args = {k: v for k, v in g.args.items() if v is not None}
        if g.tool == PIPELINE_RUN_TOOL:
            args.setdefault("inputs", {})
        steps.append(PlanStep(order=i, tool=g.tool, args=args, rationale=f"{target} covers this part of the request."))
    return steps, variant == "single_pick" and len(task.steps) > 1


def _complexity(steps: list[PlanStep], more: bool) -> str:
    if len(steps) >= 2 or more:
        return "pack-chain"
    if steps and steps[0].tool == PIPELINE_RUN_TOOL:
        return "pipeline-direct"
    return "single-action"


class TierSetup:
    """Everything a tier's compile needs: budget, render options, catalog selection, examples."""

    def __init__(self, tier: str, variant: str, catalog: RoutingGuide | None = None) -> None:
        if tier not in TIERS or variant not in VARIANTS:
            raise HelmdeckError(f"unknown tier/variant {tier}/{variant}")
        self.tier, self.variant = tier, variant
        self.config = load_tier_config(tier)
        self.budget: Budget = budget_for(self.config.budget_model)
        if self.budget.tier != tier:
            raise DataFileError("compile.toml", f"budget_model {self.config.budget_model} is tier {self.budget.tier}, not {tier}")
        self.catalog = catalog or load_catalog()
        self.render = RenderOptions.for_budget(self.budget, variant)

    def catalog_for(self, intent: str) -> str:
        selected, _ = select_catalog(self.catalog, self.budget, intent, ranker="bm25", rank_source="full")
        return selected.render()

    def example(self, task: PlanTask, with_labels: bool = True) -> Any:
        import dspy

        fields: dict[str, Any] = {
            "user_intent": task.intent, "catalog": self.catalog_for(task.intent), "context": task.context,
            "prior_steps": None, "task_id": task.id,
        }
        if with_labels:
            steps, more = demo_steps(task, self.variant)
            fields.update(steps=steps, complexity=_complexity(steps, more), more_steps_likely=more,
                          reasoning=task.notes or "Chosen from the catalog entries that fit the request.")
        return dspy.Example(**fields).with_inputs("user_intent", "catalog", "context", "prior_steps")

    def prompt_tokens(self, program: Any, intent: str | None = None) -> int:
        """Tokens of the prompt the program renders for ``intent`` (the typical intent by default)."""
        adapter = PlanAdapter(self.render)
        it = intent or self.config.typical_intent
        messages = adapter.format(
            program.plan.signature, program.plan.demos, {"user_intent": it, "catalog": self.catalog_for(it)}
        )
        return count_message_tokens(messages[0]["content"], messages[1:])


# ------------------------------------------------------------------------------------ fit


def fit_demos(setup: TierSetup, program: Any, train: list[PlanTask]) -> list[Any]:
    """Choose demos: cover complexity classes round-robin, shortest first, within the budget."""
    adapter = PlanAdapter(setup.render)
    program.plan.demos = []
    base = setup.prompt_tokens(program)
    limit = setup.budget.input_tokens - setup.budget.output_tokens
    if setup.config.prompt_token_target:
        limit = min(limit, setup.config.prompt_token_target)
    room = limit - base
    candidates: dict[str, list[tuple[int, str, Any]]] = {}
    for task in train:
        if task.context and len(task.context) > 600:
            continue  # long pastes make poor demos: they cost the budget and teach little
        ex = setup.example(task)
        cost = count_message_tokens("", adapter.format_demos(program.plan.signature, [ex]))
        key = ex.complexity if task.category not in ("gap", "adversarial", "supersedes") else task.category
        candidates.setdefault(key, []).append((cost, task.id, ex))
    for items in candidates.values():
        items.sort(key=lambda c: (c[0], c[1]))
    order = ["pack-chain", "pipeline-direct", "single-action", "supersedes", "gap", "adversarial"]
    chosen: list[Any] = []
    spent = 0
    while len(chosen) < setup.config.max_demos:
        progressed = False
        for key in order:
            items = candidates.get(key)
            if not items or len(chosen) >= setup.config.max_demos:
                continue
            cost, _, ex = items.pop(0)
            if spent + cost <= room:
                chosen.append(ex)
                spent += cost
                progressed = True
        if not progressed:
            break
    return chosen


# ------------------------------------------------------------------------------------ scoring


def make_metric(setup: TierSetup, tasks: dict[str, PlanTask]):
    ids, pipes = setup.catalog.id_set, setup.catalog.pipeline_ids

    def metric(example: Any, pred: Any, trace: Any = None, *rest: Any) -> float:
        task = tasks[example.task_id]
        steps = getattr(pred, "steps", None)
        if steps is None:
            return 0.0
        guarded = guarded_from_prediction(steps, ids, pipes)
        if setup.variant == "single_pick" and len(guarded) > 1:
            guarded = guarded[:1]
        score = score_plan(task, guarded, variant=setup.variant, pipeline_ids=pipes).score
        if trace is not None and not rest:  # bootstrapping: keep only demos that are nearly right
            return float(score >= 0.8)
        return score

    return metric


def dev_score(setup: TierSetup, program: Any, lm: Any, dev: list[PlanTask]) -> float:
    import dspy

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


def _usage(tracker: Any) -> tuple[int, int, int]:
    """(real LM calls, prompt tokens, completion tokens) from a ``dspy.track_usage()`` tracker.

    The tracker sees every LM copy an optimizer makes; a cache hit has empty usage and is not
    recorded, so a fully cached compile counts 0 calls."""
    calls = prompt = completion = 0
    for entries in tracker.usage_data.values():
        for usage in entries:
            calls += 1
            prompt += int(usage.get("prompt_tokens") or 0)
            completion += int(usage.get("completion_tokens") or 0)
    return calls, prompt, completion


# ------------------------------------------------------------------------------------ compile


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

    With ``resume``, a program whose manifest entry was made from the same inputs (and whose
    file is unchanged) is not compiled again: its entry is returned with ``skipped`` set.
    """
    import dspy

    from helmdeck_dspy.planning.lm import make_lm
    from helmdeck_dspy.program.modules import MODULES

    if optimizer not in OPTIMIZERS:
        raise HelmdeckError(f"unknown optimizer {optimizer!r}; expected one of {OPTIMIZERS}")
    if optimizer != "fit" and not lm_spec:
        raise HelmdeckError(f"optimizer {optimizer} needs an LM (--lm: a model, replay:PATH or sim:PROFILE)")
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
        all_tasks = {t.id: t for t in [*train, *dev]}
        if optimizer == "fit":
            program.plan.demos = fit_demos(setup, program, train)
        else:
            trainset = [setup.example(t) for t in train]
            valset = [setup.example(t) for t in dev]
            metric = make_metric(setup, all_tasks)
            with dspy.context(lm=lm):
                program = _optimize(optimizer, program, trainset, valset, metric, setup, lm, reflection_lm_spec, seed)
            program.render = setup.render
        after = dev_score(setup, program, lm, dev) if lm is not None else None
    calls, ptok, ctok = _usage(tracker)
    costs = [e.get("cost") for e in (getattr(lm, "history", None) or []) if e.get("cost") is not None and e.get("usage")]

    path = program_path(tier, variant, out_root)
    save_program(program, path)
    result = CompileResult(
        tier=tier, variant=variant, optimizer=optimizer, lm=lm_spec, budget_model=setup.config.budget_model,
        train_sha256=_sha(train), dev_sha256=_sha(dev), train_n=len(train), dev_n=len(dev),
        dev_score_before=before, dev_score_after=after, demos=len(program.plan.demos),
        prompt_tokens=setup.prompt_tokens(program), lm_calls=calls, prompt_tokens_used=ptok,
        completion_tokens_used=ctok, cost_usd=round(sum(costs), 6) if costs else None, seconds=round(time.perf_counter() - t0, 2), dspy_version=dspy.__version__,
        compiled_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        path=str(path.relative_to(path.parents[1])),
        inputs_sha256=inputs_sha, program_sha256=_file_sha(path),
    )
    update_manifest(result, out_root)
    return result


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _inputs_sha(setup: TierSetup, program: Any, optimizer: str, lm_spec: str | None, reflection: str | None,
                seed: int, train: list[PlanTask], dev: list[PlanTask]) -> str:
    """A hash of everything a compile's result depends on (see the module docstring)."""
    from importlib.metadata import version

    import dspy

    state = program.dump_state()
    parts = {
        "tier": setup.tier, "variant": setup.variant, "optimizer": optimizer, "lm": lm_spec,
        "reflection_lm": reflection if optimizer == "gepa" else None, "seed": seed,
        "train": _sha(train), "dev": _sha(dev), "budget": setup.budget.model_dump(mode="json"),
        "config": setup.config.model_dump(mode="json"), "catalog": setup.catalog.fingerprint,
        "program": state, "dspy": dspy.__version__, "tool": version("helmdeck-dspy"),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _unchanged_entry(tier: str, variant: str, inputs_sha: str, root: Path | None) -> CompileResult | None:
    """The manifest entry for (tier, variant) if it was compiled from ``inputs_sha`` and its file is intact."""
    entry = read_manifest(root)["programs"].get(f"tier_{tier}/{variant}")
    if not isinstance(entry, dict) or entry.get("inputs_sha256") != inputs_sha:
        return None
    path = program_path(tier, variant, root)
    if not path.is_file() or entry.get("program_sha256") != _file_sha(path):
        return None
    from helmdeck_dspy.program.modules import MODULES

    try:
        load_compiled_state(MODULES[variant](), path)
        result = CompileResult.model_validate(entry)
    except (HelmdeckError, ValueError):
        return None
    result._skipped = True
    return result


def save_program(program: Any, path: Path) -> None:
    """``program.save(path)`` through a temporary ``.json`` file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".json", dir=path.parent)
    os.close(fd)
    try:
        program.save(tmp)
        with open(tmp, "rb") as handle:  # on disk before the rename
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _optimize(optimizer: str, program: Any, trainset: list, valset: list, metric: Any, setup: TierSetup,
              lm: Any, reflection_lm_spec: str | None, seed: int) -> Any:
    import dspy

    k = max(1, setup.config.max_demos)
    if optimizer == "bootstrap":
        opt = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=k, max_labeled_demos=k, max_errors=len(trainset))
        return opt.compile(program, trainset=trainset)
    if optimizer == "mipro":
        opt = dspy.MIPROv2(metric=metric, auto=None, num_candidates=3, max_bootstrapped_demos=min(k, 2),
                           max_labeled_demos=min(k, 2), num_threads=1, seed=seed, max_errors=len(trainset),
                           verbose=False)
        return opt.compile(program, trainset=trainset, valset=valset, num_trials=4, minibatch=False)
    from helmdeck_dspy.planning.lm import make_lm

    reflection = make_lm(reflection_lm_spec, seed=seed) if reflection_lm_spec else lm

    def gepa_metric(gold: Any, pred: Any, trace: Any = None, pred_name: Any = None, pred_trace: Any = None) -> Any:
        score = metric(gold, pred, None, "gepa")
        return dspy.Prediction(score=score, feedback=f"plan score {score:.2f}; use exact catalog ids and prefer pipelines")

    opt = dspy.GEPA(metric=gepa_metric, max_metric_calls=4 * len(valset) + 2 * len(trainset), reflection_lm=reflection,
                    num_threads=1, seed=seed)
    return opt.compile(program, trainset=trainset, valset=valset)


RUN_MARKER = ".compile-run.json"


def start_run(args: dict[str, Any], root: Path | None = None) -> bool:
    """Mark a compile run as started; True when an identical run was interrupted before finishing.

    The marker (``ROOT/.compile-run.json``) holds the run's arguments and is removed by
    :func:`finish_run`; finding it with the same arguments means the last such run was cut off.
    """
    path = (root or compiled_dir()) / RUN_MARKER
    text = json.dumps(args, sort_keys=True, default=str)
    interrupted = False
    try:
        interrupted = path.read_text(encoding="utf-8").strip() == text
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write_text(path, text + "\n")
    return interrupted


def finish_run(root: Path | None = None) -> None:
    ((root or compiled_dir()) / RUN_MARKER).unlink(missing_ok=True)


def manifest_path(root: Path | None = None) -> Path:
    return (root or compiled_dir()) / "manifest.json"


def read_manifest(root: Path | None = None) -> dict[str, Any]:
    """The manifest (an empty one when absent).

    Raises:
        CompiledProgramError: it is not JSON, or not ``{"programs": {...}}``.
    """
    path = manifest_path(root)
    if not path.exists():
        return {"schema_version": 1, "programs": {}}
    data = read_json(path, CompiledProgramError)
    if not isinstance(data, dict) or not isinstance(data.setdefault("programs", {}), dict):
        raise CompiledProgramError(str(path), 'expected {"schema_version": 1, "programs": {...}}')
    return data


def update_manifest(result: CompileResult, root: Path | None = None) -> None:
    path = manifest_path(root)
    data = read_manifest(root)
    data["programs"][f"tier_{result.tier}/{result.variant}"] = result.model_dump()
    data["programs"] = dict(sorted(data["programs"].items()))
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
