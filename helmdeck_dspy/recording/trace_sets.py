"""Running the real planner over gold tasks and recording every exchange as trace records.

- :func:`simulate` — against the simulated tier LM (``source = "sim:<profile>"``);
- :func:`record` — against any LM spec: a live model, ``replay:`` or ``sim:`` (``source = "live"``
  for a live model).

Both plan each task (the first ``n``, cycling when ``n`` exceeds them) for every requested prompt
variant and write all records to ``out`` atomically. While they run, each exchange is appended
as one complete line to ``partial_path(out)`` (``OUT.partial.jsonl`` beside the output), so a run
killed half-way keeps every exchange recorded so far in a readable trace file (at most its last
line torn, which readers report and skip); a finished run removes it. The partial file opens with
a header line naming the output (:func:`~helmdeck_dspy.traces.record.partial_header`; trace
readers skip it): a file at that path without it is the user's, and the run refuses to start
rather than read or delete it.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.domain import VARIANTS
from helmdeck_dspy.engines.lm_spec import make_lm, run_settings, trace_source
from helmdeck_dspy.engines.profile import SimProfile, list_profiles, load_profile
from helmdeck_dspy.errors import OutputRefusedError, RecordingFailedError
from helmdeck_dspy.io.atomic import exclusive_output
from helmdeck_dspy.planning.attempt import recorded_run
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.tasks import PlanTask
from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import TraceRecord, partial_header, write_jsonl_traces


def resolve_profiles(names: Iterable[str]) -> list[SimProfile]:
    """Profile names or paths; ``all`` means every bundled profile."""
    out: list[SimProfile] = []
    for name in names:
        out += [load_profile(n) for n in list_profiles()] if name == "all" else [load_profile(name)]
    return out


Run = tuple[Any, str, str, "dict[str, Any] | None"]
"""One model to run: (LM, model id for the budget lookup, the records' ``source``, the records' ``run``)."""


PER_REQUEST_RUN_KEYS = frozenset({"prompt", "demos", "constrained"})
"""``run`` keys a record gets from its own request's spec, not from the run's settings (the key
holds the spec's answer strategy instead)."""


def _key(source: str, model: str, variant: str | None, task_id: str | None, intent: str | None,
         max_tokens: int | None, temperature: float | None, seed: int | None, run: dict | None,
         strategy: str | None) -> str:
    """What makes two exchanges the same request: a resumed run skips a request whose key it has.
    A request under another answer strategy (native tools, a schema, the plain prompt) is another request."""
    run = {k: v for k, v in (run or {}).items() if k not in PER_REQUEST_RUN_KEYS} if run is not None else None
    program = (run or {}).get("program")
    if isinstance(program, dict) and program.get("sha256"):  # the same file however its path was spelled
        run = {**(run or {}), "program": {k: v for k, v in program.items() if k != "path"}}
    parts: list[Any] = [source, model, variant, task_id, intent, max_tokens, temperature, seed, run, strategy]
    return json.dumps(parts, sort_keys=True)


def _record_key(rec: TraceRecord) -> str:
    prompt = (rec.run or {}).get("prompt")
    strategy = prompt.get("strategy") if isinstance(prompt, dict) else None
    return _key(rec.source, rec.model, rec.prompt_variant, rec.task_id, rec.intent, rec.max_tokens,
                rec.temperature, rec.seed, rec.run, strategy)


def _resumable(scratch: Path) -> tuple[list[TraceRecord], set[str]]:
    """The records of an interrupted run worth keeping, and their request keys.

    A request counts as done when one of its plan records holds a completion; records of
    requests that only failed at the transport level are dropped, so the re-run asks again.
    """
    records = list(read_jsonl_traces(scratch, on_error="skip"))  # a torn last line is the killed write
    done = {_record_key(r) for r in records if r.call == "plan" and r.error is None}
    return [r for r in records if _record_key(r) in done], done


def _run(
    runs: list[Run],
    tasks: list[PlanTask],
    out: str | Path,
    *,
    options: PlannerOptions,
    variants: Iterable[str],
    n: int | None,
    progress: Callable[[int], None] | None,
    concurrency: int = 1,
    resume: bool = True,
    notify: Callable[[str], None] | None = None,
) -> int:
    """Plan every (run, variant, task) once, ``concurrency`` requests at a time, and write the
    records in that order (however the requests interleaved). Each planner gets ``options`` with
    the run's recording fields (``record_path``, ``record_source``, ``record_run``) set.

    The run holds ``OUT.lock`` throughout, so a second run onto the same ``out`` is refused rather
    than interleaved; a run in which every request sent failed keeps its partial file and raises,
    so it is neither reported as success nor taken for a finished recording.

    Raises:
        OutputLockedError: Another run is writing ``out``.
        RecordingFailedError: Requests were sent and none was answered.
    """
    with exclusive_output(out):
        return _run_locked(runs, tasks, out, options=options, variants=variants, n=n, progress=progress,
                           concurrency=concurrency, resume=resume, notify=notify)


def _run_locked(
    runs: list[Run], tasks: list[PlanTask], out: str | Path, *, options: PlannerOptions, variants: Iterable[str],
    n: int | None, progress: Callable[[int], None] | None, concurrency: int, resume: bool,
    notify: Callable[[str], None] | None,
) -> int:
    from helmdeck_dspy.planning.planner import Planner  # imports dspy

    chosen = list(itertools.islice(itertools.cycle(tasks), n)) if n else list(tasks)
    scratch = partial_path(out)
    kept: list[TraceRecord] = []
    done: set[str] = set()
    if scratch.exists() and not is_own_partial(scratch, out):
        raise OutputRefusedError(f"{scratch}: not written by a recording of {Path(out).name} (its first line is not "
                                 "the recorder's header); move it away or choose another --out")
    if scratch.exists() and resume:
        kept, done = _resumable(scratch)
        if notify is not None:
            notify(f"resuming from {scratch}: {len(done)} request(s) already recorded are not sent again")
    write_jsonl_traces(kept, scratch, header=partial_header(Path(out).name))
    jobs: list[tuple[Any, str, str, str | None]] = []  # (planner, intent, task id, context)
    order: dict[str, int] = {}
    skipped = 0
    for lm, model, source, run in runs:
        for variant in variants:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                recording = {"record_path": scratch, "record_source": source, "record_run": run}
                planner = Planner.from_options(model, lm, None, options.model_copy(update=recording), variant=variant)
            ctx = planner.context()
            cap, strategy = ctx.max_tokens, ctx.strategy.name
            temperature, seed = ctx.sampling.get("temperature"), ctx.sampling.get("seed")  # as each record keeps
            for i, task in enumerate(chosen):
                # Repeated tasks (n > len(tasks)) get a distinct request so the model is asked anew.
                intent = task.intent if i < len(tasks) else f"{task.intent} (again, #{i // len(tasks)})"
                key = _key(source, planner.budget.model, planner.variant, task.id, intent, cap, temperature, seed,
                           recorded_run(ctx), strategy)
                order.setdefault(key, len(order))
                if key in done:
                    skipped += 1
                else:
                    jobs.append((planner, intent, task.id, task.context))
    if progress is not None and skipped:
        progress(skipped)

    def plan(job: tuple[Any, str, str, str | None]) -> None:
        planner, intent, task_id, context = job
        planner.plan(intent, context=context, task_id=task_id)
        if progress is not None:
            progress(1)

    if concurrency <= 1:
        for job in jobs:
            plan(job)
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="helmdeck-record") as pool:
            for future in [pool.submit(plan, job) for job in jobs]:
                future.result()
    records = list(read_jsonl_traces(scratch)) if scratch.exists() else []
    answered = [r for r in records if r.call == "plan" and r.error is None]
    if jobs and not answered:
        errors = sorted({(r.error or "")[:200] for r in records if r.call == "plan" and r.error})
        raise RecordingFailedError(f"every request failed ({len(jobs)} sent); {scratch} is kept and the run is not "
                                   f"complete: {'; '.join(errors[:3]) or 'no answer'}")
    records.sort(key=lambda r: order.get(_record_key(r), len(order)))  # stable: a request's calls stay in order
    for i, rec in enumerate(records):
        rec.id = f"{rec.source.split(':', 1)[-1]}-{i:05d}"
    write_jsonl_traces(records, out)
    scratch.unlink(missing_ok=True)
    return sum(1 for r in records if r.call == "plan")


def finished_records(out: str | Path) -> int | None:
    """The plan records of a finished recording at ``out`` (the file is there and no partial file
    beside it says a run is still going); None when there is no such file."""
    target = Path(out)
    if not target.is_file() or partial_path(target).exists():
        return None
    return sum(1 for r in read_jsonl_traces(target, on_error="skip") if r.call == "plan")


def is_own_partial(scratch: Path, out: str | Path) -> bool:
    """Whether ``scratch`` opens with the header a recording into ``out`` writes."""
    try:
        with scratch.open("rb") as f:
            first = f.readline(4096)
    except OSError:
        return False
    return first.rstrip(b"\r\n").decode("utf-8", "replace") == partial_header(Path(out).name)


def partial_path(out: str | Path) -> Path:
    """Where a run appends its exchanges until it finishes (see the module docstring)."""
    target = Path(out)
    return target.with_name(f"{target.name}.partial.jsonl")


def simulate(
    profiles: list[SimProfile],
    tasks: list[PlanTask],
    out: str | Path,
    *,
    variants: Iterable[str] = VARIANTS,
    n: int | None = None,
    max_tokens: int | None = None,
    seed: int = 0,
    model: str | None = None,
    budgets: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Plan the tasks with each simulated profile; returns the number of plan records written."""
    import dspy

    from helmdeck_dspy.engines.sim import SimEngine, sim_model_name  # imports dspy

    runs: list[Run] = [
        (dspy.LM(sim_model_name(p, seed), engine=SimEngine(p, seed=seed), cache=False), model or p.model, f"sim:{p.name}",
         None)
        for p in profiles
    ]
    options = PlannerOptions(max_tokens=max_tokens, budgets=load_budget_table(budgets) if budgets is not None else None)
    return _run(runs, tasks, out, options=options, variants=variants, n=n, progress=progress, resume=False)


def record(
    model: str,
    lm_spec: str | None,
    tasks: list[PlanTask],
    out: str | Path,
    *,
    options: PlannerOptions | None = None,
    variants: Iterable[str] = VARIANTS,
    n: int | None = None,
    progress: Callable[[int], None] | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    concurrency: int = 1,
    resume: bool = True,
    notify: Callable[[str], None] | None = None,
) -> int:
    """Plan the tasks with ``lm_spec`` (default: ``model`` itself, live); returns the plan records written.

    A live model is called with DSPy's response cache off, so every record is an answer the model
    gave in this run. ``temperature`` and ``seed`` are sent with every call and kept on every
    record, with the local model's file hash, llama.cpp version and server settings for a
    ``local:NAME`` spec. An interrupted run leaves ``OUT.partial.jsonl``; running the same command
    again (``resume``) sends only the requests not answered yet.

    ``options`` are the planner's (:class:`~helmdeck_dspy.planning.options.PlannerOptions`; default:
    the defaults): ``retry`` sets the attempts and the per-attempt deadline (3 attempts of 120 s by
    default), ``api_base`` the live endpoint, ``max_tokens`` the output cap, ``budgets`` the budget
    table, ``answer_strategy`` how the model answers (``program.strategies``; None follows the
    budget row), and records say which way each request was made;
    ``program`` chooses the program, and every record names the one used in ``run.program``. The
    recording fields (``record_path``, ``record_source``, ``record_run``) are this run's own.
    """
    options = options or PlannerOptions()
    spec = lm_spec or model
    sampling = {k: v for k, v in (("temperature", temperature), ("seed", seed)) if v is not None}
    lm = make_lm(spec, api_base=options.api_base, cache=False, sampling=sampling, timeout=options.retry.timeout_s)
    return _run(
        [(lm, model, trace_source(spec), run_settings(spec))], tasks, out, options=options, variants=variants, n=n,
        progress=progress, concurrency=concurrency, resume=resume, notify=notify,
    )
