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
rather than read or delete it (``OUT.lock`` likewise: :func:`~helmdeck_dspy.io.atomic.exclusive_output`).
A run with a failed request writes no ``out``; a finished ``out`` is checked by :func:`check_finished`.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

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


def _record_key(rec: TraceRecord, *, cap: bool = True) -> str:
    """The request a record belongs to. Without ``cap`` the output cap is left out: a request's
    other calls (the LLM filter's) have caps of their own, and belong to the request whose key
    matches on everything else."""
    prompt = (rec.run or {}).get("prompt")
    strategy = prompt.get("strategy") if isinstance(prompt, dict) else None
    return _key(rec.source, rec.model, rec.prompt_variant, rec.task_id, rec.intent, rec.max_tokens if cap else None,
                rec.temperature, rec.seed, rec.run, strategy)


def _loose(key: str) -> str:
    """A request key without its output cap (what :func:`_record_key` gives a filter call)."""
    parts = json.loads(key)
    parts[5] = None
    return json.dumps(parts, sort_keys=True)


def _belongs(rec: TraceRecord, keys: set[str], loose: set[str]) -> bool:
    """Whether ``rec`` is a call of one of the requests ``keys`` (``loose``: the same keys without caps)."""
    return _record_key(rec) in keys if rec.call == "plan" else _record_key(rec, cap=False) in loose


def _resumable(scratch: Path) -> tuple[list[TraceRecord], set[str]]:
    """The records of an interrupted run worth keeping, and their request keys.

    A request counts as done when one of its plan records holds a completion; every record of a
    done request is kept (its failed attempts, its filter calls); records of requests that only
    failed at the transport level are dropped, so the re-run asks again.
    """
    records = list(read_jsonl_traces(scratch, on_error="skip"))  # a torn last line is the killed write
    done = {_record_key(r) for r in records if r.call == "plan" and r.error is None}
    loose = {_loose(k) for k in done}
    return [r for r in records if _belongs(r, done, loose)], done


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
    than interleaved; a run in which any request sent failed (no answer after its retries) keeps
    its partial file, writes no ``out`` and raises saying how many failed, so it is neither
    reported as success nor taken for a finished recording: running it again asks only those.

    Raises:
        OutputLockedError: Another run is writing ``out``.
        OutputRefusedError: A file that is not the recorder's is at ``OUT.lock`` or ``OUT.partial.jsonl``.
        RecordingFailedError: Requests were sent and some were not answered.
    """
    with exclusive_output(out):
        return _run_locked(runs, tasks, out, options=options, variants=variants, n=n, progress=progress,
                           concurrency=concurrency, resume=resume, notify=notify)


class _Request(NamedTuple):
    """One request of a recording: the planner that makes it, what it asks, and its key."""

    planner: Any
    intent: str
    task_id: str
    context: str | None
    key: str


def _requests(runs: list[Run], tasks: list[PlanTask], *, options: PlannerOptions, variants: Iterable[str],
              n: int | None, scratch: Path | None) -> list[_Request]:
    """Every (run, variant, task) request of a recording in its order, each with its key; nothing is sent."""
    from helmdeck_dspy.planning.planner import Planner  # imports dspy

    chosen = list(itertools.islice(itertools.cycle(tasks), n)) if n else list(tasks)
    out: list[_Request] = []
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
                out.append(_Request(planner, intent, task.id, task.context, key))
    return out


def _run_locked(
    runs: list[Run], tasks: list[PlanTask], out: str | Path, *, options: PlannerOptions, variants: Iterable[str],
    n: int | None, progress: Callable[[int], None] | None, concurrency: int, resume: bool,
    notify: Callable[[str], None] | None,
) -> int:
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
    requests = _requests(runs, tasks, options=options, variants=variants, n=n, scratch=scratch)
    order: dict[str, int] = {}
    for request in requests:
        order.setdefault(request.key, len(order))
        order.setdefault(_loose(request.key), order[request.key])
    jobs = [r for r in requests if r.key not in done]
    skipped = len(requests) - len(jobs)
    if progress is not None and skipped:
        progress(skipped)

    def plan(job: _Request) -> None:
        job.planner.plan(job.intent, context=job.context, task_id=job.task_id)
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
    answered = {_record_key(r) for r in records if r.call == "plan" and r.error is None}
    failed = [job for job in jobs if job.key not in answered]
    if failed:
        errors = sorted({(r.error or "")[:200] for r in records if r.call == "plan" and r.error})
        raise RecordingFailedError(
            f"{len(failed)} of {len(jobs)} requests failed; the run is not complete: {scratch} keeps what was "
            f"recorded, and running the same command again asks only the {len(failed)} again: "
            f"{'; '.join(errors[:3]) or 'no answer'}")
    # stable: a request's calls stay in order, its filter call with it
    records.sort(key=lambda r: order.get(_record_key(r, cap=r.call == "plan"), len(order)))
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
    return _run(
        _live_runs(model, lm_spec, options, temperature, seed), tasks, out, options=options, variants=variants, n=n,
        progress=progress, concurrency=concurrency, resume=resume, notify=notify,
    )


def _live_runs(model: str, lm_spec: str | None, options: PlannerOptions, temperature: float | None,
               seed: int | None) -> list[Run]:
    """The one run :func:`record` makes: ``lm_spec`` (default: ``model`` live) with its sampling."""
    spec = lm_spec or model
    sampling = {k: v for k, v in (("temperature", temperature), ("seed", seed)) if v is not None}
    lm = make_lm(spec, api_base=options.api_base, cache=False, sampling=sampling, timeout=options.retry.timeout_s)
    return [(lm, model, trace_source(spec), run_settings(spec))]


_SETTINGS = ((0, "--lm"), (1, "--model"), (2, "--variant"), (5, "--max-tokens"), (6, "--temperature"), (7, "--seed"),
             (9, "--strategy"), (8, "--program or the LM's settings"))
"""Where a request key holds each setting a user can change, and the option that changes it."""


def check_finished(
    model: str,
    lm_spec: str | None,
    tasks: list[PlanTask],
    out: str | Path,
    *,
    options: PlannerOptions | None = None,
    variants: Iterable[str] = VARIANTS,
    n: int | None = None,
    temperature: float | None = None,
    seed: int | None = None,
) -> int:
    """For a finished recording at ``out`` (:func:`finished_records`): the number of its plan
    records when :func:`record` with these arguments would ask exactly the requests it holds (a
    re-run with nothing to send). Nothing is sent either way.

    Raises:
        OutputRefusedError: The file holds the requests of other settings; the message names each
            setting that differs (``--n``, ``--variant``, ``--model``, ``--temperature`` ...) with
            what the file holds and what this run asks (exit 2: ``--force`` records again).
    """
    options = options or PlannerOptions()
    held = [r for r in read_jsonl_traces(out, on_error="skip") if r.call == "plan"]
    have = {_record_key(r) for r in held}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {r.key for r in _requests(_live_runs(model, lm_spec, options, temperature, seed), tasks,
                                         options=options, variants=variants, n=n, scratch=None)}
    if want == have:
        return len(held)
    raise OutputRefusedError(f"{out} is a finished recording of other settings ({'; '.join(_differences(have, want))})"
                             "; pass --force to record again, or choose another --out", argument="--out")


def _differences(have: set[str], want: set[str]) -> list[str]:
    """What tells the requests of a finished file (``have``) from those a run asks (``want``), one
    phrase per setting: ``--variant: it holds full_steps, this run asks single_pick``."""
    held = [json.loads(k) for k in have]
    asked = [json.loads(k) for k in want]

    def shown(values: set[str]) -> str:
        loaded = [json.loads(v) for v in values]
        text = ", ".join(sorted("none" if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True)
                                for v in loaded))
        return text if len(text) <= 80 else text[:77] + "..."

    out: list[str] = []
    for index, option in _SETTINGS:
        a = {json.dumps(k[index], sort_keys=True) for k in held}
        b = {json.dumps(k[index], sort_keys=True) for k in asked}
        if a == b:
            continue
        if index == 8:  # the program and a local model's settings: named by what differs in them
            if out:
                continue  # another setting (a variant's own program) explains it
            keys = sorted({key for k in held + asked for key in (k[8] or {})
                           if {json.dumps((h[8] or {}).get(key), sort_keys=True) for h in held}
                           != {json.dumps((w[8] or {}).get(key), sort_keys=True) for w in asked}})
            out.append(f"{option}: it holds another {' and '.join(keys) or 'one'}")
            continue
        out.append(f"{option}: it holds {shown(a)}, this run asks {shown(b)}")
    tasks_held, tasks_asked = {(k[3], k[4]) for k in held}, {(k[3], k[4]) for k in asked}
    if len(tasks_held) != len(tasks_asked):
        out.append(f"--n: it holds {len(tasks_held)} task(s), this run asks {len(tasks_asked)}")
    elif tasks_held != tasks_asked:
        out.append("--tasks: it holds other tasks")
    return out or [f"it holds {len(have)} request(s), this run asks {len(want)}"]
