"""Reading JSON Lines files: the one line decoder, with ``file:line: what was expected`` errors.

Every JSONL reader of the package (gold tasks, trace files, imports, BFCL data, the evaluator's
workers) reads lines with :func:`text_lines` or :func:`range_lines` and decodes each one with
:func:`decode_object`, so a bad line is described the same way wherever it is read:

- not UTF-8: ``not UTF-8 text (<reason> at byte N)``;
- not JSON: ``expected one JSON object per line: <decoder message> (column N)``, or :data:`TORN`
  for a last line without its newline (an interrupted writer);
- JSON but not an object: ``expected a JSON object, got list``;
- an object that could not be written back: nested more than
  :data:`~helmdeck_dspy.domain.MAX_JSON_DEPTH` levels, or holding an unpaired surrogate escape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

from helmdeck_dspy.domain import MAX_JSON_DEPTH
from helmdeck_dspy.errors import DataFileError

OnError = Literal["skip", "fail"]

TORN = "torn last line (no newline at the end and not valid JSON: the writer was probably interrupted)"

_POS = re.compile(r":? (?:at )?line \d+ column (\d+)(?: \(char \d+\))?")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_error_text(exc: BaseException) -> str:
    """A JSON decoder's message without its in-line position.

    The line is the file's and is given separately, so "Expecting value: line 1 column 7 (char 6)"
    becomes "Expecting value (column 7)".
    """
    msg = getattr(exc, "msg", None) or str(exc)
    col = getattr(exc, "colno", None)
    if col is None:
        m = _POS.search(msg)
        if m is None:
            return msg
        msg, col = msg[: m.start()] + msg[m.end():], m.group(1)
    return f"{msg} (column {col})"


class BadRow(NamedTuple):
    """A line or row that could not be read or decoded, and why (the error's detail)."""

    detail: str


def skip_or_raise(err: DataFileError, on_error: OnError | str, report: Callable[[DataFileError], None] | None) -> None:
    """Handle one bad line: raise ``err`` (``fail``), or pass it to ``report`` and go on (``skip``)."""
    if on_error == "fail":
        raise err
    if report is not None:
        report(err)


# ------------------------------------------------------------------------------ reading lines


def decode_line(raw: bytes, first: bool = False) -> str | BadRow:
    """A raw line's text, or a :class:`BadRow` saying where it is not UTF-8.

    A byte-order mark on the first line is dropped.
    """
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        return BadRow(f"not UTF-8 text ({exc.reason} at byte {exc.start})")


def text_lines(path: str | Path, error_type: type[DataFileError] = DataFileError) -> Iterator[tuple[int, str | BadRow]]:
    """``(line number, text with its newline)`` for each non-blank line, decoded one line at a time.

    A :class:`BadRow` for a line that is not UTF-8 carries its exact line number.

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


def range_lines(path: str | Path, start: int, end: int, first_line: int, from_line: int = 0) -> Iterator[tuple[int, str | BadRow]]:
    """The non-blank lines of the byte range ``[start, end)``, as :func:`text_lines` gives them.

    ``first_line`` is the number of the range's first line; lines numbered below ``from_line`` are
    left out. Complete lines keep their newline, so a torn last line shows.
    """
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
        yield line_no, text if isinstance(text, BadRow) or i == last else text + "\n"


def line_ranges(path: str | Path, lines_per_range: int) -> Iterator[tuple[int, int, int, int]]:
    """Split a file into ``(start, end, first_line, last_line)`` byte ranges of whole lines (one fast scan)."""
    start, line, pos, count = 0, 1, 0, 0
    first_line = 1
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            offset = 0
            while True:
                nl = block.find(b"\n", offset)
                if nl == -1:
                    break
                count += 1
                line += 1
                offset = nl + 1
                if count == lines_per_range:
                    end = pos + offset
                    yield start, end, first_line, line - 1
                    start, first_line, count = end, line, 0
            pos += len(block)
    if pos > start:
        yield start, pos, first_line, line


def is_torn(line: str | bytes) -> bool:
    """A line read without its trailing newline: the last line of a file whose writer was cut off."""
    return not (line.endswith("\n") if isinstance(line, str) else line.endswith(b"\n"))


# ------------------------------------------------------------------------------ decoding a line


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


def _unwritable(line: str, obj: Any) -> str | None:
    """Why ``obj``, decoded from ``line``, could not be written back, or None.

    Nested more than :data:`~helmdeck_dspy.domain.MAX_JSON_DEPTH` levels (pydantic stops
    serialising near 255, ``json`` near 1000, and no record needs more than a few), or holding an
    unpaired surrogate escape (``"\\udb19"``: json.loads accepts it, UTF-8 cannot encode it).
    """
    if line.count("{") + line.count("[") > MAX_JSON_DEPTH and json_deeper_than(obj, MAX_JSON_DEPTH):
        return f"nested more than {MAX_JSON_DEPTH} levels deep"
    if _SURROGATE_ESCAPE.search(line) is None:
        return None
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(exc.object[exc.start])
        return f"a string holds an unpaired surrogate escape (\\u{bad:04x}), which is not valid text"
    return None


def decode_object(line: str | BadRow) -> dict[str, Any] | BadRow:
    """Decode one JSONL line as a JSON object: the object, or a :class:`BadRow` saying why not.

    A line that is not JSON is described with the decoder's message, or as :data:`TORN` when it
    is a last line without its newline; a line that decodes to something other than an object,
    or to an object that could not be written back, is rejected too (see the module docstring).
    """
    if isinstance(line, BadRow):
        return line
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return BadRow(TORN if is_torn(line) else f"expected one JSON object per line: {json_error_text(exc)}")
    if not isinstance(obj, dict):
        return BadRow(f"expected a JSON object, got {type(obj).__name__}")
    problem = _unwritable(line, obj)
    return obj if problem is None else BadRow(problem)


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
        on_error: ``fail`` raises the first bad line's error; ``skip`` reports it and goes on.
        report: Called with each skipped line's error (``skip`` mode).
        error_type: The :class:`DataFileError` subclass to raise (e.g. ``TaskFileError``).

    Raises:
        DataFileError: the file cannot be read, or (``fail``) a line is not a JSON object.
    """
    p = Path(path)
    for line_no, line in text_lines(p, error_type):
        obj = decode_object(line)
        if isinstance(obj, BadRow):
            skip_or_raise(error_type(str(p), obj.detail, line=line_no), on_error, report)
            continue
        yield line_no, obj
