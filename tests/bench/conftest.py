"""A tiny BFCL-format data folder written by the tests (our own made-up questions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

QUESTIONS = [
    {
        "id": "parallel_0",
        "question": [[{"role": "user", "content": "Convert 10 euros and 25 euros to yen."}]],
        "function": [{
            "name": "money.convert",
            "description": "Convert an amount between two currencies.",
            "parameters": {"type": "dict", "properties": {
                "amount": {"type": "float", "description": "How much money."},
                "source": {"type": "string", "description": "Currency code to convert from."},
                "target": {"type": "string", "description": "Currency code to convert to."},
                "rounding": {"type": "integer", "description": "Decimal places.", "default": 2},
            }, "required": ["amount", "source", "target"]},
        }],
    },
    {
        "id": "parallel_1",
        "question": [[{"role": "system", "content": "You are helpful."},
                      {"role": "user", "content": "How tall is the Eiffel tower and when did it open?"}]],
        "function": [{
            "name": "landmark_facts",
            "description": "Look up facts about a famous landmark.",
            "parameters": {"type": "dict", "properties": {
                "landmark": {"type": "string", "description": "The landmark's name."},
                "facts": {"type": "array", "items": {"type": "string"}, "description": "Which facts."},
                "location": {"type": "tuple", "items": {"type": "float"}, "description": "(lat, lon)."},
                "extra": {"type": "any", "description": "Anything else."},
            }, "required": ["landmark", "facts"]},
        }],
    },
]
ANSWERS = [
    {"id": "parallel_0", "ground_truth": [
        {"money.convert": {"amount": [10.0], "source": ["EUR", "euro"], "target": ["JPY"], "rounding": ["", 2]}},
        {"money.convert": {"amount": [25.0], "source": ["EUR", "euro"], "target": ["JPY"], "rounding": ["", 2]}},
    ]},
    {"id": "parallel_1", "ground_truth": [
        {"landmark_facts": {"landmark": ["Eiffel Tower"], "facts": [["height", "opening date"]],
                            "location": [""], "extra": [""]}},
    ]},
]


def write_bfcl(root: Path, category: str = "parallel", questions=QUESTIONS, answers=ANSWERS) -> Path:
    (root / "possible_answer").mkdir(parents=True, exist_ok=True)
    (root / f"BFCL_v4_{category}.json").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (root / "possible_answer" / f"BFCL_v4_{category}.json").write_text("".join(json.dumps(a) + "\n" for a in answers))
    return root


@pytest.fixture
def bfcl_dir(tmp_path: Path) -> Path:
    return write_bfcl(tmp_path / "bfcl")


@pytest.fixture
def shapes_dir(tmp_path: Path) -> Path:
    """A data folder with one question of every shape of the full BFCL v4 layout (see shapes.py)."""
    from tests.bench.bfcl.shapes import write_all_shapes

    return write_all_shapes(tmp_path / "shapes")
