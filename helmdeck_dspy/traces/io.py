"""Trace sets on disk: JSONL (streamed), Parquet (streamed by row batch) and saved Hugging Face
``datasets`` (a directory written by ``save_to_disk``).

:func:`read_record` is the one place a trace line (or a Parquet / dataset row) becomes a
:class:`~helmdeck_dspy.traces.record.TraceRecord`: :func:`load_traces`, :func:`read_jsonl_traces` and the
evaluator's workers all use it, so a bad line reads ``file:line: <the same detail>`` everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helmdeck_dspy.domain import MAX_JSON_DEPTH
from helmdeck_dspy.errors import DataFileError, TraceFileError, validation_message
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.io.jsonl import (
    BadRow,
    OnError,
    decode_object,
    json_deeper_than,
    skip_or_raise,
    text_lines,
)
from helmdeck_dspy.io.outputs import TRACE_FORMATS, check_output, staged_directory
from helmdeck_dspy.traces.record import PARTIAL_KEY, TraceRecord, write_jsonl_traces

FORMATS = ("jsonl", "parquet", "hf")
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


def detect_format(path: Path) -> str:
    """``jsonl``, ``parquet`` or ``hf`` (a ``save_to_disk`` directory), from the path.

    Raises:
        TraceFileError: the path does not exist, is a directory that is not a saved dataset, or
            has an extension that is not a trace format.
    """
    if path.is_dir():
        if (path / "dataset_info.json").is_file() or (path / "state.json").is_file():
            return "hf"
        raise TraceFileError(str(path), "a directory that is not a saved datasets Dataset (no dataset_info.json)")
    if not path.exists():
        raise TraceFileError(str(path), "no such file")
    if path.suffix == ".parquet":
        return "parquet"
    if path.suffix.lower() in JSONL_SUFFIXES:
        return "jsonl"
    raise TraceFileError(
        str(path), f"unknown trace format extension {path.suffix or '(none)'!r}; expected "
        f"{', '.join(JSONL_SUFFIXES)} (JSON Lines), .parquet or a saved datasets directory",
    )


def check_not_empty(path: Path) -> None:
    """Raise when a JSONL trace file holds no non-blank line (an empty trace set is a mistake)."""
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            if block.strip():
                return
    raise TraceFileError(str(path), "empty: no trace records (expected one JSON object per line)")


def iter_raw_rows(path: Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """``(line or row number, raw line text or row dict)``, streamed.

    A JSONL line keeps its newline (a last line without one may be torn, see
    :func:`helmdeck_dspy.io.jsonl.is_torn`); a line that is not UTF-8 comes as a :class:`BadRow`.

    Raises:
        TraceFileError: the file cannot be opened, or a Parquet file / saved dataset is unreadable.
    """
    if fmt == "jsonl":
        yield from text_lines(path, TraceFileError)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            reader = pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as exc:
            raise TraceFileError(str(path), f"not a readable Parquet file: {str(exc).splitlines()[0]}") from None
        row = 0
        try:
            for batch in reader.iter_batches(batch_size=4096):
                for item in batch.to_pylist():
                    row += 1
                    yield row, _restore(item)
        except (OSError, pa.ArrowException) as exc:
            raise TraceFileError(str(path), f"unreadable Parquet data: {str(exc).splitlines()[0]}", line=row + 1) from None
    elif fmt == "hf":
        import datasets

        try:
            ds = datasets.load_from_disk(str(path))
        except Exception as exc:  # noqa: BLE001  (datasets raises a variety of types for a damaged directory)
            raise TraceFileError(str(path), f"not a readable saved dataset: {str(exc).splitlines()[0]}") from None
        for i, item in enumerate(ds, 1):
            yield i, _restore(item)
    else:
        raise TraceFileError(str(path), f"unknown trace format {fmt!r}; expected one of {FORMATS}")


_EXTRA_COLUMN = "extra_json"
_JSON_COLUMNS = ("run", "tool_calls")  # stored as JSON text: their shape varies between records


def _flat(rec: TraceRecord) -> dict[str, Any]:
    """A record as a flat row: the declared fields, unknown fields packed into ``extra_json``."""
    row = {name: getattr(rec, name) for name in TraceRecord.model_fields}
    row["run"] = json.dumps(rec.run, ensure_ascii=False, sort_keys=True) if rec.run is not None else None
    if rec.tool_calls is not None:
        row["tool_calls"] = json.dumps([c.model_dump(mode="json") for c in rec.tool_calls], ensure_ascii=False)
    row[_EXTRA_COLUMN] = json.dumps(rec.model_extra or {}, ensure_ascii=False) if rec.model_extra else None
    return row


def _restore(row: dict[str, Any]) -> dict[str, Any] | BadRow:
    extra = row.pop(_EXTRA_COLUMN, None)
    row = {k: v for k, v in row.items() if v is not None}
    for name in _JSON_COLUMNS:
        if isinstance(row.get(name), str):
            try:
                row[name] = json.loads(row[name])
            except ValueError as exc:
                return BadRow(f"{name}: not valid JSON ({exc})")
    if extra:
        try:
            more = json.loads(extra)
        except ValueError as exc:
            return BadRow(f"{_EXTRA_COLUMN}: not valid JSON ({exc})")
        if not isinstance(more, dict):
            return BadRow(f"{_EXTRA_COLUMN}: expected a JSON object, got {type(more).__name__}")
        row.update(more)
    return row


def _arrow_table(records: Iterable[TraceRecord]):
    import pyarrow as pa

    fields = [
        ("id", pa.string()), ("source", pa.string()), ("model", pa.string()), ("served_model", pa.string()),
        ("tier", pa.string()), ("prompt_variant", pa.string()), ("task_id", pa.string()), ("intent", pa.string()),
        ("max_tokens", pa.int64()), ("content", pa.string()), ("reasoning_content", pa.string()),
        ("finish_reason", pa.string()), ("completion_tokens", pa.int64()), ("prompt_tokens", pa.int64()),
        ("latency_ms", pa.float64()), ("http_status", pa.int64()), ("error", pa.string()),
        ("outcome_label", pa.string()), ("recorded_at", pa.string()), ("call", pa.string()),
        ("cache_hit", pa.bool_()), ("temperature", pa.float64()), ("seed", pa.int64()),
        ("run", pa.string()),  # a JSON object (its keys differ between LMs)
        ("tool_calls", pa.string()),  # a JSON list of {name, arguments, id}
        ("native_tools", pa.bool_()), ("refusal", pa.string()), ("answer_cut", pa.bool_()),
        (_EXTRA_COLUMN, pa.string()),
    ]
    schema = pa.schema(fields)
    assert set(schema.names) == set(TraceRecord.model_fields) | {_EXTRA_COLUMN}, "schema out of date"
    return pa.Table.from_pylist([_flat(r) for r in records], schema=schema)


def save_traces(records: Iterable[TraceRecord], out: str | Path, *, force: bool = False) -> int:
    """Write records in the format ``out``'s suffix names: JSON Lines (``.jsonl``, ``.json``,
    ``.ndjson``), Parquet (``.parquet``) or, without a suffix, a saved HF dataset directory.

    The output rule of :mod:`helmdeck_dspy.io.outputs` applies: an unknown suffix is refused, and an
    existing file or directory is replaced only with ``force``. A file is replaced atomically; a
    dataset (several files) is built beside the target and swapped in whole. Returns the count.

    Raises:
        UsageValueError: ``out`` has an unknown suffix.
        OutputRefusedError / OutputUnwritableError: ``out`` may not or cannot be written.
    """
    target = check_output(out, formats=TRACE_FORMATS, force=force)
    if target.format == "jsonl":
        return write_jsonl_traces(records, target.path)
    table = _arrow_table(records)
    if target.format == "parquet":
        import pyarrow.parquet as pq

        with atomic_writer(target.path, "wb") as handle:
            pq.write_table(table, handle)
        return table.num_rows
    import datasets

    with staged_directory(target.path) as build:
        datasets.Dataset(table).save_to_disk(str(build))
    return table.num_rows


def read_record(raw: str | dict[str, Any] | BadRow) -> TraceRecord | BadRow:
    """The one place a trace line or row becomes a record: the record, or a :class:`BadRow` saying why not.

    Args:
        raw: A JSONL line (with its newline when it had one, so a torn last line shows), a
            Parquet or dataset row, or the :class:`BadRow` of a line that could not be read.

    A line goes through pydantic's JSON parser in one pass (the evaluator's hot path). A line it
    rejects, or whose unknown fields nest deeper than :data:`~helmdeck_dspy.domain.MAX_JSON_DEPTH`
    (the declared fields are scalars), is decoded again with
    :func:`~helmdeck_dspy.io.jsonl.decode_object` and validated from the object, so every reader
    describes a bad line with the same text.
    """
    if isinstance(raw, str):
        try:
            rec = TraceRecord.model_validate_json(raw)
        except ValidationError:
            rec = None  # described below, exactly as for any other reader
        if rec is not None and not (rec.model_extra and json_deeper_than(rec.model_extra, MAX_JSON_DEPTH)):
            return rec
        raw = decode_object(raw)
    if isinstance(raw, BadRow):
        return raw
    try:
        return TraceRecord.model_validate(raw)
    except ValidationError as exc:
        return BadRow(validation_message(exc, with_input=True))


def _records(
    path: Path, rows: Iterable[tuple[int, Any]], on_error: OnError | str, report: Callable[[DataFileError], None] | None
) -> Iterator[TraceRecord]:
    for line_no, raw in rows:
        if line_no == 1 and isinstance(raw, str) and raw.lstrip().startswith(f'{{"{PARTIAL_KEY}"'):
            continue  # a recording's partial file opens with its header
        rec = read_record(raw)
        if isinstance(rec, BadRow):
            skip_or_raise(TraceFileError(str(path), rec.detail, line=line_no), on_error, report)
        else:
            yield rec


def load_traces(
    path: str | Path,
    *,
    on_error: OnError | str = "fail",
    report: Callable[[DataFileError], None] | None = None,
) -> Iterator[TraceRecord]:
    """Stream the records of a trace set in any supported format (see :func:`detect_format`).

    Args:
        path: A ``.jsonl`` / ``.json`` / ``.ndjson`` file, a ``.parquet`` file or a saved dataset.
        on_error: ``fail`` raises at the first bad record; ``skip`` reports it and goes on.
        report: Called with each skipped record's error (``skip`` mode).

    Raises:
        TraceFileError: the path is missing, empty or unreadable, or (``fail``) a record is invalid.
    """
    p = Path(path)
    fmt = detect_format(p)
    if fmt == "jsonl":
        check_not_empty(p)
    yield from _records(p, iter_raw_rows(p, fmt), on_error, report)


def read_jsonl_traces(
    path: str | Path,
    *,
    on_error: OnError | str = "fail",
    report: Callable[[DataFileError], None] | None = None,
) -> Iterator[TraceRecord]:
    """Stream the records of one JSONL trace file, whatever its name (an empty file has none): the
    plumbing for a flow's own files (partial recordings, resumed runs). A trace set a user names
    goes through :func:`load_traces`, which reads every supported format.

    Args and errors as :func:`load_traces`.
    """
    p = Path(path)
    yield from _records(p, text_lines(p, TraceFileError), on_error, report)


def load_traces_dataset(path: str | Path) -> Any:
    """Records of a trace file as a HF ``datasets.Dataset`` (unknown fields packed in ``extra_json``)."""
    import datasets

    return datasets.Dataset(_arrow_table(load_traces(path)))
