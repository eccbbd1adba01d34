"""Ranking: helmdeck's rank_test.go cases, ShouldEscalate from filter_test.go, and the BM25 ranker."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking import (
    RANKERS,
    Ranked,
    high_confidence,
    rank_bm25,
    rank_lexical,
    should_escalate,
    tokenize,
    top_k,
)


def _scores(*values: float) -> list[Ranked]:
    return [Ranked(f"e{i}", "pack", v) for i, v in enumerate(values)]


def _guide(packs=(), pipelines=()) -> RoutingGuide:
    return RoutingGuide.model_validate({"packs": list(packs), "pipelines": list(pipelines)})


# --------------------------------------------------------------------------------------------
# Ports of rank_test.go
# --------------------------------------------------------------------------------------------


def test_tokenize_basic_split_and_lower():
    got = tokenize("Remember THIS launch — then draft a blog about it.")
    for w in ["remember", "launch", "then", "draft", "blog", "about"]:
        assert w in got
    for stop in ["this", "a", "it"]:
        assert stop not in got
    assert got == ["remember", "launch", "then", "draft", "blog", "about"]


def test_tokenize_splits_identifiers_and_drops_short_tokens():
    assert tokenize("blog.rewrite_for_audience") == ["blog", "rewrite", "audience"]
    assert tokenize("builtin.brief-rewrite-blog") == ["builtin", "brief", "rewrite", "blog"]
    assert tokenize("x y2 v0.13 I want to DO it") == ["y2", "v0", "13"]
    assert tokenize("café naïve") == ["caf", "na", "ve"]  # ASCII-only: non-ASCII letters split
    assert tokenize("a a blog blog") == ["blog", "blog"]  # a multiset, not a set
    assert tokenize("") == []


def test_intent_keyword_phrase_beats_name_match():
    rg = _guide(
        packs=[
            {"name": "blog.publish", "description": "publish blog", "metadata": {"accepts": ["markdown"]}},
            {
                "name": "content.rewrite_for_audience",
                "description": "rewrite text",
                "metadata": {"intent_keywords": ["rewrite for audience"]},
            },
        ]
    )
    ranked = rank_lexical(rg, "I want to rewrite for audience")
    assert ranked[0].id == "content.rewrite_for_audience"
    assert ranked[0].score > ranked[1].score
    assert ranked[1].id == "blog.publish"


def test_supersedes_boost_beats_superseded_pack():
    rg = _guide(
        packs=[
            {
                "name": "blog.rewrite_for_audience",
                "description": "rewrite for audience",
                "metadata": {"accepts": ["markdown"]},
            }
        ],
        pipelines=[
            {
                "id": "builtin.brief-rewrite-blog",
                "name": "Brief rewrite blog",
                "description": "brief to blog",
                "metadata": {
                    "accepts": ["brief"],
                    "produces": ["blog_markdown"],
                    "supersedes": ["blog.rewrite_for_audience"],
                },
            }
        ],
    )
    ranked = rank_lexical(rg, "I want to rewrite my blog for audience")
    assert [r.id for r in ranked] == ["builtin.brief-rewrite-blog", "blog.rewrite_for_audience"]
    assert [r.kind for r in ranked] == ["pipeline", "pack"]
    assert ranked[0].score > ranked[1].score


def test_ties_sort_by_id_ascending():
    rg = _guide(
        packs=[
            {"name": "z.something_unrelated", "description": "unrelated"},
            {"name": "a.something_unrelated", "description": "unrelated"},
            {"name": "m.something_unrelated", "description": "unrelated"},
        ]
    )
    ranked = rank_lexical(rg, "intent with no matches at all")
    assert [r.id for r in ranked] == ["a.something_unrelated", "m.something_unrelated", "z.something_unrelated"]
    assert all(r.score == 0 for r in ranked)


def test_ties_across_packs_and_pipelines_sort_by_id():
    rg = _guide(
        packs=[{"name": "m.pack"}, {"name": "c.pack"}],
        pipelines=[{"id": "b.pipe"}, {"id": "x.pipe"}],
    )
    ranked = rank_lexical(rg, "nothing relevant here")
    assert [r.id for r in ranked] == ["b.pipe", "c.pack", "m.pack", "x.pipe"]


@pytest.mark.parametrize("intent", ["", "   ", "a the of to", "I want it"])
def test_empty_intent_scores_zero(intent):
    rg = _guide(
        packs=[{"name": "x", "description": "do something", "metadata": {"intent_keywords": ["do something"]}}]
    )
    ranked = rank_lexical(rg, intent)
    assert len(ranked) == 1 and ranked[0].score == 0


def test_top_k_truncates_and_preserves_order():
    ranked = _scores(5, 4, 3, 2)
    got = top_k(ranked, 2)
    assert [r.id for r in got] == ["e0", "e1"]


@pytest.mark.parametrize("k", [0, -1, 2, 10])
def test_top_k_zero_negative_or_larger_is_no_op(k):
    ranked = _scores(5, 4)
    assert [r.id for r in top_k(ranked, k)] == ["e0", "e1"]


@pytest.mark.parametrize(
    "scores,threshold,want",
    [
        ((10, 4, 3), 0.3, True),  # (10-4)/10 = 0.6
        ((10, 9, 8), 0.3, False),  # 0.1
        ((5,), 0.5, True),  # singleton
        ((0, 0), 0.5, False),  # top is zero
        ((), 0.5, True),  # empty
        ((3, 0), 0.9, True),  # second is zero
        ((10, 6), 0.4, True),  # exactly at the threshold counts
        ((10, 6.01), 0.4, False),
    ],
)
def test_high_confidence(scores, threshold, want):
    assert high_confidence(_scores(*scores), threshold) is want


# --------------------------------------------------------------------------------------------
# ShouldEscalateToFilter (filter_test.go)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores,min_entries,want",
    [
        ((10, 4, 3, 2), 3, False),  # confident: gap 0.6 >= 0.4
        ((10, 9, 8, 7), 3, True),  # ambiguous: gap 0.1 < 0.4
        ((10, 1), 3, False),  # fewer than min_entries
        ((10, 9), 3, False),  # ambiguous but too few entries
        ((10, 9), 2, True),
        ((0, 0, 0), 3, True),  # nothing matched at all
        ((10, 6.5, 1), 3, True),  # gap 0.35 < default threshold 0.4
        ((10, 6, 1), 3, False),  # gap exactly 0.4
    ],
)
def test_should_escalate(scores, min_entries, want):
    assert should_escalate(_scores(*scores), min_entries) is want


def test_should_escalate_defaults_to_three_entries():
    assert should_escalate(_scores(10, 9, 8)) is True
    assert should_escalate(_scores(10, 9)) is False


# --------------------------------------------------------------------------------------------
# The lexical scorer's weights (report §1.4)
# --------------------------------------------------------------------------------------------


def test_lexical_pack_score_weights():
    rg = _guide(
        packs=[
            {
                "name": "blog.rewrite_for_audience",
                "description": "Rewrite a post.",
                "metadata": {
                    "intent_keywords": ["rewrite for audience", "unmatched phrase"],
                    "accepts": ["markdown"],
                    "produces": ["blog_markdown"],
                },
            }
        ]
    )
    [r] = rank_lexical(rg, "rewrite markdown blog for audience")
    # keyword 3 + accepts 2*1 (markdown) + produces 2*2 (blog, markdown) + name 2*3 + description 1*1
    assert r.score == 3 + 2 + 4 + 6 + 1
    assert r.kind == "pack"


def test_lexical_keyword_phrase_needs_every_token_but_not_contiguity():
    rg = _guide(packs=[{"name": "zz.tool", "metadata": {"intent_keywords": ["rewrite audience"]}}])
    assert rank_lexical(rg, "audience: please rewrite")[0].score == 3
    assert rank_lexical(rg, "please rewrite this")[0].score == 0


def test_lexical_pipeline_score_weights():
    rg = _guide(
        pipelines=[
            {
                "id": "builtin.doc-blog",
                "name": "Doc blog",
                "description": "Turn a document into a post.",
                "metadata": {
                    "intent_keywords": ["blog from document"],
                    "accepts": ["pdf"],
                    "produces": ["blog_markdown"],
                    "supersedes": ["doc.parse", "blog.publish"],
                },
            }
        ]
    )
    [r] = rank_lexical(rg, "parse pdf document into blog")
    # keyword 3 + accepts 2*1 (pdf) + produces 2*1 (blog) + supersedes 2.5*(1 parse + 1 blog)
    # + name 2*1 (blog) + id 2*1 (blog) + description 1*2 (document, into)
    assert r.score == 3 + 2 + 2 + 5 + 2 + 2 + 2
    assert r.kind == "pipeline"


def test_prior_bonus_reorders_lexical():
    rg = _guide(
        packs=[
            {"name": "a.first", "description": "blog writer"},
            {"name": "b.second", "description": "blog writer"},
        ]
    )
    assert [r.id for r in rank_lexical(rg, "blog")] == ["a.first", "b.second"]
    ranked = rank_lexical(rg, "blog", prior={"b.second": 0.5})
    assert [r.id for r in ranked] == ["b.second", "a.first"]
    assert ranked[0].score == 1.5 and ranked[1].score == 1.0
    # Unknown ids in the prior are ignored; an empty prior changes nothing.
    assert rank_lexical(rg, "blog", prior={"nope": 9}) == rank_lexical(rg, "blog")
    assert rank_lexical(rg, "blog", prior={}) == rank_lexical(rg, "blog")


def test_rank_keeps_every_entry_including_zero_scores(make_big_catalog):
    rg = make_big_catalog(7, 3)
    for ranker in (rank_lexical, rank_bm25):
        ranked = ranker(rg, "keyword one")
        assert sorted(r.id for r in ranked) == sorted(rg.ids())
        assert len(ranked) == 10


# --------------------------------------------------------------------------------------------
# BM25
# --------------------------------------------------------------------------------------------


def _bm25_guide() -> RoutingGuide:
    return _guide(
        packs=[
            {"name": "email.send", "description": "Send a transactional email."},
            {
                "name": "doc.parse",
                "description": "Convert a document file to markdown.",
                "metadata": {"intent_keywords": ["parse pdf", "extract from document"], "accepts": ["pdf"]},
            },
            {"name": "image.generate", "description": "Generate an image from a text prompt."},
            {"name": "git.log", "description": "Show recent commit history."},
        ],
        pipelines=[{"id": "builtin.html-video", "name": "HTML composition to MP4", "description": "Render video."}],
    )


def test_bm25_ranks_matching_pack_first_and_returns_every_entry():
    rg = _bm25_guide()
    ranked = rank_bm25(rg, "parse this pdf document")
    assert ranked[0].id == "doc.parse"
    assert ranked[0].score > 0
    assert {r.id for r in ranked} == set(rg.ids())
    assert all(r.score == 0 for r in ranked[1:])
    assert [r.id for r in ranked[1:]] == sorted(r.id for r in ranked[1:])


def test_bm25_name_match_beats_description_mention():
    rg = _guide(
        packs=[
            {"name": "a.helper", "description": "Sometimes mentions screenshot in passing among many other words."},
            {"name": "z.screenshot", "description": "Capture the page."},
        ]
    )
    ranked = rank_bm25(rg, "screenshot")
    assert [r.id for r in ranked] == ["z.screenshot", "a.helper"]
    assert ranked[0].score > ranked[1].score > 0


def test_bm25_prior_and_empty_intent():
    rg = _bm25_guide()
    assert all(r.score == 0 for r in rank_bm25(rg, ""))
    ranked = rank_bm25(rg, "parse this pdf document", prior={"git.log": 100.0})
    assert ranked[0].id == "git.log"
    assert ranked[1].id == "doc.parse"


def test_bm25_on_empty_catalog():
    assert rank_bm25(RoutingGuide(), "anything") == []
    assert rank_lexical(RoutingGuide(), "anything") == []


def test_rankers_registry():
    from helmdeck_dspy.catalog.ranking import rank_embedding

    assert RANKERS == {"lexical": rank_lexical, "bm25": rank_bm25, "embedding": rank_embedding}
