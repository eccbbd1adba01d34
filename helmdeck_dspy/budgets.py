"""The per-model budget table and its lookup.

The table (``compiled/budgets.toml``) holds one row per model id or id prefix plus a fallback.
:func:`budget_for` resolves a caller's model id to a :class:`Budget`: exact match first, then the
longest matching prefix (ties go to the earlier row), then the fallback.

This module is on the CLI's fast path (``budgets lookup``): it imports only the standard library
and pydantic.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helmdeck_dspy.domain import VARIANTS, Tier, Variant, default_variant
from helmdeck_dspy.errors import BudgetTableError, validation_message
from helmdeck_dspy.io.datafiles import parse_toml, read_text
from helmdeck_dspy.io.resources import default_budgets_path


class BudgetFields(BaseModel):
    """The knobs one row of the table sets for a model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tier: Tier = Field(description="Capability tier: A frontier, B capable mid-tier, C free/weak.")
    input_tokens: int = Field(ge=0, description="Context the planner may fill, in tokens.")
    output_tokens: int = Field(ge=1, description="max_tokens sent with a plan call.")
    max_catalog_bytes: int = Field(
        ge=0, description="Cap on the compact catalog JSON in bytes; 0 sends it untrimmed."
    )
    max_catalog_entries: int = Field(
        default=0, ge=0,
        description="When ranking has to cut the catalog: keep exactly this many entries (helmdeck's fixed top-N), "
        "or 0 = as many as fit max_catalog_bytes, never fewer than the tier's floor (25 on tier B, 12 otherwise).",
    )
    allows_llm_filter: bool = Field(
        default=False,
        description="A low-confidence lexical selection may be refined by a small filter call.",
    )
    filter_model: str = Field(default="", description='Model for the filter call; "" = the planning model.')
    is_hybrid_reasoning: bool = Field(
        default=False, description="The model reasons (inline tags or a separate field) before answering."
    )
    wants_strict_json: bool = Field(
        default=False, description="Send response_format json_object (never on tier C)."
    )
    supports_prefix_cache: bool = Field(
        default=False, description="Render the catalog in a byte-stable system message."
    )
    tool_list_strategy: str | None = Field(
        default=None,
        description="The answer strategy over a plain list of tools (a catalog without pipelines; program.strategies); "
        "unset = the endpoint's default (schema on llama.cpp servers, free elsewhere). Chosen per catalog shape by "
        "docs/results/strategies.md's rule.",
    )
    decline_thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="Per answer strategy: decline a request exactly when its first answer's decline probability "
        "(planning.decision, where the endpoint gives it) is at least this; a decline under it is asked again for at "
        "least one call, a call at or over it is dropped. Fitted on dev answers by `calibrate --decisions`; a strategy "
        "without one keeps the model's own choice.",
    )
    answer_caps: dict[str, int] = Field(
        default_factory=dict,
        description="Per answer strategy: the output cap its answers are sent with, fitted to the answer's recorded "
        "length (measure/answer_lengths.py: twice the p99 of finished answers, up to a multiple of 64); a strategy "
        "without one gets output_tokens. The planner's answers only: the model alone is sent output_tokens.",
    )
    cached_input_cost_usd_per_mtok: float = Field(default=0.0, ge=0.0)
    prompt_variant: Literal["", "full_steps", "single_pick"] = Field(
        default="", description='"" = the tier default; otherwise forces a variant.'
    )
    source: str = Field(default="", description="Where the row's values come from.")
    trace_set_sha: str | None = Field(default=None, description="Calibrated rows: hash of the traces.")
    n: int | None = Field(default=None, ge=0, description="Calibrated rows: records behind the row.")
    rate: float | None = Field(default=None, description="Calibrated rows: measured strict parse rate.")
    interval_low: float | None = None
    interval_high: float | None = None
    calibrated_at: str | None = None
    decided_by: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Plan fields a study chose, each with the study folders whose table.json is the evidence.",
    )

    @field_validator("decided_by")
    @classmethod
    def _decides_plan_fields(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        unknown = sorted(set(value) - set(PLAN_FIELDS))
        if unknown:
            raise ValueError(f"decided_by names {unknown[0]!r}, not a field that shapes a plan call")
        if any(not folders for folders in value.values()):
            raise ValueError("decided_by: every field needs at least one study folder")
        return value

    @field_validator("decline_thresholds")
    @classmethod
    def _probabilities(cls, value: dict[str, float]) -> dict[str, float]:
        if any(not 0.0 <= t <= 1.0 for t in value.values()):
            raise ValueError("decline_thresholds: each threshold is a probability, 0 to 1")
        return value

    @field_validator("answer_caps")
    @classmethod
    def _positive_caps(cls, value: dict[str, int]) -> dict[str, int]:
        if any(cap < 1 for cap in value.values()):
            raise ValueError("answer_caps: each cap is a positive number of tokens")
        return value

    def cap_for(self, strategy: str) -> int:
        """The output cap of an answer under ``strategy``: its fitted cap, else ``output_tokens``."""
        return next((cap for name, cap in self.answer_caps.items() if name == strategy), self.output_tokens)

    def plan_row(self) -> dict[str, Any]:
        """The fields that shape a plan call, by name (what a study records it ran under); a field
        added since rows were first recorded is left out while unset, so their hashes hold."""
        return {name: getattr(self, name) for name in PLAN_FIELDS
                if name not in LATER_PLAN_FIELDS or getattr(self, name)}


PLAN_FIELDS = ("tier", "input_tokens", "output_tokens", "max_catalog_bytes", "max_catalog_entries",
               "allows_llm_filter", "filter_model", "is_hybrid_reasoning", "wants_strict_json",
               "supports_prefix_cache", "tool_list_strategy", "prompt_variant", "decline_thresholds", "answer_caps")
"""The budget fields a plan call depends on; the rest (cost, calibration figures, provenance) do not."""
LATER_PLAN_FIELDS = frozenset({"decline_thresholds", "answer_caps"})
"""Plan fields added after studies first recorded their rows: recorded only when set."""


def row_sha(plan_row: dict[str, Any]) -> str:
    """A short hash of a :meth:`BudgetFields.plan_row` (sorted keys, compact JSON)."""
    text = json.dumps(plan_row, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class BudgetRow(BudgetFields):
    """A ``[[model]]`` row: the fields plus the id or prefix it matches."""

    match: str = Field(min_length=1, description="Exact model id or id prefix.")


class Budget(BudgetFields):
    """The budget resolved for one caller's model id."""

    model: str = Field(description="The caller's model id (trimmed), echoed for logging.")
    matched: str = Field(description='The matching row\'s `match`, or "fallback".')

    def bounded_by(self, other: Budget | None) -> Budget:
        """This budget with its input, output and catalog bounds cut to ``other``'s where smaller
        (a catalog cap of 0, no cap, is the largest); tier, variant and the rest stay this row's."""
        if other is None:
            return self
        caps = [c for c in (self.max_catalog_bytes, other.max_catalog_bytes) if c > 0]
        return self.model_copy(update={
            "input_tokens": min(self.input_tokens, other.input_tokens) if other.input_tokens else self.input_tokens,
            "output_tokens": min(self.output_tokens, other.output_tokens),
            "max_catalog_bytes": min(caps) if caps else 0,
        })

    @property
    def json_object_format(self) -> bool:
        """Whether free answers ask for a JSON-object response format: when the row wants strict
        JSON, never on Tier C (small models loop on it)."""
        return self.wants_strict_json and self.tier != "C"

    @property
    def resolved_prompt_variant(self) -> Variant:
        """The variant a plan call uses: see :func:`resolve_prompt_variant`."""
        return resolve_prompt_variant(self.tier, self.prompt_variant)


def resolve_prompt_variant(tier: str, explicit: str = "") -> Variant:
    """Pick the prompt variant: an explicit value wins, else the tier's default (A/B full_steps, else single_pick)."""
    if explicit in VARIANTS:
        return explicit  # type: ignore[return-value]
    return default_variant(tier)


class BudgetTable(BaseModel):
    """A validated budget table."""

    model_config = ConfigDict(frozen=True)

    rows: tuple[BudgetRow, ...]
    fallback: BudgetFields
    path: str = ""

    def lookup(self, model: str) -> Budget:
        """Resolve ``model``: exact match, else longest prefix (earlier row on ties), else fallback."""
        model_id = model.strip()
        row = self._find(model_id)
        if row is None:
            fields = self.fallback.model_dump()
            matched = "fallback"
        else:
            fields = row.model_dump(exclude={"match"})
            matched = row.match
        return Budget(model=model_id, matched=matched, **fields)

    def changed_for(self, model: str, changes: dict[str, Any]) -> BudgetTable:
        """This table with ``model``'s budget changed by ``changes`` (budget fields), as an exact row
        put first; the other models' rows are unchanged.

        Raises:
            pydantic.ValidationError: A change names no budget field or has a wrong value.
        """
        budget = self.lookup(model)
        fields = {**budget.model_dump(exclude={"model", "matched"}), **changes}
        row = BudgetRow.model_validate({**fields, "match": budget.model, "source": f"{budget.source}, changed: {changes}"})
        return self.model_copy(update={"rows": (row, *self.rows)})

    def _find(self, model_id: str) -> BudgetRow | None:
        for row in self.rows:
            if row.match == model_id:
                return row
        best: BudgetRow | None = None
        for row in self.rows:
            if model_id.startswith(row.match) and (best is None or len(row.match) > len(best.match)):
                best = row
        return best


_MODEL_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*model[ \t]*\]\]", re.MULTILINE)


def _row_lines(text: str) -> list[int]:
    """1-based line numbers of each ``[[model]]`` header, in order."""
    return [text.count("\n", 0, m.start()) + 1 for m in _MODEL_HEADER.finditer(text)]


def parse_budget_table(text: str, path: str = "<string>") -> BudgetTable:
    """Validate a budget table given as TOML text.

    Raises:
        BudgetTableError: naming the file, the row (index, ``match`` and line) and the problem.
    """
    data = parse_toml(text, path, BudgetTableError)
    unknown_top = set(data) - {"fallback", "model"}
    if unknown_top:
        raise BudgetTableError(path, f"unknown top-level key(s) {sorted(unknown_top)}; expected [fallback] and [[model]]")
    if "fallback" not in data:
        raise BudgetTableError(path, "missing the [fallback] table")
    try:
        fallback = BudgetFields.model_validate(data["fallback"])
    except ValidationError as exc:
        raise BudgetTableError(path, f"[fallback]: {validation_message(exc, subject='row', all_errors=True)}") from None

    raw_rows = data.get("model", [])
    if not isinstance(raw_rows, list):
        raise BudgetTableError(path, "`model` must be an array of tables ([[model]])")
    lines = _row_lines(text)
    rows: list[BudgetRow] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_rows):
        line = lines[i] if i < len(lines) else None
        label = f"[[model]] #{i + 1}"
        if isinstance(raw, dict) and "match" in raw:
            label += f" (match = {raw['match']!r})"
        try:
            row = BudgetRow.model_validate(raw)
        except ValidationError as exc:
            raise BudgetTableError(path, f"{label}: {validation_message(exc, subject='row', all_errors=True)}", line=line) from None
        if row.match in seen:
            raise BudgetTableError(
                path, f"{label}: duplicate match, already used by [[model]] #{seen[row.match] + 1}", line=line
            )
        seen[row.match] = i
        rows.append(row)
    return BudgetTable(rows=tuple(rows), fallback=fallback, path=path)


def load_budget_table(path: str | Path | None = None) -> BudgetTable:
    """Load and validate a budget table file (the bundled ``compiled/budgets.toml`` by default)."""
    resolved = Path(path) if path is not None else default_budgets_path()
    try:
        stat = resolved.stat()
    except OSError as exc:
        raise BudgetTableError(str(resolved), f"cannot read: {exc.strerror}") from None
    if resolved.is_dir():
        raise BudgetTableError(str(resolved), "is a directory; expected a budget table (.toml) file")
    return _load_cached(str(resolved), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load_cached(path: str, _mtime_ns: int, _size: int) -> BudgetTable:
    return parse_budget_table(read_text(path, BudgetTableError), path)


def budget_for(model: str, table: BudgetTable | None = None) -> Budget:
    """The budget for ``model`` from ``table`` (the bundled table by default)."""
    return (table or load_budget_table()).lookup(model)
