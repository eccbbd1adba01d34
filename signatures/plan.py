"""PlanSignature: the one signature both plan modules are built from.

The two variants differ only in their instructions (``instructions/full_steps.md`` and
``instructions/single_pick.md``): FullSteps asks for the whole ordered plan, SinglePick for the
single next call and whether more will follow.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import dspy
from helmdeck_dspy.signatures.types import ExecutedStep, PlanStep

from helmdeck_dspy.domain import VARIANTS, Complexity, Variant
from helmdeck_dspy.errors import InputError


class PlanSignature(dspy.Signature):
    """Plan calls to catalog tools that fulfil the user's request."""

    user_intent: str = dspy.InputField(desc="The user's request, verbatim.")
    catalog: str = dspy.InputField(desc="The budget-fitted tool catalog (JSON: packs and pipelines).")
    context: str | None = dspy.InputField(default=None, desc="Optional material the request refers to.")
    prior_steps: list[ExecutedStep] | None = dspy.InputField(
        default=None, desc="Calls already made in this request, with their results (single_pick loop)."
    )
    steps: list[PlanStep] = dspy.OutputField(desc="The calls, in execution order.")
    complexity: Complexity = dspy.OutputField(desc="single-action, pipeline-direct or pack-chain.")
    more_steps_likely: bool = dspy.OutputField(desc="Whether calls remain after these (single_pick).")
    reasoning: str = dspy.OutputField(desc="One to three sentences on the choice.")


@lru_cache(maxsize=None)
def variant_instructions(variant: Variant, tools_only: bool = False) -> str:
    """The bundled instruction text for a variant: helmdeck's (packs and pipelines), with
    ``tools_only`` the text for a plain list of tools (``instructions/tools_<variant>.md``)."""
    if variant not in VARIANTS:
        raise InputError(f"unknown prompt variant {variant!r}; expected one of {VARIANTS}")
    name = f"tools_{variant}" if tools_only else variant
    return resources.files("helmdeck_dspy.signatures").joinpath(f"instructions/{name}.md").read_text("utf-8").strip()


def signature_for(variant: Variant) -> type[dspy.Signature]:
    """PlanSignature with the variant's instructions."""
    return PlanSignature.with_instructions(variant_instructions(variant))
