"""A tool's JSON Schema arguments as one compact signature line, for byte-capped prompts.

``{"properties": {"path": {"type": "string"}, "head": {"type": "number", "description": ...}},
"required": ["path"]}`` becomes ``path: string, head?: number``: argument names, their types
(enums as their values, arrays as ``T[]``, nested objects in braces), ``?`` after an optional name.
Titles, defaults, formats and descriptions are left out (argument descriptions kept as quoted hints
were measured and did not help: docs/results/mcp-servers.md, ``default-hints``). The schema itself
stays on the pack, for argument checks, constrained decoding and native tools.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_ENUM_VALUES = 8
"""Enum values shown before the rest are elided with ``|...``."""
MAX_DEPTH = 3
"""Nested objects deeper than this show as ``object``."""


_SCALAR_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
_SENTENCE_END = re.compile(r"[.?!](?=\s|$)")


def first_sentence(text: str) -> str:
    """Cut ``text`` after its first ``.``, ``?`` or ``!`` followed by whitespace or the end."""
    m = _SENTENCE_END.search(text)
    return text[: m.end()] if m else text


NO_ARGS = "(none)"
"""The signature of a tool that takes no arguments."""


def arg_signature(schema: dict[str, Any] | None) -> str:
    """The signature of an object schema's properties (:data:`NO_ARGS` when it has none)."""
    return _fields(schema or {}, 0) or NO_ARGS


def _fields(schema: dict[str, Any], depth: int) -> str:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ""
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    parts = []
    for name, spec in props.items():
        optional = name not in required
        parts.append(f"{name}{'?' if optional else ''}: {_type(spec, depth, drop_null=optional)}")
    return ", ".join(parts)


def _union(options: list[str]) -> str:
    unique = list(dict.fromkeys(o for o in options if o))
    return "|".join(unique) if unique else "any"


def _type(spec: Any, depth: int, *, drop_null: bool = False) -> str:
    """One property's type; ``drop_null`` leaves ``null`` out of a union (an optional argument may
    simply be omitted)."""
    if not isinstance(spec, dict):
        return "any"
    if "const" in spec:
        return json.dumps(spec["const"], ensure_ascii=False)
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        shown = [json.dumps(v, ensure_ascii=False) for v in enum[:MAX_ENUM_VALUES]]
        return "|".join(shown) + ("|..." if len(enum) > MAX_ENUM_VALUES else "")
    for key in ("anyOf", "oneOf"):
        branches = spec.get(key)
        if isinstance(branches, list) and branches:
            options = [_type(b, depth) for b in branches]
            if drop_null and len(options) > 1:
                options = [o for o in options if o != "null"]
            return _union(options)
    kind = spec.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str)]
        if drop_null and len(kinds) > 1:
            kinds = [k for k in kinds if k != "null"]
        return _union([_type({**spec, "type": k}, depth) for k in kinds])
    if kind == "array" or (kind is None and "items" in spec):
        item = _type(spec.get("items"), depth) if isinstance(spec.get("items"), dict) else "any"
        return f"({item})[]" if "|" in item else f"{item}[]"
    if kind == "object" or (kind is None and isinstance(spec.get("properties"), dict)):
        inner = _fields(spec, depth + 1) if depth + 1 < MAX_DEPTH else ""
        return "{" + inner + "}" if inner else "object"
    return kind if isinstance(kind, str) and kind in _SCALAR_TYPES else "any"
