"""BFCL function documents -> catalog packs with JSON Schema parameters.

Types are translated through :mod:`~helmdeck_dspy.bench.bfcl.spec` (``eval/bfcl.toml``):
BFCL's Python-style names (``dict`` -> ``object``, ``float`` -> ``number``, ``tuple`` ->
``array``, ``any`` -> no ``type`` keyword) and the Java/JavaScript names (``HashMap`` ->
``object``, ``long`` -> ``integer``, ``char`` -> ``string``, an empty type -> no keyword ...).
A parameter typed with a Java/JavaScript name keeps that name in its pack's metadata, under
:data:`ORIGINAL_TYPES_KEY`, keyed by the argument's path (``params``, ``ids[]``, ``opts.limit``).
A type known to neither table is an error naming it. BFCL's own ``optional`` marker is dropped
(``required`` says the same) and so is a document's ``response`` schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helmdeck_dspy.catalog.models import Pack, PackMetadata
from helmdeck_dspy.errors import BfclDataError
from helmdeck_dspy.bench.bfcl.spec import load_reading_rules

ORIGINAL_TYPES_KEY = "bfcl_types"
"""Pack metadata field holding the Java/JavaScript parameter types, by argument path."""

MAX_SCHEMA_DEPTH = 32


class _Where:
    """Where a schema is being read, for error messages."""

    __slots__ = ("line", "path")

    def __init__(self, path: str | Path, line: int | None) -> None:
        self.path, self.line = str(path), line

    def error(self, detail: str) -> BfclDataError:
        return BfclDataError(self.path, detail, line=self.line)


def to_json_schema(spec: Any, *, where: str, path: str | Path = "<bfcl>", line: int | None = None,
                   original_types: dict[str, str] | None = None) -> dict[str, Any]:
    """Convert one BFCL parameter schema to JSON Schema.

    Args:
        spec: The BFCL schema object.
        where: What is being converted, for messages (``function 'f': parameters``).
        path: The file it came from; line: its line.
        original_types: Filled with ``argument path -> Java/JavaScript type`` when given.

    Raises:
        BfclDataError: an unknown type (named in the message), a non-object schema, or nesting
            deeper than 32 levels.
    """
    found: dict[str, str] = {} if original_types is None else original_types
    return _convert(spec, where, "", _Where(path, line), found, 0)


def _convert(spec: Any, where: str, arg: str, at: _Where, found: dict[str, str], depth: int) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise at.error(f"{where}: expected a schema object, got {type(spec).__name__}")
    if depth > MAX_SCHEMA_DEPTH:
        raise at.error(f"{where}: schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
    rules = load_reading_rules()
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "type":
            known, json_type, language = rules.json_type(value) if isinstance(value, str) else (False, None, False)
            if not known:
                raise at.error(f"{where}: unknown BFCL type {value!r}; expected one of {', '.join(rules.known_types())}")
            if json_type is not None:
                out["type"] = json_type
            if language and arg:
                found[arg] = value
        elif key == "properties":
            if not isinstance(value, dict):
                raise at.error(f"{where}: 'properties' must be an object")
            out["properties"] = {
                name: _convert(sub, f"{where}.{name}", f"{arg}.{name}" if arg else str(name), at, found, depth + 1)
                for name, sub in value.items()
            }
        elif key == "items":
            out["items"] = _convert(value, f"{where}[]", f"{arg}[]", at, found, depth + 1)
        elif key == "optional":
            continue  # BFCL's own marker; optionality is expressed by 'required'
        else:
            out[key] = value
    return out


def function_pack(fn: Any, index: int, path: str | Path, line: int | None) -> Pack:
    """One BFCL function document as a pack (see the module docstring)."""
    at = _Where(path, line)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise at.error(f"function[{index}]: expected an object with a non-empty 'name'")
    name = fn["name"]
    description = fn.get("description", "")
    if not isinstance(description, str):
        raise at.error(f"function {name!r}: 'description' must be a string")
    params = fn.get("parameters", {"type": "dict", "properties": {}})
    original: dict[str, str] = {}
    schema = to_json_schema(params, where=f"function {name!r}: parameters", path=path, line=line, original_types=original)
    metadata = PackMetadata.model_validate({ORIGINAL_TYPES_KEY: original}) if original else PackMetadata()
    return Pack(name=name, description=description, parameters=schema, metadata=metadata)


def function_packs(fns: Any, path: str | Path, line: int | None, *, field: str = "function") -> tuple[Pack, ...]:
    """A question's function documents as packs; a repeated name keeps its first document."""
    if not isinstance(fns, list) or not fns:
        raise BfclDataError(str(path), f"field {field!r}: expected a non-empty list of function definitions", line=line)
    packs: dict[str, Pack] = {}
    for i, fn in enumerate(fns):
        pack = function_pack(fn, i, path, line)
        packs.setdefault(pack.name, pack)
    return tuple(packs.values())


def parameter_order(pack: Pack) -> list[str]:
    """The pack's argument names in document order (how positional arguments map to names)."""
    props = (pack.parameters or {}).get("properties")
    return list(props) if isinstance(props, dict) else []
