"""One line decoder: every JSONL reader describes a bad line with the same text."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.evaluation.runner import evaluate
from helmdeck_dspy.io.jsonl import (
    TORN,
    iter_jsonl,
    line_ranges,
    range_lines,
    text_lines,
)
from helmdeck_dspy.traces.io import load_traces, read_jsonl_traces

GOOD = json.dumps({"id": "ok", "model": "m/x", "content": "{}"})
BAD = {
    "{oops": "expected one JSON object per line: Expecting property name enclosed in double quotes (column 2)",
    "[1, 2]": "expected a JSON object, got list",
    '{"id": "a", "note": "\\udb19"}': "a string holds an unpaired surrogate escape (\\udb19), which is not valid text",
    '{"id": "a", "x": ' + "[" * 200 + "]" * 200 + "}": "nested more than 128 levels deep",
}


@pytest.mark.parametrize("line", list(BAD))
def test_every_reader_gives_the_same_detail(tmp_path, line):
    path = tmp_path / "t.jsonl"
    path.write_text(f"{GOOD}\n{line}\n{GOOD}\n", encoding="utf-8")
    want = f"{path}:2: {BAD[line]}"
    for reader in (read_jsonl_traces, load_traces):
        errors: list[DataFileError] = []
        assert len(list(reader(path, on_error="skip", report=errors.append))) == 2
        assert [str(e) for e in errors] == [want]
    skipped: list[DataFileError] = []
    assert len(list(iter_jsonl(path, on_error="skip", report=skipped.append))) == 2
    assert [str(e) for e in skipped] == [want]
    for workers in (1, 2):
        assert evaluate([path], on_error="skip", workers=workers, progress=False).errors == [want]


def test_a_torn_last_line_and_a_record_error_read_the_same_everywhere(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(f'{GOOD}\n{{"id": "b", "max_tokens": "lots"}}\n{{"id": "c", "cont', encoding="utf-8")
    wrong = f"{path}:2: max_tokens: Input should be a valid integer, unable to parse string as an integer (got 'lots')"
    for reader in (read_jsonl_traces, load_traces):
        errors: list[DataFileError] = []
        list(reader(path, on_error="skip", report=errors.append))
        assert [str(e) for e in errors] == [wrong, f"{path}:3: {TORN}"]
    assert evaluate([path], on_error="skip", progress=False).errors == [wrong, f"{path}:3: {TORN}"]


def test_byte_ranges_cover_every_line_once(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(b'{"n": %d}\n' % i for i in range(10)) + b"\n" + b'{"n": 10}')
    whole = list(text_lines(path))
    pieces = [item for start, end, first, _ in line_ranges(path, 3) for item in range_lines(path, start, end, first)]
    assert pieces == whole and [n for n, _ in whole] == [*range(1, 11), 12]
