"""Loading a BFCL v4 data folder into planning tasks with catalog packs and gold calls.

A data folder holds ``BFCL_v<N>_<category>.json`` question files (JSON Lines, despite the
suffix), ``possible_answer/BFCL_v<N>_<category>.json`` answer files, and for the multi_turn
categories ``multi_turn_func_doc/``. How each category is read is decided by its name
(``[[category]]`` in ``eval/bfcl.toml``, see :mod:`~helmdeck_dspy.bench.bfcl.spec`):

- ``calls`` (simple_*, multiple, parallel*, live_simple ...): a question line has an ``id``,
  ``question`` (a list of turns, each a list of chat messages) and ``function`` (the tools
  offered); its answer line has ``ground_truth``, a list of calls ``{function_name: {argument:
  [acceptable values...]}}`` where ``""`` among the values marks an argument that may be left out;
- ``no_call`` (irrelevance, live_irrelevance) and ``any_call`` (live_relevance): no answer file;
- ``multi_turn``: see :mod:`~helmdeck_dspy.bench.bfcl.multi_turn`;
- ``skip`` (the agentic and format-sensitivity files): noted with the reason, not loaded.

Functions become packs through :mod:`~helmdeck_dspy.bench.bfcl.schema`; the user turns
become the intent. Without a category list every category of the folder is tried and each one
that cannot be loaded (skipped, answer file missing, malformed) gets a
:class:`~helmdeck_dspy.bench.bfcl.models.CategoryNote` instead of stopping the run; with a
list, a requested category that cannot be loaded is an error. Errors are :class:`BfclDataError`
with the file, the line and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from helmdeck_dspy.errors import BfclDataError
from helmdeck_dspy.bench.bfcl.fields import intent_of, need_str
from helmdeck_dspy.bench.bfcl.models import (
    OPTIONAL_MARK,
    BfclQuestion,
    BfclSet,
    CategoryNote,
    GoldCall,
)
from helmdeck_dspy.bench.bfcl.multi_turn import ClassDocs, load_multi_turn
from helmdeck_dspy.bench.bfcl.schema import function_packs, to_json_schema
from helmdeck_dspy.bench.bfcl.spec import CategoryRule, Expect, load_reading_rules
from helmdeck_dspy.io.jsonl import iter_jsonl

__all__ = [
    "OPTIONAL_MARK", "BfclDataError", "BfclQuestion", "BfclSet", "CategoryFiles", "GoldCall", "discover",
    "load_bfcl", "load_pair", "load_questions", "to_json_schema",
]

ANSWER_DIR = "possible_answer"
_FILE = re.compile(r"^BFCL_v(\d+)_(.+)\.json$")


class CategoryFiles(NamedTuple):
    """One category of a data folder: its loading rule, question file and answer file."""

    category: str
    rule: CategoryRule
    questions: Path
    answers: Path

    @property
    def has_answers(self) -> bool:
        return self.answers.is_file()


# ----------------------------------------------------------------------------- discovery


def discover(data_dir: str | Path, categories: Iterable[str] | None = None) -> list[CategoryFiles]:
    """The categories of ``data_dir`` (all of them, or the ones asked for), newest BFCL version first.

    Raises:
        BfclDataError: the folder is missing or holds no question file, or a requested category
            has no question file (the message lists what exists).
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise BfclDataError(str(root), f"not a directory; expected a BFCL data folder with {ANSWER_DIR}/ inside")
    found: dict[str, tuple[int, Path]] = {}
    for path in root.glob("BFCL_v*_*.json"):
        m = _FILE.match(path.name)
        if m and path.is_file() and int(m.group(1)) >= found.get(m.group(2), (-1, path))[0]:
            found[m.group(2)] = (int(m.group(1)), path)
    if not found:
        raise BfclDataError(str(root), "no BFCL_v<N>_<category>.json question file")
    names = sorted(found) if categories is None else list(dict.fromkeys(categories))
    spec = load_reading_rules()
    out = []
    for cat in names:
        if cat not in found:
            raise BfclDataError(str(root), f"no question file for category {cat!r} (found: {', '.join(sorted(found))})")
        q_path = found[cat][1]
        out.append(CategoryFiles(cat, spec.rule_for(cat), q_path, root / ANSWER_DIR / q_path.name))
    return out


def load_bfcl(data_dir: str | Path, categories: Iterable[str] | None = None,
              *, report: Callable[[CategoryNote], None] | None = None) -> BfclSet:
    """Load ``categories`` of a BFCL data folder (every category by default; see the module docstring).

    Args:
        data_dir: The data folder.
        categories: Category names; None tries every category and notes the ones it cannot load.
        report: Called with each category's note as soon as it is known (for progress output).

    Raises:
        BfclDataError: a requested category cannot be loaded, or (no list) none can.
    """
    explicit = categories is not None
    docs = ClassDocs(data_dir)
    questions: list[BfclQuestion] = []
    files: dict[str, tuple[str, str]] = {}
    notes: list[CategoryNote] = []
    for entry in discover(data_dir, categories):
        try:
            loaded = _load_category(entry, docs)
        except BfclDataError as exc:
            if explicit:
                raise
            note = _not_loaded(entry, exc)
        else:
            questions += loaded
            files[entry.category] = (str(entry.questions), str(entry.answers) if entry.rule.needs_answers else "")
            note = CategoryNote(category=entry.category, kind=entry.rule.kind, status="loaded",
                                questions=len({q.source_id for q in loaded}), tasks=len(loaded))
        notes.append(note)
        if report is not None:
            report(note)
    if not questions:
        why = "; ".join(f"{n.category}: {n.status} ({n.detail})" for n in notes)
        raise BfclDataError(str(data_dir), f"no category could be loaded: {why}")
    return BfclSet(questions=tuple(questions), files=files, notes=tuple(notes))


class _NoAnswers(BfclDataError):
    """A category that needs an answer file has none."""


class _Skipped(BfclDataError):
    """A category the rules leave out."""


def _load_category(entry: CategoryFiles, docs: ClassDocs) -> list[BfclQuestion]:
    kind = entry.rule.kind
    if kind == "skip":
        raise _Skipped(str(entry.questions), f"category {entry.category!r} is not loaded: {entry.rule.reason}")
    if entry.rule.needs_answers and not entry.has_answers:
        raise _NoAnswers(str(entry.answers), f"category {entry.category!r} has no possible-answer file")
    if kind == "multi_turn":
        return load_multi_turn(entry.questions, entry.answers, entry.category, docs)
    if kind == "calls":
        return load_pair(entry.questions, entry.answers, entry.category)
    return load_questions(entry.questions, entry.category, expect=kind)


def _not_loaded(entry: CategoryFiles, exc: BfclDataError) -> CategoryNote:
    if isinstance(exc, _Skipped):
        return CategoryNote(category=entry.category, kind="skip", status="skipped", detail=entry.rule.reason)
    if isinstance(exc, _NoAnswers):
        return CategoryNote(category=entry.category, kind=entry.rule.kind, status="no_answer_file",
                            detail=f"{entry.questions.name} has no {ANSWER_DIR}/{entry.answers.name}")
    return CategoryNote(category=entry.category, kind=entry.rule.kind, status="failed", detail=str(exc))


# ----------------------------------------------------------------------------- single-turn files


def load_pair(question_path: str | Path, answer_path: str | Path, category: str) -> list[BfclQuestion]:
    """Load one question file and its answer file; every question needs an answer."""
    answers = {
        need_str(obj, "id", answer_path, line): (line, _gold(obj, answer_path, line))
        for line, obj in iter_jsonl(answer_path, error_type=BfclDataError)
    }
    out = []
    for line, obj in iter_jsonl(question_path, error_type=BfclDataError):
        qid = need_str(obj, "id", question_path, line)
        if qid not in answers:
            raise BfclDataError(str(answer_path), f"no possible answer for question {qid!r} ({question_path}:{line})")
        functions = function_packs(obj.get("function"), question_path, line)
        a_line, gold = answers[qid]
        offered = {f.name for f in functions}
        for call in gold:
            if call.name not in offered:
                raise BfclDataError(
                    str(answer_path), f"{qid}: gold call {call.name!r} is not among the question's functions", line=a_line,
                )
        out.append(BfclQuestion(
            id=qid, category=category, intent=intent_of(obj, question_path, line), functions=functions, gold=gold,
        ))
    return out


def load_questions(question_path: str | Path, category: str, *, expect: Expect) -> list[BfclQuestion]:
    """Load a question file that has no answer file: no gold calls, only what a right plan does."""
    return [
        BfclQuestion(
            id=need_str(obj, "id", question_path, line), category=category, intent=intent_of(obj, question_path, line),
            functions=function_packs(obj.get("function"), question_path, line), gold=(), expect=expect,
        )
        for line, obj in iter_jsonl(question_path, error_type=BfclDataError)
    ]


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
