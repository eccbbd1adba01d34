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

Grounding path arguments in what the task can know is :mod:`helmdeck_dspy.planning.grounding`.
"""

from __future__ import annotations

import math
import re
from typing import Any

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
