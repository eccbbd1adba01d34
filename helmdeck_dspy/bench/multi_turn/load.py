"""The ``multi_turn_base`` questions, read from the installed package's data and checked against
the frozen hashes (:data:`~helmdeck_dspy.bench.multi_turn.FROZEN`).

A question's functions are the function documents of the classes it names, in the order it names
them, each document as the package's file has it, converted by the project's BFCL schema reading
(:func:`~helmdeck_dspy.bench.bfcl.schema.function_pack`). As in the package's own inference, every
function of those classes is offered: ``excluded_function`` (18 questions) is not read by BFCL
2026.3.23, and is not here. The description is not given BFCL's added sentence ("Note that the
provided function is in Python 3 syntax."), as in the project's single-turn BFCL reading; both arms
see the same functions.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.bench.bfcl.fields import need_str, turns_of, user_text
from helmdeck_dspy.bench.bfcl.schema import function_pack
from helmdeck_dspy.bench.multi_turn import CATEGORY, FROZEN, SPLITS
from helmdeck_dspy.bench.multi_turn.package import CONFIG_MODULE, bfcl_module, bfcl_package, sha256_of
from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from helmdeck_dspy.errors import BfclDataError

QUESTIONS_FILE = f"BFCL_v4_{CATEGORY}.json"
ANSWERS_FILE = f"possible_answer/BFCL_v4_{CATEGORY}.json"
FUNC_DOC_DIR = "multi_turn_func_doc"


class MultiTurnQuestion(BaseModel):
    """One question: its user turns, the classes and their starting state, the offered functions
    and, per turn, the ground-truth call strings."""

    model_config = ConfigDict(frozen=True)

    id: str
    index: int = Field(description="Its place in the package's file (from 0).")
    split: str
    category: str = CATEGORY
    turns: tuple[str, ...]
    involved_classes: tuple[str, ...]
    initial_config: dict[str, Any]
    functions: tuple[Pack, ...]
    ground_truth: tuple[tuple[str, ...], ...]

    @property
    def catalog(self) -> RoutingGuide:
        return RoutingGuide(packs=self.functions)

    def entry(self) -> dict[str, Any]:
        """The fields of the question's BFCL entry that the package's checker reads."""
        return {"id": self.id, "initial_config": self.initial_config, "involved_classes": list(self.involved_classes)}


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise BfclDataError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _split_of(index: int) -> str:
    return next((name for name, span in SPLITS.items() if index in span), "none")


def _doc_files(data_dir: Path) -> dict[str, Path]:
    mapping = bfcl_module(CONFIG_MODULE).MULTI_TURN_FUNC_DOC_FILE_MAPPING
    return {cls: data_dir / FUNC_DOC_DIR / name for cls, name in mapping.items()}


def digests(data_dir: Path) -> dict[str, str]:
    """The data's sha256s, as :data:`~helmdeck_dspy.bench.multi_turn.FROZEN` holds them: each whole
    file; the function documents of the classes the questions name (their files' bytes one after
    another, classes in name order); each half (its question line and answer line, each followed by
    a newline, question by question)."""
    questions, answers = _lines(data_dir / QUESTIONS_FILE), _lines(data_dir / ANSWERS_FILE)
    named = sorted({c for line in questions for c in json.loads(line).get("involved_classes", [])})
    files = _doc_files(data_dir)
    docs = hashlib.sha256(b"".join(files[c].read_bytes() for c in named if c in files)).hexdigest()
    out = {"questions": sha256_of(data_dir / QUESTIONS_FILE), "answers": sha256_of(data_dir / ANSWERS_FILE),
           "function_docs": docs}
    for name, span in SPLITS.items():
        text = "".join(f"{questions[i]}\n{answers[i]}\n" for i in span if i < min(len(questions), len(answers)))
        out[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return out


def _functions(classes: list[str], files: dict[str, Path], where: str, line: int) -> tuple[Pack, ...]:
    packs: dict[str, Pack] = {}
    for cls in classes:
        if cls not in files:
            raise BfclDataError(where, f"involved class {cls!r} has no function documents in the package", line=line)
        for n, doc in enumerate(_lines(files[cls]), 1):
            pack = function_pack(json.loads(doc), n - 1, files[cls], n)
            packs.setdefault(pack.name, pack)
    return tuple(packs.values())


@functools.cache
def load_questions() -> tuple[MultiTurnQuestion, ...]:
    """Every question of the package's ``multi_turn_base`` file, in file order.

    Raises:
        BenchDependencyError: the package is not installed (or not the pinned version).
        BfclDataError: the data differs from the frozen hashes, or a line does not have BFCL's shape.
    """
    data_dir = bfcl_package().data_dir
    found = digests(data_dir)
    changed = [k for k, v in FROZEN.items() if found.get(k) != v]
    if changed:
        raise BfclDataError(str(data_dir / QUESTIONS_FILE), "the data differs from the frozen hashes in "
                            f"{', '.join(changed)} (helmdeck_dspy.bench.multi_turn.FROZEN)")
    qpath, apath = data_dir / QUESTIONS_FILE, data_dir / ANSWERS_FILE
    answers = {json.loads(line)["id"]: json.loads(line)["ground_truth"] for line in _lines(apath)}
    files = _doc_files(data_dir)
    out = []
    for index, line in enumerate(_lines(qpath)):
        obj = json.loads(line)
        qid = need_str(obj, "id", qpath, index + 1)
        turns = tuple(user_text(t, qpath, index + 1) for t in turns_of(obj, qpath, index + 1))
        truth = answers.get(qid)
        if truth is None or len(truth) != len(turns) or not all(turns):
            raise BfclDataError(str(qpath), f"{qid}: every turn needs user text and a ground-truth list "
                                f"({len(turns)} turns, {len(truth or [])} answer turns)", line=index + 1)
        classes = list(obj.get("involved_classes") or [])
        out.append(MultiTurnQuestion(
            id=qid, index=index, split=_split_of(index), turns=turns, involved_classes=tuple(classes),
            initial_config=obj.get("initial_config") or {}, functions=_functions(classes, files, str(qpath), index + 1),
            ground_truth=tuple(tuple(t) for t in truth)))
    return tuple(out)


def select_questions(split: str = "all", only: tuple[str, ...] = ()) -> list[MultiTurnQuestion]:
    """The questions of ``split`` (``all``, ``dev``, ``test``), of ``only`` when given, in file order."""
    return [q for q in load_questions() if (split == "all" or q.split == split) and (not only or q.id in only)]
