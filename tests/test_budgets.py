"""Budget table: helmdeck's lookup cases, our settled inconsistencies, and table validation."""

from __future__ import annotations

import pytest

from helmdeck_dspy.budgets import (
    budget_for,
    load_budget_table,
    parse_budget_table,
    resolve_prompt_variant,
)
from helmdeck_dspy.errors import BudgetTableError


@pytest.fixture(scope="module")
def table():
    return load_budget_table()


def test_seeded_with_helmdecks_rows_and_fallback(table):
    # 29 upstream rows plus 3 explicit rows settling documented inconsistencies.
    assert len(table.rows) == 35
    assert [r.source for r in table.rows[:29]] == ["helmdeck budgets.go"] * 29
    fb = table.fallback
    assert (fb.tier, fb.input_tokens, fb.output_tokens, fb.max_catalog_bytes) == ("C", 16000, 1500, 10000)
    assert fb.allows_llm_filter and fb.filter_model == ""
    assert not (fb.is_hybrid_reasoning or fb.wants_strict_json or fb.supports_prefix_cache)
    assert fb.cached_input_cost_usd_per_mtok == 0


def test_exact_match_echoes_model(table):
    b = budget_for("openrouter/openrouter/free", table)
    assert (b.tier, b.max_catalog_bytes, b.model, b.matched) == ("C", 10000, "openrouter/openrouter/free", "openrouter/openrouter/free")


@pytest.mark.parametrize(
    "model,tier",
    [
        ("anthropic/claude-haiku-4-5", "A"),
        ("anthropic/claude-opus-4-7-20260301", "A"),
        ("openrouter/anthropic/claude-sonnet-4-6", "A"),
        ("openrouter/nvidia/nemotron-3-super-120b-a12b:free", "C"),
        ("openrouter/z-ai/glm-4.5-air:free", "C"),
        ("openrouter/meta-llama/llama-3.1-70b-instruct", "B"),
        ("openai/o3-mini", "A"),
        ("google/gemini-2.5-pro", "A"),
        ("google/gemini-2.5-flash", "A"),
        ("anthropic/claude-3.7-sonnet", "A"),
        ("openrouter/openai/o3-mini", "A"),
        ("openrouter/google/gemini-2.5-pro", "A"),
        ("openrouter/deepseek/deepseek-v4-pro", "B"),
        ("openrouter/deepseek/deepseek-v3.2", "B"),
        ("openrouter/x-ai/grok-4", "B"),
        ("openrouter/moonshotai/kimi-k2.6", "C"),
        ("openrouter/moonshotai/kimi-k2.6:free", "C"),
        ("openrouter/tencent/hy3-preview", "C"),
    ],
)
def test_prefix_to_tier(table, model, tier):
    b = budget_for(model, table)
    assert b.tier == tier
    assert b.model == model


def test_every_tier_a_row_sends_the_full_catalog(table):
    tier_a = [r for r in table.rows if r.tier == "A"]
    assert tier_a and all(r.max_catalog_bytes == 0 for r in tier_a)


@pytest.mark.parametrize("model", ["brand-new-vendor/model-x:v3", ""])
def test_unknown_falls_back_to_tier_c(table, model):
    b = budget_for(model, table)
    assert (b.tier, b.max_catalog_bytes, b.matched, b.model) == ("C", 10000, "fallback", model)


def test_model_is_trimmed_before_lookup(table):
    b = budget_for("  anthropic/claude-sonnet-4-6\n", table)
    assert b.model == "anthropic/claude-sonnet-4-6"
    assert b.matched == "anthropic/claude-sonnet-"


@pytest.mark.parametrize(
    "tier,explicit,expected",
    [
        ("A", "", "full_steps"),
        ("B", "", "full_steps"),
        ("C", "", "single_pick"),
        ("", "", "single_pick"),
        ("Z", "", "single_pick"),
        ("C", "full_steps", "full_steps"),
        ("A", "single_pick", "single_pick"),
    ],
)
def test_resolve_prompt_variant(tier, explicit, expected):
    assert resolve_prompt_variant(tier, explicit) == expected


def test_longest_prefix_wins(table):
    b = budget_for("openrouter/anthropic/claude-3-5-sonnet", table)
    assert b.tier == "A" and b.matched == "openrouter/anthropic/claude-"
    # kimi-k2 is longer than kimi- and wins for kimi-k2.6
    assert budget_for("openrouter/moonshotai/kimi-k2.6", table).matched == "openrouter/moonshotai/kimi-k2"
    assert budget_for("openrouter/moonshotai/kimi-latest", table).matched == "openrouter/moonshotai/kimi-"
    # gpt-4o-mini rides the gpt-4o prefix
    assert budget_for("openai/gpt-4o-mini", table).matched == "openai/gpt-4o"


def test_longest_prefix_wins_whatever_the_row_order():
    # Two different prefixes of equal length cannot both prefix one id, and duplicate
    # `match` strings are rejected, so "ties go to the earlier row" reduces to row order
    # never mattering for prefixes of different lengths.
    rows = _row("vendor/", tier='"B"') + _row("vendor/model-", tier='"A"') + _row("v", tier='"C"')
    t = parse_budget_table(_FALLBACK + rows)
    assert t.lookup("vendor/model-x").tier == "A"
    assert t.lookup("vendor/other").tier == "B"
    assert t.lookup("vx").tier == "C"
    reversed_rows = _row("v", tier='"C"') + _row("vendor/model-", tier='"A"') + _row("vendor/", tier='"B"')
    assert parse_budget_table(_FALLBACK + reversed_rows).lookup("vendor/model-x").tier == "A"


def test_exact_match_beats_a_longer_prefix_row_listed_first():
    rows = _row("vendor/model-1-long", tier='"A"') + _row("vendor/model-1", tier='"C"') + _row("vendor/", tier='"B"')
    t = parse_budget_table(_FALLBACK + rows)
    assert t.lookup("vendor/model-1").tier == "C"
    assert t.lookup("vendor/model-1-longer").tier == "A"


@pytest.mark.parametrize(
    "model,hybrid",
    [
        ("anthropic/claude-3.7-sonnet", True),
        ("openai/o3-mini", True),
        ("openrouter/openai/o3-mini", True),
        ("openrouter/deepseek/deepseek-v4-pro", True),
        ("openrouter/moonshotai/kimi-k2.6", True),
        ("openrouter/moonshotai/kimi-latest", True),
        ("openai/gpt-4o", False),
        ("anthropic/claude-sonnet-4.6", False),
        ("google/gemini-2.5-flash", False),
        ("openrouter/openrouter/free", False),
    ],
)
def test_hybrid_reasoning_flag(table, model, hybrid):
    assert budget_for(model, table).is_hybrid_reasoning is hybrid


@pytest.mark.parametrize(
    "model,strict",
    [
        ("anthropic/claude-haiku-4-5", True),
        ("openai/gpt-4o", True),
        ("openai/o3-mini", True),
        ("google/gemini-2.5-pro", True),
        ("openrouter/mistralai/mistral-large", True),
        ("openrouter/x-ai/grok-4", True),
        ("openrouter/openrouter/free", False),
        ("openrouter/qwen/qwen-2.5-coder", False),
        ("openrouter/moonshotai/kimi-k2.6", False),
        ("openrouter/meta-llama/llama-3.1-70b-instruct", False),
    ],
)
def test_strict_json_flag(table, model, strict):
    assert budget_for(model, table).wants_strict_json is strict


@pytest.mark.parametrize(
    "model,cached",
    [
        ("anthropic/claude-opus-4-7", True),
        ("openai/gpt-5", True),
        ("google/gemini-2.5-flash", True),
        ("openrouter/deepseek/deepseek-v4-pro", True),
        ("openrouter/deepseek/deepseek-v3.2", True),
        ("openrouter/openrouter/free", False),
        ("openrouter/qwen/qwen-2.5-coder", False),
        ("openrouter/meta-llama/llama-3.3-70b-instruct", False),
    ],
)
def test_prefix_cache_flag_and_cost(table, model, cached):
    b = budget_for(model, table)
    assert b.supports_prefix_cache is cached
    assert (b.cached_input_cost_usd_per_mtok > 0) is cached


def test_fallback_flags_all_false(table):
    b = budget_for("brand-new-vendor/never-seen:v0", table)
    assert not (b.is_hybrid_reasoning or b.wants_strict_json or b.supports_prefix_cache)
    assert b.cached_input_cost_usd_per_mtok == 0


def test_done_when_figures(table):
    nemo = budget_for("openrouter/nvidia/nemotron-3-super-120b-a12b:free", table)
    assert (nemo.tier, nemo.resolved_prompt_variant, nemo.output_tokens, nemo.max_catalog_bytes) == (
        "C", "single_pick", 1500, 10000,
    )
    sonnet = budget_for("anthropic/claude-sonnet-4-6", table)
    assert (sonnet.tier, sonnet.resolved_prompt_variant, sonnet.max_catalog_bytes) == ("A", "full_steps", 0)


class TestSettledInconsistencies:
    """Rows where helmdeck's models reference and its lookup table disagreed."""

    def test_llama_33_free_is_tier_c_while_paid_stays_b(self, table):
        free = budget_for("openrouter/meta-llama/llama-3.3-70b-instruct:free", table)
        assert (free.tier, free.output_tokens, free.max_catalog_bytes) == ("C", 1500, 10000)
        assert free.matched == "openrouter/meta-llama/llama-3.3-70b-instruct:free"
        paid = budget_for("openrouter/meta-llama/llama-3.3-70b-instruct", table)
        assert (paid.tier, paid.matched) == ("B", "openrouter/meta-llama/llama-3.3-70b")

    @pytest.mark.parametrize(
        "model,row",
        [
            ("openrouter/google/gemma-4-26b-a4b-it:free", "openrouter/google/gemma-4-"),
            ("openrouter/qwen/qwen3-coder:free", "openrouter/qwen/qwen3-coder"),
        ],
    )
    def test_reference_only_tier_c_rows_are_explicit(self, table, model, row):
        b = budget_for(model, table)
        assert (b.tier, b.matched) == ("C", row)

    def test_openrouter_auto_stays_on_the_fallback(self, table):
        assert budget_for("openrouter/auto", table).matched == "fallback"


# ------------------------------------------------------------------ validation

_FALLBACK = """
[fallback]
tier = "C"
input_tokens = 16000
output_tokens = 1500
max_catalog_bytes = 10000
"""


def _row(match: str, **extra: object) -> str:
    fields = {"tier": '"B"', "input_tokens": "1000", "output_tokens": "100", "max_catalog_bytes": "0"}
    fields.update({k: str(v) for k, v in extra.items()})
    body = "\n".join(f"{k} = {v}" for k, v in fields.items())
    return f'\n[[model]]\nmatch = "{match}"\n{body}\n'


def test_valid_minimal_table():
    t = parse_budget_table(_FALLBACK + _row("x/"))
    assert t.lookup("x/1").tier == "B"


@pytest.mark.parametrize(
    "bad,needle",
    [
        (_row("ok/") + _row("bad/", tier='"D"'), "#2 (match = 'bad/')"),
        (_row("neg/", output_tokens="-5"), "output_tokens"),
        (_row("neg/", input_tokens="-1"), "input_tokens"),
        (_row("dup/") + _row("dup/"), "duplicate match"),
        (_row("extra/", colour='"red"'), "colour"),
        (_row("variant/", prompt_variant='"both"'), "prompt_variant"),
    ],
)
def test_bad_rows_are_one_clear_error_naming_the_row(bad, needle):
    with pytest.raises(BudgetTableError) as err:
        parse_budget_table(_FALLBACK + bad, path="budgets.toml")
    msg = str(err.value)
    assert msg.startswith("budgets.toml:")
    assert needle in msg


def test_error_carries_the_row_line_number():
    text = _FALLBACK + _row("ok/") + _row("bad/", tier='"Q"')
    with pytest.raises(BudgetTableError) as err:
        parse_budget_table(text, path="b.toml")
    header_lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.strip() == "[[model]]"]
    assert err.value.line == header_lines[1]
    assert f"b.toml:{header_lines[1]}:" in str(err.value)


def test_missing_fallback_and_bad_toml_and_unknown_top_level():
    with pytest.raises(BudgetTableError, match="fallback"):
        parse_budget_table(_row("x/"))
    with pytest.raises(BudgetTableError, match="not valid TOML"):
        parse_budget_table("[fallback\n")
    with pytest.raises(BudgetTableError, match="unknown top-level"):
        parse_budget_table(_FALLBACK + "\n[models]\nx = 1\n")


def test_unreadable_file_is_a_budget_error(tmp_path):
    with pytest.raises(BudgetTableError, match="cannot read"):
        load_budget_table(tmp_path / "missing.toml")


def test_load_reflects_file_changes(tmp_path):
    p = tmp_path / "b.toml"
    p.write_text(_FALLBACK + _row("x/"))
    assert load_budget_table(p).lookup("x/y").tier == "B"
    p.write_text(_FALLBACK + _row("x/", tier='"A"', input_tokens="2000"))
    assert load_budget_table(p).lookup("x/y").tier == "A"
