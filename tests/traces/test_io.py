"""Trace sets in JSONL, Parquet and HF datasets form: round trips keep every field."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.io import (
    detect_format,
    load_traces,
    load_traces_dataset,
    save_traces,
)
from helmdeck_dspy.traces.record import TraceRecord

RECS = [
    TraceRecord(id="a", source="sim:x", model="m/a", content="{}", finish_reason="stop", completion_tokens=3,
                latency_ms=12.5, raw_content_len=2, nested={"k": [1, 2]}),
    TraceRecord(id="b", source="published:adr-053", model="m/a", outcome_label="success", max_tokens=600),
]


@pytest.mark.parametrize("name", ["t.jsonl", "t.parquet", "ds"])
def test_round_trip(tmp_path, name):
    out = tmp_path / name
    assert save_traces(RECS, out) == 2
    back = list(load_traces(out))
    assert [r.model_dump() for r in back] == [r.model_dump() for r in RECS]


def test_detect_format(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"")
    assert detect_format(tmp_path / "x.parquet") == "parquet"
    with pytest.raises(DataFileError, match="no such file"):
        detect_format(tmp_path / "missing.jsonl")
    (tmp_path / "plain").mkdir()
    with pytest.raises(DataFileError, match="not a saved datasets"):
        detect_format(tmp_path / "plain")


def test_dataset_view(tmp_path):
    p = tmp_path / "t.jsonl"
    save_traces(RECS, p)
    ds = load_traces_dataset(p)
    assert ds.num_rows == 2 and ds[0]["id"] == "a" and json.loads(ds[0]["extra_json"]) == {"raw_content_len": 2, "nested": {"k": [1, 2]}}


def test_load_skips_bad_lines_when_asked(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"id": "a"}\n[1]\n{"id": ""}\n')
    seen = []
    assert [r.id for r in load_traces(p, on_error="skip", report=seen.append)] == ["a"]
    assert [e.line for e in seen] == [2, 3]
