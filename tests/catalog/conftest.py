"""Fixtures for the catalog tests.

``make_big_catalog(P, Q)`` mirrors helmdeck's ``makeBigCatalog`` fixture (compact_test.go): P packs
and Q pipelines, each with verbose metadata, so a catalog of a few dozen entries overflows the
tier C cap and every compaction step has something to strip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.models import RoutingGuide

PACK_DESCRIPTION = (
    "This is a verbose description explaining in detail what the pack does, why it exists and how "
    "it differs from sibling packs in the same category. It runs to two sentences for testing."
)
PACK_KEYWORDS = ["keyword one", "keyword two", "keyword three", "keyword four", "keyword five"]
PACK_TYPICAL_USE = (
    "Long typical-use string describing the canonical caller pattern, the right context to invoke "
    "this pack, and the adjacent packs its result chains with."
)
PACK_LIMITATIONS = ["limit one with explanation", "limit two with explanation", "limit three with explanation"]

PIPE_DESCRIPTION = "A pipeline that chains synthetic packs. It exists for tests. Second sentence for truncation."
PIPE_SUPERSEDES = ["old.pack.foo", "old.pack.bar"]


def pack_dict(i: int) -> dict[str, Any]:
    return {
        "name": f"synthetic.pack{i}",
        "description": PACK_DESCRIPTION,
        "metadata": {
            "accepts": ["input_kind_a", "input_kind_b"],
            "produces": ["output_kind_a"],
            "intent_keywords": list(PACK_KEYWORDS),
            "typical_use": PACK_TYPICAL_USE,
            "limitations": list(PACK_LIMITATIONS),
        },
    }


def pipeline_dict(i: int) -> dict[str, Any]:
    return {
        "id": f"builtin.synthetic-pipe{i}",
        "name": f"Synthetic pipe {i}",
        "description": PIPE_DESCRIPTION,
        "metadata": {
            "accepts": ["source_a", "source_b"],
            "produces": ["target_x"],
            "intent_keywords": ["do the thing", "transform this"],
            "supersedes": list(PIPE_SUPERSEDES),
            "steps": [
                {
                    "id": "step1",
                    "pack": "foo.parse",
                    "name": "Parse the input",
                    "input_template": "{{.Input}}",
                    "output_select": "$.body",
                },
                {
                    "id": "step2",
                    "pack": "foo.rewrite",
                    "name": "Rewrite for audience",
                    "input_template": "{{.step1.body}}",
                    "output_select": "$.markdown",
                },
                {
                    "id": "step3",
                    "pack": "foo.publish",
                    "name": "Publish output",
                    "input_template": "{{.step2.markdown}}",
                    "output_select": "$.url",
                },
            ],
            "inputs": [
                {"name": "source_url", "type": "string", "required": True, "description": "URL to fetch"},
                {"name": "audience", "type": "string", "required": False, "description": "Target audience persona"},
                {"name": "persona", "type": "string", "required": False},
            ],
            "outputs": [
                {"name": "result_markdown", "type": "string", "description": "Final markdown body"},
                {"name": "artifact_url", "type": "string"},
            ],
        },
    }


def big_catalog_dict(packs: int, pipelines: int) -> dict[str, Any]:
    return {
        "packs": [pack_dict(i) for i in range(packs)],
        "pipelines": [pipeline_dict(i) for i in range(pipelines)],
    }


def build_big_catalog(packs: int, pipelines: int) -> RoutingGuide:
    return RoutingGuide.model_validate(big_catalog_dict(packs, pipelines))


@pytest.fixture
def make_big_catalog() -> Callable[[int, int], RoutingGuide]:
    """Factory: ``make_big_catalog(P, Q)`` -> a fresh synthetic :class:`RoutingGuide`."""
    return build_big_catalog


@pytest.fixture
def make_big_catalog_dict() -> Callable[[int, int], dict[str, Any]]:
    """Factory: the raw dict behind ``make_big_catalog(P, Q)`` (for ``parse_catalog``/files)."""
    return big_catalog_dict


def budget(cap: int, tier: str = "C", entries: int = 0) -> Budget:
    """A budget with this catalog cap; ``entries`` fixes the ranking cut (helmdeck's top N), 0 fills the cap."""
    return Budget(
        model="m",
        matched="fallback",
        tier=tier,
        input_tokens=16000,
        output_tokens=1500,
        max_catalog_bytes=cap,
        max_catalog_entries=entries,
    )


def helmdeck_budget(cap: int, tier: str = "C") -> Budget:
    """helmdeck's cut: a fixed top N (25 on tier B, 12 otherwise)."""
    return budget(cap, tier, entries=25 if tier == "B" else 12)


@pytest.fixture
def make_budget() -> Callable[..., Budget]:
    """Factory: ``make_budget(cap, tier="C")`` -> a :class:`Budget` with that catalog cap."""
    return budget
