"""resolve_resilience: a resilience file (or the defaults) with explicit overrides laid over it."""

from __future__ import annotations

import pytest

from helmdeck_dspy.domain import DEFAULT_TIMEOUT_S
from helmdeck_dspy.errors import DataFileError, InputError
from helmdeck_dspy.planning.resilience.policy import (
    FallbackChain,
    FallbackModel,
    ResilienceConfig,
    RetryPolicy,
    resolve_resilience,
)

FILE = (
    '[retry]\nmax_attempts = 4\nbase_delay_s = 0.5\ntimeout_s = 45\n'
    '[fallback]\non_length = "raise_cap"\nnext_model_on = ["likely_timeout"]\n'
    '[[fallback.models]]\nmodel = "openrouter/deepseek/deepseek-v3.2"\n'
    '[[fallback.models]]\nmodel = "local"\nlm = "openai/qwen3"\napi_base = "http://127.0.0.1:8000/v1"\n'
)


@pytest.fixture()
def config_file(tmp_path):
    path = tmp_path / "resilience.toml"
    path.write_text(FILE)
    return path


def test_no_file_and_no_overrides_is_the_default_config():
    cfg = resolve_resilience()
    assert cfg == ResilienceConfig()
    assert cfg.retry.timeout_s == DEFAULT_TIMEOUT_S and cfg.fallback.models == []


def test_overrides_apply_without_a_file():
    cfg = resolve_resilience(timeout_s=7.5, retries=0, fallbacks=["a/b", "c/d"], on_length="single_pick")
    assert cfg.retry == RetryPolicy(timeout_s=7.5, max_attempts=1)
    assert cfg.fallback == FallbackChain(models=[FallbackModel(model="a/b"), FallbackModel(model="c/d")],
                                         on_length="single_pick")


def test_the_file_is_used_as_it_is_without_overrides(config_file):
    assert resolve_resilience(config_file) == resolve_resilience(str(config_file))
    cfg = resolve_resilience(config_file)
    assert cfg.retry == RetryPolicy(max_attempts=4, base_delay_s=0.5, timeout_s=45)
    assert cfg.fallback.on_length == "raise_cap" and cfg.fallback.next_model_on == {"likely_timeout"}
    assert [m.model for m in cfg.fallback.models] == ["openrouter/deepseek/deepseek-v3.2", "local"]


def test_overrides_replace_the_file_values_they_name_and_keep_the_rest(config_file):
    cfg = resolve_resilience(config_file, timeout_s=9, retries=2, fallbacks=("x/y",), on_length="single_pick_then_cap")
    assert cfg.retry == RetryPolicy(max_attempts=3, base_delay_s=0.5, timeout_s=9)
    assert [m.model for m in cfg.fallback.models] == ["openrouter/deepseek/deepseek-v3.2", "local", "x/y"]
    assert cfg.fallback.models[1].api_base == "http://127.0.0.1:8000/v1"  # file models keep their settings
    assert cfg.fallback.models[2] == FallbackModel(model="x/y")
    assert cfg.fallback.on_length == "single_pick_then_cap"
    assert cfg.fallback.next_model_on == {"likely_timeout"}


def test_only_the_given_retry_override_changes(config_file):
    assert resolve_resilience(config_file, retries=0).retry == RetryPolicy(max_attempts=1, base_delay_s=0.5, timeout_s=45)
    assert resolve_resilience(config_file, timeout_s=1).retry == RetryPolicy(max_attempts=4, base_delay_s=0.5, timeout_s=1)


def test_a_malformed_file_is_a_data_file_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[retry]\nmax_attempts = 0\n")
    with pytest.raises(DataFileError, match="retry.max_attempts"):
        resolve_resilience(path, retries=1)


@pytest.mark.parametrize("kw", [{"retries": 20}, {"timeout_s": 0}, {"on_length": "sometimes"}, {"fallbacks": [""]}])
def test_out_of_range_overrides_are_input_errors(kw):
    with pytest.raises(InputError):
        resolve_resilience(**kw)
