"""Catalog models: the wire form, rendering and sizes, immutability, and loading/validation errors."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from helmdeck_dspy.catalog.models import (
    Pack,
    Pipeline,
    RoutingGuide,
    load_catalog,
    parse_catalog,
)
from helmdeck_dspy.errors import CatalogError, DataFileError, HelmdeckError
from helmdeck_dspy.io.resources import default_catalog_path

from .conftest import big_catalog_dict


@pytest.fixture(scope="module")
def bundled() -> RoutingGuide:
    return load_catalog()


# --------------------------------------------------------------------------------------------
# The bundled catalog
# --------------------------------------------------------------------------------------------


def test_bundled_catalog_has_65_packs_and_23_pipelines(bundled):
    assert len(bundled.packs) == 65
    assert len(bundled.pipelines) == 23
    assert len(set(bundled.ids())) == 88
    names = [p.name for p in bundled.packs]
    assert names == sorted(names)  # like helmdeck's Registry.List()
    assert {"helmdeck.plan", "helmdeck.route", "doc.parse", "web.scrape"} <= set(names)
    assert bundled.pipelines[0].id == "builtin.grounded-deck"
    assert bundled.pipelines[-1].id == "builtin.repo-solve-branch"
    assert all(p.id.startswith("builtin.") for p in bundled.pipelines)


def test_bundled_catalog_keeps_upstream_routing_facts(bundled):
    packs = {p.name: p for p in bundled.packs}
    pipes = {p.id: p for p in bundled.pipelines}
    assert packs["doc.parse"].metadata.produces == ("markdown",)
    assert "pdf" in packs["doc.parse"].metadata.accepts
    assert pipes["builtin.grounded-deck"].metadata.supersedes == ("content.ground", "slides.outline", "slides.render")
    assert set(pipes["builtin.issue-to-pr"].metadata.supersedes) == {"github.get_issue", "swe.solve"}
    assert pipes["builtin.issue-to-pr"].metadata.produces == ("pr_url",)


def test_default_path_is_the_bundled_file(bundled):
    path = default_catalog_path()
    assert path.name == "routing-guide.json" and path.is_file()
    assert load_catalog(path).render() == bundled.render()
    assert load_catalog(str(path)).fingerprint == bundled.fingerprint


# --------------------------------------------------------------------------------------------
# Wire form and rendering
# --------------------------------------------------------------------------------------------


def test_wire_form_omits_empty_fields_but_keeps_metadata_object():
    rg = RoutingGuide.model_validate(
        {
            "packs": [{"name": "bare.pack"}, {"name": "x.y", "description": "", "metadata": {"accepts": [], "typical_use": ""}}],
            "pipelines": [{"id": "builtin.bare"}],
        }
    )
    assert rg.to_wire() == {
        "packs": [{"name": "bare.pack", "metadata": {}}, {"name": "x.y", "metadata": {}}],
        "pipelines": [{"id": "builtin.bare", "metadata": {}}],
    }
    assert rg.render() == (
        '{"packs":[\n{"name":"bare.pack","metadata":{}},\n{"name":"x.y","metadata":{}}\n],\n'
        '"pipelines":[\n{"id":"builtin.bare","metadata":{}}\n]}'
    )


def test_wire_form_field_order_and_pipeline_extras():
    p = Pipeline.model_validate(
        {
            "id": "builtin.p",
            "name": "P",
            "description": "Does p.",
            "metadata": {"supersedes": ["a.b"], "accepts": ["x"], "custom_hint": "kept"},
        }
    )
    wire = p.to_wire()
    assert list(wire) == ["id", "name", "description", "metadata"]
    assert wire["metadata"] == {"accepts": ["x"], "supersedes": ["a.b"], "custom_hint": "kept"}


def test_render_is_one_entry_per_line_and_valid_json(make_big_catalog):
    rg = make_big_catalog(4, 3)
    text = rg.render()
    assert json.loads(text) == rg.to_wire()
    lines = text.split("\n")
    entry_lines = [ln for ln in lines if ln.startswith(('{"name"', '{"id"'))]
    assert len(entry_lines) == 7
    for ln in entry_lines:
        json.loads(ln.rstrip(","))
    assert lines[0] == '{"packs":['
    assert lines[-1] == "]}"


def test_size_bytes_counts_utf8_bytes():
    rg = RoutingGuide.model_validate({"packs": [{"name": "p.q", "description": "Résumé — naïve ✓"}]})
    text = rg.render()
    assert "Résumé — naïve ✓" in text  # not escaped
    assert rg.size_bytes() == len(text.encode("utf-8"))
    assert rg.size_bytes() > len(text)


def test_round_trip_through_wire_form(make_big_catalog):
    rg = make_big_catalog(3, 2)
    again = parse_catalog(json.loads(rg.render()))
    assert again == rg
    assert again.render() == rg.render()
    assert again.fingerprint == rg.fingerprint
    changed = parse_catalog({**rg.to_wire(), "packs": rg.to_wire()["packs"][:2]})
    assert changed.fingerprint != rg.fingerprint


def test_ids_and_id_sets(make_big_catalog):
    rg = make_big_catalog(2, 2)
    assert rg.ids() == ["synthetic.pack0", "synthetic.pack1", "builtin.synthetic-pipe0", "builtin.synthetic-pipe1"]
    assert rg.id_set == frozenset(rg.ids())
    assert rg.pipeline_ids == frozenset({"builtin.synthetic-pipe0", "builtin.synthetic-pipe1"})
    assert rg.packs[0].entry_id == "synthetic.pack0" and rg.pipelines[1].entry_id == "builtin.synthetic-pipe1"


def test_catalog_objects_are_immutable(make_big_catalog):
    rg = make_big_catalog(2, 1)
    with pytest.raises(ValidationError):
        rg.packs = ()
    with pytest.raises(ValidationError):
        rg.packs[0].name = "other"
    with pytest.raises(ValidationError):
        rg.packs[0].metadata.intent_keywords = ()
    with pytest.raises(AttributeError):
        rg.packs[0].metadata.intent_keywords.append("x")  # tuples, not lists
    assert isinstance(rg.packs, tuple) and isinstance(rg.pipelines[0].metadata.supersedes, tuple)


def test_model_copy_drops_cached_render(make_big_catalog):
    rg = make_big_catalog(2, 1)
    text = rg.render()
    smaller = rg.model_copy(update={"packs": rg.packs[:1]})
    assert smaller.render() != text
    assert "synthetic.pack1" not in smaller.render()
    assert smaller.size_bytes() < rg.size_bytes()
    pack = rg.packs[0]
    _ = pack.wire_json
    renamed = pack.model_copy(update={"description": "Short."})
    assert '"description":"Short."' in renamed.wire_json


# --------------------------------------------------------------------------------------------
# Validation errors
# --------------------------------------------------------------------------------------------


def _write(tmp_path, content, name="catalog.json"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2), encoding="utf-8")
    return path


def test_catalog_error_hierarchy():
    assert issubclass(CatalogError, DataFileError) and issubclass(CatalogError, HelmdeckError)


def test_bad_json_names_file_and_line(tmp_path):
    path = _write(tmp_path, '{\n  "packs": [\n    {"name": "a.b",}\n  ],\n  "pipelines": []\n}\n')
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    err = info.value
    assert err.path == str(path)
    assert err.line == 3
    assert str(err).startswith(f"{path}:3: ")
    assert "not valid JSON" in str(err)


def test_pack_without_name(tmp_path):
    path = _write(tmp_path, {"packs": [{"name": "ok.pack"}, {"description": "nameless"}], "pipelines": []})
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    msg = str(info.value)
    assert str(path) in msg
    assert "packs.1.name" in msg
    assert info.value.line is None


def test_pack_with_empty_name(tmp_path):
    path = _write(tmp_path, {"packs": [{"name": ""}], "pipelines": []})
    with pytest.raises(CatalogError, match=r"packs\.0\.name"):
        load_catalog(path)


def test_pipeline_without_id_names_entry(tmp_path):
    path = _write(tmp_path, {"packs": [], "pipelines": [{"name": "Orphan pipe"}]})
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    msg = str(info.value)
    assert str(path) in msg and "pipelines.0.id" in msg and "Orphan pipe" in msg


def test_bad_field_type_names_entry(tmp_path):
    path = _write(tmp_path, {"packs": [{"name": "a.ok"}, {"name": "b.bad", "metadata": {"accepts": "pdf"}}]})
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    msg = str(info.value)
    assert str(path) in msg and "packs.1.metadata.accepts" in msg and "(b.bad)" in msg


def test_unknown_entry_field_is_rejected(tmp_path):
    path = _write(tmp_path, {"packs": [{"name": "a.ok", "nmae": "typo"}]})
    with pytest.raises(CatalogError, match=r"a\.ok"):
        load_catalog(path)


@pytest.mark.parametrize(
    "data,dup",
    [
        ({"packs": [{"name": "a.b"}, {"name": "c.d"}, {"name": "a.b"}]}, "a.b"),
        ({"pipelines": [{"id": "builtin.x"}, {"id": "builtin.x"}]}, "builtin.x"),
        ({"packs": [{"name": "same.id"}], "pipelines": [{"id": "same.id"}]}, "same.id"),
    ],
)
def test_duplicate_ids(tmp_path, data, dup):
    path = _write(tmp_path, data)
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    msg = str(info.value)
    assert str(path) in msg and "duplicate" in msg and repr(dup) in msg


@pytest.mark.parametrize("content", ["[]", '"catalog"', "null", "42"])
def test_top_level_must_be_an_object(tmp_path, content):
    path = _write(tmp_path, content)
    with pytest.raises(CatalogError, match="expected a JSON object") as info:
        load_catalog(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(CatalogError, match="cannot read") as info:
        load_catalog(path)
    assert info.value.path == str(path)


def test_non_utf8_file_raises_catalog_error(tmp_path):
    path = _write(tmp_path, b'{"packs": [{"name": "caf\xe9.pack"}], "pipelines": []}')
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert str(path) in str(info.value)


def test_parse_catalog_default_label_and_valid_data(make_big_catalog_dict):
    rg = parse_catalog(make_big_catalog_dict(3, 2))
    assert len(rg.packs) == 3 and len(rg.pipelines) == 2
    assert isinstance(rg.packs[0], Pack)
    with pytest.raises(CatalogError, match=r"^<catalog>: duplicate id 'x'"):
        parse_catalog({"packs": [{"name": "x"}, {"name": "x"}]})


def test_load_catalog_of_valid_file(tmp_path, make_big_catalog_dict):
    path = _write(tmp_path, make_big_catalog_dict(4, 2))
    rg = load_catalog(path)
    assert rg == RoutingGuide.model_validate(big_catalog_dict(4, 2))
