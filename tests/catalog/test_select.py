"""Budget-fitted selection: helmdeck's select_test.go cases, RestrictCatalog from filter_test.go,
and the selection guarantees we add (priors, full-catalog ranking, supersedes protection). Tests of
helmdeck's fixed top-N cut use ``helmdeck_budget`` (a budget row with ``max_catalog_entries``);
the default cut, which fills the byte cap, is tested in test_fill.py."""

from __future__ import annotations

import copy
import functools

import pytest

from helmdeck_dspy.catalog.compact import compact_catalog
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking import rank_lexical, should_escalate
from helmdeck_dspy.catalog.select import restrict_catalog
from helmdeck_dspy.catalog.select import select_catalog as _select_catalog

from .conftest import big_catalog_dict, budget, helmdeck_budget

select_catalog = functools.partial(_select_catalog, ranker="lexical", rank_source="compacted")
"""These tests pin helmdeck's own selection: its lexical ranker over the compacted catalog."""

TOP_N = "lexical.top_n"
LOW = "lexical.low_confidence"


def _has_over(dropped: list[str]) -> bool:
    return any(d.startswith("still_over_budget(") for d in dropped)


def _with(packs: int, pipelines: int, extra_packs=(), extra_pipelines=()) -> RoutingGuide:
    d = big_catalog_dict(packs, pipelines)
    d["packs"].extend(extra_packs)
    d["pipelines"].extend(extra_pipelines)
    return RoutingGuide.model_validate(d)


# --------------------------------------------------------------------------------------------
# Ports of select_test.go
# --------------------------------------------------------------------------------------------


def test_tier_a_pass_through(make_big_catalog):
    rg = make_big_catalog(10, 5)
    out, trim = select_catalog(rg, budget(0, "A"), "any intent here")
    assert len(out.packs) == 10 and len(out.pipelines) == 5
    assert trim.dropped == []
    assert out.render() == rg.render()
    assert trim.before_bytes == trim.after_bytes == rg.size_bytes()


def test_compaction_only_when_sufficient(make_big_catalog):
    rg = make_big_catalog(3, 1)
    cap = 2000  # below the full size (so compaction runs) but reachable by compaction
    assert rg.size_bytes() > cap
    out, trim = select_catalog(rg, budget(cap), "intent")
    assert trim.dropped and TOP_N not in trim.dropped and LOW not in trim.dropped
    assert not _has_over(trim.dropped)
    assert out.ids() == rg.ids()
    assert trim.after_bytes == out.size_bytes() <= cap


def test_upstream_cap_5000_on_three_packs_has_no_lexical(make_big_catalog):
    rg = make_big_catalog(3, 1)
    out, trim = select_catalog(rg, budget(5000), "intent")
    assert TOP_N not in trim.dropped
    assert out.ids() == rg.ids()


def test_lexical_escalation_caps_tier_c_at_twelve(make_big_catalog):
    rg = make_big_catalog(40, 15)
    out, trim = select_catalog(rg, helmdeck_budget(10000), "rewrite a blog for audience using markdown")
    assert TOP_N in trim.dropped
    assert _has_over(trim.dropped)
    total = len(out.packs) + len(out.pipelines)
    assert 1 <= total <= 12
    assert total == 12
    assert set(out.ids()) <= set(rg.ids())


def test_supersedes_pipeline_survives_top_n(make_big_catalog):
    rg = _with(
        50,
        1,
        extra_pipelines=[
            {
                "id": "builtin.target-pipeline",
                "name": "Target pipeline",
                "description": "supersedes important.pack.target",
                "metadata": {
                    "accepts": ["markdown"],
                    "produces": ["blog_markdown"],
                    "supersedes": ["important.pack.target"],
                },
            }
        ],
    )
    out, trim = select_catalog(rg, budget(8000), "use important.pack.target to do work")
    assert TOP_N in trim.dropped
    assert "builtin.target-pipeline" in [p.id for p in out.pipelines]
    assert out.pipelines[0].metadata.supersedes == ("important.pack.target",)


def test_no_still_over_budget_marker_when_compaction_suffices(make_big_catalog):
    rg = make_big_catalog(5, 2)
    for cap in (8000, 3000):
        _, trim = select_catalog(rg, budget(cap), "intent")
        assert not _has_over(trim.dropped), (cap, trim.dropped)
        assert TOP_N not in trim.dropped
    _, trim = select_catalog(rg, budget(3000), "intent")
    assert trim.dropped  # 3000 is below the full size, so compaction did run


# --------------------------------------------------------------------------------------------
# RestrictCatalog (filter_test.go)
# --------------------------------------------------------------------------------------------


def _small() -> RoutingGuide:
    return RoutingGuide.model_validate(
        {
            "packs": [{"name": "keep.this.pack"}, {"name": "drop.this.pack"}, {"name": "also.keep"}],
            "pipelines": [
                {
                    "id": "builtin.keep-this",
                    "name": "Keep",
                    "description": "keep this",
                    "metadata": {"supersedes": ["old.pack"]},
                },
                {"id": "builtin.drop-this"},
            ],
        }
    )


def test_restrict_keeps_listed_and_ignores_unknown():
    out = restrict_catalog(_small(), ["keep.this.pack", "also.keep", "builtin.keep-this", "unknown.id"])
    assert [p.name for p in out.packs] == ["keep.this.pack", "also.keep"]
    assert [p.id for p in out.pipelines] == ["builtin.keep-this"]
    assert "drop.this.pack" not in out.ids()


def test_restrict_orders_packs_then_pipelines_in_given_order():
    out = restrict_catalog(_small(), ["builtin.keep-this", "also.keep", "keep.this.pack"])
    assert out.ids() == ["also.keep", "keep.this.pack", "builtin.keep-this"]


def test_restrict_empty_keep_gives_empty_guide():
    out = restrict_catalog(_small(), [])
    assert out.packs == () and out.pipelines == ()
    assert out.render() == '{"packs":[],\n"pipelines":[]}'


def test_restrict_preserves_metadata():
    rg = _small()
    out = restrict_catalog(rg, ["builtin.keep-this"])
    assert len(out.pipelines) == 1
    assert out.pipelines[0].model_dump() == rg.pipelines[0].model_dump()
    assert out.pipelines[0].wire_json == rg.pipelines[0].wire_json
    assert out.pipelines[0].to_wire()["metadata"] == {"supersedes": ["old.pack"]}


def test_restrict_does_not_duplicate_repeated_ids():
    # A catalog never holds an id twice (parse_catalog rejects duplicates); restricting to a list
    # that repeats an id must not create one that does.
    out = restrict_catalog(_small(), ["also.keep", "also.keep", "builtin.keep-this", "builtin.keep-this"])
    assert out.ids() == ["also.keep", "builtin.keep-this"]


# --------------------------------------------------------------------------------------------
# Beyond upstream
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tier,n", [("B", 25), ("C", 12), ("A", 12)])
def test_top_n_per_tier(make_big_catalog, tier, n):
    rg = make_big_catalog(40, 15)
    out, trim = select_catalog(rg, helmdeck_budget(10000, tier), "keyword one input_kind_a")
    assert TOP_N in trim.dropped
    assert len(out.packs) + len(out.pipelines) == n
    assert trim.after_bytes == out.size_bytes()


def test_tier_b_keeps_everything_when_catalog_is_smaller_than_its_cap(make_big_catalog):
    rg = make_big_catalog(14, 6)  # 20 entries, over the byte cap even when compacted
    out, trim = select_catalog(rg, helmdeck_budget(3000, "B"), "anything")
    assert TOP_N in trim.dropped
    assert sorted(out.ids()) == sorted(rg.ids())
    out_c, _ = select_catalog(rg, helmdeck_budget(3000, "C"), "anything")
    assert len(out_c.ids()) == 12


def test_selected_entries_are_grouped_and_in_rank_order(make_big_catalog):
    rg = make_big_catalog(20, 10)
    intent = "transform this source_a into output_kind_a"
    out, trim = select_catalog(rg, helmdeck_budget(3000), intent)
    compacted, _ = compact_catalog(rg, helmdeck_budget(3000))
    top = rank_lexical(compacted, intent)[:12]
    assert out.ids() == [r.id for r in top if r.kind == "pack"] + [r.id for r in top if r.kind == "pipeline"]
    # Selected entries are the compacted ones.
    by_id = {p.name: p for p in compacted.packs} | {p.id: p for p in compacted.pipelines}
    for entry in (*out.packs, *out.pipelines):
        assert entry.wire_json == by_id[entry.entry_id].wire_json
    assert all(p.metadata.intent_keywords == () for p in out.packs)


def test_select_does_not_mutate_input(make_big_catalog):
    rg = make_big_catalog(30, 10)
    dump = copy.deepcopy(rg.model_dump())
    text = rg.render()
    for cap, tier in [(0, "A"), (20000, "C"), (3000, "B"), (3000, "C")]:
        select_catalog(rg, budget(cap, tier), "keyword one synthetic pack3", prior={"synthetic.pack29": 5})
        select_catalog(rg, budget(cap, tier), "keyword one", ranker="bm25", rank_source="full")
    assert rg.model_dump() == dump
    assert rg.render() == text


def test_prior_lifts_an_entry_into_the_selection(make_big_catalog):
    rg = make_big_catalog(30, 5)
    intent = "nothing matches here"
    out, _ = select_catalog(rg, budget(3000), intent)
    assert "synthetic.pack29" not in out.ids()
    out, trim = select_catalog(rg, budget(3000), intent, prior={"synthetic.pack29": 1.0})
    assert out.packs[0].name == "synthetic.pack29"
    assert trim.after_bytes == out.size_bytes()


def test_rank_source_full_finds_pack_whose_keywords_were_compacted_away():
    target = {
        "name": "zz.seabeast",
        "description": "Handles sea creatures.",
        "metadata": {"intent_keywords": ["summon kraken"]},
    }
    rg = _with(30, 0, extra_packs=[target])
    intent = "please summon the kraken"
    b = budget(2000)

    compacted, trim = compact_catalog(rg, b)
    assert "pack.intent_keywords[]" in trim.dropped and _has_over(trim.dropped)
    assert rank_lexical(compacted, intent)[0].score == 0  # the keyword is the only signal

    out, trim = select_catalog(rg, b, intent)  # helmdeck's behaviour: rank the compacted entries
    assert TOP_N in trim.dropped
    assert "zz.seabeast" not in out.ids()

    out, trim = select_catalog(rg, b, intent, rank_source="full")
    assert "zz.seabeast" in out.ids()
    assert out.packs[0].name == "zz.seabeast"
    assert len(out.ids()) == 12
    # The kept entry is still the compacted one.
    assert out.packs[0].metadata.intent_keywords == ()
    assert trim.after_bytes == out.size_bytes()


def _supersedes_case(intent_pack: str = "target.pack", pack_names=("target.pack",)):
    extra_packs = [{"name": n, "description": "Target."} for n in pack_names]
    pipe = {
        "id": "builtin.replacement-flow",
        "name": "Replacement flow",
        "description": "Replaces it.",
        "metadata": {"supersedes": ["target.pack"]},
    }
    rg = _with(30, 0, extra_packs=extra_packs, extra_pipelines=[pipe])
    intent = f"use {intent_pack} on input_kind_a and input_kind_b synthetic"
    return rg, intent


def test_pipeline_superseding_a_named_pack_survives_cut_despite_low_score():
    rg, intent = _supersedes_case()
    b = budget(2000)
    compacted, _ = compact_catalog(rg, b)
    ranked = rank_lexical(compacted, intent)
    position = [r.id for r in ranked].index("builtin.replacement-flow")
    assert position >= 12, "fixture must put the pipeline outside the top 12 by score"
    top12 = {r.id for r in ranked[:12]}

    out, trim = select_catalog(rg, b, intent)
    assert TOP_N in trim.dropped
    assert len(out.ids()) == 12
    assert "builtin.replacement-flow" in out.ids()
    # It displaced exactly one entry, the lowest ranked of the top 12.
    assert set(out.ids()) == (top12 - {ranked[11].id}) | {"builtin.replacement-flow"}


def test_pipeline_superseding_an_unnamed_pack_is_not_forced_in():
    rg, _ = _supersedes_case()
    intent = "use input_kind_a and input_kind_b synthetic"
    out, trim = select_catalog(rg, budget(2000), intent)
    assert TOP_N in trim.dropped
    assert "builtin.replacement-flow" not in out.ids()


def test_supersedes_protection_needs_the_pack_name_not_a_longer_identifier():
    # The intent names ``target.pack_v2``, a different pack; ``target.pack`` is only a prefix of it.
    rg, intent = _supersedes_case(intent_pack="target.pack_v2", pack_names=("target.pack", "target.pack_v2"))
    ranked = rank_lexical(compact_catalog(rg, budget(2000))[0], intent)
    assert [r.id for r in ranked].index("builtin.replacement-flow") >= 12  # not in by score
    out, trim = select_catalog(rg, budget(2000), intent)
    assert TOP_N in trim.dropped
    assert "builtin.replacement-flow" not in out.ids()


@pytest.mark.parametrize(
    "intent,escalates",
    [
        ("nothing matches here", True),  # every score 0
        ("kraken", False),  # one clear winner
        ("keyword one input_kind_a", True),  # 30 identical synthetic packs tie
    ],
)
def test_low_confidence_marked_exactly_when_should_escalate(intent, escalates):
    rg = _with(30, 3, extra_packs=[{"name": "zz.kraken", "description": "Sea creature."}])
    b = budget(2000)
    out, trim = select_catalog(rg, b, intent)
    assert TOP_N in trim.dropped
    compacted, _ = compact_catalog(rg, b)
    assert should_escalate(rank_lexical(compacted, intent)) is escalates
    assert (LOW in trim.dropped) is escalates
    assert trim.dropped[-1] == (LOW if escalates else TOP_N)


def test_low_confidence_never_marked_without_top_n(make_big_catalog):
    rg = make_big_catalog(5, 2)
    _, trim = select_catalog(rg, budget(3000), "nothing matches here")
    assert TOP_N not in trim.dropped and LOW not in trim.dropped


@pytest.mark.parametrize(
    "cap,tier",
    [(0, "A"), (100000, "C"), (20000, "C"), (6000, "B"), (3000, "C"), (100, "C")],
)
def test_after_bytes_matches_returned_catalog(make_big_catalog, cap, tier):
    rg = make_big_catalog(25, 8)
    out, trim = select_catalog(rg, budget(cap, tier), "transform this keyword one")
    assert trim.after_bytes == out.size_bytes()
    assert trim.before_bytes == rg.size_bytes()


def test_bm25_ranker_in_select():
    rg = _with(30, 2, extra_packs=[{"name": "zz.kraken", "description": "Summons the sea creature."}])
    out, trim = select_catalog(rg, helmdeck_budget(2000), "summon the kraken", ranker="bm25")
    assert "bm25.top_n" in trim.dropped and TOP_N not in trim.dropped  # the marker names its ranker
    assert out.packs[0].name == "zz.kraken"
    assert len(out.ids()) == 12


def test_unknown_ranker_is_rejected(make_big_catalog):
    with pytest.raises(ValueError, match="unknown ranker"):
        select_catalog(make_big_catalog(2, 1), budget(1000), "x", ranker="nope")


def test_empty_catalog_under_tiny_cap():
    out, trim = select_catalog(RoutingGuide(), budget(5), "anything")
    assert out.ids() == []
    assert TOP_N in trim.dropped and LOW not in trim.dropped
    assert trim.after_bytes == out.size_bytes()


@pytest.mark.parametrize("cap,tier,n", [(10000, "C", 12), (22000, "B", 25)])
def test_bundled_catalog_escalates_to_lexical_on_tiers_b_and_c(cap, tier, n):
    from helmdeck_dspy.catalog.models import load_catalog

    rg = load_catalog()
    out, trim = select_catalog(rg, helmdeck_budget(cap, tier), "parse this pdf and turn it into a blog post")
    assert _has_over(trim.dropped) and TOP_N in trim.dropped
    assert len(out.ids()) == n
    assert "doc.parse" in out.ids() and "builtin.doc-rewrite-blog" in out.ids()

    out, _ = select_catalog(rg, helmdeck_budget(cap, tier), "use blog.rewrite_for_audience to rewrite my notes for executives")
    assert "blog.rewrite_for_audience" in out.ids()
    for p in rg.pipelines:
        if "blog.rewrite_for_audience" in p.metadata.supersedes:
            assert p.id in out.ids()
