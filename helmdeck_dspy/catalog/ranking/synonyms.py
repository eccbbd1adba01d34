"""Query expansion for the BM25 ranker: request words that ask for the same thing.

The groups are data (``eval/synonyms.toml``, bundled as ``helmdeck_dspy.bundled``): lists of
plain words, stemmed on load with :func:`~helmdeck_dspy.catalog.text.stem` so they meet catalog
text however it inflects them. :func:`expand` turns a request's terms into *concepts*: each
term with weight 1, plus the other words of its groups at :data:`SYNONYM_WEIGHT`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.catalog.text import stem
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_toml
from helmdeck_dspy.io.resources import bundled_dir

SYNONYM_WEIGHT = 0.7
"""How much a synonym's match counts against the request's own word."""

Concept = dict[str, float]
"""One request term and its synonyms: term -> weight."""


class SynonymFile(BaseModel):
    """The lexicon file: a list of word groups."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    groups: list[list[str]] = Field(description="Words that ask for the same thing; each group two words or more.")


def default_synonyms_path() -> Path:
    return bundled_dir() / "synonyms.toml"


@lru_cache(maxsize=4)
def load_synonyms(path: str | None = None) -> dict[str, frozenset[str]]:
    """Stemmed word -> the stemmed words it shares a group with (itself excluded).

    Raises:
        DataFileError: the file is unreadable, not TOML, or not a list of word groups.
    """
    resolved = Path(path) if path is not None else default_synonyms_path()
    try:
        lexicon = SynonymFile.model_validate(read_toml(resolved))
    except ValidationError as exc:
        raise DataFileError(str(resolved), validation_message(exc)) from None
    table: dict[str, set[str]] = {}
    for group in lexicon.groups:
        stems = {stem(w.strip().lower()) for w in group if w.strip()}
        for s in stems:
            table.setdefault(s, set()).update(stems - {s})
    return {s: frozenset(others) for s, others in table.items() if others}


def expand(query: frozenset[str], synonyms: dict[str, frozenset[str]] | None = None) -> list[Concept]:
    """One concept per query term: the term at weight 1, its synonyms at :data:`SYNONYM_WEIGHT`
    (a synonym that is itself a query term keeps its own concept, at weight 1)."""
    table = load_synonyms() if synonyms is None else synonyms
    concepts = []
    for term in sorted(query):
        concept = {s: SYNONYM_WEIGHT for s in table.get(term, ())}
        concept[term] = 1.0
        concepts.append(concept)
    return concepts
