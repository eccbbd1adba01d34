"""Would a cut that covers every part of the request keep more of the tools a task needs? No LM.

At a small fixed cut (the 0.5B's 6 entries) BM25's top entries can all answer one part of a
request: for "remember this MiniMax M3 launch, write a blog about it and make an illustration"
the top 6 are blog packs and blog pipelines, and ``image.generate`` (11th) is cut. The candidate
here picks the N entries greedily instead: each pick maximises the BM25 score it adds, where a
request concept (a request term and its synonyms) that an earlier pick already matches at least
as well counts only ``DISCOUNT`` of its score. Compared with plain BM25 order at the same N, on
the gold tasks of each split (gap tasks left out): mean share of the gold tools kept, and tasks
with all of them kept.

    .venv/bin/python measure/selection_coverage.py [--n 6 12] [--discount 0 0.3 0.5]
"""

from __future__ import annotations

import argparse
import statistics

from selection_recall import gold_ids

from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.catalog.ranking.bm25 import NAME_BOOST, concept_scores, rank_bm25
from helmdeck_dspy.catalog.ranking.synonyms import expand
from helmdeck_dspy.catalog.text import term_set
from helmdeck_dspy.tasks import load_tasks

DEMO_INTENT = "remember this MiniMax M3 launch, write a blog about it and make an illustration"


class Scorer:
    """Per-concept BM25 scores of every entry of a catalog for one request."""

    def __init__(self, catalog: RoutingGuide) -> None:
        entries = [*catalog.packs, *catalog.pipelines]
        self.catalog = catalog
        self.ids = [e.entry_id for e in entries]
        self.docs = [e.features.term_counts for e in entries]
        self.lengths = [len(e.features.terms) for e in entries]
        self.names = [e.features.id_terms for e in entries]

    def by_concept(self, intent: str) -> list[list[float]]:
        """For each request concept, every entry's BM25 score (as rank_bm25 adds it up)."""
        return [concept_scores(self.docs, self.lengths, [c], names=self.names, name_boost=NAME_BOOST)
                for c in expand(term_set(intent, camel=False))]

    def bm25_top(self, intent: str, n: int) -> list[str]:
        return [r.id for r in rank_bm25(self.catalog, intent)][:n]

    def covering_top(self, intent: str, n: int, discount: float) -> list[str]:
        cols = self.by_concept(intent)
        best = [0.0] * len(cols)  # each concept's best score among the picks so far
        chosen: list[int] = []
        for _ in range(min(n, len(self.ids))):
            def gain(e: int) -> tuple[float, float, str]:
                added = sum(col[e] if col[e] > best[c] else discount * col[e] for c, col in enumerate(cols))
                return added, sum(col[e] for col in cols), self.ids[e]
            pick = max((e for e in range(len(self.ids)) if e not in chosen), key=gain)
            chosen.append(pick)
            best = [max(b, col[pick]) for b, col in zip(best, cols)]
        return [self.ids[e] for e in chosen]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[6, 12], help="Cuts (entries kept).")
    ap.add_argument("--discount", type=float, nargs="+", default=[0.0, 0.3, 0.5],
                    help="What a concept already matched still counts.")
    args = ap.parse_args()
    scorer = Scorer(load_catalog())
    print(f"{'split':5} {'N':>3} {'cut':14} {'mean recall':>11} {'all kept':>9}")
    for split in ("train", "dev", "test"):
        cases = [(t.intent, gold_ids(t.steps)) for t in load_tasks(split) if t.steps]
        for n in args.n:
            cuts = [("bm25", lambda i, n=n: scorer.bm25_top(i, n))]
            cuts += [(f"covering {d:g}", lambda i, n=n, d=d: scorer.covering_top(i, n, d)) for d in args.discount]
            for name, cut in cuts:
                kept = [want & set(cut(intent)) for intent, want in cases]
                share = statistics.mean(len(k) / len(w) for k, (_, w) in zip(kept, cases))
                full = sum(k == w for k, (_, w) in zip(kept, cases))
                print(f"{split:5} {n:3} {name:14} {share:11.3f} {full:4}/{len(cases):<4}")
    print(f"\n{DEMO_INTENT!r}, N = {min(args.n)}:")
    print("  bm25:        ", ", ".join(scorer.bm25_top(DEMO_INTENT, min(args.n))))
    print("  covering 0.3:", ", ".join(scorer.covering_top(DEMO_INTENT, min(args.n), 0.3)))


if __name__ == "__main__":
    main()
