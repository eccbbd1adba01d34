"""Loading BFCL question / possible-answer file pairs into our catalog and gold-step models.

A BFCL v4 data directory holds ``BFCL_v4_<category>.json`` question files (JSON Lines, despite
the suffix) and ``possible_answer/BFCL_v4_<category>.json`` answer files. A question line has an
``id``, ``question`` (a list of turns, each a list of chat messages) and ``function`` (the tools
offered, each with a BFCL-typed parameter schema). An answer line has the same ``id`` and
``ground_truth``: a list of calls ``{function_name: {argument: [acceptable values...]}}``, where
``""`` among the acceptable values marks an argument that may be left out.

Conversion:

- function -> :class:`~helmdeck_dspy.catalog.models.Pack` with a JSON Schema ``parameters`` object
  (BFCL ``dict`` -> ``object``, ``float`` -> ``number``, ``tuple`` -> ``array``, ``any`` -> no type);
  a type outside :data:`BFCL_TYPES` is an error naming it;
- the user turns -> the intent;
- each ground-truth call -> a :class:`GoldCall`.

Errors are :class:`BfclDataError` with the file, the line and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from helmdeck_dspy.errors import BfclDataError
from helmdeck_dspy.io.jsonl import iter_jsonl

BFCL_TYPES: dict[str, str | None] = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": None,
    "null": "null",
}
"""BFCL parameter type -> JSON Schema type (None: any value, no ``type`` keyword)."""

OPTIONAL_MARK = ""
"""An acceptable value of ``""`` means the argument may be omitted."""

_FILE = re.compile(r"^BFCL_v(\d+)_(.+)\.json$")
_MAX_SCHEMA_DEPTH = 32


class GoldCall(BaseModel):
    """One ground-truth function call: the name and, per argument, the acceptable values."""

    model_config = ConfigDict(frozen=True)

    name: str
    args: dict[str, list[Any]] = Field(default_factory=dict)

    def is_optional(self, arg: str) -> bool:
        """Whether ``arg`` may be left out of a correct call."""
        return any(isinstance(v, str) and v == OPTIONAL_MARK for v in self.args.get(arg, ()))


class BfclQuestion(BaseModel):
    """A BFCL question with its offered functions (as catalog packs) and its gold calls."""

    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    intent: str
    functions: tuple[Pack, ...]
    gold: tuple[GoldCall, ...]

    @property
    def gold_tools(self) -> list[str]:
        """The distinct function names the gold calls use, in first-use order."""
        return list(dict.fromkeys(c.name for c in self.gold))

    @cached_property
    def catalog(self) -> RoutingGuide:
        """The question's own functions as a catalog."""
        return RoutingGuide(packs=self.functions)


class BfclSet(BaseModel):
    """Questions loaded from one or more categories."""

    model_config = ConfigDict(frozen=True)

    questions: tuple[BfclQuestion, ...]
    files: dict[str, tuple[str, str]] = Field(description="category -> (question file, answer file)")

    @property
    def categories(self) -> list[str]:
        """The loaded categories, in load order."""
        return list(self.files)

    def pool(self) -> tuple[RoutingGuide, int]:
        """Every function of every question in one catalog, first definition of a name wins.

        Returns:
            The pooled catalog and how many later definitions of an already-seen name differed
            from the kept one (they are dropped).
        """
        kept: dict[str, Pack] = {}
        conflicts = 0
        for q in self.questions:
            for fn in q.functions:
                first = kept.setdefault(fn.name, fn)
                if first is not fn and first != fn:
                    conflicts += 1
        return RoutingGuide(packs=tuple(kept.values())), conflicts

    def limited(self, n: int | None) -> BfclSet:
        """The first ``n`` questions of each category (all when ``n`` is None)."""
        if n is None:
            return self
        seen: dict[str, int] = {}
        keep = []
        for q in self.questions:
            seen[q.category] = seen.get(q.category, 0) + 1
            if seen[q.category] <= n:
                keep.append(q)
        return self.model_copy(update={"questions": tuple(keep)})


# ----------------------------------------------------------------------------- discovery


def discover(data_dir: str | Path, categories: Iterable[str] | None = None) -> dict[str, tuple[Path, Path]]:
    """Find question/answer file pairs under ``data_dir``.

    Args:
        data_dir: A BFCL data directory (question files, and a ``possible_answer/`` folder).
        categories: Category names to load (e.g. ``parallel``); None loads every category that
            has both files.

    Raises:
        BfclDataError: the directory is missing, holds no pairs, or a requested category lacks
            its question or answer file.
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise BfclDataError(str(root), "not a directory; expected a BFCL data folder with possible_answer/ inside")
    answers_dir = root / "possible_answer"
    found: dict[str, tuple[Path, Path]] = {}
    for path in sorted(root.glob("BFCL_v*_*.json")):
        m = _FILE.match(path.name)
        if m:
            found.setdefault(m.group(2), (path, answers_dir / path.name))
    if categories is None:
        pairs = {c: p for c, p in found.items() if p[1].is_file()}
        if not pairs:
            raise BfclDataError(
                str(root), "no BFCL_v<N>_<category>.json file with a matching possible_answer/ file"
            )
        return pairs
    pairs = {}
    for cat in categories:
        if cat not in found:
            known = ", ".join(sorted(found)) or "none"
            raise BfclDataError(str(root), f"no question file for category {cat!r} (found: {known})")
        if not found[cat][1].is_file():
            raise BfclDataError(str(found[cat][1]), f"category {cat!r} has no possible-answer file")
        pairs[cat] = found[cat]
    return pairs


def load_bfcl(data_dir: str | Path, categories: Iterable[str] | None = None) -> BfclSet:
    """Load the question/answer pairs of ``categories`` (every complete pair by default)."""
    pairs = discover(data_dir, categories)
    questions: list[BfclQuestion] = []
    for category, (q_path, a_path) in pairs.items():
        questions += load_pair(q_path, a_path, category)
    return BfclSet(questions=tuple(questions), files={c: (str(q), str(a)) for c, (q, a) in pairs.items()})


def load_pair(question_path: str | Path, answer_path: str | Path, category: str) -> list[BfclQuestion]:
    """Load one question file and its answer file; every question needs an answer."""
    answers = {
        _need_str(obj, "id", answer_path, line): (line, _gold(obj, answer_path, line))
        for line, obj in iter_jsonl(answer_path, error_type=BfclDataError)
    }
    out = []
    for line, obj in iter_jsonl(question_path, error_type=BfclDataError):
        qid = _need_str(obj, "id", question_path, line)
        if qid not in answers:
            raise BfclDataError(str(answer_path), f"no possible answer for question {qid!r} ({question_path}:{line})")
        functions = _functions(obj, question_path, line)
        gold = answers[qid][1]
        offered = {f.name for f in functions}
        for call in gold:
            if call.name not in offered:
                raise BfclDataError(
                    str(answer_path), f"{qid}: gold call {call.name!r} is not among the question's functions",
                    line=answers[qid][0],
                )
        out.append(BfclQuestion(
            id=qid, category=category, intent=_intent(obj, question_path, line), functions=functions, gold=gold,
        ))
    return out


# ----------------------------------------------------------------------------- line parsing


def _need_str(obj: dict, key: str, path: str | Path, line: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise BfclDataError(str(path), f"field {key!r}: expected a non-empty string", line=line)
    return value


def _intent(obj: dict, path: str | Path, line: int) -> str:
    turns = obj.get("question")
    if not isinstance(turns, list) or not turns:
        raise BfclDataError(str(path), "field 'question': expected a list of turns (lists of messages)", line=line)
    said = []
    for turn in turns:
        messages = turn if isinstance(turn, list) else [turn]
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("content"), str):
                raise BfclDataError(str(path), "field 'question': each message needs a string 'content'", line=line)
            if m.get("role", "user") == "user":
                said.append(m["content"].strip())
    intent = "\n".join(s for s in said if s)
    if not intent:
        raise BfclDataError(str(path), "field 'question': no user message with text", line=line)
    return intent


def _functions(obj: dict, path: str | Path, line: int) -> tuple[Pack, ...]:
    fns = obj.get("function")
    if not isinstance(fns, list) or not fns:
        raise BfclDataError(str(path), "field 'function': expected a non-empty list of function definitions", line=line)
    packs: dict[str, Pack] = {}
    for i, fn in enumerate(fns):
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise BfclDataError(str(path), f"function[{i}]: expected an object with a non-empty 'name'", line=line)
        name = fn["name"]
        description = fn.get("description", "")
        if not isinstance(description, str):
            raise BfclDataError(str(path), f"function {name!r}: 'description' must be a string", line=line)
        params = fn.get("parameters", {"type": "dict", "properties": {}})
        schema = to_json_schema(params, where=f"function {name!r}: parameters", path=path, line=line)
        packs.setdefault(name, Pack(name=name, description=description, parameters=schema))
    return tuple(packs.values())


def to_json_schema(spec: Any, *, where: str, path: str | Path = "<bfcl>", line: int | None = None,
                   depth: int = 0) -> dict[str, Any]:
    """Convert one BFCL parameter schema to JSON Schema.

    Raises:
        BfclDataError: an unknown type (named in the message), a non-object schema, or nesting
            deeper than 32 levels.
    """
    if not isinstance(spec, dict):
        raise BfclDataError(str(path), f"{where}: expected a schema object, got {type(spec).__name__}", line=line)
    if depth > _MAX_SCHEMA_DEPTH:
        raise BfclDataError(str(path), f"{where}: schema nested deeper than {_MAX_SCHEMA_DEPTH} levels", line=line)
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "type":
            if not isinstance(value, str) or value not in BFCL_TYPES:
                known = ", ".join(BFCL_TYPES)
                raise BfclDataError(str(path), f"{where}: unknown BFCL type {value!r}; expected one of {known}", line=line)
            if BFCL_TYPES[value] is not None:
                out["type"] = BFCL_TYPES[value]
        elif key == "properties":
            if not isinstance(value, dict):
                raise BfclDataError(str(path), f"{where}: 'properties' must be an object", line=line)
            out["properties"] = {
                name: to_json_schema(sub, where=f"{where}.{name}", path=path, line=line, depth=depth + 1)
                for name, sub in value.items()
            }
        elif key == "items":
            out["items"] = to_json_schema(value, where=f"{where}[]", path=path, line=line, depth=depth + 1)
        elif key == "optional":
            continue  # BFCL's own marker; optionality is expressed by 'required'
        else:
            out[key] = value
    return out


def _gold(obj: dict, path: str | Path, line: int) -> tuple[GoldCall, ...]:
    truth = obj.get("ground_truth")
    if not isinstance(truth, list) or not truth:
        raise BfclDataError(str(path), "field 'ground_truth': expected a non-empty list of calls", line=line)
    calls = []
    for i, call in enumerate(truth):
        if not isinstance(call, dict) or len(call) != 1:
            raise BfclDataError(
                str(path), f"ground_truth[{i}]: expected {{function_name: {{argument: [values]}}}}", line=line
            )
        ((name, args),) = call.items()
        if not isinstance(args, dict) or not all(isinstance(v, list) for v in args.values()):
            raise BfclDataError(
                str(path), f"ground_truth[{i}] ({name}): each argument needs a list of acceptable values", line=line
            )
        calls.append(GoldCall(name=name, args=args))
    return tuple(calls)
