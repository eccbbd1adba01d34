"""A study's cases: BFCL categories from its data folders, or its gold tasks over its catalog,
``limit`` of each category after the first ``start``, in round-robin order across categories; or
its end-to-end tasks, or BFCL's multi-turn questions (:func:`load_cases`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from helmdeck_dspy.bench.bfcl.load import discover, load_bfcl
from helmdeck_dspy.bench.bfcl.models import BfclQuestion, BfclSet
from helmdeck_dspy.bench.study.spec import Case, StudySpec, StudySpecError

if TYPE_CHECKING:
    from helmdeck_dspy.tasks import PlanTask


def load_spec_tasks(spec: StudySpec, *, split: bool = True) -> list[PlanTask]:
    """The gold tasks a spec names (of its split, unless ``split`` is False)."""
    from helmdeck_dspy.tasks import load_tasks

    assert spec.tasks is not None
    return [t for t in load_tasks(path=spec.folder / spec.tasks) if not split or spec.split is None or t.split == spec.split]


def _task_questions(spec: StudySpec, *, split: bool = True) -> list[BfclQuestion]:
    """The spec's gold tasks as questions over its catalog."""
    from helmdeck_dspy.bench.bfcl.gold_tasks import questions_from_tasks
    from helmdeck_dspy.catalog.models import load_catalog

    assert spec.catalog is not None
    return questions_from_tasks(load_spec_tasks(spec, split=split), load_catalog(spec.folder / spec.catalog),
                                str(spec.folder / str(spec.tasks)))


def load_cases(spec: StudySpec) -> list[Case]:
    """What the spec's rows answer, in run order: its end-to-end tasks, its multi-turn questions (in
    file order), else its questions."""
    if spec.e2e is not None:
        from helmdeck_dspy.bench.e2e.run import select_tasks

        return list(select_tasks(spec.e2e, spec.folder, spec.categories))
    if spec.multi_turn is not None:
        from helmdeck_dspy.bench.multi_turn.load import select_questions

        return list(select_questions(spec.multi_turn.split, spec.multi_turn.only))
    return list(load_questions(spec).questions)


def load_questions(spec: StudySpec) -> BfclSet:
    """The spec's questions: its categories from whichever data folder holds them, ``limit`` each after
    the first ``start``, in round-robin order across categories (so a partial run covers every category)."""
    if spec.tasks:
        asked = tuple(q for q in _task_questions(spec) if q.category in spec.categories)
        return _ordered(spec, [BfclSet(questions=asked, files={}).limited(spec.limit, spec.start)])
    sets: list[BfclSet] = []
    wanted = list(spec.categories)
    for folder in spec.data_dirs():
        here = [c.category for c in discover(folder)] if folder.is_dir() else []
        mine = [c for c in wanted if c in here]
        if mine:
            sets.append(load_bfcl(folder, mine).limited(spec.limit, spec.start))
            wanted = [c for c in wanted if c not in mine]
    if wanted:
        raise StudySpecError(str(spec.path), f"categories not found in {list(spec.data)}: {wanted}")
    return _ordered(spec, sets)


def _ordered(spec: StudySpec, sets: list[BfclSet]) -> BfclSet:
    """The questions of ``sets`` in round-robin order across the spec's categories."""
    by_cat: dict[str, list[BfclQuestion]] = {}
    files: dict[str, tuple[str, str]] = {}
    notes = []
    for s in sets:
        files.update(s.files)
        notes += list(s.notes)
        for q in s.questions:
            by_cat.setdefault(q.category, []).append(q)
    ordered = [q for group in _round_robin([by_cat.get(c, []) for c in spec.categories]) for q in group]
    return BfclSet(questions=tuple(ordered), files=files, notes=tuple(notes))


def _round_robin(groups: list[list[BfclQuestion]]) -> list[list[BfclQuestion]]:
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.append([g[i] for g in groups if i < len(g)])
    return out
