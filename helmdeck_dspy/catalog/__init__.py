"""The tool catalog (helmdeck's routing-guide shape) and budget-fitted selection from it."""

from helmdeck_dspy.catalog.compact import Trim, compact_catalog, first_sentence
from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide, load_catalog
from helmdeck_dspy.catalog.ranking import (
    RANKERS,
    Ranked,
    high_confidence,
    rank_bm25,
    rank_lexical,
)
from helmdeck_dspy.catalog.select import select_catalog

__all__ = [
    "Pack",
    "Pipeline",
    "RANKERS",
    "Ranked",
    "RoutingGuide",
    "Trim",
    "compact_catalog",
    "first_sentence",
    "high_confidence",
    "load_catalog",
    "rank_bm25",
    "rank_lexical",
    "select_catalog",
]
