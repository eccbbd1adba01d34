"""``evaluate()``: stream trace sets through the replay path, in chunks, on one or more workers.

Records are read in chunks and never all held at once: the main process reads a chunk, hands
it to a worker (or handles it itself with one worker), and folds the returned per-group
accumulators into the running totals. At most ``2 x workers`` chunks are in flight.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helmdeck_dspy.budgets import BudgetTable, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.evaluation.aggregate import GroupAgg, GroupKey, merge_groups
from helmdeck_dspy.evaluation.replay import ReplayContext, replay_record
from helmdeck_dspy.evaluation.report import EvalReport, InputFile, comparisons, group_report, tier_rollups
from helmdeck_dspy.jsonl import OnError
from helmdeck_dspy.tasks import PlanTask, load_tasks
from helmdeck_dspy.traces.io import detect_format, file_sha256, iter_raw_rows
from helmdeck_dspy.traces.record import TraceRecord

CHUNK_RECORDS = 2000
MAX_ERRORS_KEPT = 20


@dataclass
class ChunkResult:
    groups: dict[GroupKey, GroupAgg]
    records: int
    skipped: int
    errors: list[str]


_CTX: ReplayContext | None = None


def _init_worker(ctx: ReplayContext) -> None:
    global _CTX
    _CTX = ctx


def process_chunk(
    path: str,
    rows: list[tuple[int, Any]] | tuple[int, int, int],
    on_error: OnError,
    ctx: ReplayContext | None = None,
    groups: dict[GroupKey, GroupAgg] | None = None,
) -> ChunkResult:
    """Validate and replay one chunk: ``(line_number, raw row)`` pairs, or a JSONL byte range
    ``(start, end, first_line)`` that the worker reads itself. Accumulates into ``groups`` when
    given (one worker), else into a fresh dict returned for merging."""
    context = ctx or _CTX
    assert context is not None, "worker context not initialised"
    if isinstance(rows, tuple):
        rows = list(_read_range(path, *rows))
    groups = {} if groups is None else groups
    records = skipped = 0
    errors: list[str] = []
    for line_no, raw in rows:
        try:
            # pydantic parses and validates a JSON line in one pass, faster than json.loads + validate
            rec = TraceRecord.model_validate_json(raw) if isinstance(raw, str) else TraceRecord.model_validate(raw)
            if rec.call == "filter":
                continue  # the two-pass filter's exchange: not a plan completion
            outcome = replay_record(rec, context)
        except (ValueError, ValidationError, RecursionError) as exc:
            msg = str(DataFileError(path, _describe(exc), line=line_no))
            if on_error == "fail":
                raise DataFileError(path, _describe(exc), line=line_no) from None
            skipped += 1
            if len(errors) < MAX_ERRORS_KEPT:
                errors.append(msg)
            continue
        key = (outcome.model, outcome.variant)
        agg = groups.get(key)
        if agg is None:
            agg = groups[key] = GroupAgg()
        agg.add(outcome)
        records += 1
    return ChunkResult(groups, records, skipped, errors)


def _read_range(path: str, start: int, end: int, first_line: int) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    for i, raw in enumerate(data.split(b"\n"), first_line):
        if raw.strip():
            yield i, raw.decode("utf-8", errors="replace")


def _byte_ranges(path: Path, lines_per_chunk: int = CHUNK_RECORDS) -> Iterator[tuple[int, int, int]]:
    """Split a JSONL file into ``(start, end, first_line)`` ranges of whole lines (one fast scan)."""
    start, line, pos, count = 0, 1, 0, 0
    first_line = 1
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            offset = 0
            while True:
                nl = block.find(b"\n", offset)
                if nl == -1:
                    break
                count += 1
                line += 1
                offset = nl + 1
                if count == lines_per_chunk:
                    end = pos + offset
                    yield start, end, first_line
                    start, first_line, count = end, line, 0
            pos += len(block)
    if pos > start:
        yield start, pos, first_line


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        if e["type"] == "json_invalid":
            return f"expected one JSON object per line: {e['msg']}"
        if e["type"] == "model_type":
            return f"expected a JSON object, got {type(e.get('input')).__name__}"
        loc = ".".join(str(x) for x in e["loc"]) or "record"
        return f"{loc}: {e['msg']} (got {e.get('input')!r:.60})"
    return f"expected a trace record: {exc}"


def _chunks(path: Path, fmt: str) -> Iterator[list[tuple[int, Any]]]:
    chunk: list[tuple[int, Any]] = []
    for item in iter_raw_rows(path, fmt):
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
    guide = catalog or load_catalog()
    gold = tasks if tasks is not None else load_tasks()
    return ReplayContext(
        catalog_ids=frozenset(guide.id_set), pipeline_ids=frozenset(guide.pipeline_ids),
        tasks={t.id: t for t in gold}, budgets=budgets or load_budget_table(),
    )


def evaluate(
    paths: list[str | Path],
    *,
    catalog: RoutingGuide | None = None,
    tasks: list[PlanTask] | None = None,
    budgets: BudgetTable | None = None,
    workers: int = 1,
    on_error: OnError = "fail",
    progress: bool | None = None,
) -> EvalReport:
    """Replay every record of ``paths`` (JSONL, Parquet or a saved HF dataset) and report.

    Raises:
        DataFileError: a file is missing or unreadable, or (``on_error="fail"``) a record is invalid.
    """
    from datetime import datetime, timezone
    from importlib.metadata import version

    guide = catalog or load_catalog()
    ctx = build_context(guide, tasks, budgets)
    t0 = time.perf_counter()
    groups: dict[GroupKey, GroupAgg] = {}
    inputs: list[InputFile] = []
    all_errors: list[str] = []
    total = skipped_total = 0
    show = sys.stderr.isatty() if progress is None else progress
    bar = _progress(show)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(ctx,)) if workers > 1 else None
    try:
        for p in paths:
            path = Path(p)
            fmt = detect_format(path)
            n = skipped = 0
            pending: list[Future] = []

            def fold(res: ChunkResult) -> None:
                nonlocal n, skipped
                merge_groups(groups, res.groups)
                n += res.records
                skipped += res.skipped
                all_errors.extend(res.errors[: max(0, MAX_ERRORS_KEPT - len(all_errors))])
                bar.update(res.records + res.skipped)

            if pool is None:
                for chunk in _chunks(path, fmt):
                    res = process_chunk(str(path), chunk, on_error, ctx, groups)
                    res.groups = {}  # already folded in place
                    fold(res)
            else:
                # Workers read JSONL byte ranges themselves; other formats are read here.
                chunks = _byte_ranges(path) if fmt == "jsonl" else _chunks(path, fmt)
                for chunk in chunks:
                    pending.append(pool.submit(process_chunk, str(path), chunk, on_error))
                    while len(pending) >= 2 * workers:
                        fold(pending.pop(0).result())
            for fut in pending:
                fold(fut.result())
            inputs.append(InputFile(path=str(path), format=fmt, sha256=file_sha256(path), records=n, skipped=skipped))
            total += n
            skipped_total += skipped
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    trace_sha = hashlib.sha256("".join(sorted(i.sha256 for i in inputs)).encode()).hexdigest()
    return EvalReport(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        tool_version=version("helmdeck-dspy"),
        inputs=inputs,
        trace_set_sha256=trace_sha,
        catalog_fingerprint=guide.fingerprint,
        tasks=len(ctx.tasks),
        n_records=total,
        n_skipped=skipped_total,
        errors=all_errors,
        groups=[group_report(m, v, groups[(m, v)]) for m, v in sorted(groups)],
        tiers=tier_rollups(groups),
        comparisons=comparisons(groups),
        seconds=round(time.perf_counter() - t0, 3),
        workers=workers,
    )


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(show: bool) -> Any:
    if not show:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(unit=" rec", desc="eval", file=sys.stderr, mininterval=0.5)
