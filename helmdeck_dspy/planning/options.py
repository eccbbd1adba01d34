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
from helmdeck_dspy.domain import DEFAULT_RANK_SOURCE, DEFAULT_RANKER
from helmdeck_dspy.errors import ArgumentError, validation_message
from helmdeck_dspy.planning.resilience.policy import FallbackChain, RetryPolicy


class PostChecks(BaseModel):
    """What the planner fits to the catalog and checks after the model, each on by default (all
    added by issue 22; ``bench.study.spec.before_issue_22`` turns them off to reproduce the planner
    before it).

    Attributes:
        fit_catalog: Instructions and program demos fitted to the catalog (the tool-list text for
            a catalog without pipelines; a demo only when its tools are all in the catalog).
        coerce_args: Each step's arguments checked and coerced against its tool's schema.
        pipeline_chains: A plan listing every pack a pipeline chains runs the pipeline.
        map_names: A tool name outside the catalog mapped to its one near miss.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fit_catalog: bool = True
    coerce_args: bool = True
    pipeline_chains: bool = True
    map_names: bool = True


class PlannerOptions(BaseModel):
    """How a planner selects, records and retries, and how it builds LMs for fallback models.

    Selection defaults to BM25 over the full entries, filling the byte cap in rank order:
    docs/results/selection.md has its Tier C full-plan recall on each gold set against helmdeck's
    lexical ranking of the compacted catalog (measure/selection_recall.py).
    ``ranker="lexical", rank_source="compacted"`` restores helmdeck's behaviour.

    A default a study chose names it in ``decided_by`` (the field's JSON Schema extra), as budget
    rows do (``tests/test_decided_by.py`` checks the link).

    Attributes:
        ranker: Catalog ranker (``bm25``, ``lexical``, ``embedding``).
        rank_source: Rank the ``full`` entries or the ``compacted`` catalog.
        history_prior: Use plan history as a ranking prior in selection.
        use_filter: Run the two-pass LLM filter when the selection needs it.
        max_tokens: Output cap instead of the budget's ``output_tokens``.
        temperature: Sampling temperature instead of the budget row's (0 by default).
        seed: Sampling seed instead of :data:`~helmdeck_dspy.planning.request.DEFAULT_SEED` (sent
            only to endpoints that take one).
        answer_strategy: How the model answers (a name in ``program.strategies.STRATEGIES``); None
            (the default): the budget row's, else the endpoint's (``planning.request`` writes the
            precedence down).
        fit_decision: Under the ``schema`` strategy, open the answer with the ``tool_fits`` decision
            (True); off, an empty ``steps`` list is the only way to say no tool fits. None (the
            default): on for a plain list of tools, off for a catalog with pipelines, as measured
            live (docs/results/test-split.md).
        fill_placeholders: A documentation placeholder path in an argument (``path/to/repo``) is
            replaced by the one path the request names that ends the same way (``repo``). On by
            default: chosen on the end-to-end study's dev half (docs/results/e2e.md).
        recheck_top: Under the ``plain`` strategy, a first plan with no calls over more than this
            many tools is asked once more over the top this-many the ranker gives for the request
            (0: off). 10 by default: chosen on the end-to-end study's dev half (docs/results/e2e.md);
            the ``fallback`` loop turns it off for its first plan (``planning.dialogue.task_agent``).
        recheck_order: The order of the recheck's tools: ``rank`` (the ranker's, the default) or
            ``catalog`` (the whole list's, so the recheck prompt's entries are chunks of the first
            prompt a server that reuses chunks, llama-server's ``--cache-reuse``, need not evaluate
            again). Issue 54's lever; ``rank`` until a study chooses.
        cut_head: Where the whole list does not fit the row's ``input_tokens`` and the ranker cuts
            it, show the request's top-ranked picks (the cut's first N) after the catalog's longest
            leading run of tools that still fits, instead of the budget's fill in rank order, so
            consecutive requests share that head and a prefix cache keeps it
            (``AnswerStrategy.keep_head``; only the ``plain`` strategy has such a head; not after
            the LLM filter). On by default: chosen on the MCP dev half over all seven servers' 57
            tools cut to 5,500 tokens (experiments/mcp/cut-head-check): 18 of 44 exact against 16,
            p50 11.6 s against 45.8 s.
        ground_paths: A path argument the request does not name is completed to the one path it
            names that ends with it (``todo.md`` → ``files/todo.md``; ``planning.grounding.ground_args``).
            On by default: chosen on the end-to-end dev half, two tasks more and none lost
            (experiments/e2e/ground-dev).
        retry_errors: A re-plan that answers no call right after a call failed is asked once more
            for at least one call (the ask names the failure; decoded under a schema of at least
            one call), so a tool error is answered by a repair rather than by stopping. On by
            default: chosen on the end-to-end dev half, one task more (``git-12``: ``git_add``, then
            the commit that had failed), none lost (experiments/e2e/retry-dev).
        fallback_top: Under the ``fallback`` loop, the top this-many tools the ranker gives for the
            request bound the hand-over, where the request shares a word with some tool: the
            conversation offers only them, and a first plan with no call to one of them is handed
            over too (0: off; ``planning.dialogue.FallbackAgent``). 15 by default: chosen on the
            end-to-end dev half, three tasks more and none lost (experiments/e2e/top2-dev; unbounded,
            it acted on two requests no tool serves: experiments/e2e/top-dev).
        must_call: A first answer with no call is asked once more for at least one call, decoded
            under a schema of at least one call (an OpenAI client's ``tool_choice`` ``required`` or a
            named function).
        probe_decision: After the first answer, ask the local llama.cpp server for the probability
            that it declines (``planning.decision``; recorded as ``run.decision``); off by default.
        checks: What is fitted to the catalog and checked after the model (:class:`PostChecks`).
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

    ranker: str = DEFAULT_RANKER
    rank_source: Literal["compacted", "full"] = DEFAULT_RANK_SOURCE
    history_prior: bool = False
    use_filter: bool = True
    max_tokens: int | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)
    answer_strategy: str | None = None
    fit_decision: bool | None = Field(default=None, json_schema_extra={"decided_by": [
        "experiments/test-split/qwen2.5-coder-0.5b", "experiments/test-split/qwen2.5-coder-1.5b"]})
    fill_placeholders: bool = Field(default=True, json_schema_extra={"decided_by": ["experiments/e2e/qwen2.5-coder-1.5b"]})
    recheck_top: int = Field(default=10, ge=0, json_schema_extra={"decided_by": ["experiments/e2e/qwen2.5-coder-1.5b"]})
    recheck_order: Literal["rank", "catalog"] = "rank"
    cut_head: bool = Field(default=True, json_schema_extra={"decided_by": ["experiments/mcp/cut-head-check"]})
    ground_paths: bool = Field(default=True, json_schema_extra={"decided_by": ["experiments/e2e/ground-dev"]})
    retry_errors: bool = Field(default=True, json_schema_extra={"decided_by": ["experiments/e2e/retry-dev"]})
    fallback_top: int = Field(default=15, ge=0, json_schema_extra={"decided_by": ["experiments/e2e/top2-dev"]})
    must_call: bool = False
    probe_decision: bool = False
    checks: PostChecks = Field(default_factory=PostChecks)
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

    @field_validator("answer_strategy")
    @classmethod
    def _known_strategy(cls, value: str | None) -> str | None:
        from helmdeck_dspy.program.strategies import STRATEGIES

        if value is not None and value not in STRATEGIES:
            raise ValueError(f"unknown answer strategy {value!r}; expected one of {sorted(STRATEGIES)}")
        return value

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
