"""Trace records and their JSONL reading/writing (helmdeck_dspy.traces.record)."""

from __future__ import annotations

import json
import os

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import (
    TraceRecord,
    append_trace,
    records_from,
    write_jsonl_traces,
)


def rec(i: int, **extra) -> TraceRecord:
    return TraceRecord(id=f"r{i}", model="openrouter/x", content='{"steps":[]}', finish_reason="stop", **extra)


def test_unknown_fields_kept_through_model_dump():
    r = TraceRecord.model_validate({"id": "a", "custom_field": {"nested": [1, 2]}, "provider": "p"})
    dumped = r.model_dump(mode="json")
    assert dumped["custom_field"] == {"nested": [1, 2]}
    assert dumped["provider"] == "p"
    assert dumped["completion_tokens"] is None  # missing optional fields are null
    assert dumped["source"] == "live"


def test_unknown_fields_survive_write_and_read(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl_traces([TraceRecord.model_validate({"id": "a", "extra_thing": "kept"})], path)
    [back] = list(read_jsonl_traces(path))
    assert back.model_dump()["extra_thing"] == "kept"


def test_write_then_read_roundtrip(tmp_path):
    path = tmp_path / "sub" / "dir" / "t.jsonl"
    records = [rec(i, completion_tokens=i * 10, latency_ms=1.5) for i in range(3)]
    n = write_jsonl_traces(records, path)
    assert n == 3
    assert path.read_text(encoding="utf-8").count("\n") == 3
    back = list(read_jsonl_traces(path))
    assert back == records


def test_write_traces_counts_a_generator(tmp_path):
    path = tmp_path / "t.jsonl"
    assert write_jsonl_traces((rec(i) for i in range(5)), path) == 5
    assert write_jsonl_traces([], path) == 0
    assert path.read_text() == ""


def test_write_traces_unicode_not_escaped(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl_traces([rec(1, intent="café ☕")], path)
    assert "café ☕" in path.read_text(encoding="utf-8")


def _exploding(n_ok: int):
    for i in range(n_ok):
        yield rec(i)
    raise RuntimeError("boom mid-iteration")


def test_write_traces_atomic_no_partial_new_file(tmp_path):
    path = tmp_path / "t.jsonl"
    with pytest.raises(RuntimeError, match="boom"):
        write_jsonl_traces(_exploding(2), path)
    assert not path.exists()
    assert os.listdir(tmp_path) == []  # no temp file left behind


def test_write_traces_atomic_existing_target_untouched(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl_traces([rec(100), rec(101)], path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        write_jsonl_traces(_exploding(3), path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]


def test_write_traces_uses_temp_file_in_target_dir(tmp_path, monkeypatch):
    import helmdeck_dspy.io.atomic as mod  # write_jsonl_traces writes through fileio.atomic_writer

    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((str(src), str(dst)))
        assert not os.path.exists(dst) or open(dst).read() == "", "target written before the rename"
        return real_replace(src, dst)

    monkeypatch.setattr(mod.os, "replace", spy)
    path = tmp_path / "t.jsonl"
    write_jsonl_traces([rec(1)], path)
    [(src, dst)] = seen
    assert dst == str(path)
    assert os.path.dirname(src) == str(tmp_path)
    assert src != dst
    assert not os.path.exists(src)


def test_append_trace_appends(tmp_path):
    path = tmp_path / "new" / "t.jsonl"
    append_trace(rec(1), path)
    append_trace(rec(2), path)
    write_before = path.read_text().splitlines()
    assert len(write_before) == 2
    append_trace(rec(3), path)
    ids = [r.id for r in read_jsonl_traces(path)]
    assert ids == ["r1", "r2", "r3"]


def test_append_after_write(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl_traces([rec(1)], path)
    append_trace(rec(2), path)
    assert [r.id for r in read_jsonl_traces(path)] == ["r1", "r2"]


# --------------------------------------------------------------------------------------------
# Reading bad files
# --------------------------------------------------------------------------------------------


def _file(tmp_path, *lines: str):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bad_json_line_reported_with_file_and_line(tmp_path):
    path = _file(tmp_path, json.dumps({"id": "a"}), "", "{broken", json.dumps({"id": "b"}))
    it = read_jsonl_traces(path)
    assert next(it).id == "a"
    with pytest.raises(DataFileError) as info:
        next(it)
    assert str(info.value).startswith(f"{path}:3:")
    assert info.value.line == 3


def test_non_object_line_is_an_error(tmp_path):
    path = _file(tmp_path, "[1, 2]")
    with pytest.raises(DataFileError, match=r":1: .*JSON object"):
        list(read_jsonl_traces(path))


def test_skip_mode_reports_and_continues(tmp_path):
    path = _file(
        tmp_path,
        json.dumps({"id": "a"}),
        "not json at all",
        json.dumps({"id": "b", "completion_tokens": "abc"}),
        json.dumps({"id": ""}),
        json.dumps({"id": "c"}),
    )
    reported: list[DataFileError] = []
    got = list(read_jsonl_traces(path, on_error="skip", report=reported.append))
    assert [r.id for r in got] == ["a", "c"]
    assert [e.line for e in reported] == [2, 3, 4]
    assert all(str(e).startswith(f"{path}:{e.line}:") for e in reported)
    assert "completion_tokens" in str(reported[1])
    assert "'abc'" in str(reported[1])
    assert "id" in reported[2].detail


def test_skip_mode_without_report_is_silent(tmp_path):
    path = _file(tmp_path, "oops", json.dumps({"id": "x"}))
    assert [r.id for r in read_jsonl_traces(path, on_error="skip")] == ["x"]


def test_wrong_type_fails_with_line(tmp_path):
    path = _file(tmp_path, json.dumps({"id": "a"}), json.dumps({"id": "b", "completion_tokens": "abc"}))
    with pytest.raises(DataFileError) as info:
        list(read_jsonl_traces(path))
    err = info.value
    assert err.line == 2
    assert str(err).startswith(f"{path}:2: completion_tokens")
    assert "abc" in str(err)


def test_missing_id_fails(tmp_path):
    path = _file(tmp_path, json.dumps({"model": "m"}))
    with pytest.raises(DataFileError, match=r":1: id"):
        list(read_jsonl_traces(path))


def test_missing_file_is_a_data_file_error(tmp_path):
    with pytest.raises(DataFileError, match="cannot read"):
        list(read_jsonl_traces(tmp_path / "absent.jsonl"))


def test_long_bad_value_truncated_in_message(tmp_path):
    path = _file(tmp_path, json.dumps({"id": "a", "prompt_tokens": "x" * 500}))
    with pytest.raises(DataFileError) as info:
        list(read_jsonl_traces(path))
    assert "x" * 100 not in str(info.value)


def test_records_from_mixes_dicts_and_records():
    r = rec(1)
    out = records_from([r, {"id": "d", "weird": 1}])
    assert out[0] is r
    assert out[1].id == "d" and out[1].model_dump()["weird"] == 1


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_write_traces_file_mode_follows_umask(tmp_path):
    """An atomic rewrite must not leave the file with mkstemp's private 0600 mode: it should get
    the mode a plain open() would give (0666 & ~umask), as append_trace's files do."""
    old = os.umask(0o022)
    try:
        written = tmp_path / "written.jsonl"
        appended = tmp_path / "appended.jsonl"
        write_jsonl_traces([rec(1)], written)
        append_trace(rec(1), appended)
    finally:
        os.umask(old)
    assert (written.stat().st_mode & 0o777) == (appended.stat().st_mode & 0o777) == 0o644
