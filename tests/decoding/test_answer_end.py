"""Where a streamed answer is complete (decoding.answer_end)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.decoding.answer_end import AnswerEnd, answer_end

CALLS = '[{"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}]'


def test_a_list_ends_at_its_closing_bracket_inside_a_fence_and_before_what_follows():
    text = f"```json\n{CALLS}\n```\nThat call gets the time. [{{\"name\": \"x\"}}]"
    end = answer_end(text, "list")
    assert text[:end] == f"```json\n{CALLS}"


def test_brackets_inside_strings_and_escaped_quotes_do_not_count():
    text = '[{"name": "echo", "arguments": {"text": "a ] b } \\" ] c"}}] tail'
    assert text[: answer_end(text, "list")] == text[: -len(" tail")]


def test_a_value_of_the_other_kind_is_skipped_and_the_scan_goes_on():
    text = 'I will call {"name": "a"} first: [{"name": "a", "arguments": {}}] done'
    assert text[: answer_end(text, "list")].endswith('"arguments": {}}]')
    assert answer_end(text, "object") == text.index("}") + 1


def test_an_unclosed_answer_has_no_end_and_a_lone_closer_is_ignored():
    assert answer_end('] } [{"name": "a", "arguments": {"x": [1, 2]', "list") is None
    assert answer_end("no JSON here at all", "object") is None


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_pieces_of_any_size_give_the_same_end_as_the_whole_text(size):
    text = f'Sure.\n```json\n{CALLS}\n```'
    scanner = AnswerEnd("list")
    found = None
    for i in range(0, len(text), size):
        found = scanner.feed(text[i : i + size])
        if found is not None:
            break
    assert found == answer_end(text, "list") == text.index(CALLS) + len(CALLS)
    assert scanner.feed("more") == found  # the end stays where it was found


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown answer kind 'tuple'"):
        AnswerEnd("tuple")  # type: ignore[arg-type]
