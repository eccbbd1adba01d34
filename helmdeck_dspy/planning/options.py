"""What a planner is configured with, beyond its model: :class:`PlannerOptions`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)

from helmdeck_dspy.budgets import BudgetTable
from helmdeck_dspy.errors import ArgumentError, validation_message
from helmdeck_dspy.program.demo_pool import DemoPool
from helmdeck_dspy.planning.resilience.policy import FallbackChain, RetryPolicy


class PlannerOptions(BaseModel):
    """How a planner selects, records and retries, and how it builds LMs for fallback models.

    Selection defaults to BM25 over the full entries, filling the byte cap in rank order:
    docs/results/selection.md has its Tier C full-plan recall on each gold set against helmdeck's
    lexical ranking of the compacted catalog (measure/selection_recall.py).
    ``ranker="lexical", rank_source="compacted"`` restores helmdeck's behaviour.

    Attributes:
        ranker: Catalog ranker (``bm25``, ``lexical``, ``embedding``).
        rank_source: Rank the ``full`` entries or the ``compacted`` catalog.
        history_prior: Use plan history as a ranking prior in selection.
        arg_hints: In compact argument signatures, keep each argument's description as a short
            quoted hint while the budget's byte cap allows (``catalog.signature.arg_hint``).
        use_filter: Run the two-pass LLM filter when the selection needs it.
        max_tokens: Output cap instead of the budget's ``output_tokens``.
        native_tool_calls: Offer the selected catalog as native tools (True), never (False), or
            as the budget's ``native_tool_calls`` says (None, the default).
        constrained_decoding: Decode answers under the selected catalog's JSON Schema (True), never
            (False), or as the budget row and the endpoint say (None, the default).
        catalog_fitting: Fit the prompt to the catalog (the default): demos naming tools outside it
            are left out, and a catalog without pipelines gets instructions for a plain list of
            tools. Off reproduces the planner before this (helmdeck's instructions and demos always).
        fit_decision: Under constrained decoding, open the answer with the ``tool_fits`` decision
            (True); off, an empty ``steps`` list is the only way to say no tool fits. None (the
            default): on for a plain list of tools, off for a catalog with pipelines, as measured
            live (docs/results/test-split.md).
        fit_last: With ``fit_decision``, close the answer with ``tool_fits`` instead: a check on
            the steps just chosen (the guards drop them when it is false).
        nearest_tools: Name the N tools of the selected catalog that rank closest to the request
            (BM25) next to the request, before the no-fit decision (0: none).
        multi_call_format: Under constrained decoding (full_steps), show an answer format with
            several calls and say that each call asked for is one step.
        strict_fit: Say next to the request that a tool fits only when it gives exactly what is
            asked (a tool on a related subject that computes something else does not).
        pipelines_as_tools: Under constrained decoding, offer each selected pipeline as a tool named
            by its id (a bare pipeline id is a valid step) instead of through ``helmdeck__pipeline-run``;
            with catalog fitting, full_steps then plans with instructions that say so.
        instructions: Instruction text to plan with instead of the program's and the catalog
            fitting's (None: the bundled text): a lever for trying a wording.
        demo_pool: Worked examples to choose each request's demos from (the nearest by BM25 over the
            request words, each shown with its own tools; ``program.demo_pool``), besides the
            program's own demos.
        coerce_args: Check each step's args against its tool's schema and coerce safe type
            mismatches (``planning.arguments``); off reproduces the planner before argument checks.
        pipeline_chains: A plan that lists every pack a catalog pipeline chains runs the pipeline
            instead (``planning.chains``); off reproduces the planner before this guard.
        caller: Who plans (history rows and the history prior are per caller).
        record_path: Append every exchange to this trace file.
        record_source: The trace records' ``source`` (default: from ``lm_spec``).
        record_run: Reproducibility settings stamped on every trace record (``TraceRecord.run``).
        lm_spec: The LM spec the planner's LM was built from, when it was built from one.
        retry: Attempts, backoff and per-attempt deadline.
        fallback: What runs after a model's attempts fail.
        compiled_root: Where compiled programs live (None: the bundled ``compiled/``).
        program: Which program to plan with: None or ``auto`` (the model's own compiled program
            when the manifest lists one for its exact id and variant, else the tier's), ``tier``
            (``tier:T``: tier T's), ``bare`` (the instructions alone) or a program file
            (:func:`helmdeck_dspy.program.store.resolve_program`).
        budgets: The budget table fallback models are looked up in (None: the bundled one).
        api_base: API base URL for live LMs.
        api_key: API key for live LMs; never serialised or shown.
        engine: DSPy engine selection for live LMs (``auto``, ``litellm``, ``lm15``).
        cache: Use DSPy's response cache for live or simulated LMs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ranker: str = "bm25"
    rank_source: Literal["compacted", "full"] = "full"
    history_prior: bool = False
    arg_hints: bool = False
    use_filter: bool = True
    max_tokens: int | None = None
    native_tool_calls: bool | None = None
    constrained_decoding: bool | None = None
    coerce_args: bool = True
    pipeline_chains: bool = True
    catalog_fitting: bool = True
    fit_decision: bool | None = None
    fit_last: bool = False
    strict_fit: bool = False
    nearest_tools: int = Field(default=0, ge=0)
    multi_call_format: bool = False
    pipelines_as_tools: bool = False
    instructions: str | None = Field(default=None, min_length=1)
    demo_pool: DemoPool | None = Field(default=None, repr=False)
    caller: str | None = None
    record_path: Path | None = None
    record_source: str | None = None
    record_run: dict[str, Any] | None = None
    lm_spec: str | None = None
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    fallback: FallbackChain = Field(default_factory=FallbackChain)
    compiled_root: Path | None = None
    program: str | None = None
    budgets: BudgetTable | None = Field(default=None, repr=False)
    api_base: str | None = None
    api_key: SecretStr | None = Field(default=None, exclude=True, repr=False)
    engine: str = "auto"
    cache: bool = True

    @field_validator("record_path", mode="before")
    @classmethod
    def _no_empty_path(cls, value: object) -> object:
        return value or None  # "" means no recording, not the current directory

    @classmethod
    def from_arguments(cls, **kwargs: Any) -> PlannerOptions:
        """Options from keyword arguments, as :meth:`Planner.for_model` takes them.

        Raises:
            TypeError: A keyword that is not an option.
            ArgumentError: An option of the wrong type or out of range.
        """
        unknown = sorted(set(kwargs) - set(cls.model_fields))
        if unknown:
            raise TypeError(f"Planner.for_model() got an unexpected keyword argument {unknown[0]!r}")
        try:
            return cls(**kwargs)
        except ValidationError as exc:
            raise ArgumentError(validation_message(exc, subject="options")) from None

    def api_key_value(self) -> str | None:
        """The API key's value, for the LM that needs it (None when none was given)."""
        return self.api_key.get_secret_value() if self.api_key is not None else None
