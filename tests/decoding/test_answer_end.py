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


def fed(text: str, size: int) -> tuple[AnswerEnd, int | None]:
    """A list scanner fed ``text`` in pieces of ``size`` until it finds the end, and that end."""
    scanner = AnswerEnd("list")
    for i in range(0, len(text), size):
        found = scanner.feed(text[i : i + size])
        if found is not None:
            return scanner, found
    return scanner, None


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_pieces_of_any_size_give_the_same_end_as_the_whole_text(size):
    text = f'Sure.\n```json\n{CALLS}\n```'
    scanner, found = fed(text, size)
    assert found == answer_end(text, "list") == text.index(CALLS) + len(CALLS)
    assert scanner.feed("more") == found  # the end stays where it was found


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown answer kind 'tuple'"):
        AnswerEnd("tuple")  # type: ignore[arg-type]


ORDER = '{"name": "place_order", "arguments": {"symbol": "TSLA", "amount": 100}, "result": "{\\"order_id\\": %d}"}'


@pytest.mark.parametrize("size", [1, 5, 64, 100000])
def test_a_list_that_repeats_one_call_is_stopped_at_its_third_writing(size):
    # a small model's runaway: the same call again and again, an invented result counting up
    text = "```json\n[\n" + ",\n".join([ORDER % (12446 + i) for i in range(40)])
    scanner, found = fed(text, size)
    third = text.index(ORDER % 12448) + len(ORDER % 12448)
    assert found == third and scanner.runaway  # the invented result does not make the calls differ


def test_calls_that_differ_in_name_or_arguments_and_a_closed_list_are_not_runaways():
    calls = [f'{{"name": "cd", "arguments": {{"folder": "{d}"}}}}' for d in ("a", "b", "c", "d")]
    text = "[" + ", ".join(calls + ['{"name": "cd", "arguments": {"folder": "a"}}']) + "]"
    scanner = AnswerEnd("list")
    assert scanner.feed(text) == len(text) and not scanner.runaway  # "a" twice: not yet a runaway
    spaced = '[{"name": "ls", "arguments": {}}, {"arguments": {},  "name": "ls"}, {"name":"ls","arguments":{}}'
    scanner = AnswerEnd("list")
    assert scanner.feed(spaced) == len(spaced) and scanner.runaway  # key order and spacing do not count
    assert AnswerEnd("object").feed('{"a": [{"x": 1}, {"x": 1}, {"x": 1}]') is None  # only a list answer is counted
