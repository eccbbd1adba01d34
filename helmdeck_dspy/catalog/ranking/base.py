"""What every ranker returns, and the decisions taken on a ranking.

A ranker has the signature ``(catalog, intent, prior=None) -> list[Ranked]``: every entry, zero
scores kept, sorted by score descending then id ascending (:func:`sort_ranked`). ``prior`` adds a
per-id bonus (for example from plan history) before sorting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from helmdeck_dspy.catalog.models import EntryKind

HIGH_CONFIDENCE_THRESHOLD = 0.4
ESCALATE_MIN_ENTRIES = 3


@dataclass(frozen=True, slots=True)
class Ranked:
    """One ranked entry."""

    id: str
    kind: EntryKind
    score: float


Ranker = Callable[..., list["Ranked"]]


def sort_ranked(items: list[Ranked], prior: Mapping[str, float] | None = None) -> list[Ranked]:
    """Add the optional per-id prior, then sort by score descending, id ascending."""
    if prior:
        items = [Ranked(r.id, r.kind, r.score + prior.get(r.id, 0.0)) for r in items]
    return sorted(items, key=lambda r: (-r.score, r.id))


def top_k(ranked: list[Ranked], k: int) -> list[Ranked]:
    """The first ``k`` entries; ``k <= 0`` or ``k >= len`` keeps all."""
    return ranked if k <= 0 or k >= len(ranked) else ranked[:k]


def high_confidence(ranked: list[Ranked], threshold: float = HIGH_CONFIDENCE_THRESHOLD) -> bool:
    """Whether the top entry clearly beats the runner-up: ``(top - second) / top >= threshold``."""
    if len(ranked) < 2:
        return True
    top, second = ranked[0].score, ranked[1].score
    if top == 0:
        return False
    if second == 0:
        return True
    return (top - second) / top >= threshold


def should_escalate(ranked: list[Ranked], min_entries: int = ESCALATE_MIN_ENTRIES) -> bool:
    """Whether a low-confidence ranking should go to the LLM filter pass."""
    return len(ranked) >= min_entries and not high_confidence(ranked, HIGH_CONFIDENCE_THRESHOLD)
