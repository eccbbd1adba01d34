"""Reading whole data files — TOML (budget table, profiles, rules) and JSON (catalogs, compiled
programs, reports) — with ``file:line: what was expected`` errors of the caller's type."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import DataFileError, InputTooLargeError
from helmdeck_dspy.io.jsonl import json_error_text
from helmdeck_dspy.io.nesting import nesting_exceeds

BOM = "\ufeff"
"""The byte-order mark some editors put at the start of a UTF-8 file; readers here ignore it."""
_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


MAX_TOML_DEPTH = 32
"""The deepest a TOML input's arrays and inline tables may nest (a spec or table needs about 4)."""


def parse_toml(text: str, path: str | Path, error: type[DataFileError] = DataFileError) -> dict[str, Any]:
    """Decode TOML ``text`` (a leading UTF-8 byte-order mark is ignored); a syntax error names the
    line and column, and text nested deeper than :data:`MAX_TOML_DEPTH` is refused before it is parsed."""
    if nesting_exceeds(text, MAX_TOML_DEPTH):
        raise error(str(path), f"not read: its arrays and tables nest more than {MAX_TOML_DEPTH} levels deep")
    try:
        return tomllib.loads(text.removeprefix(BOM))
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        at = _AT.search(msg)
        if at is None:
            raise error(str(path), f"not valid TOML: {msg}") from None
        raise error(str(path), f"not valid TOML: {msg[:at.start()]} (column {at.group(2)})", line=int(at.group(1))) from None


def read_toml(path: str | Path, error: type[DataFileError] = DataFileError) -> dict[str, Any]:
    """Read and decode a TOML file; unreadable, non-UTF-8 and invalid files raise ``error``."""
    return parse_toml(read_text(path, error), path, error)


def toml_value(value: Any) -> str:
    """``value`` written as TOML (a bool, number, string, path, list or inline table of those)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Path)):
        return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def read_text(path: str | Path, error: type[DataFileError] = DataFileError) -> str:
    """A UTF-8 text file's content without a leading byte-order mark; unreadable or non-UTF-8 files
    raise ``error`` (with the line)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise error(str(p), f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(str(p), f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                    line=raw[: exc.start].count(b"\n") + 1) from None
    return text.removeprefix(BOM)


def read_text_limited(path: str | Path, max_bytes: int, option: str) -> str:
    """A UTF-8 text file (``-``: standard input) of at most ``max_bytes`` bytes, read no further.

    Raises:
        InputTooLargeError: The file holds more than ``max_bytes`` bytes.
        DataFileError: The file cannot be read or is not UTF-8 text (naming the line).
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            raw = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with Path(path).open("rb") as handle:
                raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise DataFileError(name, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputTooLargeError(f"{option} {name}: more than {max_bytes} bytes; send a shorter excerpt", option)
    try:
        return raw.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as exc:
        raise DataFileError(name, f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                            line=raw[: exc.start].count(b"\n") + 1) from None


def read_json(path: str | Path, error: type[DataFileError] = DataFileError, what: str = "") -> Any:
    """Read and decode a JSON file; unreadable, non-UTF-8 and invalid files raise ``error``.

    ``what`` (e.g. "not an eval report.json") prefixes the JSON messages.
    """
    return parse_json(read_text(path, error), path, error, what)


def parse_json(text: str, path: str | Path, error: type[DataFileError] = DataFileError, what: str = "") -> Any:
    """Decode the JSON ``text`` of ``path``; a syntax error names the line and column (see :func:`read_json`)."""
    prefix = f"{what}: " if what else ""
    try:
        return json.loads(text)
    except RecursionError:
        raise error(str(path), f"{prefix}not valid JSON: nested too deeply to decode") from None
    except ValueError as exc:
        raise error(str(path), f"{prefix}not valid JSON: {json_error_text(exc)}", line=getattr(exc, "lineno", None)) from None


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, or of every file under a directory (sorted by path), read in 1 MiB blocks."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        with f.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()
