"""Reading JSON Lines files with precise errors: ``file:line: what was expected``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

from helmdeck_dspy.errors import DataFileError

OnError = Literal["skip", "fail"]

TORN = "torn last line (no newline at the end and not valid JSON: the writer was probably interrupted)"


_POS = re.compile(r":? (?:at )?line \d+ column (\d+)(?: \(char \d+\))?")


def json_error_text(exc: BaseException) -> str:
    """A JSON decoder's message without its in-line "line 1 column 7 (char 6)" (the line is the
    file's, given separately): "... (column 7)"."""
    msg = getattr(exc, "msg", None) or str(exc)
    col = getattr(exc, "colno", None)
    if col is None:
        m = _POS.search(msg)
        if m is None:
            return msg
        msg, col = msg[: m.start()] + msg[m.end():], m.group(1)
    return f"{msg} (column {col})"


class BadRow(NamedTuple):
    """A line or row that could not even be read (not UTF-8, an unreadable Parquet batch): why."""

    detail: str


def decode_line(raw: bytes, first: bool = False) -> str | BadRow:
    """A raw line's text, or a :class:`BadRow` saying where it is not UTF-8 (a byte-order mark on
    the first line is dropped)."""
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        return BadRow(f"not UTF-8 text ({exc.reason} at byte {exc.start})")


def text_lines(path: str | Path, error_type: type[DataFileError] = DataFileError) -> Iterator[tuple[int, str | BadRow]]:
    """``(line number, text with its newline)`` for each non-blank line, decoded one line at a time
    (so a :class:`BadRow` for a line that is not UTF-8 carries its exact line number).

    Raises:
        DataFileError: (as ``error_type``) the file cannot be opened.
    """
    p = Path(path)
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise error_type(str(p), f"cannot read: {exc.strerror}") from None
    with handle:
        for line_no, raw in enumerate(handle, 1):
            if raw.strip():
                yield line_no, decode_line(raw, first=line_no == 1)


def is_torn(line: str | bytes) -> bool:
    """A line read without its trailing newline: the last line of a file whose writer was cut off."""
    return not line.endswith("\n" if isinstance(line, str) else b"\n")


MAX_DEPTH = 128
"""Deepest JSON value a line may hold: pydantic stops serialising near 255 levels, ``json`` near
1000, and no record needs more than a few."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists/dicts more than ``limit`` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def reject_unwritable(line: str, obj: Any) -> None:
    """Raise ValueError when ``obj``, decoded from ``line``, could not be written back: nested
    more than :data:`MAX_DEPTH` levels, or holding an unpaired surrogate escape (``"\\udb19"``,
    which json.loads accepts but UTF-8 cannot encode). Cheap unless the line has many brackets
    or a surrogate escape."""
    if line.count("{") + line.count("[") > MAX_DEPTH and json_deeper_than(obj, MAX_DEPTH):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    if _SURROGATE_ESCAPE.search(line) is None:
        return
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(exc.object[exc.start])
        raise ValueError(f"a string holds an unpaired surrogate escape (\\u{bad:04x}), which is not valid text") from None


def iter_jsonl(
    path: str | Path,
    *,
    on_error: OnError = "fail",
    report: Callable[[DataFileError], None] | None = None,
    error_type: type[DataFileError] = DataFileError,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file.

    Args:
        path: The file to read.
        on_error: ``fail`` raises the first :class:`DataFileError`; ``skip`` reports it and goes on.
        report: Called with each skipped line's error (``skip`` mode).
        error_type: The :class:`DataFileError` subclass to raise (e.g. ``TaskFileError``).

    A last line without a newline that does not parse is reported as torn (an interrupted
    writer), never accepted.

    Raises:
        DataFileError: the file cannot be read, or (``fail``) a line is not a JSON object.
    """
    p = Path(path)
    for line_no, line in text_lines(p, error_type):
        if isinstance(line, BadRow):
            raise error_type(str(p), line.detail, line=line_no)
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
            reject_unwritable(line, obj)
        except (ValueError, RecursionError) as exc:
            detail = TORN if is_torn(line) else f"expected one JSON object per line: {json_error_text(exc)}"
            err = error_type(str(p), detail, line=line_no)
            if on_error == "fail":
                raise err from None
            if report is not None:
                report(err)
            continue
        yield line_no, obj
