"""Importing completions recorded elsewhere into trace records (``traces import``).

A source file is one JSON object, a JSON array of objects (pretty-printed or not), or JSON Lines.
Each object is read by its format's reader in :mod:`helmdeck_dspy.traces.shapes` (``openai``,
``anthropic``, ``gemini``, ``llamastack``, or ``auto`` to tell them apart row by row) and becomes
one :class:`~helmdeck_dspy.traces.record.TraceRecord` with source ``import:<format>``.

A row that cannot be read is reported as ``file:line: what was expected`` (for an array, the line
its item starts on) and skipped or rejected as the caller chooses; no Python exception text ever
reaches the user. Ids the source repeats are made unique (``id#2``, ``id#3``...); rows without an
id get one derived from their line and content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helmdeck_dspy.domain import IMPORT_FORMATS
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_text
from helmdeck_dspy.io.jsonl import OnError, iter_jsonl, json_error_text, skip_or_raise
from helmdeck_dspy.traces.record import TraceRecord
from helmdeck_dspy.traces.shapes import READERS, RowError, detect, unwrap

_WHITESPACE = " \t\r\n"


def _array_items(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """``(line the item starts on, item)`` for each item of the JSON array ``text``.

    Raises:
        DataFileError: the array itself is not valid JSON (naming the line).
    """
    decoder = json.JSONDecoder()
    n = len(text)
    pos, line, counted = text.index("[") + 1, 1, 0

    def skip(p: int) -> int:
        while p < n and text[p] in _WHITESPACE:
            p += 1
        return p

    def line_at(p: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, p)
        counted = p
        return line

    pos = skip(pos)
    if pos < n and text[pos] == "]":
        return
    while True:
        at = line_at(pos)
        try:
            item, end = decoder.raw_decode(text, pos)
        except RecursionError:
            raise DataFileError(str(path), "not valid JSON: nested too deeply to decode", line=at) from None
        except ValueError as exc:
            raise DataFileError(str(path), f"not valid JSON: {json_error_text(exc)}",
                                line=getattr(exc, "lineno", at)) from None
        yield at, item
        pos = skip(end)
        if pos < n and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < n and text[pos] == "]" and not text[pos + 1:].strip():
            return
        raise DataFileError(str(path), "not valid JSON: expected ',' or ']' after an array item", line=line_at(pos))


def _objects(path: Path, on_error: OnError, report: Callable[[DataFileError], None] | None) -> Iterator[tuple[int, dict]]:
    """One JSON object, a JSON array of objects, or JSONL — each object with its line."""
    text = read_text(path)
    body = text.lstrip(_WHITESPACE + "\ufeff")
    if body.startswith("["):
        for line, item in _array_items(body, path):
            line += text.count("\n", 0, len(text) - len(body))  # lines before the array
            if isinstance(item, dict):
                yield line, item
            else:
                skip_or_raise(DataFileError(str(path), f"expected a JSON object, got {type(item).__name__}", line=line),
                              on_error, report)
        return
    if body.startswith("{") and "\n" in body.rstrip():
        try:
            whole = json.loads(body)
        except (ValueError, RecursionError):
            whole = None  # not one JSON document: JSON Lines
        if isinstance(whole, dict):
            yield text.count("\n", 0, len(text) - len(body)) + 1, whole
            return
    yield from iter_jsonl(path, on_error=on_error, report=report)


def _record_id(prefix: str, *parts: Any) -> str:
    return prefix + hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def convert_row(fmt: str, row: dict[str, Any], line: int) -> TraceRecord:
    """One source row as a trace record.

    Args:
        fmt: A format of :data:`IMPORT_FORMATS`; ``auto`` detects the row's.
        row: The decoded object.
        line: Its line in the source (ids of rows without one are derived from it).

    Raises:
        RowError: the row does not have the format's shape (the message says what was expected).
    """
    if fmt == "auto":
        fmt = detect(row) or ""
        if not fmt:
            raise RowError("expected an OpenAI, Anthropic, Gemini or llama-stack response; this row has keys "
                           f"{sorted(row)[:8]}")
    response, request = unwrap(row) if fmt != "llamastack" else (row, {})
    fields = {k: v for k, v in READERS[fmt](response).items() if v is not None}
    fields.update(request)
    fields.setdefault("model", fields.get("served_model") or "")
    if "id" not in fields:
        fields["id"] = _record_id(f"{fmt}-", line, fields.get("content"), fields.get("finish_reason"))
    try:
        return TraceRecord(source=f"import:{fmt}", **fields)
    except ValidationError as exc:
        raise RowError(validation_message(exc, with_input=True)) from None


def import_traces(
    fmt: str,
    path: str | Path,
    *,
    on_error: OnError = "fail",
    report: Callable[[DataFileError], None] | None = None,
) -> Iterator[TraceRecord]:
    """Stream ``path`` in format ``fmt`` as trace records; bad rows are reported as ``file:line``.

    Raises:
        DataFileError: an unknown format, an unreadable file, a file with no rows or with none that
            could be imported, or (``fail``) a row that cannot be read.
    """
    if fmt not in READERS and fmt != "auto":
        raise DataFileError(str(path), f"unknown import format {fmt!r}; expected one of {IMPORT_FORMATS}")
    p = Path(path)
    seen: dict[str, int] = {}
    rows = 0
    for line, row in _objects(p, on_error, report):
        rows += 1
        try:
            rec = convert_row(fmt, row, line)
        except RowError as exc:
            skip_or_raise(DataFileError(str(p), str(exc), line=line), on_error, report)
            continue
        except Exception as exc:  # noqa: BLE001 - a reader bug must still read as file:line, not a traceback
            skip_or_raise(DataFileError(str(p), f"could not read this row as {fmt} ({type(exc).__name__})", line=line),
                          on_error, report)
            continue
        n = seen.get(rec.id, 0) + 1
        seen[rec.id] = n
        if n > 1:
            unique = f"{rec.id}#{n}"
            while unique in seen:
                n += 1
                unique = f"{rec.id}#{n}"
            seen[rec.id] = n
            seen[unique] = 1
            rec = rec.model_copy(update={"id": unique})
        yield rec
    if not seen:
        raise DataFileError(str(p), "empty: no rows to import (expected one JSON object, a JSON array or JSON Lines)"
                            if not rows else f"none of its {rows} row(s) could be imported as {fmt}")
