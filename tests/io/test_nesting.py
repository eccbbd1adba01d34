"""Reading a top-level member of JSON text nested past what a recursive reader can parse."""

from __future__ import annotations

import pytest

from helmdeck_dspy.io.nesting import nesting_exceeds, top_level_scalar

DEEP = '{"k":' * 5000 + "1" + "}" * 5000


@pytest.mark.parametrize(("text", "expected"), [
    ('{"params": %s, "id": 7}' % DEEP, 7),
    ('{"id": "a", "params": %s}' % DEEP, "a"),
    ('{"params": {"id": 3}, "id": "top"}', "top"),  # a nested id is not the message's
    ('{"params": ["id", {"id": 9}]}', None),
    ('{"id": 1, "id": 2}', 2),  # the last, as Python's JSON reader takes it
    ('{"x": "},{\\"id\\": 5", "id": -4}', -4),  # brackets and quotes inside strings
    ('{"x": "' + '\\"' * 1000 + '\\\\", "id": 3}', 3),  # escaped quotes, then an escaped backslash
    ('{"x": [' + '"\\"' * 1000, None),  # a string that never closes
    ('  {"id" : "x,}" }', "x,}"),
    ('{"id": 1.5}', None), ('{"id": true}', None), ('{"id": null}', None), ('{"id": [1]}', None),
    ('[{"id": 1}]', None), ("not json", None), ("", None),
])
def test_top_level_scalar(text, expected):
    assert top_level_scalar(text, "id") == expected


def test_nesting_exceeds_counts_either_bracket():
    assert nesting_exceeds("[" * 129 + "]" * 129, 128) and not nesting_exceeds("[" * 128 + "]" * 128, 128)
    assert nesting_exceeds(DEEP, 128) and not nesting_exceeds("{}" * 1000, 1)
