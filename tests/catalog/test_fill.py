"""The default ranking cut fills the byte cap (select.cut_ranked); a budget row's
max_catalog_entries restores helmdeck's fixed top N."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.compact import compact_catalog
from helmdeck_dspy.catalog.models import Pack, RoutingGuide, load_catalog
from helmdeck_dspy.catalog.ranking import rank_bm25
from helmdeck_dspy.catalog.select import cut_ranked, select_catalog

from .conftest import budget, helmdeck_budget


def test_rendered_bytes_matches_the_rendered_catalog(make_big_catalog):
    for guide in (RoutingGuide(), make_big_catalog(3, 0), make_big_catalog(0, 2), make_big_catalog(7, 4), load_catalog()):
        packs = [p.wire_bytes for p in guide.packs]
        pipes = [p.wire_bytes for p in guide.pipelines]
        assert RoutingGuide.rendered_bytes(packs, pipes) == guide.size_bytes()


@pytest.mark.parametrize("cap,tier", [(10000, "C"), (22000, "B"), (14000, "C")])
def test_the_default_cut_keeps_more_than_top_n_and_stays_under_the_cap(make_big_catalog, cap, tier):
    rg = make_big_catalog(80, 20)
    intent = "transform this keyword one"
    fixed, _ = select_catalog(rg, helmdeck_budget(cap, tier), intent)
    filled, trim = select_catalog(rg, budget(cap, tier), intent)
    assert set(fixed.ids()) < set(filled.ids())  # the fixed cut's entries, and more
    assert trim.after_bytes == filled.size_bytes() <= cap
    # Nothing left out would still have fit.
    compacted, _ = compact_catalog(rg, budget(cap, tier))
    smallest = min(e.wire_bytes for e in (*compacted.packs, *compacted.pipelines) if e.entry_id not in filled.id_set)
    assert filled.size_bytes() + smallest + 2 > cap


def test_the_floor_is_kept_even_when_it_is_over_the_cap():
    big = "word " * 400
    guide = RoutingGuide(packs=tuple(Pack(name=f"t{i}", description=big) for i in range(30)))
    ranked = rank_bm25(guide, "word")
    kept = cut_ranked(ranked, guide, 12, max_bytes=1000)
    assert len(kept) == 12  # each entry alone is over 1000 bytes: the tier's floor still holds


def test_protected_entries_take_the_places_of_the_lowest_ranked():
    guide = RoutingGuide(packs=tuple(Pack(name=f"t{i:02d}", description=f"tool {i}") for i in range(20)))
    ranked = rank_bm25(guide, "tool")
    kept = cut_ranked(ranked, guide, 5, must_keep=["t19", "missing"])
    ids = [r.id for r in kept]
    assert len(ids) == 5 and "t19" in ids and ids[:4] == [r.id for r in ranked if r.id != "t19"][:4]


def test_signatures_buy_more_tools_than_json_schemas():
    schema = {"type": "object", "required": ["path"],
              "properties": {"path": {"type": "string", "description": "Where to look " * 5},
                             "depth": {"type": "integer", "description": "How deep " * 5}}}
    guide = RoutingGuide(packs=tuple(Pack(name=f"tool{i}", description=f"Does thing {i}.", parameters=schema)
                                     for i in range(120)))
    with_sig, _ = select_catalog(guide, budget(8000), "thing")
    with_schema, _ = select_catalog(guide, budget(8000), "thing", signatures=False)
    assert len(with_sig.ids()) > len(with_schema.ids()) >= 12
    assert with_sig.size_bytes() <= 8000 and with_schema.size_bytes() <= 8000
