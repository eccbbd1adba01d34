"""What every shipped configuration sends the model is pinned byte for byte (see
``tests/program/prompt_snapshots.py`` for the configurations and how to accept a change)."""

from __future__ import annotations

import json

import pytest

from tests.program.prompt_snapshots import SHIPPED, SNAPSHOTS, capture


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_request_matches_its_snapshot(name):
    pinned = json.loads((SNAPSHOTS / f"{name}.json").read_text("utf-8"))
    sent = capture(name)
    assert sent == pinned, (f"{name}: the request sent differs from tests/snapshots/prompts/{name}.json; if the change "
                            "is meant, run: .venv/bin/python -m tests.program.prompt_snapshots tests/snapshots/prompts")


def test_every_snapshot_file_is_a_shipped_configuration():
    assert {p.stem for p in SNAPSHOTS.glob("*.json")} == set(SHIPPED)
