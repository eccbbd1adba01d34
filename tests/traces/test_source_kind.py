"""source_kind: the one rule from a record's ``source`` to the kind of evidence it is."""

from __future__ import annotations

import pytest

from helmdeck_dspy.traces.record import (
    MEASURED_KINDS,
    TraceRecord,
    is_measured,
    is_simulated,
    source_kind,
)


@pytest.mark.parametrize(("source", "kind"), [
    ("live", "live"),
    ("import:openai", "imported"),
    ("import:llamastack", "imported"),
    ("published:adr-053", "published"),
    ("published", "published"),
    ("sim:frontier-like", "sim:frontier-like"),
    ("sim:nemotron-like", "sim:nemotron-like"),
    ("sim:", "sim:unnamed"),
    ("sim", "sim:unnamed"),
    ("replay", "replay"),
    ("replay:eval/traces/x.jsonl", "replay"),
    ("", "unknown"),
    (None, "unknown"),
    ("handwritten", "unknown"),
    ("simulated", "unknown"),  # only the exact ``sim`` head is the simulator
])
def test_source_kind(source, kind):
    assert source_kind(source) == kind


def test_a_record_without_a_source_is_live():
    assert source_kind(TraceRecord(id="r").source) == "live"


def test_simulated_and_measured_kinds():
    assert MEASURED_KINDS == ("live", "imported", "published")
    assert all(is_measured(k) and not is_simulated(k) for k in MEASURED_KINDS)
    assert is_simulated("sim:frontier-like") and not is_measured("sim:frontier-like")
    for kind in ("replay", "unknown"):  # neither a measurement nor known to be simulated
        assert not is_measured(kind) and not is_simulated(kind)
