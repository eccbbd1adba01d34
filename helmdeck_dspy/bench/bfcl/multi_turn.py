"""multi_turn categories: one planning task per turn.

A multi_turn question names classes (``involved_classes``) instead of carrying functions; each
class's function documents are a JSON Lines file in ``multi_turn_func_doc/`` (the class -> file
mapping is ``[multi_turn_classes]`` in ``eval/bfcl.toml``). ``excluded_function`` names functions
never offered; ``missed_function`` (``{turn: [names]}``) holds functions back until that turn,
whose question is empty: the request still pending is the last turn with user text.

The answer line's ``ground_truth`` is, per turn, a list of Python call strings
(``cd(folder='document')``, ``sort('final_report.pdf')``). Each becomes a
:class:`~helmdeck_dspy.bench.bfcl.models.GoldCall`: positional arguments take the names of
the function's parameters in document order; each given value is the one acceptable value (and
the argument may be left out when the value is the documented default); every parameter the
call leaves out may stay out, or be given its documented default. BFCL itself checks these turns
by executing the calls; comparing them as calls is stricter (another call sequence with the same
effect does not match). A turn whose gold list is empty expects no call.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from helmdeck_dspy.catalog.models import Pack
from helmdeck_dspy.errors import BfclDataError
from helmdeck_dspy.bench.bfcl.fields import need_str, turns_of, user_text
from helmdeck_dspy.bench.bfcl.models import OPTIONAL_MARK, BfclQuestion, GoldCall
from helmdeck_dspy.bench.bfcl.schema import function_pack, parameter_order
from helmdeck_dspy.bench.bfcl.spec import load_reading_rules
from helmdeck_dspy.io.jsonl import iter_jsonl

FUNC_DOC_DIR = "multi_turn_func_doc"
_MAX_CALL_CHARS = 20_000


def task_id(question_id: str, turn: int) -> str:
    """The id of one turn's planning task."""
    return f"{question_id}:turn{turn}"


class ClassDocs:
    """The function documents of the classes multi_turn questions name, read once per class."""

    def __init__(self, data_dir: str | Path) -> None:
        self.dir = Path(data_dir) / FUNC_DOC_DIR
        self._cache: dict[str, tuple[Pack, ...]] = {}

    def packs(self, cls: str, path: str | Path, line: int) -> tuple[Pack, ...]:
        """The packs of class ``cls`` (named by the question at ``path:line``)."""
        if cls not in self._cache:
            files = load_reading_rules().multi_turn_classes
            if cls not in files:
                raise BfclDataError(str(path), f"involved class {cls!r} has no function-document file "
                                    f"(known: {', '.join(files)})", line=line)
            doc = self.dir / files[cls]
            if not doc.is_file():
                raise BfclDataError(str(doc), f"missing: the function documents of class {cls!r} "
                                    f"(named at {path}:{line})")
            self._cache[cls] = tuple(function_pack(obj, 0, doc, n) for n, obj in iter_jsonl(doc, error_type=BfclDataError))
        return self._cache[cls]


def _default(pack: Pack, arg: str) -> tuple[bool, Any]:
    spec = ((pack.parameters or {}).get("properties") or {}).get(arg)
    if isinstance(spec, dict) and "default" in spec:
        return True, spec["default"]
    return False, None


def parse_call(text: Any, functions: dict[str, Pack], *, path: str | Path, line: int, where: str) -> GoldCall:
    """One ground-truth call string as a gold call (see the module docstring).

    Raises:
        BfclDataError: not a call, a function the turn does not offer, an unknown argument, too
            many positional arguments, or a value that is not a literal.
    """
    def fail(detail: str) -> BfclDataError:
        return BfclDataError(str(path), f"{where}: {detail}", line=line)

    if not isinstance(text, str) or len(text) > _MAX_CALL_CHARS:
        raise fail(f"expected a call string of at most {_MAX_CALL_CHARS:,} characters")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise fail(f"cannot read {text[:80]!r} as a call") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
        raise fail(f"{text[:80]!r} is not a function call")
    name = ast.unparse(node.func)
    if name not in functions:
        raise fail(f"gold call {name!r} is not among the turn's functions")
    pack = functions[name]
    order = parameter_order(pack)
    if len(node.args) > len(order):
        raise fail(f"{name}: {len(node.args)} positional arguments, but the document has {len(order)} parameters")
    given: dict[str, ast.expr] = dict(zip(order, node.args))
    for kw in node.keywords:
        if kw.arg is None or kw.arg not in order:
            raise fail(f"{name}: argument {kw.arg or '**'!r} is not a documented parameter ({', '.join(order) or 'none'})")
        if kw.arg in given:
            raise fail(f"{name}: argument {kw.arg!r} is given twice")
        given[kw.arg] = kw.value
    args: dict[str, list[Any]] = {}
    for arg in order:
        has_default, default = _default(pack, arg)
        if arg in given:
            try:
                value = ast.literal_eval(given[arg])
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                raise fail(f"{name}: argument {arg!r} is not a literal value") from None
            args[arg] = [value, OPTIONAL_MARK] if has_default and value == default else [value]
        else:
            args[arg] = [OPTIONAL_MARK, default] if has_default else [OPTIONAL_MARK]
    return GoldCall(name=name, args=args)


def _gold_turns(obj: dict, path: str | Path, line: int) -> list[list[Any]]:
    truth = obj.get("ground_truth")
    if not isinstance(truth, list) or not all(isinstance(t, list) for t in truth):
        raise BfclDataError(str(path), "field 'ground_truth': expected a list of turns, each a list of call strings",
                            line=line)
    return truth


def _names(obj: dict, key: str, path: str | Path, line: int) -> list[str]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise BfclDataError(str(path), f"field {key!r}: expected a list of names", line=line)
    return value


def _held_back(obj: dict, offered: dict[str, Pack], n_turns: int, path: str | Path, line: int) -> dict[int, list[str]]:
    missed = obj.get("missed_function", {})
    if not isinstance(missed, dict):
        raise BfclDataError(str(path), "field 'missed_function': expected {turn: [function names]}", line=line)
    held: dict[int, list[str]] = {}
    for key, names in missed.items():
        if not str(key).isdigit() or int(key) >= n_turns:
            raise BfclDataError(str(path), f"field 'missed_function': {key!r} is not a turn of this question", line=line)
        names = _names({"m": names}, "m", path, line)
        unknown = [n for n in names if n not in offered]
        if unknown:
            raise BfclDataError(str(path), f"field 'missed_function': {unknown[0]!r} is not a function of the "
                                "involved classes", line=line)
        held[int(key)] = names
    return held


def load_multi_turn(question_path: str | Path, answer_path: str | Path, category: str,
                    docs: ClassDocs) -> list[BfclQuestion]:
    """Load a multi_turn question file and its answer file: one task per turn."""
    answers = {
        need_str(obj, "id", answer_path, n): (n, _gold_turns(obj, answer_path, n))
        for n, obj in iter_jsonl(answer_path, error_type=BfclDataError)
    }
    out: list[BfclQuestion] = []
    for line, obj in iter_jsonl(question_path, error_type=BfclDataError):
        qid = need_str(obj, "id", question_path, line)
        if qid not in answers:
            raise BfclDataError(str(answer_path), f"no possible answer for question {qid!r} ({question_path}:{line})")
        a_line, gold_turns = answers[qid]
        turns = turns_of(obj, question_path, line)
        if len(gold_turns) != len(turns):
            raise BfclDataError(str(answer_path), f"{qid}: {len(gold_turns)} answer turns for {len(turns)} question "
                                "turns", line=a_line)
        classes = _names(obj, "involved_classes", question_path, line)
        if not classes:
            raise BfclDataError(str(question_path), "field 'involved_classes': expected at least one class", line=line)
        offered: dict[str, Pack] = {}
        for cls in classes:
            for pack in docs.packs(cls, question_path, line):
                offered.setdefault(pack.name, pack)
        for name in _names(obj, "excluded_function", question_path, line):
            offered.pop(name, None)
        held = _held_back(obj, offered, len(turns), question_path, line)
        waiting = {n for names in held.values() for n in names}
        available = {n: p for n, p in offered.items() if n not in waiting}
        pending = ""
        for t, (turn, calls) in enumerate(zip(turns, gold_turns)):
            available.update((n, offered[n]) for n in held.get(t, ()))
            pending = user_text(turn, question_path, line) or pending
            if not pending:
                raise BfclDataError(str(question_path), f"turn {t}: no user text, and no earlier turn to continue",
                                    line=line)
            gold = tuple(parse_call(c, available, path=answer_path, line=a_line, where=f"{qid} turn {t}")
                         for c in calls)
            out.append(BfclQuestion(
                id=task_id(qid, t), category=category, intent=pending, functions=tuple(available.values()),
                gold=gold, expect="calls" if gold else "no_call", question_id=qid, turn=t,
            ))
    return out
