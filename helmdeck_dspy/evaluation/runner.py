"""``evaluate()``: stream trace sets through the replay path, in chunks, on one or more workers.

Records are read in chunks and never all held at once: the main process reads a chunk, hands
it to a worker (or handles it itself with one worker), and folds the returned per-group
accumulators into the running totals. At most ``2 x workers`` chunks are in flight. With two or
more workers, a JSONL file is handed out as byte ranges that each worker reads itself; every line,
wherever it is read, becomes a record through :func:`~helmdeck_dspy.traces.io.read_record`.

Resuming: with a ``checkpoint`` path the running totals are saved (see
:mod:`helmdeck_dspy.evaluation.checkpoint`); a later run with the same inputs and options folds
them back in and reads on from the saved line. Chunks are folded in order, so every line before
it is counted exactly once.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import BudgetTable, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.errors import TraceFileError
from helmdeck_dspy.evaluation.aggregate import GroupAgg, GroupKey, merge_groups
from helmdeck_dspy.evaluation.checkpoint import Checkpoint, EvalState, checkpoint_key
from helmdeck_dspy.evaluation.replay import (
    ReplayContext,
    record_group,
    replay_record,
    request_key,
)
from helmdeck_dspy.evaluation.report import (
    EvalReport,
    InputFile,
    comparisons,
    group_reports,
    kind_counts,
    mode_comparisons,
    tier_rollups,
)
from helmdeck_dspy.io.datafiles import file_sha256
from helmdeck_dspy.io.jsonl import BadRow, OnError, line_ranges, range_lines
from helmdeck_dspy.tasks import PlanTask, load_tasks
from helmdeck_dspy.traces.io import (
    check_not_empty,
    read_record,
    detect_format,
    iter_raw_rows,
)

CHUNK_RECORDS = 2000
MAX_ERRORS_KEPT = 20
CHECKPOINT_SECONDS = 5.0  # at most one checkpoint write per this many seconds (plus one per file)


@dataclass
class ChunkResult:
    """What one chunk added: its groups' accumulators, counts and kept error messages."""

    groups: dict[GroupKey, GroupAgg]
    records: int
    skipped: int
    errors: list[str]
    last_line: int = 0  # the highest line (row) number the chunk covered


_CTX: ReplayContext | None = None


def _init_worker(ctx: ReplayContext) -> None:
    global _CTX
    _CTX = ctx


def process_chunk(
    path: str,
    rows: list[tuple[int, Any]] | tuple[int, int, int] | tuple[int, int, int, int],
    on_error: OnError,
    ctx: ReplayContext | None = None,
    groups: dict[GroupKey, GroupAgg] | None = None,
) -> ChunkResult:
    """Validate and replay one chunk: ``(line_number, raw row)`` pairs, or a JSONL byte range
    ``(start, end, first_line[, from_line])`` that the worker reads itself (lines before
    ``from_line`` are left out: already counted by a resumed run). Accumulates into ``groups``
    when given (one worker), else into a fresh dict returned for merging."""
    context = ctx or _CTX
    assert context is not None, "worker context not initialised"
    if isinstance(rows, tuple):
        rows = list(range_lines(path, *rows))
    groups = {} if groups is None else groups
    records = skipped = last_line = 0
    errors: list[str] = []
    for line_no, raw in rows:
        last_line = line_no
        rec = read_record(raw)
        if isinstance(rec, BadRow):
            detail = rec.detail
        elif rec.call == "filter":
            # the two-pass filter's exchange: not a plan completion, but an LM call of its request
            kind, model, _, variant = record_group(rec, context)
            _group(groups, (kind, model, variant)).add_call("filter", request_key(rec))
            continue
        else:
            try:
                outcome = replay_record(rec, context)
            except (ValueError, RecursionError) as exc:
                detail = f"expected a trace record: {exc}"
            else:
                agg = _group(groups, (outcome.kind, outcome.model, outcome.variant))
                agg.add(outcome)
                agg.add_call("plan", outcome.request)
                records += 1
                continue
        if on_error == "fail":
            raise TraceFileError(path, detail, line=line_no)
        skipped += 1
        if len(errors) < MAX_ERRORS_KEPT:
            errors.append(str(TraceFileError(path, detail, line=line_no)))
    return ChunkResult(groups, records, skipped, errors, last_line)


def _group(groups: dict[GroupKey, GroupAgg], key: GroupKey) -> GroupAgg:
    """The accumulator of ``key``'s group, created when new."""
    agg = groups.get(key)
    if agg is None:
        agg = groups[key] = GroupAgg()
    return agg


def _byte_ranges(path: Path, from_line: int = 0) -> Iterator[tuple[int, int, int, int]]:
    """``(start, end, first_line, from_line)`` ranges of whole lines for the workers; ranges
    entirely before ``from_line`` are not yielded."""
    for start, end, first_line, last_line in line_ranges(path, CHUNK_RECORDS):
        if last_line >= from_line:
            yield start, end, first_line, from_line


def _chunks(path: Path, fmt: str, from_line: int = 0) -> Iterator[list[tuple[int, Any]]]:
    """Lists of up to CHUNK_RECORDS ``(line or row number, raw row)``, from ``from_line`` on."""
    chunk: list[tuple[int, Any]] = []
    for item in iter_raw_rows(path, fmt):
        if item[0] < from_line:
            continue  # counted before an interruption (resumed run)
        chunk.append(item)
        if len(chunk) >= CHUNK_RECORDS:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def build_context(
    catalog: RoutingGuide | None = None,
    tasks: list[PlanTask] | None = None,
    budgets: BudgetTable | None = None,
) -> ReplayContext:
    """What records are checked against: the catalog's ids, the gold tasks and the budget table
    (the bundled ones for whatever is not given)."""
    guide = catalog or load_catalog()
    gold = tasks if tasks is not None else load_tasks()
    return ReplayContext(
        catalog_ids=frozenset(guide.id_set), pipeline_ids=frozenset(guide.pipeline_ids),
        tasks={t.id: t for t in gold}, budgets=budgets or load_budget_table(), pipeline_chains=guide.pipeline_chains,
    )


def evaluate(
    paths: Sequence[str | Path],
    *,
    catalog: RoutingGuide | None = None,
    tasks: list[PlanTask] | None = None,
    budgets: BudgetTable | None = None,
    workers: int = 1,
    on_error: OnError = "fail",
    progress: bool | None = None,
    checkpoint: str | Path | None = None,
    resume: bool = True,
    notify: Callable[[str], None] | None = None,
) -> EvalReport:
    """Replay every record of ``paths`` (JSONL, Parquet or a saved HF dataset) and report.

    Args:
        paths: The trace sets, read in order.
        catalog / tasks / budgets: What records are checked against (default: the bundled ones).
        workers: Processes replaying chunks (1: this process).
        on_error: ``fail`` stops at the first invalid record; ``skip`` counts it and goes on.
        progress: Show a progress bar (default: when stderr is a terminal).
        checkpoint: Where to save progress so an interrupted run can resume (None: no checkpoint).
            It is left in place when the run fails or is interrupted; the caller removes it
            (:func:`~helmdeck_dspy.evaluation.checkpoint.clear_checkpoint`) once the report is written.
        resume: Pick up from a matching checkpoint (one with other inputs or options is ignored
            and replaced); False starts over.
        notify: Called with one-line messages about the checkpoint (resumed, ignored).

    Raises:
        DataFileError: a file is missing, empty or unreadable, or (``on_error="fail"``) a record
            is invalid.
    """
    guide = catalog or load_catalog()
    ctx = build_context(guide, tasks, budgets)
    t0 = time.perf_counter()
    tell = notify or (lambda _msg: None)
    files = _inputs(paths)
    key = checkpoint_key([(fmt, sha) for _, fmt, sha in files], on_error, guide.fingerprint, ctx.tasks, ctx.budgets,
                         version("helmdeck-dspy"))
    ckpt = Checkpoint(checkpoint, key, every=CHECKPOINT_SECONDS) if checkpoint is not None else None
    state = _resumed(ckpt, files, tell) if ckpt is not None and resume else None
    state = state or EvalState()
    start_file, start_line = state.file_index, state.next_line

    bar = _progress(sys.stderr.isatty() if progress is None else progress)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(ctx,)) if workers > 1 else None
    try:
        for index, (path, fmt, sha) in enumerate(files):
            if index < start_file:
                continue
            from_line = start_line if index == start_file else 0
            pending: list[Future] = []

            def fold(res: ChunkResult, index: int = index) -> None:
                merge_groups(state.groups, res.groups)
                state.file_records += res.records
                state.file_skipped += res.skipped
                state.errors.extend(res.errors[: max(0, MAX_ERRORS_KEPT - len(state.errors))])
                bar.update(res.records + res.skipped)
                if res.last_line and ckpt is not None:  # chunks fold in order: all before it is done
                    state.file_index, state.next_line = index, res.last_line + 1
                    ckpt.save(state)

            if pool is None:
                for chunk in _chunks(path, fmt, from_line):
                    res = process_chunk(str(path), chunk, on_error, ctx, state.groups)
                    res.groups = {}  # already folded in place
                    fold(res)
            else:
                # Workers read JSONL byte ranges themselves; other formats are read here.
                parts: Iterator[tuple[int, int, int, int]] | Iterator[list[tuple[int, Any]]] = (
                    _byte_ranges(path, from_line=from_line) if fmt == "jsonl" else _chunks(path, fmt, from_line))
                for part in parts:
                    pending.append(pool.submit(process_chunk, str(path), part, on_error))
                    while len(pending) >= 2 * workers:
                        fold(pending.pop(0).result())
            for fut in pending:
                fold(fut.result())
            _finish_file(state, InputFile(path=str(path), format=fmt, sha256=sha, records=state.file_records,
                                          skipped=state.file_skipped), index)
            if ckpt is not None:
                ckpt.save(state, force=True)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return _report(state, guide, ctx, t0, workers)


def _inputs(paths: Sequence[str | Path]) -> list[tuple[Path, str, str]]:
    """``(path, format, sha256)`` of each trace set, checked to exist, be readable and not be empty."""
    files = []
    for p in paths:
        path = Path(p)
        fmt = detect_format(path)
        if fmt == "jsonl":
            check_not_empty(path)
        files.append((path, fmt, file_sha256(path)))
    return files


def _resumed(ckpt: Checkpoint, files: list[tuple[Path, str, str]], tell: Callable[[str], None]) -> EvalState | None:
    """The checkpoint's state when it matches (said via ``tell``), else None."""
    state = ckpt.load(tell)
    if state is not None:
        where = f"{files[state.file_index][0]} line {state.next_line}" if state.file_index < len(files) else "the report"
        tell(f"resumed from {ckpt.path}: {state.total + state.file_records} records and "
             f"{state.skipped_total + state.file_skipped} skipped already counted ({state.file_index} of {len(files)} "
             f"files done); continuing at {where}")
    return state


def _finish_file(state: EvalState, done: InputFile, index: int) -> None:
    """Move a finished file's counts into the totals; the next file starts from its first line."""
    state.inputs.append(done)
    state.total += done.records
    state.skipped_total += done.skipped
    state.file_index, state.next_line, state.file_records, state.file_skipped = index + 1, 0, 0, 0


def _report(state: EvalState, guide: RoutingGuide, ctx: ReplayContext, t0: float, workers: int) -> EvalReport:
    """The report of a finished evaluation."""
    groups = state.groups
    trace_sha = hashlib.sha256("".join(sorted(i.sha256 for i in state.inputs)).encode()).hexdigest()
    return EvalReport(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        tool_version=version("helmdeck-dspy"),
        inputs=state.inputs,
        trace_set_sha256=trace_sha,
        catalog_fingerprint=guide.fingerprint,
        tasks=len(ctx.tasks),
        n_records=state.total,
        n_skipped=state.skipped_total,
        errors=state.errors,
        kinds=kind_counts(groups),
        groups=group_reports(groups),
        tiers=tier_rollups(groups),
        comparisons=comparisons(groups),
        modes=mode_comparisons(groups),
        seconds=round(time.perf_counter() - t0, 3),
        workers=workers,
    )


class _NoBar:
    """A progress bar that shows nothing."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(show: bool) -> Any:
    """A tqdm bar on stderr, or a silent stand-in."""
    if not show:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(unit=" rec", desc="eval", file=sys.stderr, mininterval=0.5)
