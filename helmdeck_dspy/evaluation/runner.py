"""``evaluate()``: stream trace sets through the replay path, in chunks, on one or more workers.

Records are read in chunks and never all held at once: the main process reads a chunk, hands
it to a worker (or handles it itself with one worker), and folds the returned per-group
accumulators into the running totals. At most ``2 x workers`` chunks are in flight.

Resuming: with a ``checkpoint`` path (``eval --out DIR`` uses ``DIR/.eval-checkpoint.json``),
the running totals are saved atomically every few seconds and after each file, together with
where they stop (file index, next line) and a key over everything that decides the numbers: the
trace files' sha256, ``on_error``, the catalog fingerprint, the gold tasks, the budget table and
the tool version. A later run with the same key folds the saved totals back in and reads on from
that line; chunks folded in order mean every line before it is counted exactly once. The
aggregates (reservoir generators included) round-trip losslessly, so the report equals an
uninterrupted run's except for ``created_at`` and ``seconds``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helmdeck_dspy.budgets import BudgetTable, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.errors import TraceFileError
from helmdeck_dspy.evaluation.aggregate import (
    GroupAgg,
    GroupKey,
    agg_from_state,
    agg_to_state,
    merge_groups,
)
from helmdeck_dspy.evaluation.replay import ReplayContext, replay_record
from helmdeck_dspy.evaluation.report import (
    EvalReport,
    InputFile,
    comparisons,
    group_report,
    tier_rollups,
)
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.jsonl import (
    TORN,
    BadRow,
    OnError,
    decode_line,
    is_torn,
    json_error_text,
)
from helmdeck_dspy.tasks import PlanTask, load_tasks
from helmdeck_dspy.traces.io import (
    check_not_empty,
    detect_format,
    file_sha256,
    iter_raw_rows,
)
from helmdeck_dspy.traces.record import TraceRecord

CHUNK_RECORDS = 2000
MAX_ERRORS_KEPT = 20
CHECKPOINT_NAME = ".eval-checkpoint.json"
CHECKPOINT_SECONDS = 5.0  # at most one checkpoint write per this many seconds (plus one per file)
CHECKPOINT_SCHEMA = 1


@dataclass
class ChunkResult:
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
        rows = list(_read_range(path, *rows))
    groups = {} if groups is None else groups
    records = skipped = last_line = 0
    errors: list[str] = []
    for line_no, raw in rows:
        last_line = line_no
        try:
            if isinstance(raw, BadRow):
                raise ValueError(raw.detail)
            # pydantic parses and validates a JSON line in one pass, faster than json.loads + validate
            # (the line without its newline, so a JSON error's position is within the line)
            rec = TraceRecord.model_validate_json(raw.rstrip("\r\n")) if isinstance(raw, str) else TraceRecord.model_validate(raw)
            if rec.call == "filter":
                continue  # the two-pass filter's exchange: not a plan completion
            outcome = replay_record(rec, context)
        except (ValueError, ValidationError, RecursionError) as exc:
            if isinstance(raw, BadRow):
                detail = raw.detail
            elif isinstance(raw, str) and is_torn(raw) and _is_json_error(exc):
                detail = TORN
            else:
                detail = _describe(exc)
            msg = str(TraceFileError(path, detail, line=line_no))
            if on_error == "fail":
                raise TraceFileError(path, detail, line=line_no) from None
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
    return ChunkResult(groups, records, skipped, errors, last_line)


def _is_json_error(exc: BaseException) -> bool:
    if isinstance(exc, ValidationError):
        return exc.errors()[0]["type"] == "json_invalid"
    return False


def _read_range(path: str, start: int, end: int, first_line: int, from_line: int = 0) -> Iterator[tuple[int, Any]]:
    """The lines of a byte range; complete lines keep their newline, so a torn last line shows."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    pieces = data.split(b"\n")
    last = len(pieces) - 1
    for i, raw in enumerate(pieces):
        line_no = first_line + i
        if line_no < from_line or not raw.strip():
            continue
        text = decode_line(raw, first=line_no == 1)
        if isinstance(text, BadRow):
            yield line_no, text
            continue
        yield line_no, text if i == last else text + "\n"


def _byte_ranges(path: Path, lines_per_chunk: int | None = None, from_line: int = 0) -> Iterator[tuple[int, int, int, int]]:
    """Split a JSONL file into ``(start, end, first_line, from_line)`` ranges of whole lines (one
    fast scan); ranges entirely before ``from_line`` are not yielded."""
    for start, end, first_line, last_line in _all_byte_ranges(path, lines_per_chunk or CHUNK_RECORDS):
        if last_line >= from_line:
            yield start, end, first_line, from_line


def _all_byte_ranges(path: Path, lines_per_chunk: int) -> Iterator[tuple[int, int, int, int]]:
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
                    yield start, end, first_line, line - 1
                    start, first_line, count = end, line, 0
            pos += len(block)
    if pos > start:
        yield start, pos, first_line, line


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        if e["type"] == "json_invalid":
            return f"expected one JSON object per line: {json_error_text(ValueError(e['msg']))}"
        if e["type"] == "model_type":
            return f"expected a JSON object, got {type(e.get('input')).__name__}"
        loc = ".".join(str(x) for x in e["loc"]) or "record"
        if e["type"] == "missing":
            return f"{loc}: {e['msg']}"
        return f"{loc}: {e['msg']} (got {e.get('input')!r:.60})"
    return f"expected a trace record: {exc}"


def _chunks(path: Path, fmt: str, from_line: int = 0) -> Iterator[list[tuple[int, Any]]]:
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
    checkpoint: str | Path | None = None,
    resume: bool = True,
    notify: Callable[[str], None] | None = None,
) -> EvalReport:
    """Replay every record of ``paths`` (JSONL, Parquet or a saved HF dataset) and report.

    Args:
        checkpoint: Where to save progress so an interrupted run can resume (None: no checkpoint).
            It is left in place when the run fails or is interrupted; the caller removes it
            (:func:`clear_checkpoint`) once the report is written.
        resume: Pick up from a matching checkpoint (one with other inputs or options is ignored
            and replaced); False starts over.
        notify: Called with one-line messages about the checkpoint (resumed, ignored).

    Raises:
        DataFileError: a file is missing, empty or unreadable, or (``on_error="fail"``) a record
            is invalid.
    """
    from datetime import datetime, timezone
    from importlib.metadata import version

    guide = catalog or load_catalog()
    ctx = build_context(guide, tasks, budgets)
    t0 = time.perf_counter()
    tell = notify or (lambda _msg: None)
    files: list[tuple[Path, str, str]] = []
    for p in paths:
        path = Path(p)
        fmt = detect_format(path)
        if fmt == "jsonl":
            check_not_empty(path)
        files.append((path, fmt, file_sha256(path)))
    key = _checkpoint_key(files, on_error, guide.fingerprint, ctx, version("helmdeck-dspy"))

    groups: dict[GroupKey, GroupAgg] = {}
    inputs: list[InputFile] = []
    all_errors: list[str] = []
    total = skipped_total = 0
    start_file, start_line, start_n, start_skipped = 0, 0, 0, 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None and resume:
        state = _load_checkpoint(ckpt, key, tell)
        if state is not None:
            groups = {(m, v): agg_from_state(a) for m, v, a in state["groups"]}
            inputs = [InputFile.model_validate(i) for i in state["inputs"]]
            all_errors = list(state["errors"])
            total, skipped_total = state["total"], state["skipped_total"]
            start_file, start_line = state["file_index"], state["next_line"]
            start_n, start_skipped = state["file_records"], state["file_skipped"]
            where = (f"{files[start_file][0]} line {start_line}" if start_file < len(files) else "the report")
            tell(f"resumed from {ckpt}: {total + start_n} records and {skipped_total + start_skipped} skipped "
                 f"already counted ({start_file} of {len(files)} files done); continuing at {where}")

    last_save = time.monotonic()

    def save(file_index: int, next_line: int, n: int, skipped: int, force: bool = False) -> None:
        nonlocal last_save
        if ckpt is None or (not force and time.monotonic() - last_save < CHECKPOINT_SECONDS):
            return
        state = {
            "schema": CHECKPOINT_SCHEMA, "key": key, "file_index": file_index, "next_line": next_line,
            "file_records": n, "file_skipped": skipped, "total": total, "skipped_total": skipped_total,
            "inputs": [i.model_dump() for i in inputs], "errors": all_errors,
            "groups": [[m, v, agg_to_state(a)] for (m, v), a in groups.items()],
        }
        atomic_write_text(ckpt, json.dumps(state, separators=(",", ":")) + "\n")
        last_save = time.monotonic()

    show = sys.stderr.isatty() if progress is None else progress
    bar = _progress(show)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(ctx,)) if workers > 1 else None
    try:
        for index, (path, fmt, sha) in enumerate(files):
            if index < start_file:
                continue
            resuming = index == start_file
            from_line = start_line if resuming else 0
            n = start_n if resuming else 0
            skipped = start_skipped if resuming else 0
            pending: list[Future] = []

            def fold(res: ChunkResult, index: int = index) -> None:
                nonlocal n, skipped
                merge_groups(groups, res.groups)
                n += res.records
                skipped += res.skipped
                all_errors.extend(res.errors[: max(0, MAX_ERRORS_KEPT - len(all_errors))])
                bar.update(res.records + res.skipped)
                if res.last_line:
                    save(index, res.last_line + 1, n, skipped)  # chunks fold in order: all before it is done

            if pool is None:
                for chunk in _chunks(path, fmt, from_line):
                    res = process_chunk(str(path), chunk, on_error, ctx, groups)
                    res.groups = {}  # already folded in place
                    fold(res)
            else:
                # Workers read JSONL byte ranges themselves; other formats are read here.
                chunks = _byte_ranges(path, from_line=from_line) if fmt == "jsonl" else _chunks(path, fmt, from_line)
                for chunk in chunks:
                    pending.append(pool.submit(process_chunk, str(path), chunk, on_error))
                    while len(pending) >= 2 * workers:
                        fold(pending.pop(0).result())
            for fut in pending:
                fold(fut.result())
            inputs.append(InputFile(path=str(path), format=fmt, sha256=sha, records=n, skipped=skipped))
            total += n
            skipped_total += skipped
            save(index + 1, 0, 0, 0, force=True)
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


def checkpoint_path(out_dir: str | Path) -> Path:
    """The checkpoint ``eval --out DIR`` keeps while it runs."""
    return Path(out_dir) / CHECKPOINT_NAME


def clear_checkpoint(path: str | Path) -> None:
    """Remove a checkpoint once its report is safely written."""
    Path(path).unlink(missing_ok=True)


def _checkpoint_key(files: list[tuple[Path, str, str]], on_error: str, catalog_fp: str, ctx: ReplayContext,
                    tool_version: str) -> str:
    """A hash of everything that decides the numbers (not the worker count: results do not depend on it)."""
    h = hashlib.sha256()
    h.update(json.dumps({
        "schema": CHECKPOINT_SCHEMA, "version": tool_version, "on_error": on_error, "catalog": catalog_fp,
        "files": [[fmt, sha] for _, fmt, sha in files],
    }, sort_keys=True).encode())
    for task_id in sorted(ctx.tasks):
        h.update(ctx.tasks[task_id].model_dump_json().encode())
    h.update(ctx.budgets.model_dump_json(exclude={"path"}).encode())
    return h.hexdigest()


def _load_checkpoint(path: Path, key: str, tell: Callable[[str], None]) -> dict[str, Any] | None:
    """The saved state when ``path`` exists and matches ``key``; None otherwise (said via ``tell``)."""
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(state, dict) or state.get("schema") != CHECKPOINT_SCHEMA:
            raise ValueError("not a checkpoint of this version")
        if state.get("key") != key:
            tell(f"ignoring {path}: made for other trace files or options; starting over")
            return None
        for name in ("file_index", "next_line", "file_records", "file_skipped", "total", "skipped_total"):
            if not isinstance(state.get(name), int):
                raise ValueError(f"{name}: expected an integer")
        return state
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # A checkpoint is only a cache of work done: a damaged one costs a restart, not the run.
        tell(f"ignoring {path}: unreadable checkpoint ({exc}); starting over")
        return None


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
