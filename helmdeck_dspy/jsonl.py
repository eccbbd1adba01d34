"""Reading JSON Lines files with precise errors: ``file:line: what was expected``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from helmdeck_dspy.errors import DataFileError

OnError = Literal["skip", "fail"]


def iter_jsonl(
    path: str | Path,
    *,
    on_error: OnError = "fail",
    report: Callable[[DataFileError], None] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file.

    Args:
        path: The file to read.
        on_error: ``fail`` raises the first :class:`DataFileError`; ``skip`` reports it and goes on.
        report: Called with each skipped line's error (``skip`` mode).

    Raises:
        DataFileError: the file cannot be read, or (``fail``) a line is not a JSON object.
    """
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(str(p), f"cannot read: {exc.strerror}") from None
    with handle:
        line_no = 0
        while True:
            try:
                line = handle.readline()
            except UnicodeDecodeError as exc:
                raise DataFileError(str(p), f"not UTF-8 text ({exc.reason})", line=line_no + 1) from None
            if not line:
                return
            line_no += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
            except (ValueError, RecursionError) as exc:
                err = DataFileError(str(p), f"expected one JSON object per line: {exc}", line=line_no)
                if on_error == "fail":
                    raise err from None
                if report is not None:
                    report(err)
                continue
            yield line_no, obj
