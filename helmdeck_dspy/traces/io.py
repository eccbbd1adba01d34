"""Trace sets on disk: JSONL (streamed), Parquet (streamed by row batch) and saved Hugging Face
``datasets`` (a directory written by ``save_to_disk``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.record import TraceRecord, write_traces

FORMATS = ("jsonl", "parquet", "hf")


def detect_format(path: Path) -> str:
    """``jsonl``, ``parquet`` or ``hf`` (a ``save_to_disk`` directory), from the path."""
    if path.is_dir():
        if (path / "dataset_info.json").is_file() or (path / "state.json").is_file():
            return "hf"
        raise DataFileError(str(path), "a directory that is not a saved datasets Dataset (no dataset_info.json)")
    if not path.exists():
        raise DataFileError(str(path), "no such file")
    if path.suffix == ".parquet":
        return "parquet"
    return "jsonl"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        with f.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def iter_raw_rows(path: Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """``(line or row number, raw line text or row dict)``, streamed."""
    if fmt == "jsonl":
        try:
            handle = path.open(encoding="utf-8")
        except OSError as exc:
            raise DataFileError(str(path), f"cannot read: {exc.strerror}") from None
        with handle:
            for i, line in enumerate(handle, 1):
                if line.strip():
                    yield i, line
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        row = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            for item in batch.to_pylist():
                row += 1
                yield row, _restore(item)
    elif fmt == "hf":
        import datasets

        ds = datasets.load_from_disk(str(path))
        for i, item in enumerate(ds, 1):
            yield i, _restore(item)
    else:
        raise DataFileError(str(path), f"unknown trace format {fmt!r}; expected one of {FORMATS}")


_EXTRA_COLUMN = "extra_json"


def _flat(rec: TraceRecord) -> dict[str, Any]:
    """A record as a flat row: the declared fields, unknown fields packed into ``extra_json``."""
    row = {name: getattr(rec, name) for name in TraceRecord.model_fields}
    row[_EXTRA_COLUMN] = json.dumps(rec.model_extra or {}, ensure_ascii=False) if rec.model_extra else None
    return row


def _restore(row: dict[str, Any]) -> dict[str, Any]:
    extra = row.pop(_EXTRA_COLUMN, None)
    row = {k: v for k, v in row.items() if v is not None}
    if extra:
        row.update(json.loads(extra))
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
        (_EXTRA_COLUMN, pa.string()),
    ]
    schema = pa.schema(fields)
    assert set(schema.names) == set(TraceRecord.model_fields) | {_EXTRA_COLUMN}, "schema out of date"
    return pa.Table.from_pylist([_flat(r) for r in records], schema=schema)


def save_traces(records: Iterable[TraceRecord], out: str | Path) -> int:
    """Write records as JSONL (``.jsonl``), Parquet (``.parquet``) or a HF dataset (any other directory path)."""
    target = Path(out)
    if target.suffix in (".jsonl", ".json"):
        return write_traces(records, target)
    table = _arrow_table(records)
    if target.suffix == ".parquet":
        import pyarrow.parquet as pq

        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        pq.write_table(table, tmp)
        tmp.replace(target)
        return table.num_rows
    import datasets

    datasets.Dataset(table).save_to_disk(str(target))
    return table.num_rows


def load_traces(path: str | Path, *, on_error: str = "fail", report=None) -> Iterator[TraceRecord]:
    """Stream records from any supported format (see :func:`detect_format`)."""
    from pydantic import ValidationError

    p = Path(path)
    fmt = detect_format(p)
    for line_no, raw in iter_raw_rows(p, fmt):
        try:
            obj = json.loads(raw) if isinstance(raw, str) else raw
            if not isinstance(obj, dict):
                raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
            yield TraceRecord.model_validate(obj)
        except (ValueError, ValidationError) as exc:
            err = DataFileError(str(p), f"expected a trace record: {exc}".splitlines()[0], line=line_no)
            if on_error == "fail":
                raise err from None
            if report is not None:
                report(err)


def load_traces_dataset(path: str | Path) -> Any:
    """Records of a trace file as a HF ``datasets.Dataset`` (unknown fields packed in ``extra_json``)."""
    import datasets

    return datasets.Dataset(_arrow_table(load_traces(path)))
