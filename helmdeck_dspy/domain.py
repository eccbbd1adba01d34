"""The planning domain's fixed vocabulary and rules, each written once.

Tiers and prompt variants, the tool ids the planner reserves for itself, how a plan's complexity
follows from its steps, and the shared limits (JSON depth, the default LM timeout). Every other
module imports these instead of spelling them again. Nothing here imports the rest of the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Tier = Literal["A", "B", "C"]
TIERS: tuple[Tier, ...] = ("A", "B", "C")

Variant = Literal["full_steps", "single_pick"]
VARIANTS: tuple[Variant, ...] = ("full_steps", "single_pick")
Loop = Literal["replan", "fallback"]
LOOPS: tuple[Loop, ...] = ("fallback", "replan")
DEFAULT_LOOP: Loop = "fallback"
"""The loop ``run`` and ``make demo-live`` drive a task with (planning.dialogue.task_agent; a study
row names its own), chosen on both dev halves by the rule written before their run
(experiments/e2e/fallback-dev: 37 of 64 tasks against 36, no refrain task lost, median task 1.04x); its
first plan asks no recheck (experiments/e2e/direct-dev: 31 of 45 each, median task 0.84x), and the
request's 15 top-ranked tools bound its hand-over (``fallback_top``; experiments/e2e/top2-dev: 34 of
45 against 31, median task 1.05x)."""
RETIRED_STRATEGIES = ("decide", "draft")
"""Strategies measured, lost and taken out (docs/results/strategies.md): a study row that names one
still loads, so its recorded answers re-score, but makes no call."""

Complexity = Literal["single-action", "pipeline-direct", "pack-chain"]
COMPLEXITIES: tuple[Complexity, ...] = ("single-action", "pipeline-direct", "pack-chain")

PIPELINE_RUN_TOOL = "helmdeck__pipeline-run"
"""The tool name a step uses to run a pipeline; ``args.id`` names the pipeline."""

PLANNER_TOOL_IDS = frozenset({"helmdeck.plan", "helmdeck__plan"})
"""The planner's own tool, in its MCP and catalog spellings: a plan may never call it."""

UNKNOWN_TOOL = "unknown"
"""What a step naming no catalog entry is demoted to."""

MAX_JSON_DEPTH = 128
"""Deepest JSON value (arrays and objects) any reader accepts; a plan needs about 5."""

DEFAULT_TIMEOUT_S = 120.0
"""Wall-clock limit of one LM attempt unless a retry policy says otherwise."""
MAX_TIMEOUT_S = 86_400.0
"""Longest per-attempt deadline accepted (a day): beyond it the platform's timers overflow."""

MAX_CONTEXT_FILE_BYTES = 4 * 1024 * 1024
"""Most bytes of ``plan --context-file`` read; a larger file is refused before it is read whole."""
MAX_STDIO_LINE_BYTES = 4 * 1024 * 1024
"""Longest JSON-RPC message ``serve`` takes over stdio (HTTP refuses bigger bodies with 413)."""

MAX_MODEL_ID_CHARS = 200
"""The longest model id a caller or a command line may name (the longest in the budget table is under 80)."""
MODEL_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:/@+\-]*"
"""What a model id may hold (letters, digits and ``._:/@+-``; no spaces or control characters),
checked before any lookup, so no id is stored, printed or logged otherwise."""
MAX_RECORD_N = 100_000
"""The most requests per variant ``traces record`` and ``traces simulate`` take (``--n``)."""

FIT_CHECK_TOLERANCE = 0.25
"""`traces fit --check`: how far a simulated p50 (completion tokens, latency) may be from the real
one, as a share of it."""
FIT_CHECK_REPEATS = 16
"""`traces fit --check`: simulator seeds per check; the simulated rates are means over this many
passes over the tasks. Sixteen passes over a 24-task set are 384 simulated calls, enough that the simulation's own noise
(about ±1 point on a 2% rate) does not decide a check against a real rate near its bound: at 8 the
1.5B set's full_steps strict rate came out 0.995 against a bound of 0.993, at 16 0.990."""

IMPORT_FORMATS = ("auto", "openai", "anthropic", "gemini", "llamastack")
"""The source formats ``traces import`` reads (``auto`` tells them apart row by row)."""


def default_variant(tier: str) -> Variant:
    """The prompt variant a tier uses when the budget row names none: A/B full_steps, C single_pick."""
    return "full_steps" if tier in ("A", "B") else "single_pick"


def complexity_for(tools: Sequence[str], more_steps_likely: bool = False) -> Complexity:
    """A plan's complexity from its step tools, in order.

    ``pack-chain`` for two or more steps (or one step with more expected), ``pipeline-direct``
    for a single pipeline run, ``single-action`` otherwise (including no steps).
    """
    if len(tools) >= 2 or more_steps_likely:
        return "pack-chain"
    if len(tools) == 1 and tools[0] == PIPELINE_RUN_TOOL:
        return "pipeline-direct"
    return "single-action"


DEFAULT_RANKER = "bm25"
DEFAULT_RANK_SOURCE: Literal["compacted", "full"] = "full"
"""The catalog ranking every planner, command and server uses unless told otherwise: BM25 over the
full entries (docs/results/selection.md). ``lexical`` over the ``compacted`` catalog is helmdeck's."""
