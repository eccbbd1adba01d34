"""Checking a step's arguments against its tool's JSON Schema, and coercing what is safe to coerce.

The guards call :func:`check_arguments` for every step whose tool has an argument schema. What it
does, at the top level of the arguments and inside nested objects and arrays the schema describes:

- coerces scalar types where the value means the same: ``"8"`` → ``8`` for an integer, ``"2.5"``
  → ``2.5`` for a number, ``"true"``/``"false"`` → booleans, a whole float such as ``8.0`` → ``8``
  for an integer, a number → its text for a string;
- drops arguments the schema does not list (when it lists its properties and does not allow others);
- notes, without changing anything, a missing required argument, a value outside an enum and a
  value of the wrong type that cannot be coerced.

Each change and each problem is a short note (``coerced side1``, ``dropped colour``, ``missing
radius``, ``enum unit``, ``type name``); the notes go on the guarded step.

:func:`ground_args` checks path arguments against what the request names (a :class:`Grounding`):

- a documentation placeholder path (``path/to/repo``) is replaced by the one path the request
  names that ends the same way (``filled repo_path``; ``PlannerOptions.fill_placeholders``, on by
  default: chosen on the end-to-end study's dev half, docs/results/e2e.md);
- with ``complete_tails`` (``PlannerOptions.ground_paths``), a path argument the request does not
  name is completed to the one path it names that ends with it: ``todo.md`` → ``files/todo.md``
  (``grounded path``). Only path arguments (:data:`PATH_KEYS`) are read, so a repository-relative
  file list is never rewritten. A value the request gives no single completion for is left as it is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

PLACEHOLDERS_KEY = "fill_placeholders"
"""``run`` key of a trace record whose planner filled placeholder paths from the request
(:func:`ground_args`): scoring the record again does the same."""
GROUND_PATHS_KEY = "ground_paths"
"""``run`` key of a trace record whose planner completed path arguments from the request."""
PATH_KEYS = frozenset({"path", "paths", "source", "destination", "repo_path", "file_path", "directory"})
"""Argument names that hold a path on the file system (a list under one of them: each item)."""
_PLACEHOLDER = re.compile(r"^/?(?:your/)?path/to/(?P<tail>[^\s]+)$", re.I)
_PATH_TOKEN = re.compile(r"[\w./~-]+")

COERCE_ARGS_KEY = "coerce_args"
"""``run`` key of a trace record whose planner checked and coerced args against the tool schemas:
scoring the record again does the same."""

_INT = re.compile(r"^[+-]?\d+$")
_MAX_DEPTH = 16


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "null":
        return value is None
    return True


def _coerce_scalar(value: Any, kind: str) -> tuple[bool, Any]:
    """``(True, coerced)`` when ``value`` converts to ``kind`` without changing its meaning."""
    if kind == "integer":
        if isinstance(value, str) and _INT.match(value.strip()):
            return True, int(value.strip())
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return True, int(value)
    elif kind == "number" and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return False, value
        if math.isfinite(number):
            return True, int(number) if _INT.match(value.strip()) else number
    elif kind == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return True, value.strip().lower() == "true"
    elif kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return True, str(value)
    return False, value


def _check_value(value: Any, schema: dict[str, Any], path: str, notes: list[str], depth: int) -> Any:
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        return value
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    if kinds and not any(_type_ok(value, k) for k in kinds):
        for kind in kinds:
            ok, coerced = _coerce_scalar(value, kind)
            if ok:
                notes.append(f"coerced {path}")
                value = coerced
                break
        else:
            notes.append(f"type {path}")
            return value
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        notes.append(f"enum {path}")
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        return _check_object(value, schema, path, notes, depth)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [_check_value(v, items, f"{path}[]", notes, depth + 1) for v in value]
    return value


def _check_object(args: dict[str, Any], schema: dict[str, Any], prefix: str, notes: list[str], depth: int) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties") or {}
    closed = schema.get("additionalProperties", False) is False
    out: dict[str, Any] = {}
    for name, value in args.items():
        path = f"{prefix}.{name}" if prefix else name
        if name not in props:
            if closed:
                notes.append(f"dropped {path}")
                continue
            out[name] = value
            continue
        out[name] = _check_value(value, props[name], path, notes, depth + 1)
    for name in schema.get("required") or ():
        if isinstance(name, str) and name not in out:
            notes.append(f"missing {prefix + '.' if prefix else ''}{name}")
    return out


def check_arguments(args: dict[str, Any], schema: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """``args`` checked against ``schema``: the coerced arguments and the notes (see module docstring).

    A schema that does not list properties (or is not an object schema) leaves ``args`` as they are.
    """
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict) or not isinstance(args, dict):
        return args, []
    notes: list[str] = []
    return _check_object(args, schema, "", notes, 0), notes


def argument_problems(notes: list[str]) -> list[str]:
    """The notes that say the arguments are still wrong after coercion (missing, enum, type)."""
    return [n for n in notes if n.startswith(("missing ", "enum ", "type "))]


@dataclass(frozen=True)
class Grounding:
    """What a step's path arguments are checked against (see the module docstring).

    Attributes:
        intent: The request.
        placeholders: Fill documentation placeholder paths.
        complete_tails: Complete a path the request does not name to the one it names that ends with it.
    """

    intent: str
    placeholders: bool = True
    complete_tails: bool = False

    def named(self) -> set[str]:
        """The path-like words of the request (trailing punctuation off)."""
        return {t.rstrip(".,;:!?'\"") for t in _PATH_TOKEN.findall(self.intent)}


def ground_args(args: dict[str, Any], grounding: Grounding) -> tuple[dict[str, Any], list[str]]:
    """``args`` with their path arguments grounded in the request (see the module docstring).
    Returns the arguments and a note per changed value (``filled repo_path``, ``grounded path``)."""
    tokens = grounding.named()
    notes: list[str] = []

    def one(candidates: set[str]) -> str | None:
        return next(iter(candidates)) if len(candidates) == 1 else None

    def fill(value: Any, path: str, key: str) -> Any:
        if isinstance(value, dict):
            return {k: fill(v, f"{path}.{k}" if path else str(k), str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v, path, key) for v in value]
        if not isinstance(value, str):
            return value
        m = _PLACEHOLDER.match(value) if grounding.placeholders else None
        if m is not None:
            tail = m["tail"].rstrip("/")
            found = one({t for t in tokens if t == tail or t.endswith("/" + tail)})
            if found is not None:
                notes.append(f"filled {path}")
                return found
            return value
        if grounding.complete_tails and key in PATH_KEYS and value not in tokens:
            tail = value.strip().removeprefix("./").rstrip("/")
            found = one({t for t in tokens if tail and t.endswith("/" + tail)})
            if found is not None:
                notes.append(f"grounded {path}")
                return found
        return value

    return fill(args, "", ""), notes


def fill_placeholders(args: dict[str, Any], intent: str) -> tuple[dict[str, Any], list[str]]:
    """``args`` with documentation placeholders filled from ``intent`` (:func:`ground_args`, placeholders only)."""
    return ground_args(args, Grounding(intent))
