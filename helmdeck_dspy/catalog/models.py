"""Pydantic models for a routing-guide catalog: packs (atomic tools) and pipelines (chains).

Catalog objects are immutable (frozen models, tuples for lists): compaction and selection build
new objects and share unchanged entries, and each entry caches its rendered JSON and its ranking
tokens, so selecting from a large catalog on every plan call stays cheap.

The wire form follows helmdeck's projection: empty optional fields are omitted, but every entry
carries a ``metadata`` object (``{}`` when empty). Byte sizes are always measured on
:meth:`RoutingGuide.render`, which is exactly the text put in prompts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.catalog.text import split_identifiers, terms, token_set, tokenize
from helmdeck_dspy.errors import CatalogError, validation_message
from helmdeck_dspy.io.datafiles import read_json
from helmdeck_dspy.io.resources import default_catalog_path

EntryKind = Literal["pack", "pipeline"]
_FROZEN = ConfigDict(extra="allow", frozen=True)


class _CachingModel(BaseModel):
    """A frozen model whose ``cached_property`` values are not carried into copies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        new = super().model_copy(update=update, deep=deep)
        for klass in type(self).__mro__:
            for name, attr in vars(klass).items():
                if isinstance(attr, cached_property):
                    new.__dict__.pop(name, None)
        return new


class _Metadata(BaseModel):
    model_config = _FROZEN

    accepts: tuple[str, ...] = Field(default=(), description="Input kinds the entry takes.")
    produces: tuple[str, ...] = Field(default=(), description="Output kinds it returns.")
    intent_keywords: tuple[str, ...] = Field(default=(), description="Phrases users say to ask for it.")
    typical_use: str = Field(default="", description="A typical request it serves.")
    limitations: tuple[str, ...] = Field(default=(), description="What it does not do.")


TOOL_HINTS = ("read_only", "destructive", "idempotent", "open_world")
"""The MCP tool annotations a pack's ``hints`` may name (``readOnlyHint`` ... ``openWorldHint``)."""


class PackMetadata(_Metadata):
    """Routing hints for a pack; for a tool imported from an MCP server or a provider's tool list,
    where it came from and its behaviour annotations."""

    server: str = Field(default="", description="The label of the source an imported tool came from.")
    tool: str = Field(default="", description="The tool's name at its source, when the pack's name differs "
                                              "(prefixed with the server's label).")
    hints: tuple[str, ...] = Field(default=(), description="The MCP annotations the source set to true, as "
                                                           "read_only, destructive, idempotent, open_world.")


class PipelineStep(BaseModel):
    """One step of a pipeline as a catalog may describe it (helmdeck's wire form omits steps)."""

    model_config = _FROZEN

    id: str = ""
    name: str = ""
    pack: str = ""


class PipelineMetadata(_Metadata):
    """Routing hints for a pipeline, plus the packs it replaces and optional step/IO details."""

    supersedes: tuple[str, ...] = Field(default=(), description="Packs this pipeline replaces.")
    steps: tuple[PipelineStep, ...] | None = None
    chain: tuple[str, ...] = Field(default=(), description="The packs the pipeline runs, in order, for the planner's "
                                   "chain guard only: never shown to the model (helmdeck's routing guide shows no "
                                   "steps for its builtin pipelines).")
    inputs: tuple[Any, ...] | dict[str, Any] | None = None
    outputs: tuple[Any, ...] | dict[str, Any] | None = None


class RankFeatures:
    """Pre-tokenised fields of one entry, for the rankers.

    ``document``/``counts`` are the entry's text in helmdeck's tokens (:func:`tokenize`);
    ``terms``/``term_counts`` the same text through the BM25 analyser (:func:`terms`: identifiers
    split into words, stems), and ``id_terms`` the id's. ``arguments`` holds the words of a pack's
    argument names.
    """

    __slots__ = ("keywords", "io", "name", "entry_id", "description", "supersedes", "arguments", "document",
                 "counts", "terms", "term_counts", "id_terms")

    def __init__(self, entry: Pack | Pipeline) -> None:
        m = entry.metadata
        self.keywords = tuple(k for k in (token_set(k) for k in m.intent_keywords) if k)
        self.io = tuple(token_set(a) for a in (*m.accepts, *m.produces))
        self.name = token_set(entry.name)
        self.entry_id = token_set(entry.entry_id)
        self.description = token_set(entry.description)
        self.supersedes = tuple(token_set(s) for s in getattr(m, "supersedes", ()))
        schema = entry.parameters if isinstance(entry, Pack) and entry.parameters else None
        arg_names = " ".join(parameter_words(schema, descriptions=False)) if schema else ""
        self.arguments = token_set(split_identifiers(arg_names))
        parts = [entry.entry_id, entry.entry_id, entry.description, *m.intent_keywords, *m.accepts, *m.produces]
        if schema:
            parts += parameter_words(schema)
        if isinstance(entry, Pipeline):
            parts += [entry.name, *entry.metadata.supersedes]
        text = " ".join(parts)
        self.document = tuple(tokenize(text))
        self.counts = Counter(self.document)
        self.terms = tuple(terms(text))
        self.term_counts = Counter(self.terms)
        self.id_terms = frozenset(terms(entry.entry_id))


def parameter_words(schema: dict[str, Any], depth: int = 0, *, descriptions: bool = True) -> list[str]:
    """Argument names and (unless ``descriptions`` is off) their descriptions from a JSON Schema
    object, nested up to 16 levels."""
    words: list[str] = []
    if depth >= 16:
        return words
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, spec in props.items():
            words.append(str(name))
            if isinstance(spec, dict):
                if descriptions and isinstance(spec.get("description"), str):
                    words.append(spec["description"])
                words += parameter_words(spec, depth + 1, descriptions=descriptions)
    items = schema.get("items")
    if isinstance(items, dict):
        words += parameter_words(items, depth + 1, descriptions=descriptions)
    return words


def _wire_metadata(meta: _Metadata) -> dict[str, Any]:
    """Metadata as the wire shows it: empty fields left out, a pipeline step's too, and no ``chain``."""
    dumped = meta.model_dump(mode="json", exclude_none=True, exclude_defaults=True, exclude={"chain"})
    return {k: v for k, v in dumped.items() if v not in ("", [], {}, ())}


class _Entry(_CachingModel):
    _wire_fields: ClassVar[tuple[str, ...]] = ()
    """The fields of the wire form, in order: the id field (a pack's name, a pipeline's id) always,
    the others when set."""

    @property
    def entry_id(self) -> str:
        """What the planner calls this entry by: a pack's name, a pipeline's id."""
        return getattr(self, self._wire_fields[0])

    def to_wire(self) -> dict[str, Any]:
        """This entry in the routing guide's JSON shape (empty optional fields left out)."""
        key, *optional = self._wire_fields
        entry: dict[str, Any] = {key: getattr(self, key)}
        entry.update((name, value) for name in optional if (value := getattr(self, name)))
        entry["metadata"] = _wire_metadata(self.metadata)  # type: ignore[attr-defined]
        return entry

    @cached_property
    def wire_json(self) -> str:
        """This entry as compact JSON, as it appears in a rendered catalog."""
        return json.dumps(self.to_wire(), ensure_ascii=False, separators=(",", ":"))

    @cached_property
    def wire_bytes(self) -> int:
        """UTF-8 size of :attr:`wire_json`."""
        return len(self.wire_json.encode("utf-8"))

    @cached_property
    def features(self) -> RankFeatures:
        return RankFeatures(self)  # type: ignore[arg-type]


class Pack(_Entry):
    """An atomic tool, called by its name.

    ``parameters`` is an optional JSON Schema object for the tool's arguments (helmdeck's routing
    guide has none; catalogs converted from function-calling benchmarks such as BFCL carry one).
    ``args`` is the same arguments as one compact signature line (``path: string, head?: number``,
    :mod:`~helmdeck_dspy.catalog.signature`); compaction sets it at tiers B and C, and when it is set
    the prompt shows it instead of ``parameters`` (which stays on the pack, for argument checks,
    constrained decoding and native tools).
    """

    name: str = Field(min_length=1)
    description: str = ""
    args: str = ""
    parameters: dict[str, Any] | None = None
    metadata: PackMetadata = Field(default_factory=PackMetadata)

    _wire_fields: ClassVar[tuple[str, ...]] = ("name", "description", "args", "parameters")

    def to_wire(self) -> dict[str, Any]:
        entry = super().to_wire()
        if self.args:
            entry.pop("parameters", None)
        return entry


class Pipeline(_Entry):
    """A curated chain of packs, run through ``helmdeck__pipeline-run`` with ``args.id``."""

    id: str = Field(min_length=1)
    name: str = ""
    description: str = ""
    metadata: PipelineMetadata = Field(default_factory=PipelineMetadata)

    _wire_fields: ClassVar[tuple[str, ...]] = ("id", "name", "description")


class RoutingGuide(_CachingModel):
    """A catalog: packs then pipelines. Immutable; derived catalogs share entries."""

    packs: tuple[Pack, ...] = ()
    pipelines: tuple[Pipeline, ...] = ()

    def ids(self) -> list[str]:
        """Every id a plan step may name: pack names and pipeline ids, in catalog order."""
        return [p.name for p in self.packs] + [p.id for p in self.pipelines]

    @cached_property
    def id_set(self) -> frozenset[str]:
        return frozenset(self.ids())

    @cached_property
    def pipeline_ids(self) -> frozenset[str]:
        return frozenset(p.id for p in self.pipelines)

    @cached_property
    def pipeline_chains(self) -> dict[str, frozenset[str]]:
        """Pipeline id → the packs it stands for: the first of its ``supersedes``, its ``chain`` and
        its steps' packs that names two packs or more (catalog order; pipelines with none left out)."""
        chains = {}
        for p in self.pipelines:
            m = p.metadata
            named = (frozenset(m.supersedes), frozenset(m.chain), frozenset(s.pack for s in m.steps or () if s.pack))
            packs = next((n for n in named if len(n) >= 2), None)
            if packs is not None:
                chains[p.id] = packs
        return chains

    @cached_property
    def arg_schemas(self) -> dict[str, dict[str, Any]]:
        """Pack name → its argument schema, for the packs that carry one."""
        return {p.name: p.parameters for p in self.packs if p.parameters}

    def to_wire(self) -> dict[str, Any]:
        """The JSON object sent to models (empty optional fields omitted)."""
        return {"packs": [p.to_wire() for p in self.packs], "pipelines": [p.to_wire() for p in self.pipelines]}

    @cached_property
    def rendered(self) -> str:
        """The catalog text exactly as it goes into a prompt: compact JSON, one entry per line."""

        def block(items: tuple[_Entry, ...]) -> str:
            return "[\n" + ",\n".join(i.wire_json for i in items) + "\n]" if items else "[]"

        return '{"packs":' + block(self.packs) + ',\n"pipelines":' + block(self.pipelines) + "}"

    def render(self) -> str:
        return self.rendered

    @staticmethod
    def rendered_bytes(pack_bytes: list[int], pipeline_bytes: list[int]) -> int:
        """What :meth:`size_bytes` would be for entries of these :attr:`~_Entry.wire_bytes`,
        without rendering them (selection sizes many candidate subsets)."""

        def block(sizes: list[int]) -> int:
            return 4 + sum(sizes) + 2 * (len(sizes) - 1) if sizes else 2

        return len('{"packs":,\n"pipelines":}') + block(pack_bytes) + block(pipeline_bytes)

    def size_bytes(self) -> int:
        """UTF-8 size of :meth:`render`."""
        return len(self.rendered.encode("utf-8"))

    @cached_property
    def fingerprint(self) -> str:
        """A short hash of the rendered catalog, for caches and provenance."""
        return hashlib.sha256(self.rendered.encode("utf-8")).hexdigest()[:16]


def _entry_loc(data: dict, loc: tuple) -> str:
    """An error location, with the entry's name or id after ``packs.N`` / ``pipelines.N``."""
    where = ".".join(str(x) for x in loc)
    if len(loc) >= 2 and loc[0] in ("packs", "pipelines") and isinstance(loc[1], int):
        items = data.get(loc[0]) or []
        item = items[loc[1]] if loc[1] < len(items) else None
        label = (item.get("name") or item.get("id")) if isinstance(item, dict) else None
        if label and isinstance(label, (str, int, float)):  # not a (possibly deep) container
            where += f" ({str(label)[:80]})"
    return where


def parse_catalog(data: Any, path: str = "<catalog>") -> RoutingGuide:
    """Validate a decoded routing-guide object.

    Raises:
        CatalogError: naming the entry (kind, index, name) and the field that is wrong.
    """
    if not isinstance(data, dict):
        raise CatalogError(path, f"expected a JSON object with 'packs' and 'pipelines', got {type(data).__name__}")
    try:
        guide = RoutingGuide.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(path, validation_message(exc, describe_loc=lambda loc: _entry_loc(data, loc))) from None
    seen: set[str] = set()
    for entry_id in guide.ids():
        if entry_id in seen:
            raise CatalogError(path, f"duplicate id {entry_id!r}")
        seen.add(entry_id)
    try:  # render once now (cached): a catalog that loads must also fit in a prompt
        guide.size_bytes()
    except UnicodeEncodeError as exc:
        raise CatalogError(path, f"a string holds {exc.object[exc.start:exc.end]!r}, which is not UTF-8 (an unpaired surrogate)") from None
    except (ValueError, RecursionError) as exc:  # pydantic/json serialisation depth limits
        raise CatalogError(path, f"a value is nested too deeply to render ({exc})") from None
    return guide


def load_catalog(path: str | Path | None = None) -> RoutingGuide:
    """Load a routing-guide JSON file (the bundled catalog by default)."""
    resolved = Path(path) if path is not None else default_catalog_path()
    return parse_catalog(read_json(resolved, CatalogError), str(resolved))
