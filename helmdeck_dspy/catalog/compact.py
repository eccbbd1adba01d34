"""Catalog compaction: shrink a catalog toward a byte cap without losing any entry.

Mirrors helmdeck's trim order. Each step runs only while the catalog is still over the cap, and
applies to every entry at once; its label is recorded whenever it runs. Names, ids, pipeline
``supersedes`` and the accepts/produces lists are never trimmed. Sizes are measured on
:meth:`RoutingGuide.render`, the exact text a prompt carries.

Packs with argument schemas (imported MCP tools, BFCL functions) get one more step, in one of two
forms: by default each schema is shown as a compact signature (``args``: names, types, required
flags; :mod:`~helmdeck_dspy.catalog.signature`; with ``hints``, each argument's description
stays as a short hint until a later step drops the hints too), or, with
``signatures=False`` (helmdeck's rendering, for comparisons), the JSON Schema is kept and only its
descriptions go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.models import Pipeline, PipelineStep, RoutingGuide
from helmdeck_dspy.catalog.signature import arg_signature, first_sentence


class Trim(BaseModel):
    """What compaction and selection did to a catalog.

    Attributes:
        before_bytes: Size of the catalog as given.
        after_bytes: Size of the catalog returned.
        dropped: Labels of the trim steps that ran, in order, plus selection markers
            (``<ranker>.top_n``, ``<ranker>.low_confidence``, ``llm_filter(...)``,
            ``cut_head(N ahead)``) and a final ``still_over_budget(<after>><cap>)`` when compaction
            alone could not fit.
    """

    before_bytes: int
    after_bytes: int
    dropped: list[str] = Field(default_factory=list)


def _names_of(items: tuple | dict | None) -> tuple | None:
    if isinstance(items, dict):
        return tuple(sorted(items))
    if isinstance(items, tuple):
        return tuple(i.get("name", "") if isinstance(i, dict) else i for i in items)
    return items


def _packs(g: RoutingGuide, **meta: object) -> RoutingGuide:
    packs = tuple(p.model_copy(update={"metadata": p.metadata.model_copy(update=meta)}) for p in g.packs)
    return g.model_copy(update={"packs": packs})


def _drop_pack_keywords(g: RoutingGuide) -> RoutingGuide:
    return _packs(g, intent_keywords=())


def _drop_pack_typical_use(g: RoutingGuide) -> RoutingGuide:
    return _packs(g, typical_use="")


def _drop_pack_limitations(g: RoutingGuide) -> RoutingGuide:
    return _packs(g, limitations=())


def _pipelines(g: RoutingGuide, change: Callable[[Pipeline], dict]) -> RoutingGuide:
    pipes = []
    for p in g.pipelines:
        update = change(p)
        pipes.append(p.model_copy(update={"metadata": p.metadata.model_copy(update=update)}) if update else p)
    return g.model_copy(update={"pipelines": tuple(pipes)})


def _drop_step_bodies(g: RoutingGuide) -> RoutingGuide:
    def change(p: Pipeline) -> dict:
        steps = p.metadata.steps
        return {"steps": tuple(PipelineStep(id=s.id, name=s.name, pack=s.pack) for s in steps)} if steps else {}

    return _pipelines(g, change)


def _drop_io_schemas(g: RoutingGuide) -> RoutingGuide:
    def change(p: Pipeline) -> dict:
        m = p.metadata
        if m.inputs is None and m.outputs is None:
            return {}
        return {"inputs": _names_of(m.inputs), "outputs": _names_of(m.outputs)}

    return _pipelines(g, change)


def _schema_without_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _schema_without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_schema_without_descriptions(v) for v in schema]
    return schema


def _drop_parameter_descriptions(g: RoutingGuide) -> RoutingGuide:
    packs = tuple(
        p.model_copy(update={"parameters": _schema_without_descriptions(p.parameters)}) if p.parameters else p
        for p in g.packs
    )
    return g.model_copy(update={"packs": packs})


def _parameters_as_signatures(g: RoutingGuide) -> RoutingGuide:
    packs = tuple(
        p.model_copy(update={"args": arg_signature(p.parameters)}) if p.parameters and not p.args else p
        for p in g.packs
    )
    return g.model_copy(update={"packs": packs})


def _has_parameters(g: RoutingGuide) -> bool:
    return any(p.parameters for p in g.packs)


def _first_sentences(g: RoutingGuide) -> RoutingGuide:
    def cut(entry):
        short = first_sentence(entry.description)
        return entry if short == entry.description else entry.model_copy(update={"description": short})

    return g.model_copy(
        update={"packs": tuple(cut(p) for p in g.packs), "pipelines": tuple(cut(p) for p in g.pipelines)}
    )


Step = Callable[[RoutingGuide], RoutingGuide]

TRIM_STEPS: tuple[tuple[str, Step, Callable[[RoutingGuide], bool] | None], ...] = (
    ("pack.intent_keywords[]", _drop_pack_keywords, None),
    ("pack.typical_use", _drop_pack_typical_use, None),
    ("pack.limitations[]", _drop_pack_limitations, None),
    ("pipeline.steps[].body", _drop_step_bodies, None),
    ("pipeline.inputs/outputs.schema", _drop_io_schemas, None),
    ("pack.parameters[].description", _drop_parameter_descriptions, _has_parameters),
    ("pack.parameters->args", _parameters_as_signatures, _has_parameters),
    ("description.firstSentence", _first_sentences, None),
)
"""The trim order: (label, step, applies). Each step returns a new catalog sharing unchanged
entries. helmdeck's steps always run (and are labelled) while over the cap; a step of ours with an
``applies`` test runs only on catalogs it concerns (pack argument schemas, which helmdeck's
routing guide does not carry), so helmdeck-shaped catalogs trim exactly as upstream. Of the two
argument-schema steps only one runs: ``pack.parameters->args`` when signatures are on, else
``pack.parameters[].description``."""

_SIGNATURE_STEP = "pack.parameters->args"
_DESCRIPTIONS_STEP = "pack.parameters[].description"


def still_over_budget_label(size: int, cap: int) -> str:
    return f"still_over_budget({size}>{cap})"


def compact_catalog(
    catalog: RoutingGuide, budget: Budget | int, *, signatures: bool = True
) -> tuple[RoutingGuide, Trim]:
    """Trim ``catalog`` toward the budget's ``max_catalog_bytes``; the input is never mutated.

    Catalogs are immutable, so results are memoised per (catalog, cap, signatures).

    Args:
        catalog: The catalog to trim.
        budget: A :class:`Budget`, or the byte cap itself; a cap ``<= 0`` means no compaction.
        signatures: Show argument schemas as compact signatures (True) or as JSON Schema without
            descriptions (False: helmdeck's rendering, kept for comparisons).

    Returns:
        The trimmed catalog (the input itself when nothing ran) and the :class:`Trim` record.
    """
    max_bytes = budget if isinstance(budget, int) else budget.max_catalog_bytes
    before = catalog.size_bytes()
    if max_bytes <= 0 or before <= max_bytes:
        return catalog, Trim(before_bytes=before, after_bytes=before)
    key = (catalog.fingerprint, max_bytes, signatures)
    hit = _MEMO.get(key)
    if hit is None:
        hit = _compact(catalog, max_bytes, signatures)
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = hit
    guide, trim = hit
    return guide, trim.model_copy(deep=True)


_MEMO: dict[tuple[str, int, bool], tuple[RoutingGuide, Trim]] = {}
_MEMO_SIZE = 64


def _compact(catalog: RoutingGuide, max_bytes: int, signatures: bool) -> tuple[RoutingGuide, Trim]:
    before = catalog.size_bytes()
    guide = catalog
    dropped: list[str] = []
    size = before
    skip = {_DESCRIPTIONS_STEP} if signatures else {_SIGNATURE_STEP}
    for label, step, applies in TRIM_STEPS:
        if size <= max_bytes:
            break
        if label in skip:
            continue
        if applies is not None and not applies(guide):
            continue
        guide = step(guide)
        dropped.append(label)
        size = guide.size_bytes()
    if size > max_bytes:
        dropped.append(still_over_budget_label(size, max_bytes))
    return guide, Trim(before_bytes=before, after_bytes=size, dropped=dropped)
