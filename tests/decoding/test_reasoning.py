"""Reasoning splitting: helmdeck's strip cases plus orphan, unclosed, nested and <thinking> tags."""

from __future__ import annotations

import pytest

from helmdeck_dspy.decoding.reasoning import (
    has_reasoning,
    split_reasoning,
    strip_reasoning,
)

PLAN = '{"steps":[{"order":1,"tool":"a","args":{},"rationale":"r"}],"complexity":"single-action"}'


def test_clean_json_unchanged_and_idempotent():
    assert strip_reasoning(PLAN) == PLAN
    assert strip_reasoning(strip_reasoning(PLAN)) == PLAN


@pytest.mark.parametrize(
    "wrapped",
    [
        f"<think>let me plan this</think>\n{PLAN}",
        f"<reasoning>pick a tool</reasoning>{PLAN}",
        f"[REASONING]weigh options[/REASONING]\n{PLAN}",
        f"<Think>x</Think>{PLAN}",
        f"<THINK>x</THINK>{PLAN}",
        f'<think type="planning">x</think>{PLAN}',
        f"<thinking>beyond helmdeck: thinking tags too</thinking>{PLAN}",
        f"<think>a<think>nested</think>c</think>{PLAN}",
    ],
)
def test_blocks_are_removed(wrapped):
    assert strip_reasoning(wrapped) == PLAN


def test_look_alike_tag_is_kept():
    text = "<TheReasoning>keep me</TheReasoning>"
    assert strip_reasoning(text) == text


def test_multiple_blocks_keep_the_text_between():
    out = strip_reasoning("<think>one</think>Partial answer fragment.<reasoning>two</reasoning>")
    assert out == "Partial answer fragment."


def test_multiline_body_with_json_inside_is_removed():
    text = '<think>\nmaybe {"wrong": "candidate"}\nor not\n</think>\n{"correct": "answer"}'
    out = strip_reasoning(text)
    assert "wrong" not in out
    assert out == '{"correct": "answer"}'


def test_unclosed_block_means_the_answer_never_started():
    s = split_reasoning('<think>I will answer {"steps": []} soon')
    assert s.unclosed and s.visible == ""
    assert '{"steps": []}' in s.reasoning


def test_text_before_an_unclosed_block_stays_visible():
    s = split_reasoning('{"steps":[]}\n<think>afterthought that was cut')
    assert s.unclosed and s.visible == '{"steps":[]}'


def test_orphan_close_keeps_only_what_follows():
    s = split_reasoning(f"the provider dropped the opener</think>\n{PLAN}")
    assert s.orphan_close and s.visible == PLAN
    assert "dropped the opener" in s.reasoning


def test_two_orphans_keep_what_follows_the_last():
    assert strip_reasoning("a</think>b</think>c") == "c"


def test_whitespace_is_trimmed_and_blank_runs_collapse():
    out = strip_reasoning('  <think>x</think>  \n\n{"a":1}  \n')
    assert out.startswith("{") and not out.endswith("\n")
    assert "\n\n\n" not in strip_reasoning("<think>x</think>\n\n\n\n\n\nbody\n\n\n\nmore")


def test_empty():
    assert strip_reasoning("") == ""


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<think>x</think>", True),
        ("<reasoning>y</reasoning>", True),
        ("[REASONING]z[/REASONING]", True),
        ("prefix <think>x</think> suffix", True),
        # Beyond helmdeck, which needed a well-formed block: any tag counts.
        ("<think>open but never closed", True),
        ("</think>orphan close", True),
        ("", False),
        ('{"a":1}', False),
        ("thinking is a word", False),
    ],
)
def test_has_reasoning(text, expected):
    assert has_reasoning(text) is expected


def test_kimi_style_long_block_then_three_step_plan():
    plan = (
        '{"steps":[{"order":1,"tool":"helmdeck.memory_store","args":{}},'
        '{"order":2,"tool":"blog.rewrite_for_audience","args":{}},'
        '{"order":3,"tool":"image.generate","args":{}}],"complexity":"pack-chain"}'
    )
    thinking = "<think>" + "The user wants three things. " * 400 + "</think>\n\n"
    out = strip_reasoning(thinking + plan)
    assert out.startswith("{") and '"complexity":"pack-chain"' in out


@pytest.mark.parametrize(
    "text",
    ["<think>a</think>b", "x</think>y<think>z", "<think><think>a</think>", "[REASONING]q", "plain"],
)
def test_idempotent(text):
    once = strip_reasoning(text)
    assert strip_reasoning(once) == once
