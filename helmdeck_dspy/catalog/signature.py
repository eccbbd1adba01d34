"""A tool's JSON Schema arguments as one compact signature line, for byte-capped prompts.

``{"properties": {"path": {"type": "string"}, "head": {"type": "number", "description": ...}},
"required": ["path"]}`` becomes ``path: string, head?: number``: argument names, their types
(enums as their values, arrays as ``T[]``, nested objects in braces), ``?`` after an optional name.
Titles, defaults and formats are left out, and descriptions too unless ``hints`` is asked for: then
each top-level argument's description follows its type as a quoted hint, cut to its first sentence
and :data:`MAX_HINT_CHARS` (``timezone: string "IANA timezone name (e.g., 'Asia/Tokyo')."``), so
the value formats a tool expects survive compaction. The schema itself stays on the pack, for
argument checks, constrained decoding and native tools.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_ENUM_VALUES = 8
"""Enum values shown before the rest are elided with ``|...``."""
MAX_DEPTH = 3
"""Nested objects deeper than this show as ``object``."""

MAX_HINT_CHARS = 80
"""Longest argument hint: a longer first sentence is cut at a word and ends with ``…``."""

_SCALAR_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
_SENTENCE_END = re.compile(r"[.?!](?=\s|$)")


def first_sentence(text: str) -> str:
    """Cut ``text`` after its first ``.``, ``?`` or ``!`` followed by whitespace or the end."""
    m = _SENTENCE_END.search(text)
    return text[: m.end()] if m else text


NO_ARGS = "(none)"
"""The signature of a tool that takes no arguments."""


def arg_signature(schema: dict[str, Any] | None, *, hints: bool = False) -> str:
    """The signature of an object schema's properties (:data:`NO_ARGS` when it has none); with
    ``hints``, each top-level argument's description as a quoted hint after its type."""
    return _fields(schema or {}, 0, hints) or NO_ARGS


def arg_hint(spec: Any) -> str:
    """An argument's hint: its description's first sentence, at most :data:`MAX_HINT_CHARS`, quoted
    (empty when it has no description)."""
    text = spec.get("description") if isinstance(spec, dict) else None
    if not isinstance(text, str) or not text.strip():
        return ""
    short = " ".join(first_sentence(text.strip()).split()).replace('"', "'")
    if len(short) > MAX_HINT_CHARS:
        short = short[: MAX_HINT_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return f' "{short}"'


def _fields(schema: dict[str, Any], depth: int, hints: bool = False) -> str:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ""
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    parts = []
    for name, spec in props.items():
        optional = name not in required
        hint = arg_hint(spec) if hints else ""
        parts.append(f"{name}{'?' if optional else ''}: {_type(spec, depth, drop_null=optional)}{hint}")
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
