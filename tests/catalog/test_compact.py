"""Catalog compaction: helmdeck's compact_test.go cases plus the guarantees we add on top.

Sizes are our own ``RoutingGuide.size_bytes()`` (compact JSON, one entry per line), not Go's
``json.Marshal``; caps derived from "full size" use that measure.
"""

from __future__ import annotations

import copy

import pytest

from helmdeck_dspy.catalog.compact import Trim, compact_catalog, first_sentence
from helmdeck_dspy.catalog.models import RoutingGuide

from .conftest import big_catalog_dict, budget

LABELS = [
    "pack.intent_keywords[]",
    "pack.typical_use",
    "pack.limitations[]",
    "pipeline.steps[].body",
    "pipeline.inputs/outputs.schema",
    "description.firstSentence",
]


def _over(trim: Trim) -> list[str]:
    return [d for d in trim.dropped if d.startswith("still_over_budget(")]


# --------------------------------------------------------------------------------------------
# Ports of compact_test.go
# --------------------------------------------------------------------------------------------


def test_tier_a_pass_through(make_big_catalog):
    full = make_big_catalog(10, 5)
    out, trim = compact_catalog(full, budget(0, "A"))
    assert len(out.packs) == 10 and len(out.pipelines) == 5
    assert trim.dropped == []
    assert trim.before_bytes == trim.after_bytes == full.size_bytes()
    assert out.render() == full.render()


def test_int_cap_zero_is_pass_through_too(make_big_catalog):
    full = make_big_catalog(10, 5)
    out, trim = compact_catalog(full, 0)
    assert trim.dropped == [] and out.render() == full.render()


def test_cap_just_below_full_size_strips_intent_keywords_first(make_big_catalog):
    full = make_big_catalog(10, 3)
    cap = full.size_bytes() - 100
    out, trim = compact_catalog(full, budget(cap))
    assert trim.dropped, "expected at least one drop"
    assert trim.dropped[0] == "pack.intent_keywords[]"
    for p in out.packs:
        assert p.metadata.intent_keywords == (), p.name
    # Only the first step was needed: 100 bytes are far less than 10 packs' keywords.
    assert trim.dropped == ["pack.intent_keywords[]"]
    assert all(p.metadata.typical_use for p in out.packs)


def test_aggressive_tier_c_cap_keeps_names_ids_and_supersedes(make_big_catalog):
    full = make_big_catalog(20, 8)
    out, trim = compact_catalog(full, budget(10000))
    assert [p.name for p in out.packs] == [f"synthetic.pack{i}" for i in range(20)]
    assert [p.id for p in out.pipelines] == [f"builtin.synthetic-pipe{i}" for i in range(8)]
    for p in out.pipelines:
        assert p.metadata.supersedes == ("old.pack.foo", "old.pack.bar")
        assert len(p.metadata.supersedes) == 2
    for label in LABELS[:5]:
        assert label in trim.dropped


def test_slim_pipeline_steps_keeps_id_name_pack(make_big_catalog):
    full = make_big_catalog(3, 1)
    out, trim = compact_catalog(full, budget(1500))
    assert "pipeline.steps[].body" in trim.dropped
    assert len(out.pipelines) == 1
    wire = out.pipelines[0].to_wire()["metadata"]
    steps = wire["steps"]
    assert len(steps) == 3
    step0 = steps[0]
    assert "input_template" not in step0
    assert "output_select" not in step0
    assert step0["id"] == "step1"
    assert step0["pack"] == "foo.parse"
    assert step0["name"] == "Parse the input"
    assert [s["pack"] for s in steps] == ["foo.parse", "foo.rewrite", "foo.publish"]
    # The rendered text no longer carries the step bodies at all.
    assert "input_template" not in out.render() and "output_select" not in out.render()


def test_first_sentence_step_fires_under_tiny_cap(make_big_catalog):
    full = make_big_catalog(15, 5)
    out, trim = compact_catalog(full, budget(600))
    assert "description.firstSentence" in trim.dropped
    for p in out.packs:
        assert p.description.count(".") <= 1, p.description
    for p in out.pipelines:
        assert p.description == "A pipeline that chains synthetic packs."


def test_still_over_budget_marker_and_after_bytes(make_big_catalog):
    full = make_big_catalog(50, 20)
    out, trim = compact_catalog(full, budget(100))
    over = _over(trim)
    assert over == [f"still_over_budget({out.size_bytes()}>100)"]
    assert trim.dropped[-1] == over[0], "the marker comes after every trim label"
    assert trim.dropped[:-1] == LABELS
    assert trim.after_bytes > 0
    assert trim.after_bytes == out.size_bytes()
    # Compaction never drops entries, even when it cannot fit.
    assert len(out.packs) == 50 and len(out.pipelines) == 20


@pytest.mark.parametrize(
    "text,want",
    [
        ("One sentence only", "One sentence only"),
        ("First sentence. Second sentence.", "First sentence."),
        ("Question? Then a statement.", "Question?"),
        ("Exclamation! Plus more.", "Exclamation!"),
        ("v0.13.0 is a version. Not a sentence end here.", "v0.13.0 is a version."),
        ("NoTerminator", "NoTerminator"),
        ("", ""),
        ("Ends at newline.\nNext line.", "Ends at newline."),
        ("Trailing period.", "Trailing period."),
        ("see helmdeck.plan for more. Then stop.", "see helmdeck.plan for more."),
    ],
)
def test_first_sentence(text, want):
    assert first_sentence(text) == want


def test_does_not_mutate_input(make_big_catalog):
    full = make_big_catalog(5, 2)
    dump_before = copy.deepcopy(full.model_dump())
    text_before = full.render()
    size_before = full.size_bytes()
    out, trim = compact_catalog(full, budget(500))
    assert len(trim.dropped) == 7  # all six steps and still_over_budget: every step touched the catalog
    assert full.model_dump() == dump_before
    assert full.render() == text_before
    assert full.size_bytes() == size_before
    assert full.packs[0].metadata.intent_keywords[0] == "keyword one"
    assert "input_template" in full.render()
    assert out.render() != text_before


# --------------------------------------------------------------------------------------------
# Beyond upstream
# --------------------------------------------------------------------------------------------


def _expected_after(packs: int, pipelines: int, steps_run: int) -> RoutingGuide:
    """The fixture with the first ``steps_run`` trim steps applied by hand, on plain dicts."""
    d = big_catalog_dict(packs, pipelines)
    for p in d["packs"]:
        m = p["metadata"]
        if steps_run >= 1:
            del m["intent_keywords"]
        if steps_run >= 2:
            del m["typical_use"]
        if steps_run >= 3:
            del m["limitations"]
        if steps_run >= 6:
            p["description"] = p["description"].split(". ")[0] + "."
    for p in d["pipelines"]:
        m = p["metadata"]
        if steps_run >= 4:
            m["steps"] = [{"id": s["id"], "name": s["name"], "pack": s["pack"]} for s in m["steps"]]
        if steps_run >= 5:
            m["inputs"] = [i["name"] for i in m["inputs"]]
            m["outputs"] = [o["name"] for o in m["outputs"]]
        if steps_run >= 6:
            p["description"] = "A pipeline that chains synthetic packs."
    return RoutingGuide.model_validate(d)


def test_steps_run_in_priority_order_and_stop_as_soon_as_it_fits(make_big_catalog):
    full = make_big_catalog(6, 3)
    sizes = [_expected_after(6, 3, k).size_bytes() for k in range(7)]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 7, sizes
    assert sizes[0] == full.size_bytes()
    for k in range(1, 7):
        expected = _expected_after(6, 3, k)
        # A cap equal to the size after step k fits exactly there ("len <= cap fits").
        out, trim = compact_catalog(full, budget(sizes[k]))
        assert trim.dropped == LABELS[:k], k
        assert out.render() == expected.render(), k
        assert out.model_dump() == expected.model_dump(), k
        assert (trim.before_bytes, trim.after_bytes) == (sizes[0], sizes[k])
        # One byte less needs the next step too (or ends over budget after the last).
        out, trim = compact_catalog(full, budget(sizes[k] - 1))
        if k < 6:
            assert trim.dropped == LABELS[: k + 1], k
        else:
            assert trim.dropped == [*LABELS, f"still_over_budget({sizes[6]}>{sizes[6] - 1})"]


def test_catalog_that_already_fits_is_untouched(make_big_catalog):
    full = make_big_catalog(3, 1)
    out, trim = compact_catalog(full, budget(full.size_bytes()))
    assert trim.dropped == []
    assert trim.before_bytes == trim.after_bytes == full.size_bytes()
    assert out == full


@pytest.mark.parametrize("cap", [0, 20000, 9000, 7000, 5000, 3000, 2500, 1000, 1])
def test_identity_fields_survive_every_compaction(make_big_catalog, cap):
    full = make_big_catalog(8, 4)
    out, trim = compact_catalog(full, budget(cap))
    assert [p.name for p in out.packs] == [p.name for p in full.packs]
    assert [p.id for p in out.pipelines] == [p.id for p in full.pipelines]
    assert [p.name for p in out.pipelines] == [p.name for p in full.pipelines]
    for before, after in zip(full.packs, out.packs):
        assert after.metadata.accepts == before.metadata.accepts == ("input_kind_a", "input_kind_b")
        assert after.metadata.produces == before.metadata.produces == ("output_kind_a",)
    for before, after in zip(full.pipelines, out.pipelines):
        assert after.metadata.supersedes == ("old.pack.foo", "old.pack.bar")
        assert after.metadata.accepts == ("source_a", "source_b")
        assert after.metadata.produces == ("target_x",)
        # Pipeline routing hints are never trimmed (steps 1-3 are pack-only).
        assert after.metadata.intent_keywords == ("do the thing", "transform this")
        assert [s.id for s in after.metadata.steps] == ["step1", "step2", "step3"]
    assert trim.after_bytes == out.size_bytes()
    for name in ("synthetic.pack7", "builtin.synthetic-pipe3", "old.pack.bar", "input_kind_b", "target_x"):
        assert name in out.render()


def test_io_schema_map_becomes_key_list():
    guide = RoutingGuide.model_validate(
        {
            "pipelines": [
                {
                    "id": "builtin.map-io",
                    "description": "Map shaped io. " + "Padding sentence. " * 20,
                    "metadata": {
                        "supersedes": ["x.y"],
                        "inputs": {"zeta": {"type": "string"}, "alpha": {"type": "int"}},
                        "outputs": {"result": {"type": "string", "description": "long " * 30}},
                    },
                }
            ]
        }
    )
    out, trim = compact_catalog(guide, 150)
    assert "pipeline.inputs/outputs.schema" in trim.dropped
    wire = out.pipelines[0].to_wire()["metadata"]
    assert sorted(wire["inputs"]) == ["alpha", "zeta"]
    assert wire["outputs"] == ["result"]
    assert wire["supersedes"] == ["x.y"]
    # The original still has the schemas.
    assert guide.pipelines[0].metadata.inputs["alpha"] == {"type": "int"}


def test_budget_object_and_int_cap_agree(make_big_catalog):
    full = make_big_catalog(12, 4)
    a_out, a_trim = compact_catalog(full, budget(6000))
    b_out, b_trim = compact_catalog(full, 6000)
    assert a_trim == b_trim
    assert a_out.render() == b_out.render()


def test_returned_trim_is_a_private_copy(make_big_catalog):
    # Results are memoised; mutating one caller's Trim must not leak into the next call.
    full = make_big_catalog(9, 2)
    _, first = compact_catalog(full, budget(3000))
    expected = list(first.dropped)
    first.dropped.append("tampered")
    first.after_bytes = -1
    _, second = compact_catalog(full, budget(3000))
    assert second.dropped == expected
    assert second.after_bytes >= 0


def test_pass_through_returns_the_input_object():
    """Documented: "the input itself when nothing ran" -- also for an equal catalog seen before."""
    first = RoutingGuide.model_validate(big_catalog_dict(4, 1))
    second = RoutingGuide.model_validate(big_catalog_dict(4, 1))
    assert first is not second
    assert compact_catalog(first, 0)[0] is first
    assert compact_catalog(second, 0)[0] is second


def test_parameter_descriptions_are_trimmed_only_on_catalogs_that_have_them():
    from helmdeck_dspy.catalog.models import Pack, RoutingGuide

    schema = {"type": "object", "properties": {"city": {"type": "string", "description": "The city to look up " * 8}}}
    packs = tuple(Pack(name=f"t{i}", description="Short.", parameters=schema) for i in range(20))
    with_params = RoutingGuide(packs=packs)
    cap = with_params.size_bytes() // 2
    trimmed, trim = compact_catalog(with_params, cap, signatures=False)
    assert "pack.parameters[].description" in trim.dropped and "pack.parameters->args" not in trim.dropped
    assert trimmed.packs[0].parameters == {"type": "object", "properties": {"city": {"type": "string"}}}
    assert with_params.packs[0].parameters == schema  # the input is untouched

    plain = RoutingGuide(packs=tuple(Pack(name=f"t{i}", description="Does a thing. " * 30) for i in range(20)))
    _, trim = compact_catalog(plain, plain.size_bytes() // 2)
    assert "pack.parameters[].description" not in trim.dropped
    assert "description.firstSentence" in trim.dropped


def test_argument_schemas_become_signature_lines_by_default():
    from helmdeck_dspy.catalog.models import Pack, RoutingGuide

    schema = {"type": "object", "required": ["city"],
              "properties": {"city": {"type": "string", "description": "The city to look up " * 8},
                             "days": {"type": "integer", "description": "How many days ahead"}}}
    with_params = RoutingGuide(packs=tuple(Pack(name=f"t{i}", description="Short.", parameters=schema)
                                           for i in range(20)))
    cap = with_params.size_bytes() // 2
    trimmed, trim = compact_catalog(with_params, cap)
    assert "pack.parameters->args" in trim.dropped and "pack.parameters[].description" not in trim.dropped
    pack = trimmed.packs[0]
    assert pack.args == "city: string, days?: integer"
    assert pack.parameters == schema  # kept whole for argument checks and constrained decoding
    assert '"args":"city: string, days?: integer"' in trimmed.render() and '"parameters"' not in trimmed.render()
    assert trim.after_bytes == trimmed.size_bytes() <= cap
    # The JSON Schema form keeps more bytes per tool than the signature.
    as_schema, _ = compact_catalog(with_params, cap, signatures=False)
    assert as_schema.size_bytes() > trimmed.size_bytes()


def test_signatures_can_be_switched_off_for_comparisons(make_budget):
    from helmdeck_dspy.catalog.models import Pack, RoutingGuide

    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "Query text " * 10}}}
    guide = RoutingGuide(packs=tuple(Pack(name=f"t{i}", parameters=schema) for i in range(10)))
    cap = guide.size_bytes() // 2
    on, _ = compact_catalog(guide, make_budget(cap))
    off, _ = compact_catalog(guide, make_budget(cap), signatures=False)
    assert on.packs[0].args == "q?: string" and off.packs[0].args == ""
    assert off.packs[0].parameters == {"type": "object", "properties": {"q": {"type": "string"}}}
